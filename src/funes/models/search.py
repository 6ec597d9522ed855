"""Search values: what a search asks (:class:`SearchQuery`, :class:`SearchFilters`) and what it returns.

Hits carry their explanation, attribution and calibrated relevance; grouped
results carry sessions. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, NamedTuple

from ..errors import InvalidInput
from .records import Memory, Reference, SourceRef, format_time, utcnow


@dataclass(frozen=True)
class RankFields:
    """The fields of a record that ranking reads: fetched for every candidate, cheaper than a Memory."""

    id: str
    scope: str
    project_id: str | None
    importance: float
    updated_at: datetime
    expires_at: datetime | None
    # The time the record is about (a message: when it was said); date-aware ranking reads it.
    created_at: datetime | None = None

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the record's expiry has passed."""
        return self.expires_at is not None and self.expires_at <= (now or utcnow())


class JudgedRecord(NamedTuple):
    """What search judges and orders every candidate by: its text and its place in a chat.

    A light stand-in for the :class:`~funes.models.Memory` of the same id
    (the same attribute names), about a tenth of its cost to make; search
    reads whole records only for the hits it returns.
    """

    id: str
    title: str | None
    content: str
    kind: str
    session_id: str | None
    source: SourceRef | None
    author: str
    created_at: datetime
    updated_at: datetime
    # How many vectors the store holds for it (its text's parts, then its passage windows): a record of one
    # has no windows, so search skips working out its layout. None: not read.
    vectors: int | None = None


@dataclass(frozen=True)
class Caller:
    """Who is asking: the tenant (team or user space) and optionally the user.

    The tenant is the isolation boundary: nothing of another tenant is ever
    visible. Within a tenant, records owned by a user (``user_id`` set) are
    visible to that user and to tenant-wide callers (``user_id`` None).
    """

    tenant: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        # An empty tenant used to fall through to the default tenant, with read,
        # update and delete there (issue 9); a blank name is a mistake, never "default".
        check_identity(self.tenant, "tenant")
        if self.user_id is not None:
            check_identity(self.user_id, "user")


def check_identity(value: object, what: str) -> str:
    """A tenant or user name as given, or InvalidInput when it is empty, blank or not text."""
    from ..errors import InvalidInput

    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            f"The {what} must be a non-empty name, got {value!r}.",
            hint=f"Pass a real {what} name, or leave it out to use the configured one (`funes config`).",
        )
    return value


@dataclass(frozen=True)
class SearchFilters:
    """Filters of a search; every filter is applied inside the indexes."""

    tenant: str = "default"
    user_id: str | None = None
    scopes: tuple[str, ...] | None = None
    project_id: str | None = None
    session_id: str | None = None
    memory_types: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    source_types: tuple[str, ...] | None = None
    source_ids: tuple[str, ...] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    # Entity, reference and message-role filters live only in the records table (not the vector
    # index's metadata): a search with them ranks vectors among the matching records alone.
    entity_types: tuple[str, ...] | None = None
    entity_ids: tuple[str, ...] | None = None
    references: tuple[Reference, ...] | None = None
    # Only chat-message records (kind "message") whose ``locator.role`` is one of these.
    roles: tuple[str, ...] | None = None

    @property
    def records_only(self) -> bool:
        """Whether a filter that only the records table can apply (entity, reference, role) is set."""
        return bool(self.entity_types or self.entity_ids or self.references or self.roles)


# Seed 001's default scope per entity type: CONNECTION is team-wide, the others
# belong to one file (a project here); CHAT_INSIGHT's scope is the extractor's call.
ENTITY_SCOPES: dict[str, str] = {
    "FILE": "project",
    "CODE_CELL": "project",
    "DATA_TABLE": "project",
    "SHEET_TABLE": "project",
    "CONNECTION": "team",
}


@dataclass(frozen=True)
class Explanation:
    """Per-signal explanation of a hit's score."""

    keyword_rank: int | None
    keyword_score: float | None
    vector_rank: int | None
    vector_similarity: float | None
    fused: float
    boosts: dict[str, float]
    score: float
    # Each leg's share of ``fused`` (they sum to it): keyword and vector.
    contributions: dict[str, float] = field(default_factory=dict)
    # Calibrated probability that the hit answers the query (funes.relevance),
    # and the hit's own signals it was computed from; None until computed.
    relevance: float | None = None
    signals: dict[str, float | None] | None = None
    # The time windows the query named (funes.query_dates), which the ``date`` boost measured.
    dates: tuple[dict[str, Any], ...] = ()
    # The passage window that matched best, when it beat the whole text (funes.memory.windows):
    # its sentences (from 1), text and cosine.
    passage: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "keyword_rank": self.keyword_rank,
            "keyword_score": self.keyword_score,
            "vector_rank": self.vector_rank,
            "vector_similarity": self.vector_similarity,
            "fused": self.fused,
            "boosts": self.boosts,
            "score": self.score,
            "contributions": self.contributions,
            "relevance": self.relevance,
            "signals": self.signals,
            "dates": [dict(d) for d in self.dates],
            "passage": self.passage,
        }


@dataclass(frozen=True)
class Turn:
    """A chat message beside a hit: the conversation around a recalled message."""

    message_id: str
    session_id: str
    seq: int
    role: str
    content: str
    created_at: datetime
    record_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "message_id": self.message_id,
            "session_id": self.session_id,
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "created_at": format_time(self.created_at),
        }


def turns_around(memory: Memory, turns: Iterable[Turn]) -> tuple[list[Turn], list[Turn]]:
    """The turns before and after a chat-message record, oldest first (all before it if its place is unknown)."""
    src = memory.source
    seq = src.locator.get("seq") if src is not None else None
    ordered = sorted(turns, key=lambda t: t.seq)
    if not isinstance(seq, int) or isinstance(seq, bool):
        return ordered, []
    return [t for t in ordered if t.seq < seq], [t for t in ordered if t.seq > seq]


@dataclass(frozen=True)
class SearchHit:
    """A record found by search, with its score and why.

    ``context`` holds, for a chat message, the turns just before and after it
    in its session (oldest first; ``context_turns`` setting): a reply such as
    "Yes, last Tuesday" means little without the question it answers.

    ``weak`` marks a hit under the floor automatic context abstains at
    (``context_min_relevance``, or ``context_unseen_name_relevance`` when the
    query names someone or something no memory mentions): search still
    returns it, ranked by the same ``relevance`` it shows, but it is likely
    not what was asked for.
    """

    memory: Memory
    score: float
    explanation: Explanation
    context: tuple[Turn, ...] = ()
    weak: bool = False

    @property
    def attribution(self) -> str:
        """The rendered source attribution."""
        return self.memory.attribution

    @property
    def similarity(self) -> float:
        """Cosine similarity between the query and the record (0 if unknown)."""
        sim = self.explanation.vector_similarity
        return 0.0 if sim is None else sim

    @property
    def relevance(self) -> float:
        """Calibrated probability that the hit answers the query (0 if not computed)."""
        value = self.explanation.relevance
        return 0.0 if value is None else value

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "score": self.score,
            "relevance": self.relevance,
            "weak": self.weak,
            "attribution": self.attribution,
            "explanation": self.explanation.to_dict(),
            "memory": self.memory.to_dict(),
            "context": [t.to_dict() for t in self.context],
        }


KEYWORD_ONLY = "keyword-only"


@dataclass(frozen=True)
class SessionGroup:
    """The hits of one conversation, for ``search(group_by="session")``: "which conversation was that".

    ``score`` and ``relevance`` are those of its best hit; ``first_at`` and
    ``last_at`` span the times of its hits' messages (not the whole session);
    ``hits`` are best first, at most a few per group.
    """

    session_id: str
    title: str | None
    score: float
    relevance: float
    first_at: datetime
    last_at: datetime
    hits: tuple[SearchHit, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, hits included."""
        return {
            "session_id": self.session_id,
            "title": self.title,
            "score": self.score,
            "relevance": self.relevance,
            "first_at": format_time(self.first_at),
            "last_at": format_time(self.last_at),
            "hits": [h.to_dict() for h in self.hits],
        }


class SearchResults(list[SearchHit]):
    """Search hits, best first, and how the search ran.

    ``degraded`` is ``"keyword-only"`` when the embedder could not be reached
    and the hits come from the keyword leg alone; None for a full search.
    ``groups`` is set by ``search(group_by="session")``: the conversations,
    best first; the list itself then holds their hits, flattened in group
    order. None for an ungrouped search.
    """

    def __init__(
        self,
        hits: Iterable[SearchHit] = (),
        *,
        degraded: str | None = None,
        groups: tuple[SessionGroup, ...] | None = None,
    ) -> None:
        super().__init__(hits)
        self.degraded = degraded
        self.groups = groups


#: A reference as callers give it: a Reference, (type, id), {"type": ..., "id": ...} or "type:id".
RefLike = Reference | tuple[str, str] | dict[str, str] | str

# Fields that take several values: a list becomes a tuple; a lone string is refused (a
# typo for a list is likelier than a one-letter choice). The entity filters and refs are
# checked where the filters are built (refs also take one "type:id").
_MANY = ("scopes", "types", "kinds", "source_types", "source_ids", "roles")
_CHECKED_LATER = ("entity_types", "entity_ids", "refs")


@dataclass(frozen=True)
class SearchQuery:
    """One search as a value: what is asked, where to look, as of when, how it is grouped, how many and how sure.

    Each shell builds it once (``SearchQuery("seat preference", types=["preference"], limit=5)``,
    or :meth:`of` from keyword options) and passes it down unchanged: the core checks it and
    resolves it against the settings into a :class:`SearchPlan`, which the ranking layer runs.

    * where to look: ``tenant``, ``user`` (None: the configured ones), ``scopes``, ``project``,
      ``session``, ``types``, ``kinds``, ``source_types`` (source filter names such as
      ``documents`` or raw source types), ``source_ids``, ``since``/``until``, ``entity_types``,
      ``entity_ids``, ``refs`` (``"rfp:RFP-7"``; a record must carry every one) and ``roles``;
    * time: ``as_of`` reads each record as it was at that moment (the version valid then; a
      date alone means the end of that day); ``include_superseded`` adds earlier states, marked;
    * grouping: ``group_by="session"`` and ``context_turns`` (the turns around a chat hit);
    * limits and floors: ``limit``, ``min_similarity``, ``min_relevance`` (None: the settings);
    * bookkeeping: ``track`` writes the access log, ``agent`` names who asked.
    """

    text: str
    tenant: str | None = None
    user: str | None = None
    scopes: tuple[str, ...] | None = None
    project: str | None = None
    session: str | None = None
    types: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    source_types: tuple[str, ...] | None = None
    source_ids: tuple[str, ...] | None = None
    since: datetime | str | None = None
    until: datetime | str | None = None
    entity_types: tuple[str, ...] | None = None
    entity_ids: tuple[str, ...] | None = None
    refs: tuple[RefLike, ...] | None = None
    roles: tuple[str, ...] | None = None
    as_of: datetime | str | None = None
    include_superseded: bool = False
    group_by: str | None = None
    context_turns: int | None = None
    limit: int | None = None
    min_similarity: float | None = None
    min_relevance: float | None = None
    track: bool = True
    agent: str | None = None

    def __post_init__(self) -> None:
        for name in (*_MANY, *_CHECKED_LATER):
            value = getattr(self, name)
            if isinstance(value, str):
                if name in _CHECKED_LATER:
                    continue
                raise InvalidInput(f"{name} takes a list, got the string {value!r}.", hint=f'Pass {name}=["{value}"].')
            if value is not None:
                object.__setattr__(self, name, tuple(value) or None)

    @classmethod
    def of(cls, query: str | SearchQuery, **options: Any) -> SearchQuery:
        """A query from a text and keyword options, or a query with some of its options replaced.

        An unknown option is refused with the names that exist, so a typo never widens a search.
        """
        names = [f.name for f in fields(cls) if f.name != "text"]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise InvalidInput(
                f"search() got unknown option(s) {', '.join(unknown)}.", hint=f"Use any of: {', '.join(names)}."
            )
        if isinstance(query, SearchQuery):
            return replace(query, **options) if options else query
        return cls(query, **options)


@dataclass(frozen=True)
class SearchPlan:
    """A checked :class:`SearchQuery` resolved against the settings: what the ranking layer runs.

    ``now`` is ``as_of`` or the wall clock; ``fetch`` is how many ranked hits to gather
    (more than ``limit`` when hits are grouped by session); ``min_relevance`` is the floor
    in force (the setting when the query gave none); ``project`` is the project boosted.
    """

    query: SearchQuery
    filters: SearchFilters
    now: datetime
    limit: int
    fetch: int
    min_similarity: float | None
    min_relevance: float
    project: str | None
    context_turns: int
    as_of: datetime | None = None

    @property
    def text(self) -> str:
        """The words searched for."""
        return self.query.text
