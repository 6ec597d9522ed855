-- Every primary key and unique key leads with the tenant (issue 29, "Past one
-- machine"), so the tenant tables can be distributed by tenant with Citus
-- (create_distributed_table(..., 'tenant'); docs/postgres.md): Citus requires
-- every unique constraint of a distributed table to contain its distribution
-- column, and a foreign key between two of them to include it as well.
-- tests/test_pg_citus.py enforces this on the catalog.
--
-- Ids stay unique in practice (random ULIDs); the database now guarantees
-- them per tenant. Lookups by id alone keep a plain (non-unique) index.
-- The global tables (migrations, meta, api_keys, embedding_cache) are left as
-- they are: they become Citus reference tables (or, for the cache,
-- distributed by its own key).
-- Nothing is rewritten: existing rows keep their keys; the new unique
-- indexes are built from them (this is the backfill).

-- memories: (tenant, rowid) and (tenant, id); vectors reference (tenant, rowid),
-- and follow a record whose tenant changes (ON UPDATE CASCADE).
ALTER TABLE memory_vectors DROP CONSTRAINT memory_vectors_memory_rowid_fkey;
-- The tables with a serial row key and a text id: (tenant, rowid) and (tenant, id),
-- with plain indexes for lookups by id (and by rowid, which the vectors join on).
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'documents', 'folders', 'messages', 'memory_stores', 'memory_store_versions'] LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_pkey');
        EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (tenant, rowid)', t);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_id_key');
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (tenant, id)', t, t || '_tenant_id');
        EXECUTE format('CREATE INDEX %I ON %I (id)', t || '_id', t);
    END LOOP;
    -- The tables keyed by a serial or text id of their own: (tenant, id).
    FOREACH t IN ARRAY ARRAY['access_log', 'cleanup_log', 'usage', 'forget_receipts', 'jobs'] LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_pkey');
        EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (tenant, id)', t);
    END LOOP;
END $$;
CREATE INDEX memories_rowid ON memories (rowid);
CREATE INDEX forget_receipts_id ON forget_receipts (id);
CREATE INDEX jobs_id ON jobs (id);

-- A vector whose tenant drifted from its record's (written before the store kept them in step).
UPDATE memory_vectors v SET tenant = m.tenant FROM memories m WHERE m.rowid = v.memory_rowid AND v.tenant != m.tenant;
ALTER TABLE memory_vectors DROP CONSTRAINT memory_vectors_pkey;
ALTER TABLE memory_vectors ADD PRIMARY KEY (tenant, vector_id);
ALTER TABLE memory_vectors ADD CONSTRAINT memory_vectors_memory_fkey FOREIGN KEY (tenant, memory_rowid)
    REFERENCES memories (tenant, rowid) ON DELETE CASCADE ON UPDATE CASCADE;

-- A queued job absorbs another of the same key within its tenant.
DROP INDEX jobs_dedupe;
CREATE UNIQUE INDEX jobs_dedupe ON jobs (tenant, dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'queued';
