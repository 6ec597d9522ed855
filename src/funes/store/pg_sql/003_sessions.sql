-- Conversations: sessions, messages, token usage, the cleanup log (as SQLite's 003).
CREATE TABLE sessions (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    project_id TEXT,
    title TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    last_activity DOUBLE PRECISION NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant, id)
);
CREATE INDEX sessions_activity ON sessions (tenant, last_activity);

CREATE TABLE messages (
    rowid BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    record_ids TEXT NOT NULL DEFAULT '[]',
    UNIQUE (tenant, session_id, seq),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

CREATE TABLE usage (
    id BIGSERIAL PRIMARY KEY,
    tenant TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id TEXT,
    at DOUBLE PRECISION NOT NULL,
    model TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    context_window INTEGER,
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);
CREATE INDEX usage_session ON usage (tenant, session_id, id);

CREATE TABLE cleanup_log (
    id BIGSERIAL PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    tenant TEXT NOT NULL,
    reason TEXT NOT NULL,
    scope TEXT,
    session_id TEXT,
    project_id TEXT,
    records_deleted INTEGER NOT NULL DEFAULT 0,
    messages_deleted INTEGER NOT NULL DEFAULT 0,
    records_kept INTEGER NOT NULL DEFAULT 0,
    bytes_reclaimed BIGINT NOT NULL DEFAULT 0
);
