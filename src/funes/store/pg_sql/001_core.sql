-- Core tables of the PostgreSQL store: memory records with their keyword
-- vector (tsvector, GIN), the vector map, the embedding cache and the access
-- log. Columns mirror the SQLite store (store/sql/001_core.sql): times are
-- epoch seconds (double precision), JSON is text, so both stores share their
-- row mapping. The typed `embedding vector(N)` column and its HNSW index are
-- added once the embedder's dimension is known (PostgresStore.set_identity).
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE memories (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL,
    session_id TEXT,
    project_id TEXT,
    vis TEXT NOT NULL,
    kind TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT,
    topic TEXT,
    title TEXT,
    content TEXT NOT NULL,
    source_type TEXT NOT NULL DEFAULT '',
    source_uri TEXT,
    source_id TEXT NOT NULL DEFAULT '',
    locator TEXT NOT NULL DEFAULT '{}',
    importance DOUBLE PRECISION NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    expires_at DOUBLE PRECISION,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed DOUBLE PRECISION,
    version INTEGER NOT NULL DEFAULT 1,
    content_hash TEXT NOT NULL,
    previous_versions TEXT NOT NULL DEFAULT '[]',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    refs TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT '',
    -- The keyword index, written by the store (PostgresStore._put) from the
    -- folded words of title (weight A), content and topic (weight C): see
    -- postgres_search.fold_words. 'simple' config: no stopwords, any script.
    fts TSVECTOR NOT NULL DEFAULT ''::tsvector,
    -- Records with Chinese, Japanese or Korean text (the ranges of the SQLite
    -- trigram index, sql/008_cjk.sql): the CJK keyword leg scans only these.
    has_cjk BOOLEAN GENERATED ALWAYS AS (
        (coalesce(title, '') || ' ' || content) ~ '[⺀-鿿가-힯豈-﫿]'
    ) STORED
);
CREATE INDEX memories_fts ON memories USING GIN (fts);
CREATE INDEX memories_dedup ON memories (tenant, vis, content_hash);
CREATE INDEX memories_list ON memories (tenant, id);
CREATE INDEX memories_source ON memories (source_id) WHERE source_id != '';
CREATE INDEX memories_entity ON memories (tenant, entity_type, entity_id);
CREATE INDEX memories_project ON memories (tenant, project_id);
CREATE INDEX memories_scope ON memories (tenant, scope);
CREATE INDEX memories_topic ON memories (tenant, topic);
CREATE INDEX memories_session ON memories (tenant, session_id) WHERE scope = 'session';
CREATE INDEX memories_facts ON memories (tenant, vis, importance) WHERE pinned = 1 OR importance >= 0.5;
CREATE INDEX memories_cjk ON memories (tenant) WHERE has_cjk;
-- Upsert dedup of generated entity summaries: one record per (tenant, file,
-- entity type, entity id) and owner, the key find_entity looks up.
CREATE UNIQUE INDEX memories_entity_unique
    ON memories (tenant, coalesce(project_id, ''), entity_type, entity_id, user_id)
    WHERE kind = 'entity_summary' AND entity_type IS NOT NULL AND entity_id IS NOT NULL;

-- One row per vector (long content has several parts). The tenant is copied
-- here so that an exact KNN reads one tenant's vectors through its btree.
CREATE TABLE memory_vectors (
    vector_id BIGSERIAL PRIMARY KEY,
    memory_rowid BIGINT NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    tenant TEXT NOT NULL
);
CREATE INDEX memory_vectors_memory ON memory_vectors (memory_rowid);
CREATE INDEX memory_vectors_tenant ON memory_vectors (tenant);

CREATE TABLE embedding_cache (
    model_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model_id, text_hash)
);

CREATE TABLE access_log (
    id BIGSERIAL PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    action TEXT NOT NULL,
    query TEXT,
    score DOUBLE PRECISION,
    session_id TEXT,
    agent_id TEXT
);
CREATE INDEX access_log_memory ON access_log (memory_id);
