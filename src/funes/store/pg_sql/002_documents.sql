-- Managed document sources and registered Markdown folders (as SQLite's 002 and 010).
CREATE TABLE documents (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL,
    project_id TEXT,
    session_id TEXT,
    vis TEXT NOT NULL,
    uri TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size_bytes BIGINT NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    pages INTEGER,
    pipeline TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    warnings TEXT NOT NULL DEFAULT '[]',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    indexed_at DOUBLE PRECISION
);
CREATE UNIQUE INDEX documents_uri ON documents (tenant, user_id, vis, uri);
CREATE INDEX documents_list ON documents (tenant, uri);

CREATE TABLE folders (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    path TEXT NOT NULL,
    scope TEXT NOT NULL,
    project_id TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    last_sync_at DOUBLE PRECISION,
    last_sync TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX folders_path ON folders (tenant, path);
