-- Row-level security on every tenant table, as defence in depth: each
-- transaction sets `funes.tenant` from funes.tenancy.current_tenant, and
-- while it is non-empty a statement sees (and may write) only that tenant's
-- rows, even one that forgot its `tenant = ?` filter. Empty means the
-- process acts for no one tenant (the CLI, the job runner's claim).
-- FORCE applies the policies to the tables' owner too; superusers and roles
-- with BYPASSRLS still bypass them (docs/postgres.md).
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE POLICY memories_tenant ON memories USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE memory_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_vectors_tenant ON memory_vectors USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE access_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE access_log FORCE ROW LEVEL SECURITY;
CREATE POLICY access_log_tenant ON access_log USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;
CREATE POLICY documents_tenant ON documents USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE folders ENABLE ROW LEVEL SECURITY;
ALTER TABLE folders FORCE ROW LEVEL SECURITY;
CREATE POLICY folders_tenant ON folders USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_tenant ON sessions USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY messages_tenant ON messages USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage FORCE ROW LEVEL SECURITY;
CREATE POLICY usage_tenant ON usage USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE cleanup_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE cleanup_log FORCE ROW LEVEL SECURITY;
CREATE POLICY cleanup_log_tenant ON cleanup_log USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY jobs_tenant ON jobs USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
ALTER TABLE project_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY project_settings_tenant ON project_settings USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
