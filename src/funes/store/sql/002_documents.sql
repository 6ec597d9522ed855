-- Managed document sources (knowledge ingestion). A document groups the
-- records whose source_id is its id; its chunks are replaced in the same
-- transaction that updates this row, so readers never see a mix of versions.
CREATE TABLE documents (
    rowid INTEGER PRIMARY KEY,
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
    size_bytes INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    pages INTEGER,
    pipeline TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    warnings TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    indexed_at REAL
);
CREATE UNIQUE INDEX documents_uri ON documents (tenant, user_id, vis, uri);
CREATE INDEX documents_list ON documents (tenant, uri);
