"""Read-your-writes across server processes: ``Funes-Position`` out of a write, ``Funes-Read-After`` into a read.

With a read replica, each ``funes serve`` process sends a tenant's reads to
the primary until the replica holds that tenant's last write *it* made. Behind
a load balancer, a client's next request may reach another process, which
knows nothing of the write. So a response to a request that wrote carries the
WAL position its writes ended at (``Funes-Position: 0/3A2F1C8``); a client that
sends it back as ``Funes-Read-After`` on a later request, to any process, reads
from the replica only once the replica has replayed that far, else from the
primary (:mod:`funes.store.consistency`). Without a replica no position is
sent, and a presented one changes nothing (every read already sees every
committed write); a malformed one is refused with 400.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidInput
from ...store.consistency import noting_writes, parse_token, reading_after
from .auth import error_response

POSITION = b"funes-position"
READ_AFTER = b"funes-read-after"


class Consistency:
    """A pure ASGI middleware: the request's ``Funes-Read-After`` in, its writes' ``Funes-Position`` out."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Run the request after the presented position, noting where its writes end."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        presented = dict(scope.get("headers") or ()).get(READ_AFTER, b"").decode("latin-1")
        try:
            after = parse_token(presented)
        except InvalidInput as exc:
            await error_response(send, 400, exc, path=scope.get("path", ""))
            return
        with reading_after(after), noting_writes() as mark:

            async def sending(message: dict[str, Any]) -> None:
                # The route has run by the time its response starts (a streamed body's later writes go unnoted).
                if message.get("type") == "http.response.start" and mark.token is not None:
                    headers = [h for h in message.get("headers") or () if h[0].lower() != POSITION]
                    message = {**message, "headers": [*headers, (POSITION, mark.token.encode("latin-1"))]}
                await send(message)

            await self.app(scope, receive, sending)
