"""Who a request acts for: API keys in, a :class:`~funes.memory.keys.Principal` and a tenant out.

A pure ASGI middleware, so the tenant it sets (:func:`funes.store.tenancy.acting_for`)
reaches the route, the worker thread it runs in and the MCP handlers alike.
"""

from __future__ import annotations

import hmac
import json
import os
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import Forbidden, FunesError, InvalidInput, Unauthorized
from ...memory.keys import Principal
from ...store.tenancy import acting_for

if TYPE_CHECKING:
    from ...service import Funes

INTERNAL_TOKEN_ENV = "FUNES_INTERNAL_TOKEN"
PRINCIPAL = "funes.principal"
ROLE = "funes.role"
ROLE_KEY = "x-funes-role"  # a route's ``openapi_extra`` entry naming the role it needs (default "read")
_OPEN = ("/v1/health", "/v1/internal/")


def presented_key(headers: dict[bytes, bytes]) -> str | None:
    """The key a request presents: ``Authorization: Bearer <key>`` or ``X-API-Key``."""
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    given = headers.get(b"x-api-key", b"").decode("latin-1").strip()
    return given or None


def check_internal_token(given: str | None) -> None:
    """Unauthorized unless ``given`` is the machine-to-machine token of ``FUNES_INTERNAL_TOKEN``."""
    expected = os.environ.get(INTERNAL_TOKEN_ENV, "").strip()
    if not expected:
        raise Unauthorized(
            "The internal endpoint is off on this server.",
            hint=f"Start `funes serve` with {INTERNAL_TOKEN_ENV} set, and send it as X-Internal-Token.",
        )
    if not given or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise Unauthorized(
            "The internal token is missing or wrong.",
            hint=f"Send X-Internal-Token with the value of {INTERNAL_TOKEN_ENV}.",
        )


class BodyLimit:
    """Answer 413 to a body over its limit before anything reads it: uploads up to ``upload_bytes``, the rest ``json_bytes``.

    A declared Content-Length is checked first; a chunked body is counted as it
    arrives and cut off (the route sees a disconnect) once over (issue 31).
    """

    def __init__(self, app: Any, *, json_bytes: int, upload_bytes: int) -> None:
        self.app = app
        self.json_bytes = json_bytes
        self.upload_bytes = upload_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Pass a request within its limit on; refuse any other with 413."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        multipart = headers.get(b"content-type", b"").lower().startswith(b"multipart/")
        limit = self.upload_bytes if multipart else self.json_bytes
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > limit:
            await error_response(
                send,
                413,
                InvalidInput(
                    f"The request body is {int(declared):,} bytes, over the limit of {limit:,}.",
                    hint="Upload large files as documents (max_file_mb bounds them); keep JSON bodies small.",
                ),
                path=scope.get("path", ""),
            )
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted, send)


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _host_name(host: str) -> str:
    """``host[:port]`` without the port (an IPv6 literal keeps its brackets)."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def browser_problem(scope: dict[str, Any], *, keyless: bool) -> tuple[int, str] | None:
    """Why a ``/v1`` request must be refused as a browser attack (status, reason), or None.

    As ``/mcp`` does (issue 31): an ``Origin`` must be this server's own or
    loopback; without keys, the ``Host`` must be loopback (DNS rebinding: a page
    whose name resolves to 127.0.0.1) and a write must not come from another
    site (``Sec-Fetch-Site``), since no key stands in its way.
    """
    headers = dict(scope.get("headers") or ())
    host = headers.get(b"host", b"").decode("latin-1").strip().lower()
    if keyless and _host_name(host) not in _LOOPBACK:
        return 421, f"This keyless server answers only to a loopback Host, not {host[:100]!r}."
    origin = headers.get(b"origin", b"").decode("latin-1").strip().lower()
    if origin and origin != "null":
        authority = origin.split("://", 1)[-1]
        if authority != host and _host_name(authority) not in _LOOPBACK:
            return 403, f"Requests from the web page at {origin[:100]!r} are refused."
    elif origin == "null":
        return 403, "Requests from an opaque origin (a sandboxed page or file) are refused."
    site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
    if keyless and scope.get("method", "GET") not in _SAFE_METHODS and site in ("cross-site", "same-site"):
        return 403, "A write from another site is refused on a server without keys."
    return None


def declared_role(app: Any, scope: dict[str, Any]) -> str:
    """The role the route matching ``scope`` declares (``openapi_extra[ROLE_KEY]``); "read" when none does."""
    from starlette.routing import Match

    for route in getattr(app, "routes", ()):
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return str((getattr(route, "openapi_extra", None) or {}).get(ROLE_KEY, "read"))
    return "read"


def path_scrubber(funes: Funes) -> Any:
    """A function that replaces the server's own paths (the store, its folder, the Funes home) in a text.

    A store error names the store's file ("The store /srv/funes/funes.db is read-only"): the server's
    file system is none of a client's business (issue 31).
    """
    from ...models import config as cfg

    store = str(funes.store.path)
    roots = {store, str(cfg.home())}
    if "://" not in store:
        roots |= {os.path.abspath(store), os.path.dirname(os.path.abspath(store))}
    ordered = sorted((r for r in roots if len(r) > 1), key=len, reverse=True)

    def public(text: str) -> str:
        for root in ordered:
            text = text.replace(root, "<server path>")
        return text

    return public


# Anthropic's memory-stores API (memory_stores.py) answers errors in Anthropic's shape, 401 and 403 included.
ANTHROPIC_PREFIX = "/v1/memory_stores"
ANTHROPIC_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
}


def anthropic_body(status: int, kind: str | None, message: str, code: str | None, hint: str | None) -> dict[str, Any]:
    """An error in Anthropic's shape: ``{"type": "error", "error": {"type", "message", "code", "hint"}}``.

    ``code`` and ``hint`` are Funes' own (the code defaults to the type).
    """
    kind = kind or ANTHROPIC_TYPES.get(status) or ("invalid_request_error" if status == 400 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message, "code": code or kind, "hint": hint}}


async def error_response(send: Any, status: int, error: FunesError, public: Any = None, path: str = "") -> None:
    """Answer with the one JSON error shape (``public`` scrubs the server's paths from its texts).

    Under :data:`ANTHROPIC_PREFIX` the body takes Anthropic's shape instead.
    """
    shown = error.to_dict()
    if public is not None:
        shown = {k: public(v) if isinstance(v, str) and k in ("message", "hint") else v for k, v in shown.items()}
    answer: dict[str, Any] = {"error": shown}
    if path.startswith(ANTHROPIC_PREFIX):
        answer = anthropic_body(status, None, shown.get("message", ""), shown.get("code", ""), shown.get("hint"))
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="funes"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class KeyAuth:
    """Resolve the API key of every ``/v1`` and ``/mcp`` request; 401 without a valid one.

    With ``require_keys=False`` (SQLite on loopback, single user) a request
    without a key acts as the configured tenant and user, as admin; a key,
    when sent, is still checked.
    """

    def __init__(self, app: Any, funes: Funes, *, require_keys: bool) -> None:
        self.app = app
        self.funes = funes
        self.require_keys = require_keys
        self.public = path_scrubber(funes)

    def local(self) -> Principal:
        """The principal of a keyless request in single-user mode."""
        config = self.funes.config
        return Principal(team=config.tenant, role="admin", user_id=config.user or None, key_id=None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Attach the principal and act for its tenant, or answer 401."""
        path = scope.get("path", "")
        if scope.get("type") != "http" or not (path.startswith("/v1/") or path.startswith("/mcp")):
            await self.app(scope, receive, send)
            return
        if path.startswith(_OPEN):
            await self.app(scope, receive, send)
            return
        problem = browser_problem(scope, keyless=not self.require_keys)
        if problem is not None:
            status, reason = problem
            await error_response(
                send,
                status,
                Forbidden(
                    reason,
                    hint="Call the API from a program or from this server's own pages (/ui), at http://127.0.0.1:PORT.",
                ),
                path=path,
            )
            return
        key = presented_key(dict(scope.get("headers") or ()))
        try:
            if key is None and not self.require_keys:
                principal = self.local()
            else:  # a key resolved moments ago needs no thread and no round trip (memory.keys.KEY_CACHE_SECONDS)
                principal = self.funes.keys.cached(key) or await anyio.to_thread.run_sync(self.funes.keys.resolve, key)
        except Unauthorized as exc:
            await error_response(send, 401, exc, path=path)
            return
        except FunesError as exc:
            await error_response(send, 503, exc, self.public, path)
            return
        # The role is checked before the route reads or validates anything (issue 31: a read
        # key's write was refused only for a missing field, after parsing the body).
        role = declared_role(self.app, scope)
        try:
            principal.require(role)
        except Forbidden as exc:
            await error_response(send, 403, exc, path=path)
            return
        state = scope.setdefault("state", {})
        state[PRINCIPAL] = principal
        state[ROLE] = role
        with acting_for(principal.team):
            await self.app(scope, receive, send)


def principal_of(request: Any, team: str | None = None) -> Principal:
    """The request's principal, after checking the path's team (another team: 404) and the route's role (403)."""
    from ...errors import NotFound

    state = request.scope["state"]
    principal: Principal = state[PRINCIPAL]
    if team is not None and team != principal.team:
        raise NotFound(f"No team {team!r}.", hint="Use the team of your API key (GET /v1/me shows it).")
    principal.require(state.get(ROLE, "read"))
    return principal
