"""The default store: one SQLite file with FTS5 and sqlite-vec.

Layout (see ``sql/001_core.sql``):

* ``memories`` holds every record; ``memories_fts`` is an external-content
  FTS5 index over it, kept in sync by triggers.
* ``vec_memories`` is a ``vec0`` table (cosine distance) partitioned by
  tenant, with the filter columns (visibility, user, kind, type, source,
  created_at, expires_at) as vec0 metadata, so every filter runs inside the
  KNN scan. Long records have several vectors; ``memory_vectors`` maps them.
* A record's row, its FTS entry and its vectors are written in ONE
  transaction, so a crash never leaves half a record.
* Triggers log every vector insert, delete and filter-metadata change in
  ``vector_changes`` (``sql/004_vector_changes.sql``), in that same
  transaction; the in-process cache of large tenants (``vector_cache.py``)
  replays it to stay fresh across processes.

Migrations are the numbered files in ``sql/``, recorded in ``migrations``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput, StoreCorrupt
from ..models import (
    NO_EXPIRY,
    EmbedderIdentity,
    Memory,
    Page,
    RankFields,
    SearchFilters,
    format_time,
    from_epoch,
    to_epoch,
)
from .ann_index import AnnIndexes
from .base import (
    AccessEvent,
    Visibility,
    checked_vectors,
    own_transaction,
    refuse_other_embedder,
    refuse_other_tenant,
    vis_key,
)
from .connection import Database
from .sqlite_cjk import CjkTables
from .sqlite_cleanup import CleanupTables
from .sqlite_documents import DocumentTables
from .sqlite_entities import EntityTables
from .sqlite_folders import FolderTables
from .sqlite_forget import ACCESS_ROW, FORGOT_SINCE, ForgetTables, drop_cached_queries
from .sqlite_health import _AWAITED, _NO_VECTOR, HealthChecks
from .sqlite_jobs import JobTables
from .sqlite_keyword import KeywordSearch
from .sqlite_matching import MatchingVectors
from .sqlite_memory_stores import MemoryStoreTables
from .sqlite_rows import (
    COLUMNS,
    PLACEHOLDERS,
    RANK_COLUMNS,
    deserialize,
    knn_visibility,
    record_filters,
    records_only_filters,
    row_values,
    rows_by_id,
    serialize,
    split_sql,
    sql_in,
    to_memory,
    to_rank_fields,
)
from .sqlite_server import ServerTables
from .sqlite_sessions import SessionTables
from .sqlite_upkeep import UpkeepTables
from .vector_cache import VectorCache


class SqliteStore(
    KeywordSearch,
    DocumentTables,
    SessionTables,
    JobTables,
    CleanupTables,
    EntityTables,
    CjkTables,
    FolderTables,
    MemoryStoreTables,
    ForgetTables,
    UpkeepTables,
    HealthChecks,
    ServerTables,
    MatchingVectors,
):
    """Funes storage in one SQLite file (WAL, FTS5, sqlite-vec)."""

    row_lock: str = ""  # BEGIN IMMEDIATE already excludes every other writer

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 15000,
        vector_cache_min: int = 20000,
        vector_cache_mb: int = 1024,
        migrate: bool = True,
        ann_min: int = 50000,
    ) -> None:
        self.path = str(Path(path).expanduser()) if str(path) != ":memory:" else ":memory:"
        if self.path != ":memory:" and Path(self.path).is_file() and Path(self.path).stat().st_size == 0:
            # SQLite treats an empty file as a new database: a store truncated to 0 bytes
            # would silently come back empty (issue 9). Only a path that does not exist is new.
            raise StoreCorrupt(
                f"The store {self.path} is an empty (0-byte) file, so whatever it held is gone.",
                hint="Restore it from a backup (`funes backup`, or `funes import EXPORT.jsonl` into a new file); "
                "if it really should start empty, delete the file and Funes creates a new store there.",
            )
        self.db = Database(self.path, busy_timeout_ms=busy_timeout_ms)
        marker = self.corrupt_marker
        if marker is not None and marker.exists():
            self.db.refuse_writes = marker.read_text(encoding="utf-8", errors="replace").strip() or "damaged"
        # Large tenants are searched in memory; see vector_cache.py.
        self.vector_cache = VectorCache(vector_cache_min, vector_cache_mb << 20)
        # Larger ones from an HNSW index beside the file; see ann_index.py.
        self.ann = AnnIndexes(self.path, ann_min)
        # Term counts for keyword-query planning (sqlite_keyword.py).
        self._fts_stats: dict[str, tuple[int, float]] = {}
        self._dims: int | None = None
        if not migrate:
            return  # salvage reads a damaged store as it is (see maintenance.salvage_path)
        try:
            self._migrate()
        except Exception as exc:
            self.db.close()
            if isinstance(exc, self.db.error):
                raise self.db.translate(exc) from exc
            raise
        ident = self.identity()
        if ident is not None:
            self._dims = ident.dimensions

    # -- schema ------------------------------------------------------------
    def _migrate(self) -> None:
        files = sorted(
            (p for p in resources.files("funes.store").joinpath("sql").iterdir() if p.name.endswith(".sql")),
            key=lambda p: p.name,
        )
        if self.db.read_only:
            # Nothing can be written; a store with every migration applied is still readable.
            conn = self.db.reader()
            done = {row[0] for row in conn.execute("SELECT version FROM migrations")}
            wanted = {int(m.group(1)) for f in files if (m := re.match(r"(\d+)_", f.name))}
            if wanted - done:
                from .connection import read_only_error

                raise read_only_error(self.path)
            return
        with self.db.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                "applied_at TEXT NOT NULL DEFAULT (datetime('now')))"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM migrations")}
            for file in files:
                match = re.match(r"(\d+)_", file.name)
                if not match:
                    continue
                version = int(match.group(1))
                if version in done:
                    continue
                for statement in split_sql(file.read_text(encoding="utf-8")):
                    conn.execute(statement)
                conn.execute("INSERT INTO migrations (version, name) VALUES (?, ?)", (version, file.name))

    def migrations(self) -> list[tuple[int, str]]:
        """Applied migrations, in order."""
        rows = self.db.reader().execute("SELECT version, name FROM migrations ORDER BY version")
        return [(int(v), str(n)) for v, n in rows]

    def identity(self) -> EmbedderIdentity | None:
        """The embedder identity recorded in the store, if any."""
        rows = dict(
            self.db.reader().execute(
                "SELECT key, value FROM meta WHERE key IN ('embedder_model', 'embedder_dimensions')"
            )
        )
        if "embedder_model" not in rows:
            return None
        return EmbedderIdentity(rows["embedder_model"], int(rows["embedder_dimensions"]))

    def set_identity(self, identity: EmbedderIdentity, *, reset: bool = False) -> None:
        """Record the embedder identity, creating (or with ``reset``, recreating) the vector table."""
        refuse_other_embedder(self.identity(), identity, reset)
        with self.db.write() as conn:
            if reset:
                conn.execute("DROP TABLE IF EXISTS vec_memories")
                conn.execute("DELETE FROM memory_vectors")
                # Every vector is gone: raise the change log's floor past its
                # end, so each process's vector cache reloads in full.
                self._trim_vector_changes(conn, 0)
            # vec0 preallocates one chunk per partition (tenant): 256 vectors
            # instead of the default 1024 keeps a small tenant at ~0.4 MB, not
            # 1.5 MB, and measured no slower to scan or insert.
            conn.execute(
                f"""CREATE VIRTUAL TABLE IF NOT EXISTS vec_memories USING vec0(
                    vector_id INTEGER PRIMARY KEY,
                    embedding float[{int(identity.dimensions)}] distance_metric=cosine,
                    tenant TEXT PARTITION KEY,
                    scope TEXT, vis TEXT, user_id TEXT, kind TEXT, memory_type TEXT,
                    source_type TEXT, source_id TEXT, created_at FLOAT, expires_at FLOAT,
                    chunk_size=256
                )"""
            )
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder_model', ?), ('embedder_dimensions', ?)",
                (identity.model_id, str(identity.dimensions)),
            )
        self._dims = identity.dimensions

    # -- writes ------------------------------------------------------------
    @own_transaction
    def put(self, memory: Memory, vectors: Sequence[np.ndarray] | None) -> Memory:
        """Insert or replace a record with its vectors, atomically."""
        with self.db.write() as conn:
            self._put(conn, memory, vectors)
        return memory

    def transaction(self) -> AbstractContextManager[Any]:
        """Group several writes into one transaction (nested writes become savepoints)."""
        return self.db.write()

    def put_unique(self, memory: Memory, vectors: Sequence[np.ndarray] | None) -> Memory:
        """Write the record unless a live one with the same content, scope, kind and owner exists.

        The check and the write share one transaction, so two processes
        remembering the same text at once still store it once. Returns the
        record that stands: the existing one, or the new one (which takes
        over the id of an expired duplicate).
        """
        vis = vis_key(memory.scope, memory.project_id, memory.session_id)
        with self.db.write() as conn:
            existing = self._find_by_hash(conn, memory.tenant, vis, memory.content_hash, memory.kind, memory.user_id)
            if existing is not None and not existing.is_expired():
                return existing
            if existing is not None:
                memory = memory.evolve(id=existing.id, created_at=existing.created_at)
            self._put(conn, memory, vectors)
        return memory

    def put_many(self, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]) -> int:
        """Insert or replace many records in one transaction."""
        count = 0
        with self.db.write() as conn:
            for memory, vectors in items:
                self._put(conn, memory, vectors)
                count += 1
        return count

    def _put(self, conn: Any, m: Memory, vectors: Sequence[np.ndarray] | None) -> None:
        row = conn.execute("SELECT rowid, tenant FROM memories WHERE id = ?", (m.id,)).fetchone()
        values = row_values(m)
        if row is not None:
            refuse_other_tenant(m, row[1])
        if row is None:
            cur = conn.execute(f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})", values)
            rowid = cur.lastrowid
        else:
            rowid = row[0]
            sets = ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(","))
            conn.execute(f"UPDATE memories SET {sets} WHERE rowid = ?", (*values, rowid))
        if vectors is None:
            # Metadata may have changed (scope, expiry): keep vec0's copy in step.
            self._sync_vector_metadata(conn, rowid, m)
            return
        if row is not None:
            self._delete_vectors(conn, [rowid])  # a new row has none to delete
        if not vectors:
            return
        if self._dims is None and (known := self.identity()) is not None:
            self._dims = known.dimensions  # another process recorded the embedder after this one opened the store
        if self._dims is None:
            raise InvalidInput(
                "The store has no embedder identity yet, so it cannot take vectors.",
                hint="Open it through funes.open(), which records the embedder.",
            )
        meta = self._vector_metadata(m)
        for part, vector in enumerate(checked_vectors(m.id, vectors, self._dims)):
            cur = conn.execute("INSERT INTO memory_vectors (memory_rowid, part) VALUES (?, ?)", (rowid, part))
            conn.execute(
                "INSERT INTO vec_memories (vector_id, embedding, tenant, scope, vis, user_id, kind, "
                "memory_type, source_type, source_id, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cur.lastrowid, serialize(vector), *meta),
            )

    @staticmethod
    def _vector_metadata(m: Memory) -> tuple[Any, ...]:
        return (
            m.tenant,
            m.scope,
            vis_key(m.scope, m.project_id, m.session_id),
            m.user_id or "",
            m.kind,
            m.memory_type,
            m.source.type if m.source else "",
            (m.source.source_id or "") if m.source else "",
            to_epoch(m.created_at),
            to_epoch(m.expires_at) or NO_EXPIRY,
        )

    def _sync_vector_metadata(self, conn: Any, rowid: int, m: Memory) -> None:
        if self._dims is None:
            return
        ids = [r[0] for r in conn.execute("SELECT vector_id FROM memory_vectors WHERE memory_rowid = ?", (rowid,))]
        if not ids:
            return
        tenant, scope, vis, user, kind, mtype, stype, sid, created, expires = self._vector_metadata(m)
        current = conn.execute("SELECT tenant, embedding FROM vec_memories WHERE vector_id = ?", (ids[0],)).fetchone()
        if current is not None and current[0] != tenant:
            # The partition key cannot be updated in place: rewrite the vectors.
            blobs = [
                conn.execute("SELECT embedding FROM vec_memories WHERE vector_id = ?", (i,)).fetchone()[0] for i in ids
            ]
            self._delete_vectors(conn, [rowid])
            self._put_vectors(conn, rowid, m, [deserialize(b) for b in blobs])
            return
        for vector_id in ids:
            conn.execute(
                "UPDATE vec_memories SET scope = ?, vis = ?, user_id = ?, kind = ?, memory_type = ?, "
                "source_type = ?, source_id = ?, created_at = ?, expires_at = ? WHERE vector_id = ?",
                (scope, vis, user, kind, mtype, stype, sid, created, expires, vector_id),
            )

    def _put_vectors(self, conn: Any, rowid: int, m: Memory, vectors: Sequence[np.ndarray]) -> None:
        meta = self._vector_metadata(m)
        for part, vector in enumerate(vectors):
            cur = conn.execute("INSERT INTO memory_vectors (memory_rowid, part) VALUES (?, ?)", (rowid, part))
            conn.execute(
                "INSERT INTO vec_memories (vector_id, embedding, tenant, scope, vis, user_id, kind, "
                "memory_type, source_type, source_id, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cur.lastrowid, serialize(vector), *meta),
            )

    def _delete_vectors(self, conn: Any, rowids: Sequence[int]) -> None:
        for rowid in rowids:
            ids = [r[0] for r in conn.execute("SELECT vector_id FROM memory_vectors WHERE memory_rowid = ?", (rowid,))]
            if ids and self._dims is not None:
                conn.execute(f"DELETE FROM vec_memories WHERE vector_id IN ({', '.join('?' for _ in ids)})", ids)
            conn.execute("DELETE FROM memory_vectors WHERE memory_rowid = ?", (rowid,))

    @own_transaction
    def delete(self, memory_ids: Sequence[str]) -> int:
        """Delete records, their vectors and keyword entries, atomically."""
        if not memory_ids:
            return 0
        with self.db.write() as conn:
            return self._delete(conn, memory_ids)

    def _delete(self, conn: Any, memory_ids: Sequence[str]) -> int:
        count = 0
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            # The records' rows first (PostgreSQL: locked, in rowid order), as an edit locks its record before its
            # vectors: a delete taking the vectors first would deadlock with a concurrent edit of the same record.
            sql = f"SELECT rowid FROM memories WHERE id IN ({marks}) ORDER BY rowid{self.row_lock}"
            rowids = [r[0] for r in conn.execute(sql, chunk)]
            self._delete_vectors(conn, rowids)
            count += conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", chunk).rowcount
        return count

    # -- reads -------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        """A record by id."""
        row = self.db.reader().execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else to_memory(row)

    def get_for_update(self, memory_id: str) -> Memory | None:
        """A record by id, read under the write lock (PostgreSQL also locks its row) until the transaction ends.

        Call it inside :meth:`transaction`: a read-modify-write that read
        outside brought back a record a concurrent delete had removed (issue 31).
        """
        with self.db.write() as conn:
            sql = f"SELECT {COLUMNS} FROM memories WHERE id = ?{self.row_lock}"
            row = conn.execute(sql, (memory_id,)).fetchone()
        return None if row is None else to_memory(row)

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Records by id."""
        return rows_by_id(self.db.reader(), COLUMNS, memory_ids, to_memory)

    def rank_fields(self, memory_ids: Sequence[str]) -> dict[str, RankFields]:
        """What ranking reads of each record (no content, no JSON to decode)."""
        return rows_by_id(self.db.reader(), ", ".join(RANK_COLUMNS), memory_ids, to_rank_fields)

    def find_by_hash(
        self, tenant: str, vis: str, content_hash: str, kind: str, user_id: str | None = None
    ) -> Memory | None:
        """The record with exactly this content in this tenant, visibility, kind and owner."""
        return self._find_by_hash(self.db.reader(), tenant, vis, content_hash, kind, user_id)

    def _find_by_hash(
        self, conn: Any, tenant: str, vis: str, content_hash: str, kind: str, user_id: str | None
    ) -> Memory | None:
        # The owner is part of the identity: another user's record must never be handed back.
        row = conn.execute(
            f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND vis = ? AND content_hash = ? AND kind = ? "
            "AND user_id = ? ORDER BY rowid LIMIT 1",
            (tenant, vis, content_hash, kind, user_id or ""),
        ).fetchone()
        return None if row is None else to_memory(row)

    def _where(
        self, filters: SearchFilters, now: datetime | None, params: list[Any], include_expired: bool = False
    ) -> list[str]:
        where = ["m.tenant = ?"]
        params.append(filters.tenant)
        clauses = Visibility.from_filters(filters).clauses()
        if len(clauses) == 1:
            where += record_filters(filters, clauses[0], params, "m.")
        else:
            alt: list[str] = []
            for clause in clauses:
                alt.append(sql_in("m." + clause[0], clause[1], params))
            where.append("(" + " OR ".join(alt) + ")")
            where += record_filters(filters, None, params, "m.")
        where += records_only_filters(filters, params, "m.")
        if not include_expired and now is not None:
            where.append("(m.expires_at IS NULL OR m.expires_at > ?)")
            params.append(to_epoch(now))
        return where

    def list(
        self,
        filters: SearchFilters,
        *,
        cursor: str | None = None,
        limit: int = 50,
        include_expired: bool = False,
        pinned: bool | None = None,
        now: datetime | None = None,
    ) -> Page:
        """Records newest first; pass the returned cursor to get the next page."""
        params: list[Any] = []
        where = self._where(filters, now, params, include_expired)
        if pinned is not None:
            where.append("m.pinned = ?")
            params.append(int(pinned))
        if cursor:
            where.append("m.id < ?")
            params.append(cursor)
        sql = f"SELECT {', '.join('m.' + c.strip() for c in COLUMNS.split(','))} FROM memories m WHERE {' AND '.join(where)} ORDER BY m.id DESC LIMIT ?"
        params.append(limit + 1)
        rows = self.db.reader().execute(sql, params).fetchall()
        items = tuple(to_memory(r) for r in rows[:limit])
        next_cursor = items[-1].id if len(rows) > limit and items else None
        return Page(items=items, next_cursor=next_cursor)

    #: A record's references as rows, and their type and id (PostgreSQL spells them with jsonb).
    ref_rows = ("json_each(m.refs) r", "json_extract(r.value, '$.type')", "json_extract(r.value, '$.id')")

    def reference_counts(
        self, filters: SearchFilters, ref_type: str, *, now: datetime, include_expired: bool = False
    ) -> dict[str, int]:
        """How many records the filters keep carry each reference id of ``ref_type``: one grouped statement."""
        rows, of_type, ref_id = self.ref_rows
        params: list[Any] = []
        where = [*self._where(filters, now, params, include_expired), f"{of_type} = ?"]
        params.append(ref_type)
        sql = (
            f"SELECT {ref_id} AS ref, count(DISTINCT m.id) FROM memories m, {rows} "
            f"WHERE {' AND '.join(where)} GROUP BY ref"
        )
        return {str(ref): int(n) for ref, n in self.db.reader().execute(sql, params).fetchall()}

    def index_work(self) -> list[str]:
        """Tenants whose approximate vector index searches asked to build or catch up (each reported once)."""
        return self.ann.take_wanted()

    def maintain_index(self, tenant: str) -> str:
        """Build or catch up a tenant's approximate vector index (slow: run it as a job); returns what it did."""
        return self.ann.maintain(self.db.reader(), tenant)

    def index_away(self) -> bool:
        """Never: without its approximate index a tenant is searched exactly from the in-memory vector copy."""
        return False

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None = None
    ) -> list[tuple[str, float]]:
        """Exact cosine KNN with the filters inside the scan (in memory for large tenants, else vec0)."""
        if self._dims is None or k <= 0:
            return []
        if filters.records_only:
            return self._vector_search_matching(vector, filters, k=k, now=now)
        conn = self.db.reader()
        cached = self.ann.search(conn, vector, filters, k=k, now=now)
        if cached is None:
            cached = self.vector_cache.search(conn, vector, filters, k=k, now=now)
        if cached is not None:
            return cached
        blob = serialize(vector)
        found: dict[int, float] = {}
        for clause in knn_visibility(filters):
            params: list[Any] = [blob, k, filters.tenant, to_epoch(now) if now else 0.0]
            where = ["embedding MATCH ?", "k = ?", "tenant = ?", "expires_at > ?"]
            where += record_filters(filters, clause, params, "")
            sql = f"SELECT vector_id, distance FROM vec_memories WHERE {' AND '.join(where)}"
            for vector_id, distance in conn.execute(sql, params):
                if distance is None or distance != distance:
                    continue  # a zero or NaN vector stored before issue 9: doctor reports it, search skips it
                found[vector_id] = 1.0 - float(distance)
        if not found:
            return []
        ids = list(found)
        marks = ", ".join("?" for _ in ids)
        best: dict[str, float] = {}
        for vector_id, memory_id in conn.execute(
            f"SELECT v.vector_id, m.id FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
            f"WHERE v.vector_id IN ({marks})",
            ids,
        ):
            sim = found[vector_id]
            if sim > best.get(memory_id, -2.0):
                best[memory_id] = sim
        return sorted(best.items(), key=lambda kv: kv[1], reverse=True)

    def vectors_for(self, memory_ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        """Stored vectors of the given records, by record id."""
        out: dict[str, list[np.ndarray]] = {}
        if self._dims is None or not memory_ids:
            return out
        conn = self.db.reader()
        # A large tenant's index holds the vectors: no vec0 point lookup per record.
        out = self.ann.vectors_for(conn, list(dict.fromkeys(memory_ids)))
        ids = [m for m in dict.fromkeys(memory_ids) if m not in out]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            # One statement; CROSS JOIN keeps vec0 as the inner loop, where
            # it answers each vector_id with a point lookup.
            for memory_id, blob in conn.execute(
                f"SELECT m.id, e.embedding FROM memories m CROSS JOIN memory_vectors v "
                f"ON v.memory_rowid = m.rowid CROSS JOIN vec_memories e ON e.vector_id = v.vector_id "
                f"WHERE m.id IN ({marks}) ORDER BY v.memory_rowid, v.part",
                chunk,
            ):
                out.setdefault(memory_id, []).append(deserialize(blob))
        return out

    def record_access(self, events: Sequence[AccessEvent], at: datetime) -> None:
        """Bump access counters and append access-log rows, in one transaction.

        A row written after a forget for a read made before it brings back neither the query's words
        nor a row of a forgotten record (``ACCESS_ROW``).
        """
        if not events:
            return
        stamp = to_epoch(at)
        with self.db.write() as conn:
            conn.executemany(
                "UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                [(stamp, e.memory_id) for e in events],
            )
            conn.executemany(
                ACCESS_ROW,
                [
                    (
                        *(stamp, e.tenant, e.memory_id, e.action, e.query, e.score, e.session_id, e.agent_id),
                        *(e.tenant, stamp, e.memory_id),
                    )
                    for e in events
                ],
            )
            drop_cached_queries(conn, events, stamp)

    def access_log(self, memory_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest access-log rows, optionally of one record."""
        sql = "SELECT at, tenant, memory_id, action, query, score, session_id, agent_id FROM access_log"
        params: list[Any] = []
        if memory_id:
            sql += " WHERE memory_id = ?"
            params.append(memory_id)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(limit)
        keys = ("at", "tenant", "memory_id", "action", "query", "score", "session_id", "agent_id")
        rows = []
        for row in self.db.reader().execute(sql, params):
            item = dict(zip(keys, row, strict=True))
            item["at"] = format_time(from_epoch(item["at"]))
            rows.append(item)
        return rows

    # -- embedding cache -----------------------------------------------------
    def cache_get(self, model_id: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached embeddings by text hash."""
        out: dict[str, np.ndarray] = {}
        conn = self.db.reader()
        hashes = list(dict.fromkeys(text_hashes))
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for h, blob in conn.execute(
                f"SELECT text_hash, vector FROM embedding_cache WHERE model_id = ? AND text_hash IN ({marks})",
                [model_id, *chunk],
            ):
                out[h] = deserialize(blob)
        return out

    def cache_put(self, model_id: str, items: Sequence[tuple[str, np.ndarray]], *, since: float | None = None) -> None:
        """Store embeddings in the cache (a read-only store skips it: the cache only saves time); none after a
        forget since ``since``, when the texts were read: they may be forgotten text. Checked once per call, in
        the write transaction (no forget commits inside it), not once per row."""
        if not items or self.db.read_only:
            return
        with self.db.write() as conn:
            if since is not None and conn.execute(FORGOT_SINCE, (since,)).fetchone():
                return
            conn.executemany(
                "INSERT OR IGNORE INTO embedding_cache (model_id, text_hash, vector) VALUES (?, ?, ?)",
                [(model_id, h, serialize(v)) for h, v in items],
            )

    # -- bulk, stats, integrity ---------------------------------------------
    def iter_records(self, tenant: str | None = None) -> Iterator[Memory]:
        """Every record, oldest first (streamed in batches)."""
        last = 0
        conn = self.db.reader()
        while True:
            sql = f"SELECT rowid, {COLUMNS} FROM memories WHERE rowid > ?"
            params: list[Any] = [last]
            if tenant is not None:
                sql += " AND tenant = ?"
                params.append(tenant)
            rows = conn.execute(sql + " ORDER BY rowid LIMIT 500", params).fetchall()
            if not rows:
                return
            for row in rows:
                yield to_memory(row[1:])
            last = rows[-1][0]

    def stats(self, tenant: str | None = None) -> dict[str, Any]:
        """Counts by kind, type and scope, plus file sizes."""
        conn = self.db.reader()
        cond, params = ("WHERE tenant = ?", [tenant]) if tenant is not None else ("", [])

        def grouped(column: str) -> dict[str, int]:
            return {
                str(k): int(n)
                for k, n in conn.execute(f"SELECT {column}, COUNT(*) FROM memories {cond} GROUP BY {column}", params)
            }

        total = conn.execute(f"SELECT COUNT(*) FROM memories {cond}", params).fetchone()[0]
        # A tenant's stats count its own rows only: an empty team saw every team's vectors (issue 31).
        vectors = conn.execute(
            "SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
            f"{cond.replace('tenant', 'm.tenant')}",
            params,
        ).fetchone()[0]
        cached = conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0] if tenant is None else None
        logged = conn.execute(f"SELECT COUNT(*) FROM access_log {cond}", params).fetchone()[0]
        size = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal"):
                p = Path(self.path + suffix)
                if p.exists():
                    size += p.stat().st_size
        ident = self.identity()
        return {
            "path": self.path,
            "records": int(total),
            "by_kind": grouped("kind"),
            "by_type": grouped("memory_type"),
            "by_scope": grouped("scope"),
            "by_source": grouped("CASE WHEN source_type = '' THEN 'none' ELSE source_type END"),
            "pinned": int(
                conn.execute(
                    f"SELECT COUNT(*) FROM memories {cond} {'AND' if cond else 'WHERE'} pinned = 1", params
                ).fetchone()[0]
            ),
            "vectors": int(vectors),
            "cached_embeddings": None if cached is None else int(cached),  # shared by every tenant
            "access_log_rows": int(logged),
            "pending_vectors": self.pending_vectors(tenant),
            "jobs": self.job_counts(tenant),
            "size_bytes": size,
            "embedder": None if ident is None else {"model_id": ident.model_id, "dimensions": ident.dimensions},
        }

    def pending_vectors(self, tenant: str | None = None) -> int:
        """Records without vectors that a queued or running ``vectors`` job will embed (kept keyword-searchable)."""
        sql = f"SELECT COUNT(*) FROM memories m WHERE {_NO_VECTOR} AND m.id IN ({_AWAITED})"
        params: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " AND m.tenant = ?"
            params = (tenant,)
        return int(self.db.reader().execute(sql, params).fetchone()[0])

    def trim_vector_changes(self, keep: int) -> None:
        """Drop all but the newest ``keep`` rows of the vector change log (triggers also trim it as it grows)."""
        with self.db.write() as conn:
            self._trim_vector_changes(conn, keep)

    @staticmethod
    def _trim_vector_changes(conn: Any, keep: int) -> None:
        top = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'").fetchone()
        floor = max(0, (int(top[0]) if top else 0) - max(0, keep))
        conn.execute(
            "UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER), ?) AS TEXT) WHERE key = 'vector_changes_floor'",
            (floor,),
        )
        conn.execute(
            "DELETE FROM vector_changes WHERE seq <= "
            "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_changes_floor')"
        )

    def rebuild_keyword_index(self) -> None:
        """Rebuild the FTS5 index from the records."""
        with self.db.write() as conn:
            conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")

    def replace_index(
        self, identity: EmbedderIdentity, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]
    ) -> int:
        """Swap in a new embedder identity, every record's vectors and a rebuilt keyword index, atomically.

        One transaction (the nested writes become savepoints), so a crash
        during a reindex leaves the old identity and vectors intact.
        """
        dims = self._dims
        try:
            with self.db.write():
                self.set_identity(identity, reset=True)
                count = self.put_many(items)
                self.rebuild_keyword_index()
        except BaseException:
            self._dims = dims  # the old vector table is back
            raise
        return count

    def close(self) -> None:
        """Close every connection."""
        self.db.close()


def salvage_path(source: Path, dest: Path) -> dict[str, Any]:
    """Salvage a store file that may be too damaged to open normally into a new store at ``dest``."""
    from .maintenance import salvage_file

    if not source.is_file() or source.stat().st_size == 0:
        raise InvalidInput(f"There is no store to salvage at {source}.", hint="Pass the damaged store with --db.")
    store = SqliteStore(source, migrate=False)
    try:
        return salvage_file(store, dest)
    finally:
        store.close()
