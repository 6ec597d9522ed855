"""Maintenance queries the PostgreSQL store answers natively (the rest of ``sqlite_upkeep`` is shared SQL).

Optimising means ANALYZE (fresh planner statistics for the tenant btree and
HNSW plans) and REINDEX of the keyword index when its bloat warrants it;
VACUUM runs outside any transaction, as PostgreSQL requires.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..models import SearchFilters
from . import pg_judged, pg_plan
from .pg_connection import placeholders
from .postgres_bulk import ANALYZE_AFTER, STATS_STALE
from .postgres_extras import JOB_COLUMNS, JOB_MARKS, job_values
from .postgres_search import _EF_ITERATIVE, _best
from .sqlite_upkeep import UpkeepTables

# A search reads its tenant's project settings (which projects are disabled) after ranking, once its process's
# two-second cache of them lapses: a fourth round trip for a fifth of the searches over 25 tenants. The keyword
# leg reads them in its own pipeline instead, and that copy answers for this long (issue 29).
SETTINGS_FRESH = 0.5
_SETTINGS = "SELECT project_id, settings FROM project_settings WHERE tenant = %s ORDER BY project_id"


#: Queries of one filter set per statement of :meth:`PostgresUpkeep.vector_search_many` (one round trip each).
MANY_PER_STATEMENT = 100
#: The index's search breadth (``hnsw.ef_search``) of :meth:`PostgresUpkeep.vector_search_many` when only neighbours
#: at a cosine of ``NEAR_FLOOR`` or more are wanted (maintenance's dedupe): 400 near-duplicates planted at cosine
#: 0.95-0.99 among 100k vectors of bench/server_bench.py were all found at 10, 16, 40 and 100; 16 cost 1.2 ms a
#: search against 5.2 ms at vector_search's 100 (issue 29).
EF_NEAR = 16
NEAR_FLOOR = 0.95


def _settings(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    return {str(p): dict(json.loads(s) if isinstance(s, str) else s) for p, s in rows}


class PostgresUpkeep:
    """PostgreSQL spellings of the maintenance queries, mixed in before :class:`UpkeepTables`."""

    db: Any
    _dims: int | None
    exact_max: int
    pgvector_version: tuple[int, ...]
    _tenant_vectors: Any
    _where: Any
    vector_search: Any
    #: Per tenant: (when read, the project settings) read with a search's keyword leg, and when last written here.
    _settings_read: dict[str, tuple[float, dict[str, dict[str, Any]]]]
    _settings_written: dict[str, float]

    def list_project_settings(self, tenant: str) -> dict[str, dict[str, Any]]:
        """Every project of the tenant with stored settings (as a search's keyword leg just read them, if it did)."""
        read = self._settings_read.get(tenant)
        if read is not None and time.monotonic() - read[0] < SETTINGS_FRESH:
            return {p: dict(s) for p, s in read[1].items()}
        return _settings(self.db.reader().native(_SETTINGS, (tenant,)))

    def settings_statement(self, tenant: str) -> tuple[str, list[Any]] | None:
        """The statement reading the tenant's project settings for a search's pipeline, unless a fresh copy is held."""
        read = self._settings_read.get(tenant)
        if read is not None and time.monotonic() - read[0] < SETTINGS_FRESH / 2:
            return None
        return _SETTINGS, [tenant]

    def keep_settings(self, tenant: str, rows: Iterable[Sequence[Any]], sent: float) -> None:
        """Hold the project settings a pipeline sent at ``sent`` read (not when this process wrote them since)."""
        if sent > self._settings_written.get(tenant, 0.0):
            self._settings_read[tenant] = (sent, _settings(rows))

    def storage_breakdown(self, tenant: str | None) -> list[dict[str, Any]]:
        """Records and bytes per (tier, kind, source): text bytes as stored plus 4 bytes per vector dimension."""
        cond, params = ("WHERE m.tenant = ?", [tenant]) if tenant is not None else ("", [])
        dims = int(self._dims or 0)
        rows = self.db.reader().execute(
            f"""SELECT m.scope, m.kind, CASE WHEN m.source_type = '' THEN 'none' ELSE m.source_type END,
                       COUNT(*),
                       SUM(octet_length(m.content) + octet_length(COALESCE(m.title, '')) + octet_length(m.metadata)
                           + octet_length(m.previous_versions) + octet_length(m.refs) + octet_length(m.locator)),
                       SUM((SELECT COUNT(*) FROM memory_vectors v WHERE v.memory_rowid = m.rowid))
                FROM memories m {cond} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""",
            params,
        )
        return [
            {
                "tier": scope,
                "kind": kind,
                "source": source,
                "records": int(n),
                "text_bytes": int(text or 0),
                "vectors": int(vectors or 0),
                "vector_bytes": int(vectors or 0) * dims * 4,
            }
            for scope, kind, source, n, text, vectors in rows
        ]

    def bump_counter_queueing(self, tenant: str, name: str, by: int, *, every: int, job: dict[str, Any]) -> bool | None:
        """Inside a write: the counter and its job in one statement, deferred to the COMMIT's round trip.

        The counter's row stays locked from that statement to the end of the commit, so concurrent writers
        of a tenant no longer queue on it for a round trip and a WAL flush each (issue 29). Outside one: as
        on SQLite (its own transaction).
        """
        if not self.db.in_transaction():
            return UpkeepTables.bump_counter_queueing(self, tenant, name, by, every=every, job=job)  # type: ignore[arg-type]
        self.db.reader().defer(
            "WITH c AS (INSERT INTO counters (tenant, name, value) VALUES (%s, %s, %s) ON CONFLICT (tenant, name) "
            f"DO UPDATE SET value = counters.value + excluded.value RETURNING value) INSERT INTO jobs ({JOB_COLUMNS}) "
            # Any unique index absorbs it (the queued-dedupe one; before migration 014 it had no tenant column).
            f"SELECT {JOB_MARKS} FROM c WHERE c.value / %s <> (c.value - %s) / %s ON CONFLICT DO NOTHING",
            [tenant, name, int(by), *job_values(job), int(every), int(by), int(every)],
        )
        return None

    def vector_search_many(
        self,
        queries: Sequence[tuple[np.ndarray, SearchFilters]],
        *,
        k: int,
        now: datetime,
        floor: float | None = None,
    ) -> list[list[tuple[str, float]]]:
        """``vector_search`` of each (vector, filters), in order, with the same answers: the HNSW searches of up to
        ``MANY_PER_STATEMENT`` queries of one filter set are one statement (a LATERAL join over their vectors).

        Maintenance's dedupe searches the neighbours of every record written since its last run: one statement
        and round trip each took 40% of PostgreSQL's time in a mixed REST load after a 100k load (issue 29).
        Queries ``vector_search`` answers otherwise (small tenants, narrow filters, pgvector before 0.8), and
        those the index leaves short of ``k``, are asked one by one, as it asks them. ``floor``: only neighbours
        at least this similar are kept; from ``NEAR_FLOOR`` up the index searches narrower (``EF_NEAR``).
        """
        near = floor is not None and floor >= NEAR_FLOOR
        out: list[list[tuple[str, float]] | None] = [None] * len(queries)
        groups: dict[SearchFilters, list[int]] = {}
        if self._dims is not None and k > 0 and self.pgvector_version >= (0, 8):
            for i, (_vector, filters) in enumerate(queries):
                narrow = bool(filters.entity_types or filters.entity_ids or filters.references)
                if not narrow and self._tenant_vectors(self.db.reader(), filters.tenant) > self.exact_max:
                    groups.setdefault(filters, []).append(i)
        settings = pg_plan.hnsw_settings(EF_NEAR if near else _EF_ITERATIVE, iterative=True)
        for filters, members in groups.items():
            for start in range(0, len(members), MANY_PER_STATEMENT):
                chunk = members[start : start + MANY_PER_STATEMENT]
                params: list[Any] = [[np.asarray(queries[i][0], dtype=np.float32) for i in chunk]]
                where = self._where(filters, now, params)
                rows = pg_plan.iterative_rows(k, pg_plan.vectors_per_record(self, filters.tenant))
                params.append(k * 2 if near else rows)  # (the latter as vector_search's)
                sql = (
                    f"SELECT x.*, q.ord FROM unnest(?::vector[]) WITH ORDINALITY AS q(vec, ord) CROSS JOIN LATERAL "
                    f"(SELECT 1 - (v.embedding <=> q.vec) AS sim, {pg_judged.columns('m', judged=False)} "
                    "FROM memory_vectors v JOIN memories m ON m.tenant = v.tenant AND m.rowid = v.memory_rowid "
                    f"WHERE {' AND '.join(where)} ORDER BY v.embedding <=> q.vec LIMIT ?) x"
                )
                rows: list[list[Any]] = [[] for _ in chunk]
                for row in self.db.reader().batch([(placeholders(sql), params)], settings)[0].fetchall():
                    rows[int(row[-1]) - 1].append(row[:-1])
                for i, found in zip(chunk, rows, strict=True):
                    out[i] = _best(found, k)[0]
        answers = [
            found if found is not None and len(found) >= k else self.vector_search(vector, filters, k=k, now=now)
            for found, (vector, filters) in zip(out, queries, strict=True)
        ]
        return answers if floor is None else [[(i, s) for i, s in found if s >= floor] for found in answers]

    def optimize(self, *, vacuum_free_ratio: float) -> dict[str, Any]:
        """ANALYZE the record tables when their statistics are stale; VACUUM them when dead rows exceed the ratio.

        Stale as a bulk write judges it (``postgres_bulk.STATS_STALE``: never analysed, or a quarter of the rows
        changed since): the background run follows every ``maintain_every_writes`` writes, and analysing
        100k records each time took a core for a second every 50 creates of a busy server (issue 29), while
        autovacuum keeps the statistics of a table that changes little.
        """
        conn = self.db.reader()
        dead, live = conn.native(
            "SELECT COALESCE(SUM(n_dead_tup), 0), COALESCE(SUM(n_live_tup), 0) FROM pg_stat_user_tables "
            "WHERE relname IN ('memories', 'memory_vectors')"
        ).fetchone()
        stale = bool(conn.native(STATS_STALE, [0, ANALYZE_AFTER]).fetchone()[0])
        report: dict[str, Any] = {
            "keyword_index": "analyzed" if stale else "statistics current",
            "dead_rows": int(dead),
            "live_rows": int(live),
        }
        if live and int(dead) / max(int(live), 1) > vacuum_free_ratio:
            before, after = self.reclaim_space()  # type: ignore[attr-defined]
            report.update(vacuumed=True, bytes_before=before, bytes_after=after)
        else:
            report["vacuumed"] = False
        if stale:
            for table in ("memories", "memory_vectors"):
                conn.native(f"ANALYZE {table}")
        return report
