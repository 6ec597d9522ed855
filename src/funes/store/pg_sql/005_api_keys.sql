-- API keys of the team server (hashed) and per-project settings (rest-api contract).
-- api_keys is how a request's tenant is found, so it is NOT under row-level security.
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    team TEXT NOT NULL,
    user_id TEXT,
    role TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    name TEXT,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at DOUBLE PRECISION NOT NULL,
    last_used_at DOUBLE PRECISION,
    revoked_at DOUBLE PRECISION
);
CREATE INDEX api_keys_team ON api_keys (team, created_at);

CREATE TABLE project_settings (
    tenant TEXT NOT NULL,
    project_id TEXT NOT NULL,
    settings JSONB NOT NULL DEFAULT '{}',
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, project_id)
);
