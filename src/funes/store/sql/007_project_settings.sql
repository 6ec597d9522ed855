-- Per-file (project) settings of the team server: whether memory generation
-- is on for the file, its chunk size and its retrieval depth (funes.projects).
CREATE TABLE project_settings (
    tenant TEXT NOT NULL,
    project_id TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, project_id)
);
