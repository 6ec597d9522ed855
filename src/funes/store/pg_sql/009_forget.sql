-- Forget receipts (issue 25): one tombstone per forget; no content, only ids,
-- hashes and counts (see sql/012_forget.sql).
CREATE TABLE forget_receipts (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    receipt TEXT NOT NULL
);
CREATE INDEX forget_receipts_tenant ON forget_receipts (tenant, at);
ALTER TABLE forget_receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE forget_receipts FORCE ROW LEVEL SECURITY;
CREATE POLICY forget_receipts_tenant ON forget_receipts USING (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true))
    WITH CHECK (coalesce(current_setting('funes.tenant', true), '') = '' OR tenant = current_setting('funes.tenant', true));
