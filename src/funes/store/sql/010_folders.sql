-- Registered Markdown memory folders (issue 11). Their files are ordinary
-- managed documents (uri under path); this row says which folder to keep in
-- sync, in which scope, and when and how it was last reconciled.
CREATE TABLE folders (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    path TEXT NOT NULL,
    scope TEXT NOT NULL,
    project_id TEXT,
    created_at REAL NOT NULL,
    last_sync_at REAL,
    last_sync TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX folders_path ON folders (tenant, path);
