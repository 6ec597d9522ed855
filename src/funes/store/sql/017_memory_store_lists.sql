-- Memory-store list filters served in SQL (issue 27). A version's author is
-- split out of its created_by JSON into two columns, so `api_key_id`,
-- `session_id` and `service_account_id` filter inside the query (and cursors
-- stay stable); existing versions are backfilled from their JSON. A store's
-- memories are listed by path straight from an index, in code-point order
-- (SQLite's BINARY collation compares UTF-8 bytes, which is that order).
ALTER TABLE memory_store_versions ADD COLUMN created_by_type TEXT NOT NULL DEFAULT '';
ALTER TABLE memory_store_versions ADD COLUMN created_by_id TEXT NOT NULL DEFAULT '';
UPDATE memory_store_versions SET
    created_by_type = coalesce(json_extract(created_by, '$.type'), ''),
    created_by_id = coalesce(
        json_extract(created_by, '$.api_key_id'),
        json_extract(created_by, '$.session_id'),
        json_extract(created_by, '$.service_account_id'),
        json_extract(created_by, '$.user_id'),
        ''
    )
WHERE json_valid(created_by);
CREATE INDEX memory_store_versions_author ON memory_store_versions (store_id, created_by_type, created_by_id, rowid);
CREATE INDEX memory_store_versions_time ON memory_store_versions (store_id, created_at);
CREATE INDEX memories_store_paths ON memories (tenant, project_id, entity_id) WHERE entity_type = 'memory_store';
