"""The list_memories agent tool: memories newest first, narrowed by filters, one page per call.

An agent browses what memory holds (for review or clean-up) without a query:
the filters narrow the listing and ``next_cursor`` fetches the next page. It
sees what search_memories sees: memories and insights of its tenant and user,
team scope, the current project's and the current session's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..memory.safety import FENCE_NOTE
from ..models import Caller, Memory
from .briefs import AGENT_KINDS, memory_brief, recalled

if TYPE_CHECKING:
    from ..memory.core import Core
    from .specs import ListMemoriesArgs


def list_memories(
    core: Core, args: ListMemoriesArgs, caller: Caller, project: str | None, snippet_chars: int
) -> tuple[str, dict[str, Any], list[Memory]]:
    """One page of the caller's memories, newest first: the text for the model, the data, the memories."""
    page = core.list(
        tenant=caller.tenant,
        user=caller.user_id,
        types=args.memory_types or None,
        kinds=AGENT_KINDS,
        scopes=[args.scope] if args.scope else None,
        project=project,
        session=caller.session_id,
        pinned=args.pinned,
        entity_types=[args.entity_type] if args.entity_type else None,
        refs=[(args.reference_type, args.reference_id)] if args.reference_type and args.reference_id else None,
        cursor=args.cursor,
        limit=args.limit or 20,
    )
    items = list(page.items)
    data: dict[str, Any] = {
        "count": len(items),
        "memories": [memory_brief(m) for m in items],
        "next_cursor": page.next_cursor,
    }
    if not items and not page.next_cursor:
        return "No memories match these filters.", data, items
    lines = [f"{len(items)} {'memory' if len(items) == 1 else 'memories'}, newest first:", ""]
    lines += [
        f"- [{m.memory_type} · {m.scope} · {m.attribution}] {recalled(m, snippet_chars)} (id: {m.id})" for m in items
    ]
    if page.next_cursor:
        lines += ["", f"More: call list_memories again with cursor {page.next_cursor!r}."]
    lines.append(FENCE_NOTE)
    return "\n".join(lines), data, items
