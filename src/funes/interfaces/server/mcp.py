"""MCP for teams: the agent tools over streamable HTTP at ``/mcp``, behind the same API keys.

The tenant and user of every tool call come from the request's key (resolved
by :class:`~.auth.KeyAuth`), never from tool arguments. Host and Origin are
checked against loopback (DNS-rebinding protection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...memory.keys import Principal
from ...models import Caller
from .auth import PRINCIPAL

if TYPE_CHECKING:
    from ...service import Funes


@dataclass
class TeamMcp:
    """The MCP ASGI endpoint and its session manager (run by the app's lifespan)."""

    asgi: Any
    session_manager: Any


def team_mcp(funes: Funes, *, allowed_hosts: list[str] | None = None) -> TeamMcp:
    """An MCP endpoint whose callers are the keys' principals."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from ..mcp_server import build_server

    def caller_of(ctx: Any, default: Caller) -> Caller:
        request = getattr(ctx, "request", None)
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        principal: Principal | None = state.get(PRINCIPAL)
        if principal is None:
            raise PermissionError("no API key on this MCP request")
        return Caller(
            tenant=principal.team,
            user_id=principal.viewer,
            agent_id=default.agent_id,
            session_id=f"mcp-{principal.key_id or 'local'}",
        )

    server = build_server(funes, project=None, caller_of=caller_of)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts or ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=security)
    return TeamMcp(asgi=StreamableHTTPASGIApp(manager), session_manager=manager)
