-- Issue 29: the records a tenant wrote since a time, newest first. Maintenance's dedupe asks for them
-- at every run (every maintain_every_writes writes: each 50 creates of a busy server), and without
-- an index on the time PostgreSQL scanned the whole table for them: 87 ms on three processes at 100k
-- records, in a REST load. memories_age (007) covers only never-edited, unpinned records.
CREATE INDEX IF NOT EXISTS memories_updated ON memories (tenant, updated_at);
