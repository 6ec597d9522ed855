"""Search hits grouped by conversation: ``search(group_by="session")``.

"Which conversation was that?" is answered by sessions, not by single
messages: ten hits of one long chat would otherwise fill every slot. This
module turns ranked hits into :class:`~funes.models.SessionGroup` values.

Invariants owned here:

* only chat messages of a Funes session (kind ``message`` with a session id)
  are grouped; every other hit (memories, document chunks, Markdown,
  messages of imported chat exports, which belong to no session) is left
  out of a grouped result;
* groups are ordered by their best hit (group score and relevance are that
  hit's), and hold at most :data:`HITS_PER_GROUP` hits, best first;
* ``limit`` counts groups; the search fetches :func:`fetch_size` hits to fill
  them (bounded, so a grouped search costs at most a 1,000-hit search).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInput
from ..models import GROUP_BY, SearchHit, SearchResults, SessionGroup

HITS_PER_GROUP = 3
HITS_PER_GROUP_FETCHED = 10  # hits fetched per group asked for
MAX_FETCHED = 1000  # the search limit's own ceiling


def check_group_by(group_by: str | None) -> str | None:
    """``group_by`` when it is None or a known grouping, else an error naming the choices."""
    if group_by is not None and group_by not in GROUP_BY:
        raise InvalidInput(
            f"Invalid group_by {group_by!r}.",
            hint=f"Use one of: {', '.join(GROUP_BY)}; or leave it out for one hit per record.",
        )
    return group_by


def fetch_size(group_by: str | None, limit: int) -> int:
    """How many hits a search fetches to fill ``limit`` results (``limit`` groups when grouping)."""
    if check_group_by(group_by) is None:
        return limit
    return max(limit, min(limit * HITS_PER_GROUP_FETCHED, MAX_FETCHED))


def session_of(hit: SearchHit) -> str | None:
    """The session a hit's chat message was said in (None for any other record)."""
    memory = hit.memory
    if memory.kind != "message":
        return None
    if memory.session_id:
        return memory.session_id
    located = memory.source.locator.get("session") if memory.source is not None else None
    return str(located) if located else None


def group_sessions(hits: Sequence[SearchHit], limit: int, per_group: int = HITS_PER_GROUP) -> list[SessionGroup]:
    """The best ``limit`` sessions among ranked ``hits``, each with its best ``per_group`` hits."""
    ordered = sorted(hits, key=lambda h: h.relevance, reverse=True)  # stable: ties keep the search's order
    members: dict[str, list[SearchHit]] = {}
    for hit in ordered:
        session = session_of(hit)
        if session is None:
            continue  # not a session's message: grouped results leave it out
        if session not in members:
            if len(members) == limit:
                continue  # a later, weaker session: the groups are full
            members[session] = []
        if len(members[session]) < per_group:
            members[session].append(hit)
    groups: list[SessionGroup] = []
    for session, kept in members.items():
        best = kept[0]
        times = [h.memory.created_at for h in kept]
        title = next((str(h.memory.source.locator["title"]) for h in kept if _title(h)), None)
        groups.append(
            SessionGroup(
                session_id=session,
                title=title,
                score=best.score,
                relevance=best.relevance,
                first_at=min(times),
                last_at=max(times),
                hits=tuple(kept),
            )
        )
    return groups


def grouped(hits: SearchResults, group_by: str | None, limit: int) -> SearchResults:
    """``hits`` as asked: unchanged without ``group_by``; else the best ``limit`` groups and their hits, flattened."""
    if check_group_by(group_by) is None:
        return hits
    groups = group_sessions(hits, limit)
    return SearchResults(
        (h for g in groups for h in g.hits),
        degraded=hits.degraded,
        groups=tuple(groups),
    )


def _title(hit: SearchHit) -> bool:
    source = hit.memory.source
    return source is not None and bool(source.locator.get("title"))
