"""Rows of an import beyond the records: memory stores and their versions, checked, and redactions kept.

Pure checks used by :mod:`.transfer`. A memory-store row of an export is the
table's row as stored (``memory_stores`` / ``memory_store_versions``, see
:mod:`funes.store.sqlite_memory_stores`); each is checked for the fields the
store needs and for a ``content_sha256`` that matches its text, so a
hand-edited file cannot plant a version whose hash lies.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import InvalidInput
from ..models import Memory
from .versioning import redacted

_HINT = "Pass an unmodified `funes export` file."
_REQUIRED = {
    "memory_store": ("id", "tenant", "name", "created_at", "updated_at"),
    "memory_store_version": ("id", "tenant", "store_id", "memory_id", "operation", "created_at"),
}
_OPERATIONS = ("created", "modified", "deleted")


def store_row(kind: str, row: dict[str, Any], number: int) -> dict[str, Any]:
    """A ``memory_store`` or ``memory_store_version`` row of an export line, checked."""
    missing = [k for k in _REQUIRED[kind] if row.get(k) in (None, "")]
    if missing:
        raise InvalidInput(f"Line {number} has an invalid {kind} (missing {', '.join(missing)}).", hint=_HINT)
    if not all(isinstance(row.get(k), (int, float)) for k in ("created_at", "updated_at") if k in _REQUIRED[kind]):
        raise InvalidInput(f"Line {number} has a {kind} whose times are not numbers.", hint=_HINT)
    if kind == "memory_store":
        if not isinstance(row.get("metadata") or {}, dict):
            raise InvalidInput(f"Line {number} has a memory_store whose metadata is not an object.", hint=_HINT)
        return {**row, "description": row.get("description") or "", "metadata": row.get("metadata") or {}}
    if row["operation"] not in _OPERATIONS:
        raise InvalidInput(f"Line {number} has a version of unknown operation {row['operation']!r}.", hint=_HINT)
    content = row.get("content")
    if row.get("redacted_at") is not None and (content is not None or row.get("path") is not None):
        raise InvalidInput(f"Line {number} has a redacted version that still holds text.", hint=_HINT)
    if content is not None:
        if (
            not isinstance(content, str)
            or row.get("content_sha256") != hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
        ):
            raise InvalidInput(f"Line {number} has a version whose content_sha256 is not its text's.", hint=_HINT)
    return row


def check_store_rows(store: Any, rows: dict[str, list[dict[str, Any]]]) -> None:
    """Refuse a store id owned by another tenant here, and versions of a store neither in the file nor here."""
    stores, versions = rows["memory_store"], rows["memory_store_version"]
    if not stores and not versions:
        return
    ids = {r["id"] for r in stores} | {r["store_id"] for r in versions}
    here = store.memory_store_tenants(sorted(ids))
    for row in stores:
        if here.get(row["id"], row["tenant"]) != row["tenant"]:
            raise InvalidInput(
                f"Memory store {row['id']} belongs to another tenant in this store; nothing was imported.",
                hint="Import it into that tenant (--tenant), or into a new store (--db NEW.db).",
            )
    known = {(r["tenant"], r["id"]) for r in stores} | {(t, i) for i, t in here.items()}
    for row in versions:
        if (row["tenant"], row["store_id"]) not in known:
            raise InvalidInput(
                f"Version {row['id']} belongs to memory store {row['store_id']}, which is neither in the file "
                "nor in this store.",
                hint="Fix the file or export again; nothing was imported.",
            )


def keep_redactions(memory: Memory, there: Memory) -> Memory:
    """The imported ``memory`` with every version the store's copy ``there`` has redacted redacted too.

    When the file's current text is a version the store has redacted (the
    export predates the redaction), the store's copy is kept whole.
    """
    erased = {v.version: v for v in there.previous_versions if v.redacted_at is not None}
    if not erased:
        return memory
    if memory.version in erased:
        return there
    for kept in memory.previous_versions:
        if kept.version in erased and kept.redacted_at is None:
            memory = redacted(memory, kept.version, erased[kept.version].redacted_at)  # type: ignore[arg-type]
    return memory
