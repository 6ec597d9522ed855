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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from ..errors import FunesError

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


METADATA_MAX_DEPTH = 32  # levels of nesting a record's metadata may have (issue 31: 254+ broke every read)


def metadata_depth(value: Any, stop: int = METADATA_MAX_DEPTH + 1) -> int:
    """How deep ``value`` nests dicts and lists (a scalar is 0), counted without recursion and only up to ``stop``."""
    deepest, level = 0, [value]
    while level and deepest < stop:
        inner = []
        for item in level:
            if isinstance(item, dict):
                inner.extend(item.values())
            elif isinstance(item, (list, tuple)):
                inner.extend(item)
        if not inner and not any(isinstance(i, (dict, list, tuple)) for i in level):
            break
        deepest += 1
        level = inner
    return deepest


def clip_depth(value: Any, depth: int = METADATA_MAX_DEPTH) -> Any:
    """``value`` with whatever nests deeper than ``depth`` levels replaced by a short marker.

    Reads stay answerable for a record stored before deep metadata was refused
    (a JSON encoder gives up past a few hundred levels, and the whole listing failed).
    """
    if depth <= 0:
        return "[metadata nested too deeply; omitted]" if isinstance(value, (dict, list, tuple)) else value
    if metadata_depth(value, depth + 1) <= depth:
        return value
    if isinstance(value, dict):
        return {k: clip_depth(v, depth - 1) for k, v in value.items()}
    return [clip_depth(v, depth - 1) for v in value]


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


# Who wrote a record's current text (issue 25): a person, an agent's tool call, a
# language model (summaries, insights, learned facts), a document, or an import.
AUTHORS: tuple[str, ...] = ("user", "agent", "llm", "document", "import")
# Authors whose text a machine process never overwrites (it proposes instead).
HUMAN_AUTHORS: tuple[str, ...] = ("user",)


@dataclass(frozen=True)
class PreviousVersion:
    """A superseded state of a record, kept for history.

    ``updated_at`` is when Funes stored that text; ``valid_from`` when it
    became true and ``valid_to`` when the next version superseded it.
    """

    version: int
    content: str
    content_hash: str
    importance: float
    updated_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    author: str = ""
    # Set when the version was redacted: its text is erased, its time and hash kept (issue 25).
    redacted_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the shape kept in a record's history; ``redacted_at`` only on a redacted version)."""
        out: dict[str, Any] = {
            "version": self.version,
            "content": self.content,
            "content_hash": self.content_hash,
            "importance": self.importance,
            "updated_at": format_time(self.updated_at),
            "valid_from": format_time(self.valid_from),
            "valid_to": format_time(self.valid_to),
            "author": self.author,
        }
        if self.redacted_at is not None:
            out["redacted_at"] = format_time(self.redacted_at)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreviousVersion:
        """A kept version from :meth:`to_dict` (older stores lack the validity times: see :func:`timed_versions`)."""
        return cls(
            version=int(data["version"]),
            content=data["content"],
            content_hash=data["content_hash"],
            importance=float(data["importance"]),
            updated_at=parse_time(data["updated_at"]) or utcnow(),
            valid_from=parse_time(data.get("valid_from")),
            valid_to=parse_time(data.get("valid_to")),
            author=str(data.get("author") or ""),
            redacted_at=parse_time(data.get("redacted_at")),
        )


def timed_versions(versions: Any, current_from: datetime) -> tuple[PreviousVersion, ...]:
    """Kept versions with their validity filled in: the backfill of histories written before issue 25.

    A version without times was valid from when it was stored until the next
    version (or the current text, valid from ``current_from``) was.
    """
    out = tuple(versions)
    if all(v.valid_from is not None and v.valid_to is not None for v in out):
        return out
    ends = [v.updated_at for v in out[1:]] + [current_from]
    return tuple(
        replace(v, valid_from=v.valid_from or v.updated_at, valid_to=v.valid_to or end)
        for v, end in zip(out, ends, strict=True)
    )


def default_author(kind: str, source_type: str | None, role: str | None = None) -> str:
    """Who wrote a record's text when nothing said so: read from its kind and source."""
    if kind in ("insight", "entity_summary"):
        return "llm"
    if kind == "message":
        return "user" if role == "user" else "agent"
    if kind in ("document_chunk", "markdown"):
        return "document"
    if source_type in AUTHORS:
        return str(source_type)
    return "llm" if source_type == "chat" else "user"


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
    # Time and authorship (issue 25): when the current text became true (None: its
    # creation), who wrote it ("": read from kind and source), a machine's pending
    # proposal for a human-written record, and, on a past state returned by an
    # ``as_of`` or ``include_superseded`` search, when it stopped being true.
    valid_from: datetime | None = None
    author: str = ""
    proposal: dict[str, Any] | None = None
    valid_to: datetime | None = None

    def __post_init__(self) -> None:
        if not self.author:  # read from kind and source: every record says who wrote it
            role = self.source.locator.get("role") if self.source else None
            author = default_author(self.kind, self.source.type if self.source else None, role)
            object.__setattr__(self, "author", author)

    @property
    def valid_since(self) -> datetime:
        """When the current text became true (its creation time when not recorded)."""
        return self.valid_from or self.created_at

    @property
    def recorded_at(self) -> datetime:
        """When Funes stored the record (a record dated by when it was said keeps its write time in metadata)."""
        return parse_time(self.metadata.get("recorded_at")) or self.created_at

    @property
    def written_by(self) -> str:
        """Who wrote the current text: ``user``, ``agent``, ``llm``, ``document`` or ``import``."""
        return self.author

    @property
    def sovereign(self) -> bool:
        """Whether a machine process must leave the text alone (a person wrote it, or it is pinned)."""
        return self.pinned or self.written_by in HUMAN_AUTHORS

    @property
    def superseded(self) -> bool:
        """Whether this is a past state (returned by an ``as_of``/``include_superseded`` search)."""
        return self.valid_to is not None

    @property
    def history(self) -> tuple[PreviousVersion, ...]:
        """The kept versions, oldest first, each with its validity times."""
        return timed_versions(self.previous_versions, self.valid_since)

    def previously(self) -> str | None:
        """One line naming the value this text superseded and when ("previously: aisle seat, until 2026-05-02").

        None when nothing was superseded (or this is itself a past state).
        """
        kept = self.history
        if not kept or self.valid_to is not None or kept[-1].content_hash == self.content_hash:
            return None
        last = kept[-1]
        until = (last.valid_to or self.valid_since).date().isoformat()
        text = " ".join(last.content.split())
        return f"previously: {text[:200]}, until {until}"

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
            "previous_versions": [v.to_dict() for v in self.history],
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "metadata": clip_depth(self.metadata),
            "references": [{"type": r.type, "id": r.id} for r in self.references],
            "valid_from": format_time(self.valid_since),
            "valid_to": format_time(self.valid_to),
            "recorded_at": format_time(self.recorded_at),
            "superseded": self.superseded,
            "author": self.written_by,
            "proposal": self.proposal,
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
            previous_versions=tuple(PreviousVersion.from_dict(v) for v in data.get("previous_versions") or ()),
            created_at=parse_time(data.get("created_at")) or utcnow(),
            updated_at=parse_time(data.get("updated_at")) or utcnow(),
            metadata=dict(data.get("metadata") or {}),
            references=tuple(Reference(type=r["type"], id=str(r["id"])) for r in data.get("references") or ()),
            valid_from=parse_time(data.get("valid_from")),
            author=str(data.get("author") or ""),
            proposal=data.get("proposal") or None,
        )


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


__all__ = [
    "AUTHORS",
    "DEFAULT_IMPORTANCE",
    "HUMAN_AUTHORS",
    "KINDS",
    "MAX_PREVIOUS_VERSIONS",
    "MEMORY_TYPES",
    "NO_EXPIRY",
    "SCOPES",
    "EmbedderIdentity",
    "Memory",
    "MemoryType",
    "Page",
    "PreviousVersion",
    "Reference",
    "Scope",
    "SourceRef",
    "content_hash",
    "default_author",
    "format_time",
    "from_epoch",
    "new_id",
    "parse_time",
    "render_attribution",
    "timed_versions",
    "to_epoch",
    "utcnow",
]
