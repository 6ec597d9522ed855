"""Curation of records: their version history, and restoring an older version.

A record keeps its superseded states in ``previous_versions`` (the
:data:`~funes.models.MAX_PREVIOUS_VERSIONS` latest, oldest dropped first).
Restoring one is an ordinary update through the core: the restored text
becomes a NEW version (version + 1), the current text joins the history (so
a restore can itself be undone), the text is re-embedded, and the same FIFO
limit holds. History is never rewritten in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, InvalidInput, NotFound
from ..memory.versioning import redacted
from ..models import Memory, PreviousVersion, format_time, utcnow

if TYPE_CHECKING:
    from ..memory.core import Core


@dataclass(frozen=True)
class Version:
    """One state of a record: the current one or a kept previous one."""

    version: int
    content: str
    content_hash: str
    importance: float
    updated_at: datetime
    current: bool
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    author: str = ""
    redacted_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the kept version's fields, whether it is the current one, and whether it was
        redacted (a redacted version has empty content and its ``redacted_at``)."""
        state = PreviousVersion(
            self.version,
            self.content,
            self.content_hash,
            self.importance,
            self.updated_at,
            self.valid_from,
            self.valid_to,
            self.author,
        )
        return {
            **state.to_dict(),
            "current": self.current,
            "redacted": self.redacted_at is not None,
            "redacted_at": format_time(self.redacted_at),
        }


def versions_of(memory: Memory) -> list[Version]:
    """Every kept state of a record, newest first (the current one first), each with when it was true."""
    current = PreviousVersion(
        memory.version,
        memory.content,
        memory.content_hash,
        memory.importance,
        memory.updated_at,
        valid_from=memory.valid_since,
        author=memory.written_by,
    )
    states = [current, *reversed(memory.history)]
    return [
        Version(
            s.version,
            s.content,
            s.content_hash,
            s.importance,
            s.updated_at,
            current=s is current,
            valid_from=s.valid_from,
            valid_to=s.valid_to,
            author=s.author,
            redacted_at=s.redacted_at,
        )
        for s in states
    ]


class Curation:
    """Version history and restore of records (a feature service over the core)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def versions(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> list[Version]:
        """A record's versions with their timestamps, newest first (the current one is marked ``current``)."""
        return versions_of(self.core.get(memory_id, tenant=tenant, user=user))

    def restore(self, memory_id: str, version: int, *, tenant: str | None = None, user: str | None = None) -> Memory:
        """Make an older version current again, as a new version; the current text is kept in history.

        The restored text is re-embedded (or queued for embedding while the
        embedder is down) and its importance comes back with it. Restoring
        the version that is already current changes nothing.
        """
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidInput(f"Version must be a number, got {version!r}.", hint="`funes history ID` lists them.")
        memory = self.core.get(memory_id, tenant=tenant, user=user)
        if version == memory.version:
            return memory
        old = next((v for v in memory.previous_versions if v.version == version), None)
        if old is not None and old.redacted_at is not None:
            raise InvalidInput(
                f"Version {version} of memory {memory_id} was redacted; its text is gone.",
                hint=f"`funes history {memory_id}` lists the versions that still have their text.",
            )
        if old is None:
            kept = ", ".join(str(v.version) for v in memory.previous_versions) or "none"
            raise NotFound(
                f"Memory {memory_id} has no version {version} (current {memory.version}; kept: {kept}).",
                hint=f"`funes history {memory_id}` lists the kept versions; only the "
                "latest 5 previous versions are kept.",
            )
        return self.core.update(
            memory_id,
            content=old.content,
            importance=old.importance,
            metadata={"restored_from_version": old.version},
            tenant=tenant,
            user=user,
        )

    def redact_version(
        self, memory_id: str, version: int, *, tenant: str | None = None, user: str | None = None
    ) -> Version:
        """Erase the text of a kept earlier version; its number, time and content hash stay for audit.

        The current text cannot be redacted (update or forget the record
        instead). Earlier versions are never indexed, so no keyword or vector
        row holds the erased text. Redacting twice changes nothing.
        """
        self.core.get(memory_id, tenant=tenant, user=user)  # another tenant's record reads as not found
        with self.core.store.transaction():
            stored = self.core.store.get_for_update(memory_id)
            if stored is None:
                raise Conflict(
                    f"Memory {memory_id!r} was deleted while it was being redacted.",
                    hint="Nothing is left to redact: the record and its versions are gone.",
                )
            updated = redacted(stored, version, utcnow())
            if updated is not stored:
                self.core.store.put(updated, None)
        return next(v for v in versions_of(updated) if v.version == version)
