-- API keys of the team server (see funes.keys). Only a SHA-256 hash of each
-- key is kept, with a short prefix for display; a key is shown once, when
-- created. Not tenant-filtered: a key is how a request finds its tenant.
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    team TEXT NOT NULL,
    user_id TEXT,
    role TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    name TEXT,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    last_used_at REAL,
    revoked_at REAL
);
CREATE INDEX api_keys_team ON api_keys (team, created_at);
