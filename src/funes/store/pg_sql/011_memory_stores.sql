-- Anthropic-style memory stores served by `funes serve` (issue 27). A store is
-- a named container of path-addressed memories; each memory is an ordinary
-- record (project_id = the store id, entity_type 'memory_store', entity_id =
-- its path), so it is searchable like any other. Every change appends one
-- immutable row to memory_store_versions; redaction erases a row's content
-- and path and keeps its time, hash and author for audit.
CREATE TABLE memory_stores (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    archived_at DOUBLE PRECISION
);
CREATE INDEX memory_stores_tenant ON memory_stores (tenant, rowid);

CREATE TABLE memory_store_versions (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    store_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    path TEXT,
    content TEXT,
    content_sha256 TEXT,
    content_size_bytes BIGINT,
    record_version INTEGER,
    created_at DOUBLE PRECISION NOT NULL,
    created_by TEXT NOT NULL DEFAULT '{}',
    redacted_at DOUBLE PRECISION,
    redacted_by TEXT
);
CREATE INDEX memory_store_versions_store ON memory_store_versions (store_id, rowid);
CREATE INDEX memory_store_versions_memory ON memory_store_versions (memory_id, rowid);
ALTER TABLE memory_stores ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_stores FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_stores_tenant ON memory_stores USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE memory_store_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_store_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_store_versions_tenant ON memory_store_versions USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
