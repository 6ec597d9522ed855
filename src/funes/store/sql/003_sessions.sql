-- Conversations: sessions, their messages, token usage per model call, and
-- the cleanup log of retention removals. Messages are the transcript; each
-- one is ALSO indexed as `message` records in `memories` (record_ids), written
-- in the same transaction, so a dropped turn stays findable by search.
CREATE TABLE sessions (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    project_id TEXT,
    title TEXT,
    created_at REAL NOT NULL,
    last_activity REAL NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant, id)
);
CREATE INDEX sessions_activity ON sessions (tenant, last_activity);

CREATE TABLE messages (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    created_at REAL NOT NULL,
    record_ids TEXT NOT NULL DEFAULT '[]',
    UNIQUE (tenant, session_id, seq),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id TEXT,
    at REAL NOT NULL,
    model TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    context_window INTEGER,
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);
CREATE INDEX usage_session ON usage (tenant, session_id, id);

CREATE TABLE cleanup_log (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    tenant TEXT NOT NULL,
    reason TEXT NOT NULL,
    scope TEXT,
    session_id TEXT,
    project_id TEXT,
    records_deleted INTEGER NOT NULL DEFAULT 0,
    messages_deleted INTEGER NOT NULL DEFAULT 0,
    records_kept INTEGER NOT NULL DEFAULT 0,
    bytes_reclaimed INTEGER NOT NULL DEFAULT 0
);

-- Retention scans session-scope records by session; facts scan pinned and important records.
CREATE INDEX memories_session ON memories (tenant, session_id) WHERE scope = 'session';
CREATE INDEX memories_facts ON memories (tenant, vis, importance) WHERE pinned = 1 OR importance >= 0.5;
