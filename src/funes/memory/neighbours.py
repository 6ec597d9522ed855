"""The conversation around a recalled chat message: the turns just before and after it.

A chat turn is often meaningless alone ("Yes, last Tuesday!"), and the
evidence a question needs is often the turn next to the one that matched
(on LoCoMo, counting the ±1 neighbours of each hit lifts recall@10 by about
0.12; docs/benchmarks.md). So a search hit that is a chat message carries
its neighbours as ``SearchHit.context``, and automatic context renders them
with it: one hit, one short stretch of conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..models import Memory, SearchHit, SearchResults, Turn
from ..models.messages import Recalled
from ..store.base import Store


def anchor_of(hit: SearchHit) -> tuple[str, int] | None:
    """The (session id, seq) of a hit that is a chat message (None for other records)."""
    turn = turn_of(hit.memory)
    return None if turn is None else (turn.session_id, turn.seq)


def with_turns(store: Store, tenant: str, hits: SearchResults, width: int, until: datetime | None) -> SearchResults:
    """``hits`` (and their groups) with each chat message's ``width`` turns before and after it (none after ``until``)."""
    anchors = {h.memory.id: anchor_of(h) for h in hits}
    wanted = sorted({a for a in anchors.values() if a is not None})
    if width <= 0 or not wanted:
        return hits
    by_session: dict[str, list[Turn]] = {}
    for turn in store.turns_near(tenant, wanted, width):
        if until is None or turn.created_at <= until:
            by_session.setdefault(turn.session_id, []).append(turn)

    def around(hit: SearchHit) -> SearchHit:
        anchor = anchors.get(hit.memory.id)
        if anchor is None:
            return hit
        session, seq = anchor
        return replace(hit, context=tuple(t for t in by_session.get(session, ()) if 0 < abs(t.seq - seq) <= width))

    groups = hits.groups
    if groups is not None:  # grouped hits carry their turns too
        groups = tuple(replace(g, hits=tuple(around(h) for h in g.hits)) for g in groups)
    return SearchResults((around(h) for h in hits), degraded=hits.degraded, groups=groups)


def turn_of(memory: Memory) -> Turn | None:
    """A chat-message record as a turn of its session (None for other records)."""
    src = memory.source
    if memory.kind != "message" or src is None:
        return None
    seq, session = src.locator.get("seq"), src.locator.get("session") or memory.session_id
    if not isinstance(seq, int) or isinstance(seq, bool) or not session:
        return None
    role = str(src.locator.get("role") or "message")
    message_id = str(src.locator.get("message_id") or memory.id)
    return Turn(message_id, str(session), seq, role, memory.content, memory.created_at, (memory.id,))


def merge_windows(items: Sequence[Recalled]) -> list[Recalled]:
    """Recalled messages whose windows overlap or touch in one session, merged into the better one's window.

    Two hits two turns apart share a turn; shown apart, that turn and a
    memory header are paid twice out of a small budget (at a 32k window the
    recalled history holds about five windows).
    """
    out: list[Recalled] = []
    spans: list[tuple[str, set[int]] | None] = []
    for item in items:
        own = turn_of(item.memory)
        if own is None:
            out.append(item)
            spans.append(None)
            continue
        span = {own.seq} | {t.seq for t in item.context}
        target = next(
            (
                i
                for i, s in enumerate(spans)
                if s is not None
                and s[0] == own.session_id
                and min(s[1]) - 1 <= max(span)
                and min(span) <= max(s[1]) + 1
            ),
            None,
        )
        if target is None:
            out.append(item)
            spans.append((own.session_id, span))
            continue
        kept = out[target]
        anchor = turn_of(kept.memory)
        turns = {t.seq: t for t in (*item.context, own, *kept.context)}
        if anchor is not None:
            turns.pop(anchor.seq, None)
        out[target] = replace(kept, context=tuple(turns[s] for s in sorted(turns)))
        spans[target] = (own.session_id, spans[target][1] | span)  # type: ignore[index]
    return out
