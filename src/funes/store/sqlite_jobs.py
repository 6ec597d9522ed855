"""SQLite tables of durable jobs (see sql/005_jobs.sql and :mod:`funes.memory.jobs`).

The claim is one ``UPDATE ... RETURNING`` under SQLite's write lock, so two
workers (threads or processes) never claim the same job. Completion checks
the claimant and its lease in the same statement and runs inside the
transaction that applies the job's effect: when a worker loses its lease (it
stalled past it and another worker took the job over), its effect is rolled
back instead of applied twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..models import Job, from_epoch, new_id, to_epoch

_COLUMNS = (
    "id, tenant, kind, payload, status, attempts, max_attempts, run_after, created_at, updated_at, "
    "lease_until, locked_by, last_error, result, dedupe_key, finished_at"
)

# A job queued again (a retry, after a failed attempt or by hand) while another queued job holds its dedupe
# key goes without the key, so both run, instead of breaking the unique key (jobs_dedupe).
_KEY_UNLESS_HELD = (
    "dedupe_key = CASE WHEN EXISTS (SELECT 1 FROM jobs o WHERE o.dedupe_key = jobs.dedupe_key "
    "AND o.status = 'queued' AND o.id <> jobs.id) THEN NULL ELSE dedupe_key END"
)


def _job(row: Sequence[Any]) -> Job:
    (jid, tenant, kind, payload, status, attempts, max_attempts, run_after, created, updated, lease, locked_by,
     error, result, dedupe, finished) = row  # fmt: skip
    return Job(
        id=jid,
        tenant=tenant,
        kind=kind,
        payload=json.loads(payload or "{}"),
        status=status,
        attempts=int(attempts),
        max_attempts=int(max_attempts),
        run_after=from_epoch(run_after),  # type: ignore[arg-type]
        created_at=from_epoch(created),  # type: ignore[arg-type]
        updated_at=from_epoch(updated),  # type: ignore[arg-type]
        lease_until=from_epoch(lease),
        locked_by=locked_by,
        last_error=error,
        result=json.loads(result) if result else None,
        dedupe_key=dedupe,
        finished_at=from_epoch(finished),
    )


class JobTables:
    """Job rows of the SQLite store (mixed into :class:`funes.store.sqlite.SqliteStore`)."""

    db: Any
    #: Appended to the claim's SELECT: SQLite's write lock already serialises claims;
    #: PostgreSQL sets ``FOR UPDATE SKIP LOCKED`` so concurrent claimers pass each other.
    claim_lock: str = ""

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
        """Queue a job (in the caller's transaction when there is one); returns its id.

        With a ``dedupe_key``, a job already queued under that key absorbs this
        one and its id is returned: bursts of the same work run once.
        """
        stamp = to_epoch(now)
        with self.db.write() as conn:
            if dedupe_key is not None:
                row = conn.execute(
                    "SELECT id FROM jobs WHERE dedupe_key = ? AND status = 'queued'", (dedupe_key,)
                ).fetchone()
                if row is not None:
                    return str(row[0])
            job_id = new_id("job")
            conn.execute(
                "INSERT INTO jobs (id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
                (
                    job_id,
                    tenant,
                    kind,
                    json.dumps(payload, sort_keys=True, ensure_ascii=False),
                    max_attempts,
                    to_epoch(run_after) if run_after is not None else stamp,
                    dedupe_key,
                    stamp,
                    stamp,
                ),
            )
        return job_id

    def claim_job(
        self,
        worker: str,
        *,
        now: datetime,
        lease_seconds: float,
        kinds: Sequence[str] | None = None,
        dead_workers: Sequence[str] = (),
        exclude: Sequence[str] = (),
    ) -> Job | None:
        """Take the next ready job: queued and due, or running under an expired lease or a dead worker.

        ``exclude`` names jobs not to take (those a drain already tried once).
        """
        stamp = to_epoch(now)
        assert stamp is not None
        stale = "status = 'running' AND (lease_until < ?"
        stale_params: list[Any] = [stamp]
        if dead_workers:
            stale += f" OR locked_by IN ({', '.join('?' for _ in dead_workers)})"
            stale_params.extend(dead_workers)
        stale += ")"
        # A job whose worker died during its last allowed attempt (a file that killed the
        # process, say) fails here; claiming it again ran it 10 times of 8 (issue 31).
        spent = (
            "UPDATE jobs SET status = 'failed', finished_at = ?, updated_at = ?, lease_until = NULL, "
            "last_error = 'Its worker stopped (crashed or was killed) during its last allowed attempt "
            "(' || attempts || ' of ' || max_attempts || '); run `funes jobs retry` to try again.' "
            f"WHERE {stale} AND attempts >= max_attempts"
        )
        where = f"(status = 'queued' AND run_after <= ?) OR ({stale} AND attempts < max_attempts)"
        params: list[Any] = [stamp, *stale_params]
        kind_sql = ""
        if exclude:
            kind_sql += f" AND id NOT IN ({', '.join('?' for _ in exclude)})"
            params.extend(exclude)
        if kinds:
            kind_sql += f" AND kind IN ({', '.join('?' for _ in kinds)})"
            params.extend(kinds)
        with self.db.write() as conn:
            conn.execute(spent, (stamp, stamp, *stale_params))
            row = conn.execute(
                f"SELECT id FROM jobs WHERE ({where}){kind_sql} ORDER BY run_after, id LIMIT 1{self.claim_lock}", params
            ).fetchone()
            if row is None:
                return None
            claimed = conn.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = ?, lease_until = ?, "
                f"updated_at = ? WHERE id = ? RETURNING {_COLUMNS}",
                (worker, stamp + lease_seconds, stamp, row[0]),
            ).fetchone()
        return _job(claimed)

    def extend_job_lease(self, job_id: str, worker: str, until: datetime) -> bool:
        """Keep a running job's lease (False when another worker has taken it over)."""
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND status = 'running' AND locked_by = ?",
                (to_epoch(until), job_id, worker),
            )
            return bool(cur.rowcount)

    def finish_job(self, job_id: str, worker: str, result: Any, *, now: datetime) -> bool:
        """Mark a claimed job done; False (and nothing written) when this worker no longer holds it.

        Call it inside the transaction that applies the job's effect, and roll
        that back when it returns False.
        """
        stamp = to_epoch(now)
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = 'done', result = ?, finished_at = ?, updated_at = ?, lease_until = NULL, "
                "last_error = NULL WHERE id = ? AND status = 'running' AND locked_by = ?",
                (json.dumps(result, default=str, ensure_ascii=False), stamp, stamp, job_id, worker),
            )
            return bool(cur.rowcount)

    def fail_job(
        self, job_id: str, worker: str, error: str, *, now: datetime, retry_at: datetime | None, counted: bool = True
    ) -> None:
        """Record a failed attempt: queued again at ``retry_at``, or failed for good when it is None.

        ``counted=False``: the attempt is given back (a run undone by a forget, not a failure of the job).
        """
        stamp = to_epoch(now)
        with self.db.write() as conn:
            if retry_at is None:
                conn.execute(
                    "UPDATE jobs SET status = 'failed', last_error = ?, finished_at = ?, updated_at = ?, "
                    "lease_until = NULL WHERE id = ? AND status = 'running' AND locked_by = ?",
                    (error, stamp, stamp, job_id, worker),
                )
            else:
                conn.execute(
                    "UPDATE jobs SET status = 'queued', last_error = ?, run_after = ?, updated_at = ?, "
                    f"attempts = attempts - ?, lease_until = NULL, locked_by = NULL, {_KEY_UNLESS_HELD} "
                    "WHERE id = ? AND status = 'running' AND locked_by = ?",
                    (error, to_epoch(retry_at), stamp, 0 if counted else 1, job_id, worker),
                )

    def retry_job(self, job_id: str, *, now: datetime) -> Job | None:
        """Queue a failed (or done) job again with fresh attempts; None when there is no such job."""
        stamp = to_epoch(now)
        with self.db.write() as conn:
            row = conn.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, run_after = ?, updated_at = ?, finished_at = NULL, "
                f"lease_until = NULL, locked_by = NULL, {_KEY_UNLESS_HELD} "
                f"WHERE id = ? AND status IN ('failed', 'done') RETURNING {_COLUMNS}",
                (stamp, stamp, job_id),
            ).fetchone()
        return _job(row) if row is not None else None

    def expedite_jobs(self, kind: str, now: datetime) -> int:
        """Make every queued job of ``kind`` due now (its cause of waiting is gone); returns how many."""
        stamp = to_epoch(now)
        with self.db.write() as conn:
            return int(
                conn.execute(
                    "UPDATE jobs SET run_after = ? WHERE kind = ? AND status = 'queued' AND run_after > ?",
                    (stamp, kind, stamp),
                ).rowcount
            )

    def get_job(self, job_id: str) -> Job | None:
        """A job by id."""
        row = self.db.reader().execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row) if row is not None else None

    def list_jobs(
        self,
        tenant: str | None = None,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """Jobs, newest first."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("tenant", tenant), ("status", status), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.db.reader().execute(
            f"SELECT {_COLUMNS} FROM jobs{where} ORDER BY created_at DESC, id DESC LIMIT ?", (*params, limit)
        )
        return [_job(r) for r in rows]

    def job_counts(self, tenant: str | None = None) -> dict[str, int]:
        """How many jobs are in each status."""
        sql = "SELECT status, COUNT(*) FROM jobs"
        params: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params = (tenant,)
        return {str(s): int(n) for s, n in self.db.reader().execute(sql + " GROUP BY status", params)}

    def next_job_due(self) -> datetime | None:
        """When the earliest queued job may run (None: nothing is queued)."""
        row = self.db.reader().execute("SELECT MIN(run_after) FROM jobs WHERE status = 'queued'").fetchone()
        return from_epoch(row[0]) if row and row[0] is not None else None

    def running_workers(self) -> list[str]:
        """The workers holding running jobs."""
        rows = self.db.reader().execute("SELECT DISTINCT locked_by FROM jobs WHERE status = 'running'")
        return [str(r[0]) for r in rows if r[0]]

    def trim_jobs(self, before: datetime) -> int:
        """Delete done jobs finished before ``before``; failed jobs stay until retried or cleared."""
        with self.db.write() as conn:
            return int(
                conn.execute("DELETE FROM jobs WHERE status = 'done' AND finished_at < ?", (to_epoch(before),)).rowcount
            )
