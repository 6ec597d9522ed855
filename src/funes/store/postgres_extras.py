"""PostgreSQL spellings of the store's jobs claim, retention, statistics, health, API keys and project settings.

Jobs keep every semantic of :mod:`funes.store.sqlite_jobs` (shared through
the mixin); only the claim differs: ``SELECT ... FOR UPDATE SKIP LOCKED``
inside one transaction, so workers in several processes never take the
same job and never wait on each other's claimed rows. A dedupe key is taken
with ``ON CONFLICT DO NOTHING`` against the partial unique index (per tenant).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import FunesError, WriteCrossed
from ..models import JudgedRecord, Memory, RankFields, from_epoch, new_id, to_epoch
from . import pg_judged
from .base import AccessEvent
from .sqlite import SqliteStore
from .sqlite_rows import COLUMNS, serialize, to_memory
from .tenancy import acting_for, current_tenant

log = logging.getLogger("funes.store.postgres")

#: Held access rows are written with the tenant's next fetch, or on their own once this old or this many.
ACCESS_FLUSH_SECONDS = 2.0
ACCESS_FLUSH_ROWS = 500
ACCESS_HELD_MAX = 10_000  # rows kept while writes fail
# Access rows written on a search's way (with its fetch of records, or once due) and embedding-cache rows commit
# without waiting for the WAL to reach the disk (issue 29): a server crash may lose their last fraction of a
# second (wal_writer_delay), as a SIGKILL of the process loses access rows still held, never a record; close()
# and exports still wait. A ``SET LOCAL`` in the write's own transaction: nothing else on the connection
# commits this way.
_ASYNC_COMMIT = "SET LOCAL synchronous_commit = off"

# Ids of records a live `vectors` job will embed (see Core.defer_vectors).
_AWAITED = (
    "SELECT jsonb_array_elements_text(payload::jsonb -> 'ids') FROM jobs "
    "WHERE kind = 'vectors' AND status IN ('queued', 'running') AND jsonb_typeof(payload::jsonb -> 'ids') = 'array'"
)
_NO_VECTOR = "NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.tenant = m.tenant AND v.memory_rowid = m.rowid)"
_KEY_COLUMNS = ("id", "team", "user_id", "role", "name", "prefix", "created_at", "last_used_at", "revoked_at")
_KEY_TIMES = ("created_at", "last_used_at", "revoked_at")


def _access_statement(
    batch: Sequence[tuple[AccessEvent, datetime]], *, nowait: bool = False
) -> tuple[str, list[list[Any]]]:
    """One statement bumping the records' counters and appending the access-log rows (PostgreSQL SQL, parameters).

    ``nowait=True`` gives up at once (``55P03``) on a record a writer holds instead of waiting for it: rows that
    ride with a read never hold the read up, and never close a lock cycle with a writer that locks records
    of several documents in one transaction (a folder sync), whose rowids need not ascend across documents.
    """
    columns: list[list[Any]] = [[] for _ in range(8)]
    for event, at in batch:
        query = event.query.replace("\x00", "") if event.query else event.query  # NUL cannot be stored
        values = (to_epoch(at), event.tenant, event.memory_id, event.action, query, event.score)
        for column, value in zip(columns, (*values, event.session_id, event.agent_id), strict=True):
            column.append(value)
    sql = (
        "WITH ev AS (SELECT * FROM unnest(%s::float8[], %s::text[], %s::text[], %s::text[], %s::text[], "
        "%s::float8[], %s::text[], %s::text[]) WITH ORDINALITY AS e(at, tenant, memory_id, action, query, score, "
        "session_id, agent_id, n)), c AS (SELECT memory_id, count(*) AS reads, max(at) AS at FROM ev GROUP BY memory_id), "
        # The records' rows locked in rowid order, as every writer locks them: in the update's own order a
        # concurrent writer holding one and waiting on another deadlocked with it.
        "locked AS MATERIALIZED (SELECT m.rowid, m.id FROM memories m JOIN c ON m.id = c.memory_id ORDER BY m.rowid "
        f"FOR UPDATE OF m{' NOWAIT' if nowait else ''}), bump AS (UPDATE memories m SET access_count = m.access_count + c.reads, "
        "last_accessed = c.at FROM c, locked l WHERE m.id = c.memory_id AND m.rowid = l.rowid) "
        # As sqlite_forget.ACCESS_ROW: a read from before a forget logs no query text, nor a forgotten record.
        "INSERT INTO access_log (at, tenant, memory_id, action, query, score, session_id, agent_id) "
        "SELECT at, tenant, memory_id, action, CASE WHEN forgot THEN NULL ELSE query END, score, session_id, "
        "agent_id FROM (SELECT ev.*, EXISTS (SELECT 1 FROM forget_receipts r WHERE r.tenant = ev.tenant "
        "AND r.at >= ev.at) AS forgot FROM ev) e WHERE NOT forgot OR memory_id IN (SELECT id FROM locked) ORDER BY n"
    )
    return sql, columns


JOB_COLUMNS = "id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, created_at, updated_at"
JOB_MARKS = "%s, %s, %s, %s, 'queued', %s, %s, %s, %s, %s"
# A queued job with the same dedupe key absorbs a new one (the partial unique index of pg_sql/004).
JOB_ABSORBED = "ON CONFLICT (tenant, dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'queued' DO NOTHING"


def job_values(job: dict[str, Any]) -> list[Any]:
    """A new job row's values, in JOB_COLUMNS' order (status aside), from ``enqueue_job``'s arguments."""
    stamp = to_epoch(job["now"])
    after = job.get("run_after")
    return [
        new_id("job"),
        job["tenant"],
        job["kind"],
        json.dumps(job["payload"], sort_keys=True, ensure_ascii=False),
        job.get("max_attempts", 5),
        to_epoch(after) if after is not None else stamp,
        job.get("dedupe_key"),
        stamp,
        stamp,
    ]


def _key_row(row: Sequence[Any], columns: Sequence[str]) -> dict[str, Any]:
    item = dict(zip(columns, row, strict=True))
    for name in _KEY_TIMES:
        item[name] = from_epoch(item[name])
    return item


# shared_buffers in bytes (in the server's own block size), and what a vector search reads: the HNSW index and the
# vectors' table.
_BUFFERS = (
    "SELECT pg_size_bytes(current_setting('shared_buffers')), "
    "coalesce(pg_relation_size(to_regclass('memory_vectors_hnsw')), 0) + pg_relation_size('memory_vectors')"
)


def buffers_note(buffers: int, needed: int) -> str | None:
    """A note when ``shared_buffers`` cannot hold the vector index and the vectors (None when it can).

    With PostgreSQL's default 128 MB and 100k records of 384 dimensions (360 MB of both), every search read their
    pages into the buffers again: the mixed REST load cost PostgreSQL 16.6-16.8 ms of CPU per request against
    12.3 ms with 1 GB (issue 29, docs/postgres.md).
    """
    if needed <= buffers:
        return None
    mib = 1024 * 1024
    return (
        f"PostgreSQL's shared_buffers ({buffers // mib} MB) cannot hold the vector index and the vectors "
        f"({needed // mib} MB): searches read their pages again and again. Set it larger (`ALTER SYSTEM SET "
        "shared_buffers = '1GB'`, then restart PostgreSQL; up to a quarter of the machine's memory)."
    )


class PostgresExtras:
    """Mixin of PostgresStore: the parts whose SQL is PostgreSQL's own."""

    db: Any
    path: str
    _access_lock: threading.Lock
    _access_pending: dict[str, list[tuple[AccessEvent, datetime]]]
    _access_since: dict[str, float]
    _settings_read: dict[str, Any]
    _settings_written: dict[str, float]
    _dims: int | None
    #: The shared claim (sqlite_jobs.JobTables.claim_job) skips rows other workers hold.
    claim_lock = " FOR UPDATE SKIP LOCKED"

    # -- embedding cache -------------------------------------------------------------
    def cache_put(self, model_id: str, items: Sequence[tuple[str, np.ndarray]], *, since: float | None = None) -> None:
        """Store embeddings in the cache: one statement, sent with the COMMIT (one round trip in all).

        Outside a caller's transaction the commit does not wait for the disk (``synchronous_commit = off``):
        a cache row lost in a crash costs an embedding again, never data. After a forget of the acting tenant
        since ``since`` (when the texts were read) nothing is cached, as on SQLite (``SqliteStore.cache_put``); the
        condition does not depend on the row, so PostgreSQL evaluates it once per statement.
        """
        if not items or self.db.read_only:
            return
        ordered = sorted(items, key=lambda item: item[0])  # one key order for every writer: no deadlock
        own = not self.db.in_transaction()
        with self.db.write() as conn:
            if own:
                conn.defer(_ASYNC_COMMIT)
            conn.defer(
                "INSERT INTO embedding_cache (model_id, text_hash, vector) SELECT %s, h, v "
                "FROM unnest(%s::text[], %s::bytea[]) AS u(h, v) WHERE %s::float8 IS NULL OR NOT EXISTS "
                "(SELECT 1 FROM forget_receipts WHERE at >= %s) ON CONFLICT DO NOTHING",
                [model_id, [h for h, _ in ordered], [serialize(v) for _, v in ordered], since, since],
            )

    # -- jobs ----------------------------------------------------------------------
    def record_accesses(self, batch: Sequence[tuple[AccessEvent, datetime]], *, wait: bool = True) -> None:
        """Access counters and access-log rows of many reads in one statement (atomic on its own: one round trip).

        ``wait=False`` (on a search's way, outside a transaction): the commit does not wait for the WAL's flush
        (``_ASYNC_COMMIT``), nor the statement for a record a writer holds (``WriteCrossed`` at once).
        """
        if not batch:
            return
        if wait or self.db.in_transaction():
            statement = _access_statement(batch)
            self.db.retrying(lambda: self.db.reader().native(*statement))
        else:
            self.db.reader().batch([_access_statement(batch, nowait=True)], [_ASYNC_COMMIT], write=True)

    def defer_accesses(self, batch: Sequence[tuple[AccessEvent, datetime]]) -> None:
        """Hold access rows to go with the acting tenant's next fetch of records (no round trip of their own).

        Rows waiting longer than ``ACCESS_FLUSH_SECONDS``, or more than
        ``ACCESS_FLUSH_ROWS`` of them, are written now, in one statement.
        """
        tenant = current_tenant.get() or ""
        with self._access_lock:
            waiting = self._access_pending.setdefault(tenant, [])
            waiting.extend(batch)
            if not waiting:
                return
            self._access_since.setdefault(tenant, time.monotonic())
            due = [
                t
                for t, rows in self._access_pending.items()
                if rows
                and (len(rows) >= ACCESS_FLUSH_ROWS or time.monotonic() - self._access_since[t] >= ACCESS_FLUSH_SECONDS)
            ]
        for t in due:
            self.flush_accesses(t, wait=False)

    def flush_accesses(self, tenant: str | None = None, *, wait: bool = True) -> None:
        """Write the held access rows (of one tenant setting, or all) now; they wait again if the write fails.

        ``wait=False``: on a search's way (see :meth:`record_accesses`).
        """
        with self._access_lock:
            keys = [tenant] if tenant is not None else list(self._access_pending)
            taken = {k: self._access_pending.pop(k, []) for k in keys}
            for k in keys:
                self._access_since.pop(k, None)
        for key, rows in taken.items():
            if not rows:
                continue
            try:
                with acting_for(key or None):
                    self.record_accesses(rows, wait=wait)
            except WriteCrossed as exc:
                self._hold_accesses(key, rows)
                if wait:
                    raise
                log.debug("access rows held back (%d): %s", len(rows), exc)  # a writer holds one of the records
            except BaseException:
                self._hold_accesses(key, rows)
                raise

    def _hold_accesses(self, tenant: str, rows: list[tuple[AccessEvent, datetime]]) -> None:
        with self._access_lock:
            self._access_pending[tenant] = (rows + self._access_pending.get(tenant, []))[-ACCESS_HELD_MAX:]
            self._access_since.setdefault(tenant, time.monotonic())

    def get(self, memory_id: str) -> Memory | None:
        """A record by id (with the acting tenant's held access rows written in the same round trip)."""
        return self.get_many([memory_id]).get(memory_id)

    def access_log(self, memory_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest access-log rows, optionally of one record (the held ones written first)."""
        self.flush_accesses(current_tenant.get() or "")
        return SqliteStore.access_log(self, memory_id, limit)  # type: ignore[arg-type]

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Records by id, fetched with the acting tenant's held access rows written in the same round trip."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        rows = self._fetch_with_access((f"SELECT {COLUMNS} FROM memories WHERE id = ANY(%s)", [ids]))
        return {row[0]: to_memory(row) for row in rows}

    def judge_records(
        self, memory_ids: Sequence[str], fields: dict[str, RankFields] | None = None
    ) -> dict[str, JudgedRecord]:
        """Partial records of search candidates (funes.store.pg_judged), by id; ``fields`` receives their rank fields.

        The legs of a search read them with their hits; this reads those they did not (none: no statement).
        """
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        sql = f"SELECT {pg_judged.columns('m')}, {pg_judged.vector_count('m')} FROM memories m WHERE m.id = ANY(%s)"
        out: dict[str, JudgedRecord] = {}
        for row in self.db.reader().native(sql, [ids]).fetchall():
            ranked, record = pg_judged.to_candidate(row[:-1], int(row[-1]))
            out[ranked.id] = record  # type: ignore[assignment]
            if fields is not None:
                fields[ranked.id] = ranked
        return out

    def get_many_cosines(
        self, memory_ids: Sequence[str], vector: np.ndarray
    ) -> tuple[dict[str, Memory], dict[str, np.ndarray]]:
        """:meth:`get_many`, and each multi-part record's parts' cosines with ``vector``, in the same statement.

        A search reads its candidates this way when records have passage windows
        (funes.memory.windows): blending a record's whole-text and window cosines,
        and naming the window that matched, cost no round trip of their own.
        """
        ids = list(dict.fromkeys(memory_ids))
        if not ids or self._dims is None:
            return self.get_many(ids), {}
        # Only records with several parts (long texts, passage windows) return their parts' vectors, whose
        # cosines are worked out as search works out those of the vectors the legs return (funes.store.pg_judged).
        fetch = (f"SELECT {COLUMNS}, {pg_judged.several_vectors('memories')} FROM memories WHERE id = ANY(%s)", [ids])
        rows = self._fetch_with_access(fetch)
        parts = {row[0]: pg_judged.part_cosines(row[-1], vector) for row in rows if row[-1] is not None}
        return {row[0]: to_memory(row[:-1]) for row in rows}, parts

    def _fetch_with_access(self, fetch: tuple[str, list[Any]]) -> list[Any]:
        """Rows of ``fetch``, with the acting tenant's held access rows written in the same round trip."""
        tenant = current_tenant.get() or ""
        rows: list[Any] = []
        if self.db.replica is None:  # with a replica the fetch goes there; the rows wait for their own write
            with self._access_lock:
                rows = self._access_pending.pop(tenant, [])
                self._access_since.pop(tenant, None)
        if rows and not self.db.in_transaction():
            try:
                statements = [_access_statement(rows, nowait=True), fetch]
                return list(self.db.reader().batch(statements, [_ASYNC_COMMIT], write=True)[1].fetchall())
            except FunesError as exc:  # WriteCrossed: a writer holds one of the records (expected; no warning)
                (log.debug if isinstance(exc, WriteCrossed) else log.warning)(
                    "access rows held back (%d): %s", len(rows), exc
                )
                self._hold_accesses(tenant, rows)
        elif rows:
            self._hold_accesses(tenant, rows)
        return list(self.db.reader().native(*fetch).fetchall())

    def enqueue_job(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        tenant: str,
        now: datetime,
        run_after: datetime | None = None,
        max_attempts: int = 5,
        dedupe_key: str | None = None,
    ) -> str:
        """Queue a job (in the caller's transaction when there is one); a queued job with the same key absorbs it."""
        job = {"kind": kind, "payload": payload, "tenant": tenant, "now": now, "run_after": run_after}
        values = job_values({**job, "max_attempts": max_attempts, "dedupe_key": dedupe_key})
        with self.db.write() as conn:
            sql = f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({JOB_MARKS}) {JOB_ABSORBED} RETURNING id"
            row = conn.native(sql, values).fetchone()
            if row is not None:
                return str(row[0])
            existing = conn.execute(
                "SELECT id FROM jobs WHERE tenant = ? AND dedupe_key = ? AND status = 'queued'", (tenant, dedupe_key)
            ).fetchone()
        return str(existing[0])

    # -- documents -----------------------------------------------------------------------
    def move_document(self, doc_id: str, uri: str, name: str, updated_at: float) -> int:
        """Point a document and its chunks at a new uri (a renamed file); returns the chunks moved (no re-embedding)."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE documents SET uri = ?, name = ?, updated_at = ? WHERE id = ?", (uri, name, updated_at, doc_id)
            )
            moved = conn.execute(
                "UPDATE memories SET source_uri = ?, "
                "locator = jsonb_set(locator::jsonb, '{display_name}', to_jsonb(?::text))::text WHERE source_id = ?",
                (uri, name, doc_id),
            ).rowcount
        return int(moved)

    # -- retention ---------------------------------------------------------------------
    def stale_sessions(self, cutoff: datetime, tenant: str | None = None) -> list[tuple[str, str]]:
        """(tenant, session id) of sessions whose last activity (row, records' updates and accesses) is before ``cutoff``."""
        cond, params = ("AND tenant = ?", [tenant]) if tenant is not None else ("", [])
        sql = f"""
            SELECT tenant, sid, MAX(activity) AS last FROM (
                SELECT tenant, id AS sid, last_activity AS activity FROM sessions WHERE 1 = 1 {cond}
                UNION ALL
                SELECT tenant, session_id AS sid, GREATEST(updated_at, COALESCE(last_accessed, 0)) AS activity
                FROM memories WHERE scope = 'session' AND session_id IS NOT NULL AND pinned = 0 {cond}
            ) a GROUP BY tenant, sid HAVING MAX(activity) < ? ORDER BY last"""
        rows = self.db.reader().execute(sql, [*params, *params, to_epoch(cutoff)]).fetchall()
        return [(str(t), str(s)) for t, s, _ in rows]

    # -- statistics and health --------------------------------------------------------------
    def pending_vectors(self, tenant: str | None = None) -> int:
        """Records without vectors that a queued or running ``vectors`` job will embed."""
        sql = f"SELECT COUNT(*) FROM memories m WHERE {_NO_VECTOR} AND m.id IN ({_AWAITED})"
        params: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " AND m.tenant = ?"
            params = (tenant,)
        return int(self.db.reader().execute(sql, params).fetchone()[0])

    def stats(self, tenant: str | None = None) -> dict[str, Any]:
        """Counts by kind, type and scope, plus the database's size."""
        conn = self.db.reader()
        cond, params = ("WHERE tenant = ?", [tenant]) if tenant is not None else ("", [])

        def grouped(column: str) -> dict[str, int]:
            rows = conn.execute(f"SELECT {column}, COUNT(*) FROM memories {cond} GROUP BY {column}", params)
            return {str(k): int(n) for k, n in rows}

        def count(sql: str, args: Sequence[Any] = ()) -> int:
            return int(conn.execute(sql, args).fetchone()[0])

        ident = self.identity()  # type: ignore[attr-defined]
        return {
            "path": self.path,
            "backend": "postgres",
            "records": count(f"SELECT COUNT(*) FROM memories {cond}", params),
            "by_kind": grouped("kind"),
            "by_type": grouped("memory_type"),
            "by_scope": grouped("scope"),
            "pinned": count(f"SELECT COUNT(*) FROM memories {cond} {'AND' if cond else 'WHERE'} pinned = 1", params),
            "vectors": count(f"SELECT COUNT(*) FROM memory_vectors {cond}", params),
            "cached_embeddings": count("SELECT COUNT(*) FROM embedding_cache") if tenant is None else None,
            "access_log_rows": count(f"SELECT COUNT(*) FROM access_log {cond}", params),
            "pending_vectors": self.pending_vectors(tenant),
            "jobs": self.job_counts(tenant),  # type: ignore[attr-defined]
            "size_bytes": count("SELECT pg_database_size(current_database())"),
            "embedder": None if ident is None else {"model_id": ident.model_id, "dimensions": ident.dimensions},
        }

    def check(self) -> list[str]:
        """Integrity problems: records without vectors or a job to make them, vectors of the wrong size."""
        conn = self.db.reader()
        problems: list[str] = []
        without = int(
            conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {_NO_VECTOR} AND m.id NOT IN ({_AWAITED})").fetchone()[
                0
            ]
        )
        if without and self._dims is not None:
            problems.append(f"{without} records have no vector and no job to make one; run `funes reindex`.")
        if self._dims is not None:
            bad = int(
                conn.execute(
                    "SELECT COUNT(*) FROM memory_vectors WHERE vector_dims(embedding) != ?", (self._dims,)
                ).fetchone()[0]
            )
            if bad:
                problems.append(f"{bad} vectors do not have {self._dims} dimensions; run `funes reindex`.")
        return problems

    def server_notes(self) -> list[str]:
        """Advice on the PostgreSQL server's own settings (``funes doctor``'s notes): see :func:`buffers_note`."""
        if self._dims is None:
            return []
        buffers, needed = self.db.reader().native(_BUFFERS).fetchone()
        note = buffers_note(int(buffers), int(needed or 0))
        return [note] if note else []

    # -- API keys (not under row-level security: they are how a tenant is found) ---------
    def save_api_key(self, row: dict[str, Any]) -> None:
        """Insert an API key row (its hash, never the key)."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, team, user_id, role, name, prefix, key_hash, created_at, last_used_at, "
                "revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row["id"],
                    row["team"],
                    row.get("user_id"),
                    row["role"],
                    row.get("name"),
                    row["prefix"],
                    row["key_hash"],
                    to_epoch(row["created_at"]),
                    to_epoch(row.get("last_used_at")),
                    to_epoch(row.get("revoked_at")),
                ),
            )

    def find_api_key(self, key_hash: str) -> dict[str, Any] | None:
        """The key with this hash, revoked or not (the caller checks ``revoked_at``)."""
        columns = (*_KEY_COLUMNS, "key_hash")
        row = (
            self.db.reader()
            .execute(f"SELECT {', '.join(columns)} FROM api_keys WHERE key_hash = ?", (key_hash,))
            .fetchone()
        )
        return None if row is None else _key_row(row, columns)

    def list_api_keys(self, team: str | None = None) -> list[dict[str, Any]]:
        """Keys newest first (of one team, or all), without their hashes."""
        sql = f"SELECT {', '.join(_KEY_COLUMNS)} FROM api_keys"
        params: list[Any] = []
        if team is not None:
            sql += " WHERE team = ?"
            params.append(team)
        rows = self.db.reader().execute(sql + " ORDER BY created_at DESC, id DESC", params).fetchall()
        return [_key_row(r, _KEY_COLUMNS) for r in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        """Revoke a key; False when there is no such live key."""
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (to_epoch(at), key_id)
            )
            return cur.rowcount > 0

    def touch_api_key(self, key_id: str, at: datetime) -> None:
        """Record a key's last use (sent with the COMMIT: one round trip)."""
        with self.db.write() as conn:
            conn.defer("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (to_epoch(at), key_id), tenant=False)

    # -- project settings ------------------------------------------------------------------
    def get_project_settings(self, tenant: str, project_id: str) -> dict[str, Any] | None:
        """A project's saved settings, or None."""
        row = (
            self.db.reader()
            .execute("SELECT settings FROM project_settings WHERE tenant = ? AND project_id = ?", (tenant, project_id))
            .fetchone()
        )
        if row is None:
            return None
        value = row[0]
        return dict(json.loads(value) if isinstance(value, str) else value)

    def save_project_settings(self, tenant: str, project_id: str, settings: dict[str, Any], at: datetime) -> None:
        """Insert or replace a project's settings."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO project_settings (tenant, project_id, settings, updated_at) VALUES (?, ?, ?::jsonb, ?) "
                "ON CONFLICT (tenant, project_id) DO UPDATE SET settings = excluded.settings, "
                "updated_at = excluded.updated_at",
                (tenant, project_id, json.dumps(settings, sort_keys=True, ensure_ascii=False), to_epoch(at)),
            )
        # Once it has committed: a copy a search read before (postgres_upkeep) must not answer after it.
        self._settings_written[tenant] = time.monotonic()
        self._settings_read.pop(tenant, None)
