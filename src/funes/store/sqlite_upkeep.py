"""What maintenance asks of the SQLite store: counters, candidates for pruning and purging, index upkeep.

See :mod:`funes.curation.upkeep` for the policy; this module only finds and counts.
Candidate lists are bounded (``limit``) so a maintenance run never holds a
huge list in memory; the next run takes the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..models import Memory, SearchFilters, to_epoch
from .sqlite_rows import COLUMNS, to_memory


class UpkeepTables:
    """Counters and maintenance queries, mixed into :class:`funes.store.sqlite.SqliteStore`."""

    db: Any

    def bump_counter(self, tenant: str, name: str, by: int = 1) -> int:
        """Add ``by`` to a tenant's counter (in the caller's transaction if any); returns the new value."""
        with self.db.write() as conn:
            row = conn.execute(
                "INSERT INTO counters (tenant, name, value) VALUES (?, ?, ?) "
                "ON CONFLICT (tenant, name) DO UPDATE SET value = counters.value + excluded.value RETURNING value",
                (tenant, name, int(by)),
            ).fetchone()
        return int(row[0])

    def bump_counter_queueing(self, tenant: str, name: str, by: int, *, every: int, job: dict[str, Any]) -> bool | None:
        """Add ``by`` to a counter and, when it crosses a multiple of ``every``, queue ``job`` (the arguments
        of ``enqueue_job``) in the same transaction. Whether it queued the job (None: known at the commit)."""
        total = self.bump_counter(tenant, name, by)
        if total // every == (total - by) // every:
            return False
        self.enqueue_job(**job)  # type: ignore[attr-defined]
        return True

    def vector_search_many(
        self,
        queries: Sequence[tuple[np.ndarray, SearchFilters]],
        *,
        k: int,
        now: datetime,
        floor: float | None = None,
    ) -> list[list[tuple[str, float]]]:
        """``vector_search`` of each (vector, filters), in order: what maintenance's dedupe asks of its records.

        ``floor``: only the neighbours at least this similar are kept.
        """
        found = [self.vector_search(vector, filters, k=k, now=now) for vector, filters in queries]  # type: ignore[attr-defined]
        return found if floor is None else [[(i, s) for i, s in hits if s >= floor] for hits in found]

    def expired_ids(self, tenant: str, now: datetime, *, limit: int) -> list[str]:
        """Unpinned records of the tenant whose expiry has passed, oldest expiry first."""
        rows = self.db.reader().execute(
            "SELECT id FROM memories WHERE tenant = ? AND expires_at IS NOT NULL AND expires_at <= ? AND pinned = 0 "
            "ORDER BY expires_at LIMIT ?",
            (tenant, to_epoch(now), int(limit)),
        )
        return [r[0] for r in rows]

    def prune_candidates(self, tenant: str, before: datetime, kinds: Sequence[str], *, limit: int) -> list[str]:
        """Unpinned, never-edited (version 1) records of these kinds untouched (written or read) since ``before``."""
        marks = ", ".join("?" for _ in kinds)
        stamp = to_epoch(before)
        rows = self.db.reader().execute(
            f"SELECT id FROM memories WHERE tenant = ? AND pinned = 0 AND version = 1 AND updated_at < ? "
            f"AND COALESCE(last_accessed, 0) < ? AND kind IN ({marks}) ORDER BY updated_at LIMIT ?",
            (tenant, stamp, stamp, *kinds, int(limit)),
        )
        return [r[0] for r in rows]

    def tenant_ids(self, tenant: str, kinds: Sequence[str], *, limit: int, since: datetime | None = None) -> list[str]:
        """Ids of the tenant's records of these kinds (written after ``since``), newest first (what dedupe scans)."""
        marks = ", ".join("?" for _ in kinds)
        after = "AND updated_at > ?" if since is not None else ""
        rows = self.db.reader().execute(
            f"SELECT id FROM memories WHERE tenant = ? AND kind IN ({marks}) {after} ORDER BY updated_at DESC LIMIT ?",
            (tenant, *kinds, *([to_epoch(since)] if since is not None else []), int(limit)),
        )
        return [r[0] for r in rows]

    def log_cleanup(
        self,
        tenant: str,
        *,
        at: datetime,
        reason: str,
        scope: str | None,
        records_deleted: int,
        project_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Write a cleanup-log row (in the caller's transaction if any); returns its id."""
        with self.db.write() as conn:
            cur = conn.execute(
                "INSERT INTO cleanup_log (at, tenant, reason, scope, session_id, project_id, records_deleted, "
                "messages_deleted, records_kept, bytes_reclaimed) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 0)",
                (to_epoch(at), tenant, reason, scope, session_id, project_id, int(records_deleted)),
            )
            return int(cur.lastrowid)

    def storage_breakdown(self, tenant: str | None) -> list[dict[str, Any]]:
        """Records and bytes per (tier, kind, source): text bytes as stored plus 4 bytes per vector dimension."""
        cond, params = ("WHERE m.tenant = ?", [tenant]) if tenant is not None else ("", [])
        dims = int(getattr(self, "_dims", None) or 0)
        rows = self.db.reader().execute(
            f"""SELECT m.scope, m.kind, CASE WHEN m.source_type = '' THEN 'none' ELSE m.source_type END,
                       COUNT(*),
                       SUM(LENGTH(CAST(m.content AS BLOB)) + LENGTH(CAST(COALESCE(m.title, '') AS BLOB))
                           + LENGTH(m.metadata) + LENGTH(m.previous_versions) + LENGTH(m.refs) + LENGTH(m.locator)),
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

    def get_project_settings(self, tenant: str, project_id: str) -> dict[str, Any] | None:
        """A project's stored settings (only those set), or None."""
        row = (
            self.db.reader()
            .execute("SELECT settings FROM project_settings WHERE tenant = ? AND project_id = ?", (tenant, project_id))
            .fetchone()
        )
        return None if row is None else dict(json.loads(row[0] or "{}"))

    def save_project_settings(self, tenant: str, project_id: str, settings: dict[str, Any], at: datetime) -> None:
        """Replace a project's stored settings."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO project_settings (tenant, project_id, settings, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, project_id) DO UPDATE SET settings = excluded.settings, "
                "updated_at = excluded.updated_at",
                (tenant, project_id, json.dumps(settings, sort_keys=True), to_epoch(at)),
            )

    def list_project_settings(self, tenant: str) -> dict[str, dict[str, Any]]:
        """Every project of the tenant with stored settings."""
        rows = self.db.reader().execute(
            "SELECT project_id, settings FROM project_settings WHERE tenant = ? ORDER BY project_id", (tenant,)
        )
        return {str(p): dict(json.loads(s or "{}")) for p, s in rows}

    def record_counts(self, tenant: str, exclude_kinds: Sequence[str]) -> dict[str | None, int]:
        """Records per project (None: outside any project) of the tenant, leaving out some kinds."""
        marks = ", ".join("?" for _ in exclude_kinds) or "''"
        rows = self.db.reader().execute(
            f"SELECT project_id, COUNT(*) FROM memories WHERE tenant = ? AND kind NOT IN ({marks}) GROUP BY project_id",
            (tenant, *exclude_kinds),
        )
        return {p: int(n) for p, n in rows}

    def eviction_candidates(self, tenant: str, project_id: str | None, kinds: Sequence[str]) -> list[Memory]:
        """The unpinned records of these kinds a retention cleanup may evict (one project's, or the tenant's)."""
        marks = ", ".join("?" for _ in kinds)
        cond, params = ("AND project_id = ?", [project_id]) if project_id is not None else ("", [])
        rows = self.db.reader().execute(
            f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND pinned = 0 AND kind IN ({marks}) {cond}",
            (tenant, *kinds, *params),
        )
        return [to_memory(r) for r in rows]

    def optimize(self, *, vacuum_free_ratio: float) -> dict[str, Any]:
        """Merge the keyword index's segments, VACUUM when free pages exceed the ratio of the file, and give vector
        index files saved before the sorted record ids that column (``AnnIndexes.add_sorted_ids``)."""
        with self.db.write() as conn:
            conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
            pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        report: dict[str, Any] = {"keyword_index": "optimized", "free_pages": free, "pages": pages}
        upgraded = self.ann.add_sorted_ids()  # type: ignore[attr-defined]
        if upgraded:
            report["vector_indexes_upgraded"] = upgraded
        if pages and free / pages > vacuum_free_ratio:
            before, after = self.reclaim_space()  # type: ignore[attr-defined]
            report.update(vacuumed=True, bytes_before=before, bytes_after=after)
        else:
            report["vacuumed"] = False
        return report
