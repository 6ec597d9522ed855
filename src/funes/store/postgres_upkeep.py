"""Maintenance queries the PostgreSQL store answers natively (the rest of ``sqlite_upkeep`` is shared SQL).

Optimising means ANALYZE (fresh planner statistics for the tenant btree and
HNSW plans) and REINDEX of the keyword index when its bloat warrants it;
VACUUM runs outside any transaction, as PostgreSQL requires.
"""

from __future__ import annotations

import json
from typing import Any

from .postgres_bulk import ANALYZE_AFTER, STATS_STALE
from .postgres_extras import JOB_COLUMNS, JOB_MARKS, job_values
from .sqlite_upkeep import UpkeepTables


class PostgresUpkeep:
    """PostgreSQL spellings of the maintenance queries, mixed in before :class:`UpkeepTables`."""

    db: Any
    _dims: int | None

    def list_project_settings(self, tenant: str) -> dict[str, dict[str, Any]]:
        """Every project of the tenant with stored settings."""
        rows = self.db.reader().execute(
            "SELECT project_id, settings FROM project_settings WHERE tenant = ? ORDER BY project_id", (tenant,)
        )
        return {str(p): dict(json.loads(s) if isinstance(s, str) else s) for p, s in rows}

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
