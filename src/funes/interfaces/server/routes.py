"""The ``/v1`` routes: each maps one HTTP call onto one library call (see docs/rest-api.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, File, Form, Header, Query, Request, Response, UploadFile
from fastapi.responses import JSONResponse

from ...errors import InvalidInput, NotFound
from ...models import SearchQuery, utcnow
from .auth import ROLE_KEY, check_internal_token
from .auth import principal_of as _principal
from .schemas import (
    ClearIn,
    ContextIn,
    ForgetIn,
    GenerateIn,
    InternalGenerateIn,
    MemoryIn,
    MemoryPatch,
    MessageIn,
    RegenerateIn,
    RestoreIn,
    SettingsIn,
    UsageIn,
)

if TYPE_CHECKING:
    from ...service import Funes

_TEAM = "/v1/teams/{team}"
# The role a route needs, checked by KeyAuth before the body is read or validated (issue 31);
# a route without one needs "read".
WRITE = {ROLE_KEY: "write"}
ADMIN = {ROLE_KEY: "admin"}


_CSV_MAX = 100  # values of one comma-separated filter (issue 31: 5,000 scopes reached the SQL)


def _csv(value: str | None) -> list[str] | None:
    if value is None or not value.strip():
        return None
    values = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    if len(values) > _CSV_MAX:
        raise InvalidInput(
            f"A filter lists {len(values):,} values, over the limit of {_CSV_MAX}.",
            hint="Filter by fewer values per request, or leave the filter out.",
        )
    return values


def _entities(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(exclude_none=True) for item in items]


def register_routes(app: FastAPI, funes: Funes, *, backend: str, keys_required: bool) -> None:
    """Add every ``/v1`` route to ``app``."""

    @app.get("/v1/health", tags=["server"])
    def health() -> dict[str, Any]:
        """Liveness, the storage backend and whether keys are required (no key needed)."""
        return {"status": "ok", "backend": backend, "auth": keys_required}

    @app.get("/v1/me", tags=["server"])
    def me(request: Request) -> dict[str, Any]:
        """Who the key acts for."""
        return _principal(request).to_dict()

    # -- memories ---------------------------------------------------------------------------
    @app.post(_TEAM + "/memories", status_code=201, tags=["memories"], openapi_extra=WRITE)
    def create_memory(team: str, body: MemoryIn, request: Request) -> dict[str, Any]:
        """Create a memory (the create_memory tool's semantics: the same text in the same scope is one record)."""
        p = _principal(request, team)
        expires: Any = body.expires_at
        if body.ttl_days is not None:
            expires = utcnow() + timedelta(days=body.ttl_days)
        fields: dict[str, Any] = {
            "title": body.title,
            "scope": body.scope,
            "project": body.file_id,
            "session": body.session_id,
            "topic": body.topic,
            "importance": body.importance,
            "pinned": body.pinned,
            "expires_at": expires,
            "metadata": body.metadata,
            "entity_type": body.entity_type,
            "entity_id": body.entity_id,
            "tenant": p.team,
            "user": p.viewer if body.personal else None,
        }
        if body.memory_type is not None:
            fields["type"] = body.memory_type
        memory = funes.remember(body.content, **{k: v for k, v in fields.items() if v is not None or k == "user"})
        return memory.to_dict()

    @app.get(_TEAM + "/memories", tags=["memories"])
    def list_memories(
        team: str,
        request: Request,
        cursor: str | None = None,
        limit: int = Query(50, ge=1, le=1000),
        entity_type: str | None = None,
        scope: str | None = None,
        file_id: str | None = None,
        memory_type: str | None = None,
        pinned: bool | None = None,
        kind: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Memories newest first, cursor-paginated; comma-separated values filter by any of them.

        ``file_id`` lists that file's memories (scope ``project`` unless ``scope`` says otherwise).
        """
        p = _principal(request, team)
        if file_id and not scope:
            scope = "project"
        page = funes.list(
            tenant=p.team,
            user=p.viewer,
            types=_csv(memory_type),
            kinds=_csv(kind),
            scopes=_csv(scope),
            project=file_id,
            session=session_id,
            pinned=pinned,
            cursor=cursor,
            limit=limit,
            entity_types=_csv(entity_type),
        )
        return {"items": [m.to_dict() for m in page.items], "next_cursor": page.next_cursor}

    @app.get(_TEAM + "/memories/search", tags=["memories"])
    def search_memories(
        team: str,
        request: Request,
        q: str = Query(..., min_length=1, max_length=4000),
        limit: int | None = Query(None, ge=1, le=100),
        entity_type: str | None = None,
        scope: str | None = None,
        file_id: str | None = None,
        memory_type: str | None = None,
        source_type: str | None = None,
        kind: str | None = None,
        session_id: str | None = None,
        role: str | None = Query(None, description="Only chat messages said in these roles (comma-separated)."),
        group_by: str | None = Query(None, description="'session': group chat messages by conversation."),
        as_of: str | None = Query(
            None, description="Read memory as it was then (ISO-8601; a date alone is the end of that day)."
        ),
        include_superseded: bool = Query(False, description="Also return each hit's earlier versions, marked."),
        min_similarity: float | None = Query(None, description="Raw cosine a hit needs (strong keyword hits stay)."),
        min_relevance: float | None = Query(None, description="Calibrated relevance a hit needs (default: setting)."),
    ) -> dict[str, Any]:
        """Hybrid search; ``limit`` defaults to the file's ``retrieval_k`` setting, else ``search_limit``.

        ``role`` (user, assistant, system, tool) keeps only chat messages said in
        those roles. ``group_by=session`` answers "which conversation was that":
        ``groups`` lists the sessions, best first (``limit`` counts them), and
        ``hits`` holds their messages in group order; other records are left out.
        """
        p = _principal(request, team)
        if limit is None:
            # Without a file: None, so the search_limit setting decides, as in the library, CLI and MCP.
            limit = int(funes.project_settings(file_id, tenant=p.team)["settings"]["retrieval_k"]) if file_id else None
        hits = funes.search(
            SearchQuery(
                q,
                tenant=p.team,
                user=p.viewer,
                scopes=_csv(scope),
                project=file_id,
                session=session_id,
                types=_csv(memory_type),
                kinds=_csv(kind),
                source_types=_csv(source_type),
                entity_types=_csv(entity_type),
                roles=_csv(role),
                group_by=group_by,
                limit=limit,
                as_of=as_of,
                include_superseded=include_superseded,
                min_similarity=min_similarity,
                min_relevance=min_relevance,
            )
        )
        out: dict[str, Any] = {"query": q, "hits": [h.to_dict() for h in hits], "degraded": hits.degraded}
        if hits.groups is not None:
            out["groups"] = [g.to_dict() for g in hits.groups]
        return out

    @app.get(_TEAM + "/memories/has-file/{file}", tags=["memories"])
    def has_file(team: str, file: str, request: Request) -> dict[str, Any]:
        """Whether a file has memories, and how many."""
        p = _principal(request, team)
        count, cursor = 0, None
        while True:
            page = funes.list(tenant=p.team, user=p.viewer, scopes=["project"], project=file, cursor=cursor, limit=1000)
            count += len(page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        return {"file_id": file, "has_memories": count > 0, "count": count}

    @app.get(_TEAM + "/memories/{memory_id}", tags=["memories"])
    def get_memory(team: str, memory_id: str, request: Request) -> dict[str, Any]:
        """One memory."""
        p = _principal(request, team)
        return funes.get(memory_id, tenant=p.team, user=p.viewer).to_dict()

    @app.patch(_TEAM + "/memories/{memory_id}", tags=["memories"], openapi_extra=WRITE)
    def patch_memory(team: str, memory_id: str, body: MemoryPatch, request: Request) -> dict[str, Any]:
        """Edit title, summary, content, pin, importance or topic; new text is re-embedded."""
        p = _principal(request, team)
        changes: dict[str, Any] = {}
        if body.content is not None:
            changes["content"] = body.content
        if body.title is not None:
            changes["title"] = body.title
        if body.topic is not None:
            changes["topic"] = body.topic
        if body.pinned is not None:
            changes["pinned"] = body.pinned
        if body.importance is not None:
            changes["importance"] = body.importance
        if body.summary is not None:
            changes["metadata"] = {"summary": body.summary}
        return funes.update(memory_id, tenant=p.team, user=p.viewer, **changes).to_dict()

    @app.delete(_TEAM + "/memories/{memory_id}", status_code=204, tags=["memories"], openapi_extra=WRITE)
    def delete_memory(team: str, memory_id: str, request: Request) -> Response:
        """Delete a memory."""
        p = _principal(request, team)
        funes.forget(memory_id, tenant=p.team, user=p.viewer)
        return Response(status_code=204)

    @app.get(_TEAM + "/memories/{memory_id}/why", tags=["memories"])
    def memory_why(team: str, memory_id: str, request: Request) -> dict[str, Any]:
        """What a memory was made from (messages, sessions, documents, entity) and what was made from it."""
        p = _principal(request, team)
        return funes.why(memory_id, tenant=p.team, user=p.viewer)

    @app.post(_TEAM + "/forget/preview", tags=["forgetting"], openapi_extra=ADMIN)
    def forget_preview(team: str, body: ForgetIn, request: Request) -> dict[str, Any]:
        """What a forget would remove; changes nothing (admin)."""
        p = _principal(request, team)
        return funes.preview_forget(body.ids, user=body.user, matching=body.matching, tenant=p.team, caller=p.viewer)

    @app.post(_TEAM + "/forget", tags=["forgetting"], openapi_extra=ADMIN)
    def forget(team: str, body: ForgetIn, request: Request) -> dict[str, Any]:
        """Forget for good (ids, a user, or a matching text with ``confirm``); returns the receipt (admin)."""
        p = _principal(request, team)
        return funes.forget_everywhere(
            body.ids,
            user=body.user,
            matching=body.matching,
            confirm=body.confirm,
            tenant=p.team,
            caller=p.viewer,
            actor=p.viewer,
        )

    @app.get(_TEAM + "/forget/{receipt_id}/verify", tags=["forgetting"], openapi_extra=ADMIN)
    def verify_forgotten(team: str, receipt_id: str, request: Request) -> dict[str, Any]:
        """Scan the store's files, memory folders and uploads for a forget's text: 0 found, or where (admin)."""
        p = _principal(request, team)
        if not receipt_id.startswith("fgt_"):
            raise NotFound(f"No forget receipt {receipt_id!r}.", hint="POST .../forget returns the receipt id.")
        return funes.verify_forgotten(receipt_id, tenant=p.team)

    @app.get(_TEAM + "/memories/{memory_id}/history", tags=["memories"])
    def memory_history(team: str, memory_id: str, request: Request) -> dict[str, Any]:
        """A memory's kept versions, newest first, and its current state."""
        p = _principal(request, team)
        current = funes.get(memory_id, tenant=p.team, user=p.viewer)
        versions = funes.versions(memory_id, tenant=p.team, user=p.viewer)
        return {"memory_id": memory_id, "versions": [v.to_dict() for v in versions], "current": current.to_dict()}

    @app.post(_TEAM + "/memories/{memory_id}/restore", tags=["memories"], openapi_extra=WRITE)
    def restore_memory(team: str, memory_id: str, body: RestoreIn, request: Request) -> dict[str, Any]:
        """Make an older version current again (as a new version)."""
        p = _principal(request, team)
        funes.get(memory_id, tenant=p.team, user=p.viewer)  # no such memory: 404
        try:
            return funes.restore(memory_id, body.version, tenant=p.team, user=p.viewer).to_dict()
        except NotFound as exc:
            # The memory exists; a 404 on its URL would read as "deleted" (issue 31, schemathesis' stateful run).
            raise InvalidInput(exc.message, hint=exc.hint) from exc

    @app.post(_TEAM + "/memories/{memory_id}/versions/{version}/redact", tags=["memories"], openapi_extra=WRITE)
    def redact_version(team: str, memory_id: str, version: int, request: Request) -> dict[str, Any]:
        """Erase a kept earlier version's text; its number, time and content hash stay for audit."""
        p = _principal(request, team)
        return funes.redact_version(memory_id, version, tenant=p.team, user=p.viewer).to_dict()

    @app.get(_TEAM + "/proposals", tags=["memories"])
    def list_proposals(team: str, request: Request, limit: int = Query(100, ge=1, le=1000)) -> dict[str, Any]:
        """Machine proposals waiting on memories a person wrote or pinned (each memory with its ``proposal``)."""
        p = _principal(request, team)
        return {"items": [m.to_dict() for m in funes.proposals(tenant=p.team, user=p.viewer, limit=limit)]}

    @app.post(_TEAM + "/memories/{memory_id}/proposal/accept", tags=["memories"], openapi_extra=WRITE)
    def accept_proposal(team: str, memory_id: str, request: Request) -> dict[str, Any]:
        """Make the memory's proposal its next version (the current text stays in history)."""
        p = _principal(request, team)
        return funes.accept_proposal(memory_id, tenant=p.team, user=p.viewer).to_dict()

    @app.post(_TEAM + "/memories/{memory_id}/proposal/dismiss", tags=["memories"], openapi_extra=WRITE)
    def dismiss_proposal(team: str, memory_id: str, request: Request) -> dict[str, Any]:
        """Drop the memory's proposal; the current text stays and the same text is not proposed again."""
        p = _principal(request, team)
        return funes.dismiss_proposal(memory_id, tenant=p.team, user=p.viewer).to_dict()

    @app.post(_TEAM + "/memories/generate", status_code=202, tags=["memories"], openapi_extra=WRITE)
    def generate(team: str, body: GenerateIn, request: Request) -> dict[str, Any]:
        """Accept a file's entities; a durable job reconciles them (per-file cooldown; bursts coalesce)."""
        p = _principal(request, team)
        return funes.generate(body.file_id, _entities(body.entities), tenant=p.team, user=p.user_id)

    @app.post(_TEAM + "/memories/regenerate", status_code=202, tags=["memories"], openapi_extra=WRITE)
    def regenerate(team: str, body: RegenerateIn, request: Request) -> dict[str, Any]:
        """Re-summarise every entity of the file's latest generation (a durable job)."""
        p = _principal(request, team)
        return funes.regenerate(body.file_id, tenant=p.team, user=p.user_id)

    # -- documents ------------------------------------------------------------------------
    @app.post(_TEAM + "/documents", status_code=202, tags=["documents"], openapi_extra=WRITE)
    async def upload_document(
        team: str,
        request: Request,
        file: Annotated[UploadFile, File(description="The document.")],
        scope: Annotated[str | None, Form()] = None,
        file_id: Annotated[str | None, Form()] = None,
    ) -> dict[str, Any]:
        """Save an uploaded file and queue its indexing; poll the document or its job."""
        import anyio

        p = _principal(request, team)
        data = await file.read()
        name = file.filename or ""
        return await anyio.to_thread.run_sync(
            lambda: funes.upload(name, data, tenant=p.team, user=None, scope=scope or None, project=file_id or None)
        )

    @app.get(_TEAM + "/documents", tags=["documents"])
    def list_documents(team: str, request: Request) -> dict[str, Any]:
        """Uploads still queued, indexing or failed, then the indexed documents."""
        p = _principal(request, team)
        pending = funes.uploads.pending_uploads(tenant=p.team, user=p.viewer)
        docs = [d.to_dict() for d in funes.documents(tenant=p.team, user=p.viewer)]
        # A failed upload is recorded as a failed document too: list it once, as that document.
        failed = {(d["name"], d.get("project_id")) for d in docs if d["status"] == "failed"}
        pending = [u for u in pending if not (u["status"] == "failed" and (u["name"], u["project_id"]) in failed)]
        return {"items": pending + docs}

    def _document(p: Any, document_id: str) -> dict[str, Any]:
        if document_id.startswith("job_"):
            job = funes.uploads.upload_job(document_id, tenant=p.team)
            if job.status != "done":
                return funes.uploads.pending(job)
            document_id = str((job.result or {}).get("document_id") or "")
        doc = funes.document(document_id, tenant=p.team, user=p.viewer)
        if doc.tenant != p.team:
            raise NotFound(f"No document {document_id!r}.", hint="GET /v1/teams/{team}/documents lists documents.")
        return doc.to_dict()

    @app.get(_TEAM + "/documents/{document_id}", tags=["documents"])
    def get_document(team: str, document_id: str, request: Request) -> dict[str, Any]:
        """One document (an upload's job id answers with the upload's state, then its document)."""
        p = _principal(request, team)
        return _document(p, document_id)

    @app.delete(_TEAM + "/documents/{document_id}", status_code=204, tags=["documents"], openapi_extra=WRITE)
    def delete_document(team: str, document_id: str, request: Request) -> Response:
        """Remove a document with its chunks."""
        p = _principal(request, team)
        doc_id = _document(p, document_id)["id"]
        if doc_id.startswith("job_"):
            raise InvalidInput(
                "This upload is not indexed yet.", hint="Wait for its job to finish (GET /v1/jobs/{id}), then delete."
            )
        funes.remove_document(doc_id, tenant=p.team, user=p.viewer)
        return Response(status_code=204)

    @app.post(_TEAM + "/documents/{document_id}/reindex", status_code=202, tags=["documents"], openapi_extra=WRITE)
    def reindex_document(team: str, document_id: str, request: Request) -> dict[str, Any]:
        """Read an uploaded document's saved file again (a durable job)."""
        p = _principal(request, team)
        doc_id = _document(p, document_id)["id"]
        return funes.uploads.reindex(doc_id, tenant=p.team)

    # -- sessions ----------------------------------------------------------------------------
    @app.get(_TEAM + "/sessions", tags=["sessions"])
    def list_sessions(team: str, request: Request, limit: int = Query(50, ge=1, le=1000)) -> dict[str, Any]:
        """Sessions, most recent first."""
        p = _principal(request, team)
        return {"items": [s.to_dict() for s in funes.sessions(tenant=p.team, user=p.viewer, limit=limit)]}

    @app.post(_TEAM + "/sessions/{session_id}/messages", status_code=201, tags=["sessions"], openapi_extra=WRITE)
    def add_message(team: str, session_id: str, body: MessageIn, request: Request) -> dict[str, Any]:
        """Append a message (the session is created on its first message), with its tool calls and token usage."""
        p = _principal(request, team)
        funes.session(session_id, tenant=p.team, user=p.viewer)
        return funes.add_message(
            session_id,
            body.role,
            body.content,
            tool_calls=body.tool_calls,
            tool_call_id=body.tool_call_id,
            usage=body.usage,
            at=body.at,
            tenant=p.team,
            user=p.viewer,
        ).to_dict()

    @app.post(_TEAM + "/sessions/{session_id}/usage", status_code=201, tags=["sessions"], openapi_extra=WRITE)
    def record_usage(team: str, session_id: str, body: UsageIn, request: Request) -> dict[str, Any]:
        """Record one model call's token usage in the session; answers the session's usage summary."""
        p = _principal(request, team)
        return funes.record_usage(
            session_id,
            body.prompt_tokens,
            body.completion_tokens,
            model=body.model,
            context_window=body.context_window,
            tenant=p.team,
            user=p.viewer,
        )

    @app.get(_TEAM + "/sessions/{session_id}/messages", tags=["sessions"])
    def session_messages(
        team: str, session_id: str, request: Request, limit: int | None = Query(None, ge=1, le=10000)
    ) -> dict[str, Any]:
        """A session's messages, oldest first (the last ``limit``)."""
        p = _principal(request, team)
        return {"items": [m.to_dict() for m in funes.history(session_id, limit=limit, tenant=p.team, user=p.viewer)]}

    @app.post(_TEAM + "/sessions/{session_id}/context", tags=["sessions"])
    def session_context(team: str, session_id: str, body: ContextIn, request: Request) -> dict[str, Any]:
        """Build the next model call's messages within the context window, with per-section token usage.

        Without a ``query`` the session's latest user message stands for it (see ``Funes.build_context``).
        """
        p = _principal(request, team)
        built = funes.build_context(
            session_id,
            body.query,
            instructions=body.instructions,
            model_window=body.context_window,
            tenant=p.team,
            user=p.viewer,
            as_of=body.as_of,
        )
        report = built.report()
        sections = {name: int(s.get("tokens", 0)) for name, s in report.get("sections", {}).items()}
        return {
            "messages": [m.to_dict() for m in built.messages],
            "system": built.system,
            "usage": {"sections": sections, "used": built.total_tokens, "window": built.budget.window},
        }

    @app.get(_TEAM + "/sessions/{session_id}/usage", tags=["sessions"])
    def session_usage(team: str, session_id: str, request: Request) -> dict[str, Any]:
        """Token usage of a session."""
        p = _principal(request, team)
        return funes.usage(session_id, tenant=p.team, user=p.viewer)

    @app.delete(_TEAM + "/sessions/{session_id}", tags=["sessions"], openapi_extra=WRITE)
    def delete_session(team: str, session_id: str, request: Request, confirm: str = Query(...)) -> dict[str, Any]:
        """Clear a session (confirm with its id)."""
        p = _principal(request, team)
        if confirm != session_id:
            raise InvalidInput("Confirmation does not match the session id.", hint=f"Pass ?confirm={session_id}.")
        return funes.clear_session(session_id, tenant=p.team, user=p.viewer)

    @app.post(_TEAM + "/clear", tags=["maintenance"], openapi_extra=ADMIN)
    def clear(team: str, body: ClearIn, request: Request) -> dict[str, Any]:
        """Clear one file's or one session's data, or everything of the team (admin; confirm with the id or team).

        ``{"everything": true, "confirm": "<team>"}`` removes every record, document and session of the team,
        as `funes clear --all` does; other teams are untouched.
        """
        p = _principal(request, team)
        chosen = [x for x in (body.file_id, body.session_id, body.everything) if x]
        if len(chosen) != 1:
            raise InvalidInput(
                "Say what to clear: exactly one of file_id, session_id or everything.",
                hint='{"file_id": "F", "confirm": "F"}, or {"everything": true, "confirm": "<team>"}.',
            )
        target = p.team if body.everything else str(body.file_id or body.session_id)
        if body.confirm != target:
            raise InvalidInput("Confirmation does not match.", hint=f'Send "confirm": "{target}".')
        return funes.clear(project=body.file_id, session=body.session_id, all=body.everything, tenant=p.team)

    @app.get(_TEAM + "/map", tags=["memories"])
    def memory_map(
        team: str,
        request: Request,
        file_id: str | None = Query(None, max_length=500),
        limit: int = Query(300, ge=1, le=1000),
        link_similarity: float = Query(0.5, ge=-1, le=1),
    ) -> dict[str, Any]:
        """The knowledge map as a map: memories placed in 2-D by meaning (x, y in [0, 1]) and linked to their
        nearest neighbours; document passages and messages are left out."""
        p = _principal(request, team)
        return funes.memory_map(
            tenant=p.team, user=p.viewer, project=file_id, limit=limit, link_similarity=link_similarity
        )

    @app.get(_TEAM + "/stats", tags=["maintenance"])
    def stats(team: str, request: Request) -> dict[str, Any]:
        """Counts per source type and tier, storage bytes, database size (the breakdown rows in ``storage``)."""
        p = _principal(request, team)
        data = funes.stats(tenant=p.team, storage=True)
        data.pop("path", None)  # the server's file system is none of a team's business (issue 31)
        storage = data["storage"]
        data["by_source_type"] = data.pop("by_source", {})
        data["by_tier"] = {tier: totals["records"] for tier, totals in storage["tiers"].items()}
        data["storage_bytes"] = sum(t["text_bytes"] + t["vector_bytes"] for t in storage["tiers"].values())
        data["db_size_bytes"] = storage["database_bytes"]
        return data

    @app.get(_TEAM + "/projects/{file}/settings", tags=["projects"])
    def get_settings(team: str, file: str, request: Request) -> dict[str, Any]:
        """A file's settings."""
        p = _principal(request, team)
        return dict(funes.project_settings(file, tenant=p.team)["settings"])

    @app.put(_TEAM + "/projects/{file}/settings", tags=["projects"], openapi_extra=ADMIN)
    def put_settings(team: str, file: str, body: SettingsIn, request: Request) -> dict[str, Any]:
        """Change a file's settings."""
        p = _principal(request, team)
        return dict(funes.configure_project(file, body.model_dump(exclude_none=True), tenant=p.team)["settings"])

    # -- jobs ---------------------------------------------------------------------------------
    @app.get(_TEAM + "/jobs", tags=["jobs"])
    def list_jobs(
        team: str,
        request: Request,
        status: str | None = None,
        kind: str | None = None,
        limit: int = Query(50, ge=1, le=1000),
    ) -> dict[str, Any]:
        """The team's jobs, newest first."""
        p = _principal(request, team)
        return {"items": [j.to_dict() for j in funes.jobs.list(tenant=p.team, status=status, kind=kind, limit=limit)]}

    @app.get("/v1/jobs/{job_id}", tags=["jobs"])
    def get_job(job_id: str, request: Request) -> dict[str, Any]:
        """One job (another team's answers 404)."""
        p = _principal(request)
        job = funes.jobs.get(job_id)
        if job.tenant != p.team:
            raise NotFound(f"No job with id {job_id!r}.", hint="GET /v1/teams/{team}/jobs lists your jobs.")
        return job.to_dict()

    @app.post("/v1/internal/files/{file}/memory", status_code=202, tags=["internal"])
    def internal_generate(
        file: str, body: InternalGenerateIn, x_internal_token: str | None = Header(None)
    ) -> JSONResponse:
        """Machine-to-machine generation (``X-Internal-Token``, not an API key)."""
        check_internal_token(x_internal_token)
        accepted = funes.generate(file, _entities(body.entities), tenant=body.team)
        return JSONResponse(accepted, status_code=202)
