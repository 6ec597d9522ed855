-- Durable background jobs: one table for every kind of background work
-- (pending vectors, and later watcher batches, maintenance, insights,
-- retention, server 202 work). A job is written in the same transaction as
-- the change that causes it, claimed with a lease, retried with backoff, and
-- kept with its error when it finally fails.
--
-- status: queued -> running -> done | failed (a failed job can be retried by
-- hand). A running job whose lease expired, or whose worker process is gone,
-- is claimed again; a job's effect and its `done` mark commit together, so a
-- job killed mid-way has no visible effect and runs again.
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 5,
    run_after REAL NOT NULL,
    lease_until REAL,
    locked_by TEXT,
    last_error TEXT,
    result TEXT,
    dedupe_key TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX jobs_ready ON jobs (status, run_after);
CREATE INDEX jobs_tenant ON jobs (tenant, created_at);
-- At most one queued job per dedupe key: bursts of the same work coalesce.
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'queued';
