-- Issue 29: the records a tenant wrote since a time, newest first. Maintenance's dedupe asks for
-- them at every run (every maintain_every_writes writes), and without an index on the time SQLite
-- walked the tenant's rows and sorted them: at 1M records in one tenant 4.5 s on a cold cache and
-- 0.29 s warm, against under 0.1 ms with the index.
-- memories_age (009) covers only never-edited, unpinned records. PostgreSQL's is pg_sql/021.
CREATE INDEX IF NOT EXISTS memories_updated ON memories (tenant, updated_at);
