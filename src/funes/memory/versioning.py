"""How a record moves to its next version (the old state joins the history, the 5 latest kept), and redaction.

Pure functions over :class:`~funes.models.Memory`, shared by every path that
changes a record's text (an update, a write to an existing entity, a restore).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from ..errors import Conflict, InvalidInput, NotFound
from ..models import MAX_PREVIOUS_VERSIONS, Memory, PreviousVersion, content_hash, utcnow


def next_version(
    current: Memory, text: str, *, author: str = "user", valid_from: datetime | None = None
) -> dict[str, Any]:
    """The changes that make ``text`` the record's next version, the current one kept in history (FIFO of 5).

    Supersession, never a silent overwrite: the old text is kept valid until
    ``valid_from`` (when the new text became true; default now), written by
    whom it was, and the new text records its ``author``.
    """
    since = valid_from or utcnow()
    previous = PreviousVersion(
        version=current.version,
        content=current.content,
        content_hash=current.content_hash,
        importance=current.importance,
        updated_at=current.updated_at,
        valid_from=current.valid_since,
        valid_to=max(since, current.valid_since),
        author=current.written_by,
    )
    return {
        "content": text,
        "content_hash": content_hash(text),
        "previous_versions": (*current.history, previous)[-MAX_PREVIOUS_VERSIONS:],
        "version": current.version + 1,
        "valid_from": max(since, current.valid_since),
        "author": author,
    }


def superseded(current: Memory, new: Memory) -> Memory:
    """The stored record ``current`` updated by a new write ``new`` of the same entity.

    It keeps its id, creation time, pin and access counters; takes the new
    text (as a new version when it changed), importance, title, topic,
    source, expiry and references; and merges the metadata.
    """
    changes: dict[str, Any] = {}
    if new.content_hash != current.content_hash:
        changes.update(next_version(current, new.content, author=new.written_by, valid_from=new.valid_from))
    return current.evolve(
        **changes,
        importance=new.importance,
        memory_type=new.memory_type,
        title=new.title if new.title is not None else current.title,
        topic=new.topic if new.topic is not None else current.topic,
        source=new.source or current.source,
        expires_at=new.expires_at,
        references=new.references or current.references,
        metadata={**current.metadata, **new.metadata},
        pinned=current.pinned or new.pinned,
        updated_at=utcnow(),
    )


def redacted(current: Memory, version: int, now: datetime) -> Memory:
    """``current`` with its kept version ``version`` redacted: the text erased, its number, time and hash kept.

    The current text is the record itself and cannot be redacted here: change
    it (an update) or forget the record. Redacting a redacted version changes
    nothing.
    """
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInput(f"Version must be a number, got {version!r}.", hint="`funes history ID` lists them.")
    if version == current.version:
        raise Conflict(
            f"Version {version} is the current text of memory {current.id}; only a kept earlier version "
            "can be redacted.",
            hint=f"Update the memory first (its text becomes version {version + 1}) and then redact "
            f"version {version}, or forget the memory.",
        )
    old = next((v for v in current.previous_versions if v.version == version), None)
    if old is None:
        kept = ", ".join(str(v.version) for v in current.previous_versions) or "none"
        raise NotFound(
            f"Memory {current.id} has no version {version} (current {current.version}; kept: {kept}).",
            hint=f"`funes history {current.id}` lists the kept versions.",
        )
    if old.redacted_at is not None:
        return current
    erased = replace(old, content="", redacted_at=now)
    return current.evolve(previous_versions=tuple(erased if v is old else v for v in current.previous_versions))
