-- Per-project settings (funes.project_settings): enabled, max_records, chunk_size, chunk_overlap, retrieval_k.
CREATE TABLE project_settings (
    tenant TEXT NOT NULL,
    project_id TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, project_id)
);
