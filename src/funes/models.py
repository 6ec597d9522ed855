"""Domain values of Funes. No I/O here.

Everything Funes recalls is a :class:`Memory` record in ONE index: a stated
preference, a PDF chunk, a spreadsheet table section, a chat message, a
Markdown section. Records differ by fields, not by table.

Invariants owned by this module:

* importance is in [0, 1] and defaults by memory type (preference 0.9,
  decision 0.7, fact 0.6, context 0.5, conversation 0.3);
* a record keeps at most :data:`MAX_PREVIOUS_VERSIONS` previous versions, the
  oldest dropped first;
* the content hash is tagged with its algorithm (``sha256:<hex>``);
* timestamps are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from .errors import FunesError

MemoryType = Literal["preference", "fact", "decision", "context", "conversation"]
Scope = Literal["session", "project", "team"]

MEMORY_TYPES: tuple[str, ...] = ("preference", "fact", "decision", "context", "conversation")
SCOPES: tuple[str, ...] = ("session", "project", "team")
KINDS: tuple[str, ...] = (
    "memory",
    "document_chunk",
    "message",
    "markdown",
    "insight",
    "entity_summary",
)
# Who said a chat message (its record's ``locator.role``): what ``search(roles=...)`` accepts.
MESSAGE_ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
# How search can group its hits: "session" answers "which conversation was that".
GROUP_BY: tuple[str, ...] = ("session",)
DEFAULT_IMPORTANCE: dict[str, float] = {
    "preference": 0.9,
    "decision": 0.7,
    "fact": 0.6,
    "context": 0.5,
    "conversation": 0.3,
}
MAX_PREVIOUS_VERSIONS = 5
HASH_ALGORITHM = "sha256"
NO_EXPIRY = 1e18  # epoch seconds standing for "never" inside the indexes


def utcnow() -> datetime:
    """The current time as an aware UTC datetime, to the microsecond."""
    return datetime.now(UTC)


def to_epoch(value: datetime | None) -> float | None:
    """An aware datetime as epoch seconds (None stays None)."""
    return None if value is None else value.timestamp()


def from_epoch(value: float | None) -> datetime | None:
    """Epoch seconds as an aware UTC datetime (None stays None)."""
    return None if value is None else datetime.fromtimestamp(value, UTC)


def parse_time(value: str | datetime | None) -> datetime | None:
    """An ISO-8601 string or datetime as an aware UTC datetime."""
    if value is None or isinstance(value, datetime):
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_time(value: datetime | None) -> str | None:
    """An aware datetime as ISO-8601 text (None stays None)."""
    return None if value is None else value.astimezone(UTC).isoformat()


def content_hash(text: str) -> str:
    """The content hash of a text, tagged with its algorithm."""
    return f"{HASH_ALGORITHM}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


_LAST_ID = [0]
_ID_LOCK = threading.Lock()


def new_id(prefix: str = "mem") -> str:
    """A new time-sortable id (monotonic ULID body) with a readable prefix.

    Ids made in the same millisecond by one process still sort in creation
    order (the random part is incremented), so "newest first" listings and
    cursors never reorder records created together.
    """
    with _ID_LOCK:
        value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
        if value >> 80 <= _LAST_ID[0] >> 80:
            value = _LAST_ID[0] + 1
        _LAST_ID[0] = value
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


@dataclass(frozen=True)
class Reference:
    """A pointer to an entity outside Funes (an order, a vendor, a ticket)."""

    type: str
    id: str


@dataclass(frozen=True)
class SourceRef:
    """Where a record came from: a source and a locator inside it.

    ``type`` is one of user, agent, import, text, markdown, pdf, sheet, chat.
    ``locator`` holds the position: page and section, sheet and range,
    message id and role, header path.
    """

    type: str
    uri: str | None = None
    source_id: str | None = None
    locator: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        """Human-readable attribution, e.g. ``AnnualReport.pdf p.12 §Revenue``."""
        return render_attribution(self)


def _basename(uri: str | None) -> str:
    if not uri:
        return ""
    return uri.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]


def render_attribution(source: SourceRef | None) -> str:
    """Render a source and locator as a short citation."""
    if source is None:
        return "memory"
    loc = source.locator or {}
    name = loc.get("display_name") or _basename(source.uri)
    kind = source.type
    if kind == "pdf":
        parts = [name or "document.pdf"]
        if loc.get("page") is not None:
            end = loc.get("end_page")
            page = f"p.{loc['page']}" if not end or end == loc["page"] else f"pp.{loc['page']}-{end}"
            parts.append(page)
        if loc.get("section"):
            parts.append(f"§{loc['section']}")
        return " ".join(parts)
    if kind == "sheet":
        ref = loc.get("range") or loc.get("cell") or loc.get("name") or ""
        sheet = loc.get("sheet")
        if sheet and ref and "!" not in ref:
            ref = f"{sheet}!{ref}"
        return " ".join(p for p in (name or "workbook", ref) if p)
    if kind == "chat":
        # The message's own date, else the file's: a transcript without timestamps is still dated.
        stamp = str(loc.get("timestamp") or loc.get("file_date") or "")
        day = stamp[:10] if stamp else ""
        parts = ["chat"]
        if loc.get("display_name"):
            parts.append(str(loc["display_name"]))
        if loc.get("title"):
            parts.append(str(loc["title"]))
        if day:
            parts.append(day)
        if loc.get("role"):
            parts.append(str(loc["role"]))
        return " ".join(parts)
    if kind == "markdown":
        header = loc.get("header_path") or ""
        return " ".join(p for p in (loc.get("display_name") or source.uri or name, header) if p)
    if kind == "text":
        parts = [name or "text"]
        if loc.get("part"):
            parts.append(f"part {loc['part']}")
        return " ".join(parts)
    if kind in ("user", "agent", "import"):
        label = {"user": "user-stated", "agent": "agent-created", "import": "imported"}[kind]
        return f"{label}" + (f" {name}" if name else "")
    return " ".join(p for p in (kind, name) if p)


@dataclass(frozen=True)
class PreviousVersion:
    """A superseded state of a record, kept for history."""

    version: int
    content: str
    content_hash: str
    importance: float
    updated_at: datetime


@dataclass(frozen=True)
class Memory:
    """A memory record: the unit of everything Funes stores and recalls."""

    id: str
    content: str
    tenant: str = "default"
    user_id: str | None = None
    scope: str = "team"
    session_id: str | None = None
    project_id: str | None = None
    kind: str = "memory"
    memory_type: str = "fact"
    entity_type: str | None = None
    entity_id: str | None = None
    topic: str | None = None
    title: str | None = None
    source: SourceRef | None = None
    importance: float = 0.6
    pinned: bool = False
    expires_at: datetime | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    version: int = 1
    content_hash: str = ""
    previous_versions: tuple[PreviousVersion, ...] = ()
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    metadata: dict[str, Any] = field(default_factory=dict)
    references: tuple[Reference, ...] = ()

    @property
    def attribution(self) -> str:
        """The rendered source attribution of this record."""
        return render_attribution(self.source)

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the record's expiry has passed."""
        return self.expires_at is not None and self.expires_at <= (now or utcnow())

    def evolve(self, **changes: Any) -> Memory:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with every field (lossless)."""
        return {
            "id": self.id,
            "content": self.content,
            "tenant": self.tenant,
            "user_id": self.user_id,
            "scope": self.scope,
            "session_id": self.session_id,
            "project_id": self.project_id,
            "kind": self.kind,
            "memory_type": self.memory_type,
            "entity_type": self.entity_type,
            "entity_id": self.entity_id,
            "topic": self.topic,
            "title": self.title,
            "source": None
            if self.source is None
            else {
                "type": self.source.type,
                "uri": self.source.uri,
                "source_id": self.source.source_id,
                "locator": self.source.locator,
            },
            "attribution": self.attribution,
            "importance": self.importance,
            "pinned": self.pinned,
            "expires_at": format_time(self.expires_at),
            "access_count": self.access_count,
            "last_accessed": format_time(self.last_accessed),
            "version": self.version,
            "content_hash": self.content_hash,
            "previous_versions": [
                {
                    "version": v.version,
                    "content": v.content,
                    "content_hash": v.content_hash,
                    "importance": v.importance,
                    "updated_at": format_time(v.updated_at),
                }
                for v in self.previous_versions
            ],
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "metadata": self.metadata,
            "references": [{"type": r.type, "id": r.id} for r in self.references],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Memory:
        """Rebuild a record from :meth:`to_dict` output."""
        src = data.get("source")
        return cls(
            id=data["id"],
            content=data["content"],
            tenant=data.get("tenant", "default"),
            user_id=data.get("user_id"),
            scope=data.get("scope", "team"),
            session_id=data.get("session_id"),
            project_id=data.get("project_id"),
            kind=data.get("kind", "memory"),
            memory_type=data.get("memory_type", "fact"),
            entity_type=data.get("entity_type"),
            entity_id=data.get("entity_id"),
            topic=data.get("topic"),
            title=data.get("title"),
            source=None
            if not src
            else SourceRef(
                type=src["type"],
                uri=src.get("uri"),
                source_id=src.get("source_id"),
                locator=src.get("locator") or {},
            ),
            importance=float(data.get("importance", 0.6)),
            pinned=bool(data.get("pinned", False)),
            expires_at=parse_time(data.get("expires_at")),
            access_count=int(data.get("access_count", 0)),
            last_accessed=parse_time(data.get("last_accessed")),
            version=int(data.get("version", 1)),
            content_hash=data.get("content_hash") or content_hash(data["content"]),
            previous_versions=tuple(
                PreviousVersion(
                    version=int(v["version"]),
                    content=v["content"],
                    content_hash=v["content_hash"],
                    importance=float(v["importance"]),
                    updated_at=parse_time(v["updated_at"]) or utcnow(),
                )
                for v in data.get("previous_versions") or ()
            ),
            created_at=parse_time(data.get("created_at")) or utcnow(),
            updated_at=parse_time(data.get("updated_at")) or utcnow(),
            metadata=dict(data.get("metadata") or {}),
            references=tuple(Reference(type=r["type"], id=str(r["id"])) for r in data.get("references") or ()),
        )


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
    from .errors import InvalidInput

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
    """

    memory: Memory
    score: float
    explanation: Explanation
    context: tuple[Turn, ...] = ()

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


@dataclass(frozen=True)
class Page:
    """One page of a listing, with the cursor of the next page (None at the end)."""

    items: tuple[Memory, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class RememberResult:
    """What became of one item of :meth:`Funes.remember_many`.

    ``status`` is ``created`` (stored now), ``duplicate`` (the same content
    already stands in that scope, in the store or earlier in the batch:
    ``memory`` is that record) or ``error`` (the item was invalid and nothing
    was stored for it: ``error`` says why and what to do).
    """

    index: int
    status: Literal["created", "duplicate", "error"]
    memory: Memory | None = None
    error: FunesError | None = None

    @property
    def ok(self) -> bool:
        """Whether the item's content now stands in memory (created or already there)."""
        return self.status != "error"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: index, status, and the record's id or the error."""
        out: dict[str, Any] = {"index": self.index, "status": self.status}
        if self.memory is not None:
            out["id"] = self.memory.id
        if self.error is not None:
            out["error"] = self.error.to_dict()
        return out


@dataclass(frozen=True)
class ForgetResult:
    """What :meth:`Funes.forget_many` deleted, and the ids it did not find (or the caller may not see)."""

    deleted: tuple[Memory, ...]
    not_found: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the deleted ids and the ids not found."""
        return {"deleted": [m.id for m in self.deleted], "not_found": list(self.not_found)}


@dataclass(frozen=True)
class EmbedderIdentity:
    """Which model made the vectors of a store."""

    model_id: str
    dimensions: int


JOB_STATUSES = ("queued", "running", "done", "failed")


@dataclass(frozen=True)
class Job:
    """One unit of durable background work (see :mod:`funes.jobs`)."""

    id: str
    tenant: str
    kind: str
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    created_at: datetime
    updated_at: datetime
    lease_until: datetime | None = None
    locked_by: str | None = None
    last_error: str | None = None
    result: Any = None
    dedupe_key: str | None = None
    finished_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "kind": self.kind,
            "payload": self.payload,
            "status": self.status,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "run_after": format_time(self.run_after),
            "lease_until": format_time(self.lease_until),
            "locked_by": self.locked_by,
            "last_error": self.last_error,
            "result": self.result,
            "dedupe_key": self.dedupe_key,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "finished_at": format_time(self.finished_at),
        }


__all__ = [
    "DEFAULT_IMPORTANCE",
    "ENTITY_SCOPES",
    "JOB_STATUSES",
    "KEYWORD_ONLY",
    "KINDS",
    "MAX_PREVIOUS_VERSIONS",
    "MEMORY_TYPES",
    "NO_EXPIRY",
    "SCOPES",
    "Caller",
    "EmbedderIdentity",
    "Explanation",
    "Job",
    "Memory",
    "MemoryType",
    "Page",
    "PreviousVersion",
    "RankFields",
    "Reference",
    "Scope",
    "SearchFilters",
    "SearchHit",
    "SearchResults",
    "SourceRef",
    "content_hash",
    "format_time",
    "from_epoch",
    "new_id",
    "parse_time",
    "render_attribution",
    "to_epoch",
    "utcnow",
]
