-- Passage windows for records stored before them (issue 28), as SQLite's 018: one
-- `passage-windows` job per tenant holding a record of 300 characters or more.
INSERT INTO jobs (id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, created_at, updated_at)
SELECT 'job_windows' || substr(md5(tenant || random()::text), 1, 16), tenant, 'passage-windows', '{}', 'queued', 5,
       stamp, 'passage-windows:' || tenant, stamp, stamp
FROM (
    SELECT DISTINCT tenant, EXTRACT(EPOCH FROM now())::double precision AS stamp
    FROM memories
    WHERE length(coalesce(title, '')) + length(content) >= 300
) AS long_records;
