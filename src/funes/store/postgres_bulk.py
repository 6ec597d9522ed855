"""Bulk writes of the PostgreSQL store: many records in a few statements.

``put_many`` (what ``remember_many``, ``add_messages``, imports and uploads
write through) takes records a thousand at a time: one read of which ids
exist, one ``INSERT ... SELECT FROM unnest(...)`` of typed column arrays for
the new ones (keyword vector included, parameters binary), one ``UPDATE ...
FROM unnest(...)`` for the others, and the vectors in one more ``unnest``,
all in the caller's one transaction. (``COPY FROM`` is refused by PostgreSQL
on tables under row-level security; COPY into a staging table and
``INSERT ... SELECT`` from it would add a step to these same inserts, whose
cost is the server's index upkeep, not the transfer.)

A large load into a store holding few vectors drops the HNSW index first and
queues an ``ann-index`` job, in the same transaction, that builds it again
once the load has committed (``CREATE INDEX CONCURRENTLY``: neither reads nor
writes wait for it), as the SQLite store builds its usearch indexes in that
job. Building is several times faster than inserting into the graph row by
row, and the build no longer holds the load's transaction (and its table
lock) open. Until it is built, searches of large tenants are exact scans:
the same hits, slower. Every other load extends the index as it goes.
Numbers: docs/postgres.md (bench/pg_write_bench.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..models import Memory, utcnow
from .base import checked_vectors, refuse_other_tenant, vis_key
from .pg_load import HELD as _HELD
from .pg_load import HNSW_VALID, LOAD_QUIET, TRACK_MIN, end_load, quiet_in, record_load, worth_rebuilding
from .sqlite_rows import COLUMNS, row_values, to_memory
from .tenancy import acting_for, current_tenant
from .words import fold_words

BATCH = 1000  # records per round of statements
# Which tenant holds each of these record ids (run acting for no tenant: ids are the store's, see base.refuse_other_tenant).
_OWNERS = "SELECT id, rowid, tenant FROM memories WHERE id = ANY(%s)"
#: Ids a caller looked up with _OWNERS in the write's transaction, and the rows it found.
Owners = tuple[set[str], list[Any]]
ANALYZE_AFTER = 1000  # records written at once that refresh the planner's statistics
# The keyword vector of the unnested row ``u`` (see _unnest): folded title (A), content, topic (C).
_FTS_OF_U = (
    "setweight(to_tsvector('simple', u.fold_title), 'A') || to_tsvector('simple', u.fold_content) "
    "|| setweight(to_tsvector('simple', u.fold_topic), 'C')"
)
_NAMES = [c.strip() for c in COLUMNS.split(",")]
ANALYZE_GROWTH = 0.25  # share of new rows since the last ANALYZE after which a load refreshes the statistics
# Whether the planner's statistics of memories are stale after this write: never analysed, or changed by
# at least a quarter of its rows (or ANALYZE_AFTER) since the last ANALYZE, counting this write.
STATS_STALE = (
    "SELECT s.last_analyze IS NULL AND s.last_autoanalyze IS NULL OR c.reltuples < 0 OR s.n_mod_since_analyze + %s "
    f">= greatest(%s, c.reltuples * {ANALYZE_GROWTH}) FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE c.oid = 'memories'::regclass"
)
# ef_construction 128, not pgvector's 64: on one tenant of 100k clustered vectors the iterative scan's recall@10
# against exact was 0.983 with the default graph and 1.000 with this one, at the same search time (issue 29);
# the build takes about 1.5 times as long. An index built before keeps its graph until `REINDEX`.
HNSW_INDEX = (
    "CREATE INDEX {how} IF NOT EXISTS memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 16, ef_construction = 128)"
)


class PostgresBulk:
    """Mixin of PostgresStore: ``put_many`` in batches."""

    db: Any
    _dims: int | None
    _memory_types: dict[str, str] | None = None
    _index_wanted: str | None = None  # the tenant of a load that dropped the HNSW index, until reported
    #: Seconds without a load's write before its HNSW index is built again (see funes.store.pg_load).
    load_quiet: float = LOAD_QUIET

    def _write_many(
        self,
        items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]],
        *,
        decided: bool = False,
        owners: Owners | None = None,
    ) -> int:
        """Insert or replace many records in one transaction, a batch of statements per thousand.

        ``decided``: the caller already chose whether to drop the HNSW index (before its transaction).
        ``owners``: the ids the caller already looked up in this transaction, with the rows it found (_OWNERS).
        """
        items = list(items)
        if not items:
            return 0
        dropped = True if decided else self._drop_index_for(items)
        with self.db.write() as conn:
            if dropped is None and self._plan_load(conn, items) == "drop":
                # Inside a caller's transaction (remember_many, an import, a reindex): the load is counted and
                # the index dropped in it (a rollback undoes both); other sessions wait on the lock this takes
                # until it commits, not for the build.
                conn.native("DROP INDEX IF EXISTS memory_vectors_hnsw")
            for start in range(0, len(items), BATCH):
                self._put_batch(conn, items[start : start + BATCH], owners)
            if len(items) >= ANALYZE_AFTER and conn.native(STATS_STALE, [len(items), ANALYZE_AFTER]).fetchone()[0]:
                # Autovacuum analyses a minute later; until then a bulk load leaves row estimates of 1, and
                # the planner chose nested loops that took 400 ms per search at 4k records. ANALYZE counts
                # this transaction's own rows, so it runs inside it (remember_many's batch is in one). Only
                # once the table has grown by a quarter since the last: a load of many calls of 1,000 spent
                # 80% of each call analysing 100k rows (0.35 s against 0.08 s for the inserts).
                conn.native("ANALYZE memories, memory_vectors")
        return len(items)

    def _drop_index_for(self, items: list[tuple[Memory, Sequence[np.ndarray] | None]]) -> bool | None:
        """Before a load outside any transaction: count it into the load under way, and drop the HNSW
        index when building it again after the load beats extending it (:mod:`funes.store.pg_load`).

        The build job is queued first (its own transaction), then the index is
        dropped ``CONCURRENTLY``: searches never wait on it, and a load that fails
        or a process that dies leaves the job to build the index again. True when
        the load writes without the index; None inside a transaction, where a drop
        must wait for the load's own.
        """
        if self.db.in_transaction():
            return None
        with self.db.write() as conn:
            plan = self._plan_load(conn, items)
        if plan == "drop":
            self.db.reader().native("DROP INDEX CONCURRENTLY IF EXISTS memory_vectors_hnsw")
        return plan != "keep"

    def _plan_load(self, conn: Any, items: list[tuple[Memory, Sequence[np.ndarray] | None]]) -> str:
        """Count the write into the load under way: "keep" the index (extended as it goes), write with it
        already "away", or "drop" it (the build job queued, to run once the store is quiet)."""
        incoming = sum(len(v) for _, v in items if v)
        if incoming < TRACK_MIN or self._dims is None:
            return "keep"
        load, state, held = record_load(conn, incoming, self.load_quiet)
        if state is not None and (not state or not worth_rebuilding(load, held)):
            return "keep"  # state False: a build under way, which this load joins
        # Away (a load before this one dropped it; its build waits for this one too) or worth dropping.
        self._queue_build(items[0][0].tenant, self.load_quiet)
        return "away" if state is None else "drop"

    def _queue_build(self, tenant: str, wait: float = 0.0) -> None:
        """Queue the ``ann-index`` job that builds the HNSW index (in the caller's transaction when there is one).

        A queued one absorbs it; it runs after ``wait`` seconds at the earliest.
        """
        with self.db.write():  # under row-level security every record of a load is the tenant in force
            self.enqueue_job(  # type: ignore[attr-defined]
                "ann-index",
                {"tenant": tenant},
                tenant=tenant,
                now=utcnow(),
                run_after=utcnow() + timedelta(seconds=wait) if wait > 0 else None,
                dedupe_key=f"ann-index:{tenant}",
            )
        self._index_wanted = tenant

    def index_work(self) -> list[str]:
        """The tenant to queue the HNSW build for, once after a load dropped the index (else nothing).

        The load queued the job itself; asking again through the service wakes
        the worker (the queued job absorbs the duplicate). Reported as the
        caller's tenant when there is one: row-level security admits only its
        jobs, and the index is the whole store's whichever tenant's job builds it.
        """
        wanted, self._index_wanted = self._index_wanted, None
        return [current_tenant.get() or wanted] if wanted else []

    def index_away(self) -> bool:
        """Whether the HNSW index is missing or invalid in a store that holds vectors (a load dropped it, and the
        ``ann-index`` job has not yet built it again): tenants over ``exact_max`` are then scanned exactly."""
        if self._dims is None:
            return False
        row = self.db.reader().native(HNSW_VALID).fetchone()
        return row is None or not row[0]

    def maintain_index(self, tenant: str) -> str:
        """Build the HNSW index when a load dropped it (``CONCURRENTLY``, outside a transaction), once the
        load is over: while one still writes, the job is queued again for when the store turns quiet."""
        if self._dims is None:
            return "no vectors yet"
        with self.db.borrow() as conn:
            row = conn.native(HNSW_VALID).fetchone()
            if row is not None and row[0]:
                return "PostgreSQL maintains the HNSW index on every write; nothing to do"
            inside = self.db.in_transaction()
            wait = quiet_in(conn, self.load_quiet)
            if wait > 0 and not inside:
                self._queue_build(current_tenant.get() or tenant, wait)
                return f"a load is still writing: the build waits until it has been quiet {self.load_quiet:g} s"
            # One build at a time across processes (two tenants' jobs would build the one index twice).
            if (
                not inside
                and not conn.native("SELECT pg_try_advisory_lock(hashtext('funes.hnsw-build'))").fetchone()[0]
            ):
                return "another process is building the HNSW index"
            try:
                return self._build_index(conn, row is not None, inside)
            finally:
                if not inside:
                    conn.native("SELECT pg_advisory_unlock(hashtext('funes.hnsw-build'))")

    def _build_index(self, conn: Any, invalid: bool, inside: bool) -> str:
        end_load(conn)  # the load is over: writes from now on (into the index being built) start a new one
        if invalid:  # a concurrent build that failed leaves an invalid index behind
            conn.native(f"DROP INDEX {'' if inside else 'CONCURRENTLY'} IF EXISTS memory_vectors_hnsw")
        # The whole store's vectors (a count(*) under row-level security would see one tenant's).
        held = int(conn.native(_HELD).fetchone()[0])
        # The graph of every vector in memory builds several times faster than one that spills.
        memory = min(max(64, held * ((self._dims or 0) * 4 + 512) * 3 // 2 >> 20), 2048)
        conn.native(f"SET {'LOCAL ' if inside else ''}maintenance_work_mem = '{memory}MB'")
        try:
            conn.native(HNSW_INDEX.format(how="" if inside else "CONCURRENTLY"))
        finally:
            if not inside:
                conn.native("RESET maintenance_work_mem")
        return f"built the HNSW index over {held} vectors"

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
        decided = self._drop_index_for(list(items)) is not None
        ids = [m.id for m, _ in items]
        with self.db.write() as conn:
            # One round trip: the locks, then (PostgreSQL runs them in order, so under the locks) the live
            # duplicates and which tenant holds each id (ids are the store's: row-level security would hide
            # another tenant's record, so that read acts for none).
            conn.defer(
                "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM "
                "(SELECT DISTINCT k FROM unnest(%s::text[]) AS u(k) ORDER BY k) s",
                [keys],
                tenant=False,
            )
            columns = ", ".join("m." + c.strip() for c in COLUMNS.split(","))
            duplicates = conn.defer(
                f"SELECT DISTINCT ON (k.key) k.key, {columns} FROM unnest(%s::text[], %s::text[], %s::text[], "
                "%s::text[], %s::text[], %s::text[]) AS k(key, tenant, vis, content_hash, kind, user_id) "
                "JOIN memories m ON m.tenant = k.tenant AND m.vis = k.vis AND m.content_hash = k.content_hash "
                "AND m.kind = k.kind AND m.user_id = k.user_id ORDER BY k.key, m.rowid",
                [keys, *map(list, zip(*(_identity(m) for m, _ in items), strict=True))],
            )
            with acting_for(None):
                held = conn.defer(_OWNERS, [ids])
            conn.flush()
            found = {row[0]: to_memory(row[1:]) for row in duplicates.rows()}
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
            self._write_many(writes, decided=decided, owners=(set(ids), held.rows()))
        return standing

    def _column_types(self, conn: Any) -> dict[str, str]:
        """The SQL type of each column of ``memories`` (read once: migrations add columns, never retype them)."""
        if self._memory_types is None:
            rows = conn.native(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'memories'::regclass AND attnum > 0 AND NOT attisdropped"
            ).fetchall()
            self._memory_types = {str(n): str(t) for n, t in rows}
        return self._memory_types

    def _put_batch(
        self, conn: Any, batch: list[tuple[Memory, Sequence[np.ndarray] | None]], owners: Owners | None = None
    ) -> None:
        ids = [m.id for m, _ in batch]
        if len(set(ids)) < len(ids):
            for memory, vectors in batch:  # one id twice: the later write wins, as one by one
                self._put(conn, memory, vectors)  # type: ignore[attr-defined]
            return
        checked = [self._checked(m, v) for m, v in batch]
        if owners is not None and owners[0].issuperset(ids):
            wanted = set(ids)
            found = [row for row in owners[1] if row[0] in wanted]  # read by the caller, in this transaction
        else:
            with acting_for(None):  # ids are the store's: row-level security would hide another tenant's record
                found = conn.native(_OWNERS, [ids]).fetchall()
        by_id = {m.id: m for m, _ in batch}
        existing = {i: rowid for i, rowid, tenant in found if tenant == by_id[i].tenant}
        for i, _, tenant in found:
            if i not in existing:
                refuse_other_tenant(by_id[i], tenant)
        new = [(m, v) for (m, _), v in zip(batch, checked, strict=True) if m.id not in existing]
        old = [(m, v) for (m, _), v in zip(batch, checked, strict=True) if m.id in existing]
        rowids = dict(existing)
        types = self._column_types(conn)
        if old:
            source, params = _unnest([m for m, _ in old], types, [rowids[m.id] for m, _ in old])
            sets = ", ".join(f"{c.strip()} = u.{c.strip()}" for c in COLUMNS.split(","))
            conn.native(f"UPDATE memories m SET {sets}, fts = {_FTS_OF_U} FROM {source} WHERE m.rowid = u.at", params)
            kept = [(m.tenant, rowids[m.id]) for m, v in old if v is None]
            if kept:  # the tenant is copied onto the vectors (the exact KNN's btree): keep it in step
                conn.native(
                    "UPDATE memory_vectors v SET tenant = k.tenant FROM unnest(%s::text[], %s::int8[]) AS k(tenant, at) "
                    "WHERE v.memory_rowid = k.at AND v.tenant != k.tenant",
                    [list(c) for c in zip(*kept, strict=True)],
                )
            replaced = [rowids[m.id] for m, v in old if v is not None]
            if replaced:
                conn.native("DELETE FROM memory_vectors WHERE memory_rowid = ANY(%s)", [replaced])
            # Each tenant's vectors side by side on the heap: an exact search reads its tenant's vectors by the
            # tenant btree, and a batch of many tenants' records (an import of a team, a busy server's load)
            # written in its own order put each of them on a page of its own (4,000 pages for 4,000 vectors).
            rows = sorted(_vector_rows(old, rowids), key=lambda r: r[2])
            if rows:
                conn.native(
                    "INSERT INTO memory_vectors (memory_rowid, part, tenant, embedding) "
                    "SELECT * FROM unnest(%s::int8[], %s::int4[], %s::text[], %b::vector[])",  # binary: 16x faster
                    [list(column) for column in zip(*rows, strict=True)],
                )
        if new:
            # The new records and their vectors in one statement (one round trip): the vectors take the rowids
            # the records' insert returns, matched by id (unique in the batch).
            source, params = _unnest([m for m, _ in new], types)
            rows = sorted(_vector_rows(new, {m.id: m.id for m, _ in new}), key=lambda r: r[2])
            insert = f"INSERT INTO memories ({COLUMNS}, fts) SELECT {COLUMNS}, {_FTS_OF_U} FROM {source} ORDER BY u.n"
            if rows:
                insert = (
                    f"WITH ins AS ({insert} RETURNING id, rowid) INSERT INTO memory_vectors (memory_rowid, part, "
                    "tenant, embedding) SELECT ins.rowid, v.part, v.tenant, v.embedding FROM unnest(%s::text[], "
                    "%s::int4[], %s::text[], %b::vector[]) WITH ORDINALITY AS v(id, part, tenant, embedding, n) "
                    "JOIN ins ON ins.id = v.id ORDER BY v.n"
                )
                params += [list(column) for column in zip(*rows, strict=True)]
            conn.native(insert, params)

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


def _vector_rows(
    group: list[tuple[Memory, list[np.ndarray] | None]], at: dict[str, Any]
) -> Iterable[tuple[Any, int, str, np.ndarray]]:
    """(``at`` of the record, part, tenant, vector) of each vector the group's records bring."""
    for memory, vectors in group:
        for part, vector in enumerate(vectors or ()):
            yield at[memory.id], part, memory.tenant, vector


def _identity(m: Memory) -> tuple[str, str, str, str, str]:
    """What makes two records the same for ``put_unique``: tenant, visibility, content, kind and owner."""
    return m.tenant, vis_key(m.scope, m.project_id, m.session_id), m.content_hash, m.kind, m.user_id or ""


def _identity_key(m: Memory) -> str:
    return "\x1f".join(_identity(m))


def _unnest(records: list[Memory], types: dict[str, str], at: list[int] | None = None) -> tuple[str, list[Any]]:
    """The records as one ``unnest`` of typed column arrays named ``u`` (with their folded words, their order as
    ``u.n`` and, given ``at``, the rowid each updates as ``u.at``): a batch as one statement, its parameters binary.
    """
    rows = [(*row_values(m), *_fts_values(m)) for m in records]
    sql_types = [types[n] for n in _NAMES] + ["text"] * 3
    params = [_typed(column, t) for column, t in zip(zip(*rows, strict=True), sql_types, strict=True)]
    names = [*_NAMES, "fold_title", "fold_content", "fold_topic"]
    if at is not None:
        params.append(at)
        sql_types.append("bigint")
        names.append("at")
    arrays = ", ".join(f"%s::{t}[]" for t in sql_types)
    return f"unnest({arrays}) WITH ORDINALITY AS u({', '.join(names)}, n)", params


def _typed(values: Sequence[Any], sql_type: str) -> list[Any]:
    """A column's values as the Python type its array is sent as (a float column may hold ints, and the reverse)."""
    if sql_type in ("double precision", "real"):
        return [None if v is None else float(v) for v in values]
    if sql_type in ("integer", "bigint", "smallint"):
        return [None if v is None else int(v) for v in values]
    return list(values)


def refold_keywords(conn: Any) -> int:
    """Recompute every record's keyword vector from its text, ``BATCH`` records a statement; the records refolded.

    Run by ``rebuild_keyword_index`` and once by migration 013 (the words became
    Porter stems): the folding is Python's, so SQL alone cannot backfill it.
    """
    done, after = 0, -1
    while True:
        with acting_for(None):  # every tenant's records (row-level security passes all when none is set)
            rows = conn.native(
                "SELECT tenant, rowid, title, content, topic FROM memories WHERE rowid > %s ORDER BY rowid LIMIT %s",
                [after, BATCH],
            ).fetchall()
            if not rows:
                return done
            conn.native(
                f"UPDATE memories m SET fts = {_FTS_OF_U} FROM unnest(%s::text[], %s::int8[], %s::text[], "
                "%s::text[], %s::text[]) AS u(tenant, at, fold_title, fold_content, fold_topic) "
                "WHERE m.tenant = u.tenant AND m.rowid = u.at",
                [
                    [r[0] for r in rows],
                    [r[1] for r in rows],
                    *([fold_words(r[i]) for r in rows] for i in (2, 3, 4)),
                ],
            )
        done += len(rows)
        after = rows[-1][1]


def _fts_values(m: Memory) -> tuple[str, str, str]:
    return fold_words(m.title), fold_words(m.content), fold_words(m.topic)
