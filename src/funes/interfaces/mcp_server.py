"""The MCP server: Funes's agent tools, resources and instructions over stdio or streamable HTTP.

This is the only module that imports the official ``mcp`` SDK (major version
2, pinned in the ``mcp`` extra). It is a thin shell: every tool call goes to
:meth:`funes.Funes.execute_tool`, run in a worker thread because the core is
synchronous.

* Tools: the ones defined in :mod:`funes.agents.specs`, with annotations.
  Failures come back as ``isError`` results the model can act on.
* Tools declare an ``outputSchema`` (:mod:`funes.agents.output_schemas`) that
  their structured content matches.
* Resources: ``funes://stats``, ``funes://scopes`` and ``funes://memory/{id}``,
  never with a file-system path in them (:func:`without_paths`).
* Prompt: the agent's memory-management instructions (``memory-management``),
  also sent as the server's ``instructions``.

On stdio, stdout is the wire: logging goes to stderr, and the SDK points
fd 1 at stderr while serving, so stray prints (a model loading) miss the wire.
The service is opened inside that window for the same reason.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..errors import FunesError
from ..models import Caller, new_id
from .process import settle_heap

if TYPE_CHECKING:
    from ..agents.specs import ToolSpec
    from ..service import Funes

log = logging.getLogger("funes.mcp")

SERVER_NAME = "funes"
PROMPT_NAME = "memory-management"
STATS_URI = "funes://stats"
SCOPES_URI = "funes://scopes"
MEMORY_URI_PREFIX = "funes://memory/"
HOST = "127.0.0.1"  # the HTTP transport is for local clients only
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")


def resolve_project(explicit: str | None, configured: str | None, cwd: Path | None = None) -> str:
    """The default project: --project, then the config, then the git root's name, then the cwd's name."""
    if explicit:
        return explicit
    if configured:
        return configured
    here = (cwd or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory.name or "default"
    return here.name or "default"


def agent_instructions(prompts_dir: str | None = None) -> str:
    """The memory-management instructions for agents (user-overridable, like every prompt)."""
    from ..conversations.prompts import load_prompt

    return load_prompt("agent", prompts_dir=prompts_dir or None)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("funes-memory")  # the distribution name (the import name is funes)
    except PackageNotFoundError:
        from .. import __version__

        return __version__


def _client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The connecting client's name (handshake-era params, or the 2026 per-request meta)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    if info is not None and getattr(info, "name", None):
        return str(info.name)
    meta = ctx.meta or {}
    stamped = meta.get(types.CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    if isinstance(stamped, dict) and stamped.get("name"):
        return str(stamped["name"])
    return None


def _tool(spec: Any) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(),
        output_schema=spec.output_schema(),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.hints.read_only,
            destructive_hint=spec.hints.destructive,
            idempotent_hint=spec.hints.idempotent,
            open_world_hint=spec.hints.open_world,
        ),
    )


_PATH_KEYS = frozenset({"path", "db_path", "home", "folder_path"})


def without_paths(data: Any) -> Any:
    """``data`` with no file-system path in it: path fields dropped, absolute paths cut to their file name.

    An agent has no use for where the store or an ingested file lives on disk,
    and a path can leak a user name or a directory layout (issue 27).
    """
    if isinstance(data, dict):
        # A record's text is what it says, not a location, even when it starts with a slash.
        return {k: v if k == "content" else without_paths(v) for k, v in data.items() if str(k) not in _PATH_KEYS}
    if isinstance(data, (list, tuple)):
        return [without_paths(v) for v in data]
    if (
        isinstance(data, str)
        and "\n" not in data
        and (data.startswith(("file://", "~/")) or os.path.isabs(data) or _WINDOWS.match(data))
    ):
        return Path(data.removeprefix("file://").replace("\\", "/")).name
    return data


def _json(uri: str, data: Any) -> types.ReadResourceResult:
    text = json.dumps(without_paths(data), indent=2, ensure_ascii=False, default=str)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
    )


def build_server(
    funes: Funes,
    *,
    project: str | None,
    session_id: str | None = None,
    agent_id: str | None = None,
    instructions: str | None = None,
    caller_of: Callable[[Any, Caller], Caller] | None = None,
    authorize: Callable[[Any, ToolSpec | None], None] | None = None,
    public: Callable[[str], str] | None = None,
) -> Server[Any]:
    """An MCP server over one Funes service; ``project`` is the resolved default project.

    ``caller_of(ctx, default)`` says who a request acts for (the team server
    resolves it from the request's API key); by default, the configured tenant and user.
    ``authorize(ctx, spec)`` runs before anything else of a tool call and raises
    a :class:`~funes.errors.FunesError` (``Forbidden``) to refuse it; ``spec`` is
    None for an unknown tool name. ``public(text)`` rewrites an error's text
    before it is sent (the team server takes its own paths out of it).
    """
    from ..agents.specs import TOOLS, TOOLS_BY_NAME

    session = session_id or new_id("mcp")
    text = instructions if instructions is not None else agent_instructions(funes.config.values.get("prompts_dir"))

    def caller_for(ctx: ServerRequestContext[Any, Any]) -> Caller:
        default = Caller(
            tenant=funes.config.tenant,
            user_id=funes.config.user or None,
            agent_id=agent_id or _client_name(ctx) or "mcp",
            session_id=session,
        )
        return default if caller_of is None else caller_of(ctx, default)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(spec) for spec in TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if authorize is not None:
            # The role comes first: a read key's delete_memory used to run (issue 31).
            try:
                authorize(ctx, TOOLS_BY_NAME.get(params.name))
            except FunesError as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"Error: {exc.message} {exc.hint or ''}".strip())],
                    structured_content={"error": exc.to_dict()},
                    is_error=True,
                )
        run = partial(funes.execute_tool, params.name, params.arguments or {}, caller=caller_for(ctx), project=project)
        result = await anyio.to_thread.run_sync(run)
        text, data = result.text, result.data
        if result.is_error and public is not None:
            text = public(text)
            data = json.loads(public(json.dumps(data)))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=data, is_error=result.is_error
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=STATS_URI,
                    name="stats",
                    title="Memory store statistics",
                    description="Record counts by kind, type and scope, store size and the embedding model.",
                    mime_type="application/json",
                ),
                types.Resource(
                    uri=SCOPES_URI,
                    name="scopes",
                    title="Memory scopes",
                    description="Team, project and session scopes visible to this server, with record counts.",
                    mime_type="application/json",
                ),
            ]
        )

    async def list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=MEMORY_URI_PREFIX + "{id}",
                    name="memory",
                    title="One memory",
                    description="Every field of one memory record, with its version history.",
                    mime_type="application/json",
                )
            ]
        )

    def read(uri: str, caller: Caller) -> types.ReadResourceResult:
        if uri == STATS_URI:
            # Never the store's file-system path: an agent has no use for it (issues 27, 31).
            return _json(uri, funes.stats(tenant=caller.tenant))
        if uri == SCOPES_URI:
            return _json(uri, funes.execute_tool("list_scopes", {}, caller=caller, project=project).data)
        if uri.startswith(MEMORY_URI_PREFIX):
            return _json(uri, funes.read_memory(uri[len(MEMORY_URI_PREFIX) :], caller=caller).to_dict())
        raise MCPError(
            types.INVALID_PARAMS,
            f"Unknown resource {uri!r}. Resources are {STATS_URI}, {SCOPES_URI} and {MEMORY_URI_PREFIX}{{id}}.",
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            return await anyio.to_thread.run_sync(read, str(params.uri), caller_for(ctx))
        except FunesError as exc:
            raise MCPError(types.INVALID_PARAMS, public(str(exc)) if public is not None else str(exc)) from exc

    prompt = types.Prompt(
        name=PROMPT_NAME,
        title="Memory management instructions",
        description="When to store memories, how to classify and score them, and to search before asking again.",
    )

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt {params.name!r}; the only prompt is {PROMPT_NAME!r}.")
        return types.GetPromptResult(
            description=prompt.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        title="Funes memory",
        description="Local long-term memory: create, search, update and delete memories; search ingested documents.",
        instructions=text,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("funes-mcp %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]  # nothing may write log lines to stdout, the stdio wire
    root.setLevel(logging.WARNING)


def run_stdio(open_funes: Callable[[], Funes], *, project: str, session_id: str | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    _log_to_stderr()

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            funes = await anyio.to_thread.run_sync(open_funes)
            server = build_server(funes, project=project, session_id=session_id)
            settle_heap()
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


TOKEN_ENV = "FUNES_MCP_TOKEN"


def http_token() -> tuple[str, bool]:
    """The bearer token for ``--http``: ``FUNES_MCP_TOKEN`` if set, else a new random one; (token, generated)."""
    given = os.environ.get(TOKEN_ENV, "")
    if given.strip():
        return given.strip(), False
    return secrets.token_urlsafe(32), True


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    Any local OS user can reach 127.0.0.1, so without it another user read a
    stored secret with curl and planted a memory (issue 9). The SDK's Host and
    Origin checks still run behind this one.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Pass an authorised request on; answer any other with 401."""
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps(
                    {
                        "error": {
                            "code": "unauthorized",
                            "message": "This Funes MCP server needs its bearer token.",
                            "hint": "Send `Authorization: Bearer <token>`: the token `funes mcp --http` printed "
                            f"at start, or the value of {TOKEN_ENV} it was started with.",
                        }
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="funes"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(funes: Funes, *, project: str, session_id: str | None = None, token: str | None = None) -> Any:
    """The streamable HTTP ASGI app (path ``/mcp``), with DNS-rebinding protection for localhost.

    With ``token``, requests without that bearer token are refused (``funes mcp --http`` always sets one).
    """
    server = build_server(funes, project=project, session_id=session_id)
    app = server.streamable_http_app(host=HOST)
    if token is None:
        return app
    # Starlette's lifespan (the session manager) must still reach the inner app: BearerAuth passes non-HTTP scopes on.
    return BearerAuth(app, token)


def run_http(open_funes: Callable[[], Funes], *, project: str, port: int, session_id: str | None = None) -> None:
    """Serve MCP over streamable HTTP on 127.0.0.1:PORT until interrupted (bearer token required)."""
    import uvicorn

    _log_to_stderr()
    token, generated = http_token()
    funes = open_funes()
    app = http_app(funes, project=project, session_id=session_id, token=token)
    print(f"Funes MCP server: http://{HOST}:{port}/mcp (project {project})", file=sys.stderr, flush=True)
    if generated:
        # Printed once and never stored: set FUNES_MCP_TOKEN to choose a stable one.
        print(
            f"Bearer token (send `Authorization: Bearer <token>`; set {TOKEN_ENV} to fix it): {token}",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(f"Bearer token: from {TOKEN_ENV}.", file=sys.stderr, flush=True)

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    # uvicorn shuts down gracefully on SIGTERM, then re-raises it; with the default handler the
    # process would die before the service flushes its access log, so the re-raise exits cleanly.
    previous = signal.signal(signal.SIGTERM, stop)
    settle_heap()
    try:
        uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning")).run()
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["build_server", "http_app", "resolve_project", "run_http", "run_stdio"]
