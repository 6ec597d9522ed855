"""``/v1/memory_stores``: Anthropic's memory-stores API served by ``funes serve`` (issue 27).

The paths, bodies and answers are Anthropic's, so an application built on
the ``anthropic`` SDK's ``client.beta.memory_stores`` points its base URL at
this server (its API key is a Funes key; the store belongs to the key's
team). Each route is one call of :class:`funes.agents.memory_stores.MemoryStores`.
Errors take Anthropic's shape (:func:`anthropic_error`), which keeps Funes'
``code`` and ``hint`` inside ``error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.responses import JSONResponse

from ...errors import (
    Conflict,
    Forbidden,
    FunesError,
    InvalidInput,
    NotFound,
    PathConflict,
    PreconditionFailed,
    Unauthorized,
)
from .auth import ANTHROPIC_PREFIX, ROLE_KEY, anthropic_body
from .auth import principal_of as _principal

if TYPE_CHECKING:
    from ...service import Funes

PREFIX = ANTHROPIC_PREFIX
WRITE = {ROLE_KEY: "write"}
_STORE = PREFIX + "/{memory_store_id}"
_TYPES: tuple[tuple[type[FunesError], int, str], ...] = (
    (PreconditionFailed, 409, "memory_precondition_failed_error"),
    (PathConflict, 409, "memory_path_conflict_error"),
    (Conflict, 409, "conflict_error"),
    (InvalidInput, 400, "invalid_request_error"),
    (NotFound, 404, "not_found_error"),
    (Unauthorized, 401, "authentication_error"),
    (Forbidden, 403, "permission_error"),
)


def anthropic_error(status: int, error: FunesError | None, message: str, hint: str | None = None) -> JSONResponse:
    """An error in Anthropic's shape: ``{"type": "error", "error": {"type", "message", "code", "hint"}}``."""
    kind = None
    for cls, code, name in _TYPES:
        if error is not None and isinstance(error, cls):
            status, kind = code, name
            break
    body = anthropic_body(status, kind, message, getattr(error, "code", None), hint)
    if isinstance(error, PathConflict):
        body["error"].update(conflicting_memory_id=error.memory_id, conflicting_path=error.path)
    return JSONResponse(body, status_code=status)


def _actor(request: Request) -> dict[str, Any]:
    p = _principal(request)
    if p.key_id:
        return {"type": "api_actor", "api_key_id": p.key_id}
    return {"type": "user_actor", "user_id": p.user_id or "local"}


def _body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput(
            "The request body must be a JSON object.", hint='Send e.g. {"path": "/a.md", "content": ""}.'
        )
    return body


def register_memory_store_routes(app: FastAPI, funes: Funes) -> None:
    """Add the memory-stores routes to ``app``."""
    stores = funes.memory_stores
    tags = ["memory stores"]

    @app.post(PREFIX, tags=tags, openapi_extra=WRITE)
    def create_store(request: Request, body: Annotated[Any, Body()]) -> dict[str, Any]:
        """Create a memory store (``name``, optional ``description`` and ``metadata``)."""
        p, b = _principal(request), _body(body)
        return stores.create_store(
            b.get("name"), description=b.get("description"), metadata=b.get("metadata"), tenant=p.team
        )  # type: ignore[arg-type]

    @app.get(PREFIX, tags=tags)
    def list_stores(
        request: Request,
        limit: int | None = None,
        page: str | None = None,
        include_archived: bool = False,
        created_at_gte: Annotated[str | None, Query(alias="created_at[gte]")] = None,
        created_at_lte: Annotated[str | None, Query(alias="created_at[lte]")] = None,
    ) -> dict[str, Any]:
        """The team's memory stores, a page at a time (``created_at[gte]``/``[lte]`` keep a span)."""
        p = _principal(request)
        return stores.list_stores(
            limit=limit,
            page=page,
            include_archived=include_archived,
            created_at_gte=created_at_gte,
            created_at_lte=created_at_lte,
            tenant=p.team,
        )

    @app.get(_STORE, tags=tags)
    def get_store(memory_store_id: str, request: Request) -> dict[str, Any]:
        """One memory store."""
        return stores.get_store(memory_store_id, tenant=_principal(request).team)

    @app.post(_STORE, tags=tags, openapi_extra=WRITE)
    def update_store(memory_store_id: str, request: Request, body: Annotated[Any, Body()]) -> dict[str, Any]:
        """Change a store's name, description or metadata."""
        p, b = _principal(request), _body(body)
        fields = {k: b[k] for k in ("name", "description", "metadata") if k in b}
        return stores.update_store(memory_store_id, tenant=p.team, **fields)

    @app.delete(_STORE, tags=tags, openapi_extra=WRITE)
    def delete_store(memory_store_id: str, request: Request) -> dict[str, Any]:
        """Delete a store with its memories and versions."""
        return stores.delete_store(memory_store_id, tenant=_principal(request).team)

    @app.post(_STORE + "/archive", tags=tags, openapi_extra=WRITE)
    def archive_store(memory_store_id: str, request: Request) -> dict[str, Any]:
        """Make a store read-only."""
        return stores.archive_store(memory_store_id, tenant=_principal(request).team)

    @app.post(_STORE + "/memories", tags=tags, openapi_extra=WRITE)
    def create_memory(
        memory_store_id: str, request: Request, body: Annotated[Any, Body()], view: str | None = None
    ) -> dict[str, Any]:
        """Create a memory at ``path`` with ``content`` (409 memory_path_conflict_error if the path is taken)."""
        p, b = _principal(request), _body(body)
        return stores.create_memory(
            memory_store_id,
            b.get("path"),
            b.get("content"),
            view=view,
            tenant=p.team,
            actor=_actor(request),  # type: ignore[arg-type]
        )

    @app.get(_STORE + "/memories", tags=tags)
    def list_memories(
        memory_store_id: str,
        request: Request,
        path_prefix: str | None = None,
        depth: int | None = None,
        view: str | None = None,
        limit: int | None = None,
        page: str | None = None,
        order: str | None = None,
        order_by: str | None = None,
    ) -> dict[str, Any]:
        """A store's memories in path order (``view=basic|full``; ``depth`` rolls deeper ones up; ``order=desc``)."""
        p = _principal(request)
        return stores.list_memories(
            memory_store_id,
            path_prefix=path_prefix,
            depth=depth,
            view=view,
            limit=limit,
            page=page,
            order=order,
            order_by=order_by,
            tenant=p.team,
        )

    @app.get(_STORE + "/memories/{memory_id}", tags=tags)
    def get_memory(memory_store_id: str, memory_id: str, request: Request, view: str | None = None) -> dict[str, Any]:
        """One memory (``view=full`` by default)."""
        return stores.get_memory(memory_store_id, memory_id, view=view, tenant=_principal(request).team)

    @app.post(_STORE + "/memories/{memory_id}", tags=tags, openapi_extra=WRITE)
    def update_memory(
        memory_store_id: str, memory_id: str, request: Request, body: Annotated[Any, Body()], view: str | None = None
    ) -> dict[str, Any]:
        """Change a memory's content and/or path, guarded by an optional content_sha256 precondition."""
        p, b = _principal(request), _body(body)
        return stores.update_memory(
            memory_store_id,
            memory_id,
            content=b.get("content"),
            path=b.get("path"),
            precondition=b.get("precondition"),
            view=view,
            tenant=p.team,
            actor=_actor(request),
        )

    @app.delete(_STORE + "/memories/{memory_id}", tags=tags, openapi_extra=WRITE)
    def delete_memory(
        memory_store_id: str, memory_id: str, request: Request, expected_content_sha256: str | None = None
    ) -> dict[str, Any]:
        """Delete a memory; its versions stay (the last one ``deleted``)."""
        p = _principal(request)
        return stores.delete_memory(
            memory_store_id,
            memory_id,
            expected_content_sha256=expected_content_sha256,
            tenant=p.team,
            actor=_actor(request),
        )

    @app.get(_STORE + "/memory_versions", tags=tags)
    def list_versions(
        memory_store_id: str,
        request: Request,
        memory_id: str | None = None,
        operation: str | None = None,
        api_key_id: str | None = None,
        session_id: str | None = None,
        service_account_id: str | None = None,
        created_at_gte: Annotated[str | None, Query(alias="created_at[gte]")] = None,
        created_at_lte: Annotated[str | None, Query(alias="created_at[lte]")] = None,
        view: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> dict[str, Any]:
        """A store's versions, newest first, filtered by memory, operation, author and creation time."""
        p = _principal(request)
        return stores.list_versions(
            memory_store_id,
            memory_id=memory_id,
            operation=operation,
            api_key_id=api_key_id,
            session_id=session_id,
            service_account_id=service_account_id,
            created_at_gte=created_at_gte,
            created_at_lte=created_at_lte,
            view=view,
            limit=limit,
            page=page,
            tenant=p.team,
        )

    @app.get(_STORE + "/memory_versions/{memory_version_id}", tags=tags)
    def get_version(
        memory_store_id: str, memory_version_id: str, request: Request, view: str | None = Query(None)
    ) -> dict[str, Any]:
        """One version (a redacted one has no content or path)."""
        return stores.get_version(memory_store_id, memory_version_id, view=view, tenant=_principal(request).team)

    @app.post(_STORE + "/memory_versions/{memory_version_id}/redact", tags=tags, openapi_extra=WRITE)
    def redact_version(memory_store_id: str, memory_version_id: str, request: Request) -> dict[str, Any]:
        """Erase a version's content and path; its time, hash and author stay for audit."""
        p = _principal(request)
        return stores.redact_version(memory_store_id, memory_version_id, tenant=p.team, actor=_actor(request))
