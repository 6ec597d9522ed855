"""MCP for teams: the agent tools over streamable HTTP at ``/mcp``, behind the same API keys.

The tenant and user of every tool call come from the request's key (resolved
by :class:`~.auth.KeyAuth`), never from tool arguments. Host and Origin are
checked against loopback (DNS-rebinding protection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import Unauthorized
from ...memory.keys import Principal
from ...models import Caller
from .auth import PRINCIPAL, path_scrubber

if TYPE_CHECKING:
    from ...agents.specs import ToolSpec
    from ...service import Funes


@dataclass
class TeamMcp:
    """The MCP ASGI endpoint and its session manager (run by the app's lifespan)."""

    asgi: Any
    session_manager: Any


def principal_of_request(ctx: Any) -> Principal:
    """The principal :class:`~.auth.KeyAuth` attached to an MCP request."""
    request = getattr(ctx, "request", None)
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    principal: Principal | None = state.get(PRINCIPAL)
    if principal is None:
        raise Unauthorized("No API key on this MCP request.", hint="Send `Authorization: Bearer <key>`.")
    return principal


def team_mcp(funes: Funes, *, allowed_hosts: list[str] | None = None) -> TeamMcp:
    """An MCP endpoint whose callers are the keys' principals."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from ..mcp_server import build_server

    def caller_of(ctx: Any, default: Caller) -> Caller:
        principal = principal_of_request(ctx)
        return Caller(
            tenant=principal.team,
            user_id=principal.viewer,
            agent_id=default.agent_id,
            session_id=f"mcp-{principal.key_id or 'local'}",
        )

    def authorize(ctx: Any, spec: ToolSpec | None) -> None:
        # A tool that is not read-only (or an unknown name) needs the write role.
        principal_of_request(ctx).require("read" if spec is not None and spec.hints.read_only else "write")

    server = build_server(funes, project=None, caller_of=caller_of, authorize=authorize, public=path_scrubber(funes))
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts or ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=security)
    return TeamMcp(asgi=StreamableHTTPASGIApp(manager), session_manager=manager)
