"""Bulk writes of the PostgreSQL store: many records in a few statements.

``put_many`` (what ``remember_many``, ``add_messages``, imports and uploads
write through) takes records a thousand at a time: one read of which ids
exist, one pipelined ``INSERT ... RETURNING rowid`` for the new ones (keyword
vector included), one pipelined ``UPDATE`` for the others, and the vectors in
one ``INSERT ... SELECT FROM unnest(...)``, all in the caller's one
transaction. (``COPY FROM`` would be faster still, but PostgreSQL refuses it
on tables under row-level security.)
A large load into a store holding few vectors drops the HNSW index first and
builds it once at the end (building is several times faster than inserting
into it row by row); every other load extends the index as it goes.
Numbers: bench/store_bench.py --backend postgres.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..models import Memory
from .base import checked_vectors, vis_key
from .postgres_search import fold_words
from .sqlite_rows import COLUMNS, PLACEHOLDERS, row_values, to_memory

BATCH = 1000  # records per round of statements
ANALYZE_AFTER = 1000  # records written at once that refresh the planner's statistics
REBUILD_MIN = 5000  # vectors in one load that make rebuilding the HNSW index worth it ...
REBUILD_SHARE = 1.0  # ... when the store holds at most this share of them already
_FTS = (
    "setweight(to_tsvector('simple', ?), 'A') || to_tsvector('simple', ?) || setweight(to_tsvector('simple', ?), 'C')"
)
_HNSW = "CREATE INDEX IF NOT EXISTS memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops)"


class PostgresBulk:
    """Mixin of PostgresStore: ``put_many`` in batches."""

    db: Any
    _dims: int | None

    def _write_many(self, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]) -> int:
        """Insert or replace many records in one transaction, a batch of statements per thousand."""
        items = list(items)
        if not items:
            return 0
        with self.db.write() as conn:
            incoming = sum(len(v) for _, v in items if v)
            rebuild = incoming >= REBUILD_MIN and self._dims is not None and self._few_vectors(conn, incoming)
            if rebuild:
                # Other writers wait on the table lock this takes, until the transaction ends.
                conn.native("DROP INDEX IF EXISTS memory_vectors_hnsw")
            for start in range(0, len(items), BATCH):
                self._put_batch(conn, items[start : start + BATCH])
            if rebuild:
                conn.native("SET LOCAL maintenance_work_mem = '256MB'")
                conn.native(_HNSW)
            if len(items) >= ANALYZE_AFTER:
                # Autovacuum analyses a minute later; until then a bulk load leaves row estimates of 1, and
                # the planner chose nested loops that took 400 ms per search at 4k records. ANALYZE counts
                # this transaction's own rows, so it runs inside it (remember_many's batch is in one).
                conn.native("ANALYZE memories, memory_vectors")
        return len(items)

    def put_unique_many(self, items: Sequence[tuple[Memory, Sequence[np.ndarray] | None]]) -> list[Memory]:
        """``put_unique`` for many records at once (distinct identities): the record that stands for each, in order.

        One statement takes the advisory locks of every identity (in a fixed
        order, so two such writers cannot deadlock), one reads the live
        duplicates, and the rest is written as ``put_many`` writes.
        """
        if not items:
            return []
        keys = [_identity_key(m) for m, _ in items]
        standing: list[Memory] = []
        with self.db.write() as conn:
            conn.native(
                "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM "
                "(SELECT DISTINCT k FROM unnest(%s::text[]) AS u(k) ORDER BY k) s",
                [keys],
            )
            found: dict[str, Memory] = {}
            columns = ", ".join("m." + c.strip() for c in COLUMNS.split(","))
            for row in conn.native(
                f"SELECT DISTINCT ON (k.key) k.key, {columns} FROM unnest(%s::text[], %s::text[], %s::text[], "
                "%s::text[], %s::text[], %s::text[]) AS k(key, tenant, vis, content_hash, kind, user_id) "
                "JOIN memories m ON m.tenant = k.tenant AND m.vis = k.vis AND m.content_hash = k.content_hash "
                "AND m.kind = k.kind AND m.user_id = k.user_id ORDER BY k.key, m.rowid",
                [keys, *map(list, zip(*(_identity(m) for m, _ in items), strict=True))],
            ).fetchall():
                found[row[0]] = to_memory(row[1:])
            writes: list[tuple[Memory, Sequence[np.ndarray] | None]] = []
            for (memory, vectors), key in zip(items, keys, strict=True):
                existing = found.get(key)
                if existing is not None and not existing.is_expired():
                    standing.append(existing)
                    continue
                if existing is not None:
                    memory = memory.evolve(id=existing.id, created_at=existing.created_at)
                writes.append((memory, vectors))
                standing.append(memory)
            self._write_many(writes)
        return standing

    def _few_vectors(self, conn: Any, incoming: int) -> bool:
        held = int(conn.native("SELECT count(*) FROM memory_vectors").fetchone()[0])
        return held <= incoming * REBUILD_SHARE

    def _put_batch(self, conn: Any, batch: list[tuple[Memory, Sequence[np.ndarray] | None]]) -> None:
        ids = [m.id for m, _ in batch]
        if len(set(ids)) < len(ids):
            for memory, vectors in batch:  # one id twice: the later write wins, as one by one
                self._put(conn, memory, vectors)  # type: ignore[attr-defined]
            return
        checked = [self._checked(m, v) for m, v in batch]
        existing = dict(conn.native("SELECT id, rowid FROM memories WHERE id = ANY(%s)", [ids]).fetchall())
        new = [(m, v) for (m, _), v in zip(batch, checked, strict=True) if m.id not in existing]
        old = [(m, v) for (m, _), v in zip(batch, checked, strict=True) if m.id in existing]
        rowids = dict(existing)
        if new:
            returned = conn.executemany_returning(
                f"INSERT INTO memories ({COLUMNS}, fts) VALUES ({PLACEHOLDERS}, {_FTS}) RETURNING rowid",
                [(*row_values(m), *_fts_values(m)) for m, _ in new],
            )
            rowids.update(zip((m.id for m, _ in new), returned, strict=True))
        if old:
            sets = ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(","))
            conn.executemany(
                f"UPDATE memories SET {sets}, fts = {_FTS} WHERE rowid = ?",
                [(*row_values(m), *_fts_values(m), rowids[m.id]) for m, _ in old],
            )
            kept = [(m.tenant, rowids[m.id], m.tenant) for m, v in old if v is None]
            if kept:  # the tenant is copied onto the vectors (the exact KNN's btree): keep it in step
                conn.executemany("UPDATE memory_vectors SET tenant = ? WHERE memory_rowid = ? AND tenant != ?", kept)
            replaced = [rowids[m.id] for m, v in old if v is not None]
            if replaced:
                conn.native("DELETE FROM memory_vectors WHERE memory_rowid = ANY(%s)", [replaced])
        rows = [
            (rowids[m.id], part, m.tenant, vector)
            for m, vectors in batch_vectors(new, old)
            for part, vector in enumerate(vectors)
        ]
        if rows:
            conn.native(
                "INSERT INTO memory_vectors (memory_rowid, part, tenant, embedding) "
                "SELECT * FROM unnest(%s::int8[], %s::int4[], %s::text[], %b::vector[])",  # binary: 16x faster
                [list(column) for column in zip(*rows, strict=True)],
            )

    def _checked(self, m: Memory, vectors: Sequence[np.ndarray] | None) -> list[np.ndarray] | None:
        """The record's vectors as float32 arrays, refused (nothing written) when they do not fit the store."""
        if vectors is None or not vectors:
            return None if vectors is None else []
        if self._dims is None and (known := self.identity()) is not None:  # type: ignore[attr-defined]
            self._dims = known.dimensions  # another process recorded the embedder after this one opened the store
        if self._dims is None:
            raise InvalidInput(
                "The store has no embedder identity yet, so it cannot take vectors.",
                hint="Open it through funes.open(), which records the embedder.",
            )
        return checked_vectors(m.id, vectors, self._dims)


def batch_vectors(*groups: list[tuple[Memory, list[np.ndarray] | None]]) -> Iterable[tuple[Memory, list[np.ndarray]]]:
    """The records of the groups that bring vectors, with them."""
    for group in groups:
        for memory, vectors in group:
            if vectors:
                yield memory, vectors


def _identity(m: Memory) -> tuple[str, str, str, str, str]:
    """What makes two records the same for ``put_unique``: tenant, visibility, content, kind and owner."""
    return m.tenant, vis_key(m.scope, m.project_id, m.session_id), m.content_hash, m.kind, m.user_id or ""


def _identity_key(m: Memory) -> str:
    return "\x1f".join(_identity(m))


def _fts_values(m: Memory) -> tuple[str, str, str]:
    return fold_words(m.title), fold_words(m.content), fold_words(m.topic)
