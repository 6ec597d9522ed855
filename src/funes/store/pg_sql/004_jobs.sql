-- Durable background jobs (as SQLite's 005; claimed with FOR UPDATE SKIP LOCKED).
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 5,
    run_after DOUBLE PRECISION NOT NULL,
    lease_until DOUBLE PRECISION,
    locked_by TEXT,
    last_error TEXT,
    result TEXT,
    dedupe_key TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION
);
CREATE INDEX jobs_ready ON jobs (status, run_after);
CREATE INDEX jobs_tenant ON jobs (tenant, created_at);
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'queued';
