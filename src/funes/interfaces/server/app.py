"""The FastAPI app of ``funes serve``: HTTP mapped onto :class:`funes.Funes`, nothing more.

Every route resolves the caller (:mod:`.auth`), checks the role and that the
team in the path is the key's own (another team answers 404, so existence
never leaks), calls one library method and renders its ``to_dict()``.
Errors are translated at this edge into ``{"error": {"code", "message", "hint"}}``.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ...errors import (
    BackendUnavailable,
    Conflict,
    Forbidden,
    FunesError,
    InvalidInput,
    NotFound,
    StoreFull,
    Unauthorized,
)
from ..process import settle_heap
from .auth import BodyLimit, KeyAuth, path_scrubber
from .consistency import Consistency
from .memory_stores import PREFIX as MEMORY_STORES
from .memory_stores import anthropic_error, register_memory_store_routes

if TYPE_CHECKING:
    from ...service import Funes

log = logging.getLogger("funes.server")
# The largest JSON body: a memory's content (max_content_bytes, 1 MB by default) several
# times over, or a file's entities for generate; anything larger is refused unread.
JSON_BODY_BYTES = 16 * 1024 * 1024
_MULTIPART_SLACK = 1024 * 1024  # form fields and boundaries around an upload of max_file_mb

_STATUS = {
    InvalidInput: 400,
    NotFound: 404,
    Conflict: 409,
    Unauthorized: 401,
    Forbidden: 403,
    StoreFull: 507,
    BackendUnavailable: 503,
}


def status_of(error: FunesError) -> int:
    """The HTTP status of a library error."""
    for kind, status in _STATUS.items():
        if isinstance(error, kind):
            return status
    return 400


def _error(status: int, code: str, message: str, hint: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "hint": hint}}, status_code=status)


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(
    funes_or_url: Funes | str | None = None,
    *,
    require_keys: bool | None = None,
    mcp: bool = True,
    close: bool = False,
) -> Any:
    """The team server as an ASGI app over one Funes service (or a store path/URL to open).

    ``require_keys`` defaults to True; pass False only for a single-user
    SQLite store served on loopback (keyless requests then act as the
    configured tenant). ``close`` closes the service when the app stops.
    """
    from ... import service

    if funes_or_url is None or isinstance(funes_or_url, str):
        funes = service.open(funes_or_url, worker="on")
        close = True
    else:
        funes = funes_or_url
    keys_required = True if require_keys is None else bool(require_keys)
    backend = "postgres" if "://" in str(funes.store.path) else "sqlite"
    mcp_app = None
    if mcp:
        from .mcp import team_mcp

        mcp_app = team_mcp(funes)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if mcp_app is not None:
                await stack.enter_async_context(mcp_app.session_manager.run())
            try:
                yield
            finally:
                if close:
                    funes.close()

    app = FastAPI(
        title="Funes team server",
        version="1",
        description="Long-term memory for teams: memories, documents, sessions and background jobs.",
        lifespan=lifespan,
    )
    app.state.funes = funes

    public = path_scrubber(funes)

    @app.exception_handler(FunesError)
    async def funes_error(request: Request, exc: FunesError) -> JSONResponse:
        status = status_of(exc)
        message, hint = public(exc.message), public(exc.hint) if exc.hint else exc.hint
        if request.url.path.startswith(MEMORY_STORES):
            return anthropic_error(status, exc, message, hint)
        return _error(status, exc.code, message, hint)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for item in exc.errors()[:5]:
            where = ".".join(str(p) for p in item.get("loc", ()))
            problems.append(f"{where}: {item.get('msg')}")
        if request.url.path.startswith(MEMORY_STORES):
            return anthropic_error(400, None, "The request is not valid: " + "; ".join(problems))
        return _error(
            422,
            "invalid_input",
            "The request is not valid: " + "; ".join(problems),
            "See /docs for the expected shape.",
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {400: "invalid_input", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        hint = "See /docs for the routes." if exc.status_code in (404, 405) else None
        if exc.status_code == 400:
            # A body the JSON parser gives up on (issue 31: 100,000 nested brackets).
            hint = "Send a valid JSON body nested a few levels at most; /docs shows each route's shape."
        return _error(exc.status_code, code, str(exc.detail), hint)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        # The exception's text stays in the server log: it may name files of the server (issue 31).
        return _error(
            500,
            "internal_error",
            f"An unexpected {type(exc).__name__} stopped this request; the server log has the details.",
            "This is a bug in Funes; please report it with the server log.",
        )

    from .routes import register_routes

    register_routes(app, funes, backend=backend, keys_required=keys_required)
    register_memory_store_routes(app, funes)
    from .openapi import install

    install(app)

    if mcp_app is not None:
        app.mount("/mcp", mcp_app.asgi)
    ui = Path(__file__).resolve().parent.parent / "web" / "static"
    if ui.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/ui", StaticFiles(directory=str(ui), html=True), name="ui")
    upload_bytes = int(funes.config.max_file_mb) * 1024 * 1024 + _MULTIPART_SLACK
    return BodyLimit(
        Consistency(KeyAuth(app, funes, require_keys=keys_required)),
        json_bytes=JSON_BODY_BYTES,
        upload_bytes=upload_bytes,
    )


def serve(
    funes: Funes,
    *,
    host: str = "127.0.0.1",
    port: int = 8700,
    require_keys: bool | None = None,
    announce_json: bool = False,
) -> None:
    """Run the team server on ``funes`` until interrupted (open it with ``worker="on"``: jobs run here).

    Keys are required unless the store is SQLite, the host is loopback and
    no key exists yet (single-user mode, announced at start-up).
    """
    import signal

    import uvicorn

    postgres = "://" in str(funes.store.path)
    if require_keys is False and (postgres or not is_loopback(host)):
        raise InvalidInput(
            "Keys can be turned off only for a SQLite store served on loopback.",
            hint="Bind 127.0.0.1 (the default) and use a SQLite store, or create keys with `funes keys create`.",
        )
    if require_keys is None:
        require_keys = postgres or not is_loopback(host) or bool(funes.keys.list())
    sock = _listen(host, port)
    app = create_app(funes, require_keys=require_keys, close=True)
    where = f"http://{host}:{sock.getsockname()[1]}"
    if announce_json:
        import json

        info = {
            "url": f"{where}/v1",
            "mcp": f"{where}/mcp",
            "ui": f"{where}/ui",
            "docs": f"{where}/docs",
            "keys_required": require_keys,
            "tenant": None if require_keys else funes.config.tenant,
        }
        print(json.dumps(info), file=sys.stderr)
    else:
        print(f"Funes team server: {where}/v1 (MCP {where}/mcp, UI {where}/ui, docs {where}/docs)", file=sys.stderr)
        if require_keys:
            print("API keys required (`funes keys create --team T --role read|write|admin`).", file=sys.stderr)
        else:
            print(
                f"Single-user mode: no API keys needed on loopback; requests act as tenant {funes.config.tenant!r}. "
                "Creating a key turns keys on at the next start.",
                file=sys.stderr,
            )
    sys.stderr.flush()

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, stop)
    settle_heap()  # start-up's objects out of the collector's full walks (a 140 ms pause each)
    try:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything is announced: a busy port is a clear error."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family, backlog=2048)
    except OSError as exc:
        busy = exc.errno == errno.EADDRINUSE
        raise InvalidInput(
            f"Cannot listen on {host}:{port}: " + ("the port is in use." if busy else f"{exc.strerror or exc}."),
            hint=f"Pick another port with `funes serve --port N` (0 picks a free one), or stop what holds {port}."
            if busy
            else "Check --host (an address of this machine, e.g. 127.0.0.1) and --port.",
        ) from exc
    # Accepted connections inherit TCP_NODELAY from this socket. asyncio sets it only on sockets whose proto
    # is IPPROTO_TCP, and create_server's is 0: without it a kept-alive connection's answer waited for the
    # client's delayed ACK (Nagle), 40 ms on every request after the first (bench/server_bench.py).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
