-- Core tables: memory records, their keyword index, the embedding cache,
-- the access log. The vector table (vec0) is created once the embedder's
-- dimension is known; see SqliteStore.set_identity.
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY,
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
    importance REAL NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    expires_at REAL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed REAL,
    version INTEGER NOT NULL DEFAULT 1,
    content_hash TEXT NOT NULL,
    previous_versions TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    refs TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memories_dedup ON memories (tenant, vis, content_hash);
CREATE INDEX memories_list ON memories (tenant, id);
CREATE INDEX memories_source ON memories (source_id) WHERE source_id != '';
CREATE INDEX memories_entity ON memories (tenant, entity_type, entity_id);

-- Keyword index: external content over memories, kept in sync by triggers.
-- `tags` holds hashed filter tokens (the tenant) so that tenant filtering
-- happens inside the FTS query, not after it.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    title, content, topic, tags,
    content = 'memories', content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, title, content, topic, tags)
    VALUES (new.rowid, new.title, new.content, new.topic, new.tags);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, title, content, topic, tags)
    VALUES ('delete', old.rowid, old.title, old.content, old.topic, old.tags);
END;
-- Only text changes touch the index: access counters must stay cheap.
CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, content, topic, tags ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, title, content, topic, tags)
    VALUES ('delete', old.rowid, old.title, old.content, old.topic, old.tags);
    INSERT INTO memories_fts (rowid, title, content, topic, tags)
    VALUES (new.rowid, new.title, new.content, new.topic, new.tags);
END;

-- Which vec0 rows belong to which record (long content has several parts).
CREATE TABLE memory_vectors (
    vector_id INTEGER PRIMARY KEY,
    memory_rowid INTEGER NOT NULL,
    part INTEGER NOT NULL
);
CREATE INDEX memory_vectors_memory ON memory_vectors (memory_rowid);

CREATE TABLE embedding_cache (
    model_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_hash)
) WITHOUT ROWID;

CREATE TABLE access_log (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    action TEXT NOT NULL,
    query TEXT,
    score REAL,
    session_id TEXT,
    agent_id TEXT
);
CREATE INDEX access_log_memory ON access_log (memory_id);
