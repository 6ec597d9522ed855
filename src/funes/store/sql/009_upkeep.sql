-- Per-tenant counters (the write counter that triggers maintenance; see funes.upkeep).
CREATE TABLE counters (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    value INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, name)
);
-- Maintenance finds expired and stale records without a full scan.
CREATE INDEX memories_expiry ON memories (tenant, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_age ON memories (tenant, updated_at) WHERE pinned = 0 AND version = 1;
