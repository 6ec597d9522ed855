-- Change log of the vector index, read by the in-process vector cache
-- (store/vector_cache.py) to stay fresh across processes without reloading
-- a tenant's vectors on every search. Triggers write it, so every vector
-- insert, delete and filter-metadata change is logged in the same
-- transaction as the change itself, whichever code path made it.
--
-- A row says "vector_id of this tenant changed": readers re-read the current
-- row, so the op is informational. A record that moves between tenants is
-- logged under both. `meta.vector_changes_floor` is the highest seq whose row
-- may be gone (trimmed, or a reindex): a reader that last saw an older seq
-- reloads in full.
CREATE TABLE vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    vector_id INTEGER NOT NULL,
    op TEXT NOT NULL
);
CREATE INDEX vector_changes_tenant ON vector_changes (tenant, seq);

INSERT OR IGNORE INTO meta (key, value) VALUES ('vector_changes_floor', '0');
INSERT OR IGNORE INTO meta (key, value) VALUES ('vector_changes_keep', '50000');

CREATE TRIGGER vector_changes_put AFTER INSERT ON memory_vectors BEGIN
    INSERT INTO vector_changes (tenant, vector_id, op)
    VALUES (COALESCE((SELECT tenant FROM memories WHERE rowid = new.memory_rowid), ''), new.vector_id, 'put');
END;
CREATE TRIGGER vector_changes_del AFTER DELETE ON memory_vectors BEGIN
    INSERT INTO vector_changes (tenant, vector_id, op)
    VALUES (COALESCE((SELECT tenant FROM memories WHERE rowid = old.memory_rowid), ''), old.vector_id, 'del');
END;
-- The columns copied into vec0 as filter metadata (see SqliteStore._vector_metadata).
CREATE TRIGGER vector_changes_meta AFTER UPDATE OF tenant, user_id, scope, vis, kind, memory_type,
    source_type, source_id, created_at, expires_at ON memories BEGIN
    INSERT INTO vector_changes (tenant, vector_id, op)
    SELECT old.tenant, vector_id, 'meta' FROM memory_vectors WHERE memory_rowid = new.rowid;
    INSERT INTO vector_changes (tenant, vector_id, op)
    SELECT new.tenant, vector_id, 'meta' FROM memory_vectors WHERE memory_rowid = new.rowid
    AND new.tenant != old.tenant;
END;
-- Every 1024 changes, drop all but the newest `vector_changes_keep`, so the
-- log stays small however long the store lives.
CREATE TRIGGER vector_changes_trim AFTER INSERT ON vector_changes WHEN new.seq % 1024 = 0 BEGIN
    UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER),
        new.seq - (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_changes_keep')) AS TEXT)
    WHERE key = 'vector_changes_floor';
    DELETE FROM vector_changes
    WHERE seq <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_changes_floor');
END;
