-- Forget receipts (issue 25): one tombstone per forget, holding what was
-- removed and from where (ids, content hashes, counts per place, time,
-- actor) and the keyed hashes of the forgotten text's distinctive tokens,
-- never the text itself. `funes verify-forgotten` reads it back.
CREATE TABLE forget_receipts (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    at REAL NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    receipt TEXT NOT NULL
);
CREATE INDEX forget_receipts_tenant ON forget_receipts (tenant, at);
