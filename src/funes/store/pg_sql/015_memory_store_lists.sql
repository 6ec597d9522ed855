-- Memory-store list filters served in SQL (issue 27). A version's author is
-- split out of its created_by JSON into two columns, so `api_key_id`,
-- `session_id` and `service_account_id` filter inside the query (and cursors
-- stay stable); existing versions are backfilled from their JSON. A store's
-- memories are listed by path in code-point order: COLLATE "C" compares the
-- UTF-8 bytes, the order SQLite and Python use, whatever the database's locale.
ALTER TABLE memory_store_versions ADD COLUMN created_by_type TEXT NOT NULL DEFAULT '';
ALTER TABLE memory_store_versions ADD COLUMN created_by_id TEXT NOT NULL DEFAULT '';
UPDATE memory_store_versions SET
    created_by_type = coalesce(created_by::jsonb ->> 'type', ''),
    created_by_id = coalesce(
        created_by::jsonb ->> 'api_key_id',
        created_by::jsonb ->> 'session_id',
        created_by::jsonb ->> 'service_account_id',
        created_by::jsonb ->> 'user_id',
        ''
    )
WHERE created_by LIKE '{%';
CREATE INDEX memory_store_versions_author ON memory_store_versions (store_id, created_by_type, created_by_id, rowid);
CREATE INDEX memory_store_versions_time ON memory_store_versions (store_id, created_at);
CREATE INDEX memories_store_paths ON memories (tenant, project_id, (entity_id COLLATE "C")) WHERE entity_type = 'memory_store';
