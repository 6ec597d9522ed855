"""Row mapping and filter SQL of the SQLite store.

A :class:`~funes.models.Memory` is one row of ``memories``; this module maps
records to rows and back, and builds the WHERE terms shared by the records
table and the vec0 metadata columns, so that the same filters run inside
both the keyword and the vector index.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from ..models import (
    JudgedRecord,
    Memory,
    PreviousVersion,
    RankFields,
    Reference,
    SearchFilters,
    SourceRef,
    default_author,
    from_epoch,
    to_epoch,
)
from .base import Visibility, vis_key

T = TypeVar("T")

COLUMNS = (
    "id, tenant, user_id, scope, session_id, project_id, vis, kind, memory_type, entity_type, "
    "entity_id, topic, title, content, source_type, source_uri, source_id, locator, importance, "
    "pinned, expires_at, access_count, last_accessed, version, content_hash, previous_versions, "
    "created_at, updated_at, metadata, refs, tags, valid_from, author, proposal"
)
PLACEHOLDERS = ", ".join("?" for _ in COLUMNS.split(","))
# What ranking reads of a record (:class:`~funes.models.RankFields`), in ``to_rank_fields``' order.
RANK_COLUMNS = ("id", "scope", "project_id", "importance", "updated_at", "expires_at", "created_at")


def to_rank_fields(row: Sequence[Any]) -> RankFields:
    """A row of ``RANK_COLUMNS`` as the light record ranking reads."""
    id_, scope, project_id, importance, updated_at, expires_at, created_at = row
    return RankFields(
        id=id_,
        scope=scope,
        project_id=project_id,
        importance=importance,
        updated_at=from_epoch(updated_at),  # type: ignore[arg-type]
        expires_at=from_epoch(expires_at),
        created_at=from_epoch(created_at),
    )


@functools.lru_cache(maxsize=1024)
def tenant_token(tenant: str) -> str:
    """The FTS token standing for a tenant (hashed so any id tokenizes as one word)."""
    return "t" + hashlib.sha1(tenant.encode("utf-8")).hexdigest()[:16]


def serialize(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def deserialize(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def row_values(m: Memory) -> tuple[Any, ...]:
    src = m.source
    return (
        m.id,
        m.tenant,
        m.user_id or "",
        m.scope,
        m.session_id,
        m.project_id,
        vis_key(m.scope, m.project_id, m.session_id),
        m.kind,
        m.memory_type,
        m.entity_type,
        m.entity_id,
        m.topic,
        m.title,
        m.content,
        src.type if src else "",
        src.uri if src else None,
        (src.source_id or "") if src else "",
        _dumps(src.locator if src else {}, sort_keys=True),
        m.importance,
        int(m.pinned),
        to_epoch(m.expires_at),
        m.access_count,
        to_epoch(m.last_accessed),
        m.version,
        m.content_hash,
        _dumps([v.to_dict() for v in m.previous_versions]),
        to_epoch(m.created_at),
        to_epoch(m.updated_at),
        _dumps(m.metadata, sort_keys=True),
        _dumps([{"type": r.type, "id": r.id} for r in m.references]),
        tenant_token(m.tenant),
        to_epoch(m.valid_from),
        m.written_by,
        None if m.proposal is None else json.dumps(m.proposal, ensure_ascii=False),
    )


def _dumps(value: Any, *, sort_keys: bool = False) -> str:
    # The writing half of _loads' shortcut: most records have nothing to encode.
    if not value:
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, sort_keys=sort_keys, ensure_ascii=False)


def _loads(text: str) -> Any:
    # Most records have no metadata, locator, history or references; skipping
    # the JSON parser for those is measurable when ranking ~100 candidates.
    if text == "{}":
        return {}
    if text == "[]":
        return []
    return json.loads(text)


def to_memory(row: Sequence[Any]) -> Memory:
    """A ``memories`` row (in :data:`COLUMNS` order) as a record."""
    (
        id_,
        tenant,
        user_id,
        scope,
        session_id,
        project_id,
        _vis,
        kind,
        memory_type,
        entity_type,
        entity_id,
        topic,
        title,
        content,
        source_type,
        source_uri,
        source_id,
        locator,
        importance,
        pinned,
        expires_at,
        access_count,
        last_accessed,
        version,
        chash,
        previous,
        created_at,
        updated_at,
        metadata,
        refs,
        _tags,
        valid_from,
        author,
        proposal,
    ) = row
    source = _source(source_type, source_uri, source_id, locator)
    return Memory(
        id=id_,
        content=content,
        tenant=tenant,
        user_id=user_id or None,
        scope=scope,
        session_id=session_id,
        project_id=project_id,
        kind=kind,
        memory_type=memory_type,
        entity_type=entity_type,
        entity_id=entity_id,
        topic=topic,
        title=title,
        source=source,
        importance=importance,
        pinned=bool(pinned),
        expires_at=from_epoch(expires_at),
        access_count=access_count,
        last_accessed=from_epoch(last_accessed),
        version=version,
        content_hash=chash,
        previous_versions=tuple(PreviousVersion.from_dict(v) for v in _loads(previous)),
        created_at=from_epoch(created_at),  # type: ignore[arg-type]
        updated_at=from_epoch(updated_at),  # type: ignore[arg-type]
        metadata=_loads(metadata),
        references=tuple(Reference(type=r["type"], id=r["id"]) for r in _loads(refs)),
        valid_from=from_epoch(valid_from),
        author=author or "",
        proposal=json.loads(proposal) if proposal else None,
    )


# What judging and ordering read of every search candidate (:func:`to_judged`): its text, its place in a chat
# and its vector count (the last column, read from ``memory_vectors`` by :func:`judge_columns`).
JUDGE_FIELDS = (
    "id, title, content, kind, session_id, source_type, source_uri, source_id, locator, author, created_at, updated_at"
)


def judge_columns(table: str) -> str:
    """``JUDGE_FIELDS`` of ``table`` (the ``memories`` table's name or alias) and its count of stored vectors."""
    fields = ", ".join(f"{table}.{c.strip()}" for c in JUDGE_FIELDS.split(","))
    return f"{fields}, (SELECT count(*) FROM memory_vectors v WHERE v.memory_rowid = {table}.rowid)"


JUDGE_COLUMNS = judge_columns("memories")
# A search candidate read once for judging and ranking (:func:`to_candidate`): ``JUDGE_COLUMNS``, then what
# ranking reads that judging does not.
CANDIDATE_EXTRA = ("scope", "project_id", "importance", "expires_at")


def to_judged(row: Sequence[Any]) -> JudgedRecord:
    """A row of ``JUDGE_COLUMNS`` as a partial record: id, text, kind, session, source and vector count, nothing else.

    Search judges every candidate but returns only ``limit`` of them; this
    skips what a whole record costs (34 columns, three JSON documents, a
    ``Memory``) for the rest. Only the search's ordering reads it: the hits
    are then read whole.
    """
    return _judged(row, from_epoch(row[10]), from_epoch(row[11]))  # type: ignore[arg-type]


def _judged(row: Sequence[Any], created: datetime, updated: datetime) -> JudgedRecord:
    id_, title, content, kind, session_id, source_type, source_uri, source_id, locator, author = row[:10]
    source = _source(source_type, source_uri, source_id, locator)
    if not author:  # as Memory works it out for a record that does not say who wrote it
        author = default_author(kind, source.type if source else None, source.locator.get("role") if source else None)
    return JudgedRecord(id_, title, content, kind, session_id, source, author, created, updated, row[12])


def candidate_columns(table: str) -> str:
    """What :func:`to_candidate` reads of ``table`` (the ``memories`` table's name or alias)."""
    return f"{judge_columns(table)}, {', '.join(f'{table}.{c}' for c in CANDIDATE_EXTRA)}"


def to_candidate(row: Sequence[Any]) -> tuple[JudgedRecord, RankFields]:
    """A row of :func:`candidate_columns` as the partial record judging reads and the rank fields ranking reads.

    The same values as :func:`to_judged` and :func:`to_rank_fields` of the record, its times converted once.
    """
    created = from_epoch(row[10])
    updated = created if row[11] == row[10] else from_epoch(row[11])  # most records were never edited
    scope, project_id, importance, expires_at = row[13:17]
    expires = None if expires_at is None else from_epoch(expires_at)
    ranked = RankFields(row[0], scope, project_id, importance, updated, expires, created)  # type: ignore[arg-type]
    return _judged(row, created, updated), ranked  # type: ignore[arg-type]


def _source(source_type: str | None, uri: str | None, source_id: str | None, locator: str) -> SourceRef | None:
    if not source_type:
        return None
    return SourceRef(type=source_type, uri=uri, source_id=source_id or None, locator=_loads(locator))


def rows_by_id(conn: Any, columns: str, memory_ids: Sequence[str], to: Callable[[Sequence[Any]], T]) -> dict[str, T]:
    """``to`` of the ``memories`` rows of those ids (``columns`` lead with ``id``), by id, 500 ids a statement."""
    out: dict[str, T] = {}
    ids = list(dict.fromkeys(memory_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in conn.execute(f"SELECT {columns} FROM memories WHERE id IN ({marks})", chunk):
            out[row[0]] = to(row)
    return out


def sql_in(column: str, values: Sequence[Any], params: list[Any]) -> str:
    params.extend(values)
    return f"{column} IN ({', '.join('?' for _ in values)})"


def knn_visibility(filters: SearchFilters) -> list[tuple[str, tuple[str, ...]] | None]:
    """The visibility as the fewest vec0 filters; each one costs a full KNN scan of the partition.

    vec0 has no OR, so two alternatives mean two scans. The key ``team``
    holds exactly the team-scope records, so it moves freely between the
    ``scope`` and ``vis`` forms, which merges the common cases into one scan
    (and a filter that admits every scope into none).
    """
    clauses = Visibility.from_filters(filters).clauses()
    open_scopes = next((v for c, v in clauses if c == "scope"), ())
    keys = next((v for c, v in clauses if c == "vis"), ())
    if not keys or set(keys) == {"team"}:
        scopes = tuple(dict.fromkeys(open_scopes + tuple(keys)))
        if not scopes or set(scopes) >= {"team", "project", "session"}:
            return [None]
        return [("scope", scopes)]
    if not open_scopes:
        return [("vis", keys)]
    return [("scope", open_scopes), ("vis", keys)]


def record_filters(
    filters: SearchFilters, vis_clause: tuple[str, tuple[str, ...]] | None, params: list[Any], prefix: str
) -> list[str]:
    """WHERE terms shared by the memories table and the vec0 metadata columns."""
    where: list[str] = []
    if vis_clause is not None:
        column, values = vis_clause
        where.append(sql_in(prefix + column, values, params))
    if filters.user_id:
        where.append(sql_in(prefix + "user_id", ("", filters.user_id), params))
    if filters.kinds:
        where.append(sql_in(prefix + "kind", filters.kinds, params))
    if filters.memory_types:
        where.append(sql_in(prefix + "memory_type", filters.memory_types, params))
    if filters.source_types:
        where.append(sql_in(prefix + "source_type", filters.source_types, params))
    if filters.source_ids:
        where.append(sql_in(prefix + "source_id", filters.source_ids, params))
    if filters.created_after is not None:
        where.append(f"{prefix}created_at >= ?")
        params.append(to_epoch(filters.created_after))
    if filters.created_before is not None:
        where.append(f"{prefix}created_at <= ?")
        params.append(to_epoch(filters.created_before))
    return where


def records_only_filters(filters: SearchFilters, params: list[Any], prefix: str) -> list[str]:
    """WHERE terms of the entity, reference and role filters (records table only: vec0 has no such columns)."""
    where: list[str] = []
    if filters.roles:
        # A role belongs to chat messages alone: any other record with a "role" in its locator never matches.
        where.append(f"{prefix}kind = 'message'")
        where.append(sql_in(f"json_extract({prefix}locator, '$.role')", filters.roles, params))
    if filters.entity_types:
        where.append(sql_in(prefix + "entity_type", filters.entity_types, params))
    if filters.entity_ids:
        where.append(sql_in(prefix + "entity_id", filters.entity_ids, params))
    for ref in filters.references or ():
        where.append(
            f"EXISTS (SELECT 1 FROM json_each({prefix}refs) r "
            "WHERE json_extract(r.value, '$.type') = ? AND json_extract(r.value, '$.id') = ?)"
        )
        params.extend((ref.type, ref.id))
    return where


def split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("--")):
            continue
        buf.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if upper == "END;":
                statements.append("\n".join(buf))
                buf, in_trigger = [], False
        elif stripped.endswith(";"):
            statements.append("\n".join(buf))
            buf = []
    if buf and "".join(buf).strip():
        statements.append("\n".join(buf))
    return statements
