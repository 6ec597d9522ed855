-- Per-tenant counters (the write counter that triggers maintenance; see funes.upkeep),
-- and the indexes maintenance and retention scan.
CREATE TABLE counters (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    value BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, name)
);
ALTER TABLE counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE counters FORCE ROW LEVEL SECURITY;
CREATE POLICY counters_tenant ON counters USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
CREATE INDEX memories_expiry ON memories (tenant, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_age ON memories (tenant, updated_at) WHERE pinned = 0 AND version = 1;
CREATE INDEX memories_project_kind ON memories (tenant, project_id, kind);
