-- Passage windows for records stored before them (issue 28): one `passage-windows`
-- job per tenant that holds a record long enough to get windows (300 characters or
-- more: funes.memory.passages.MIN_CHARS); the job embeds and stores the windows of those
-- that need them (funes.memory.passages). A new store, or one of short records, queues nothing.
INSERT INTO jobs (id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, created_at, updated_at)
SELECT 'job_windows' || lower(hex(randomblob(8))), tenant, 'passage-windows', '{}', 'queued', 5, stamp,
       'passage-windows:' || tenant, stamp, stamp
FROM (
    SELECT DISTINCT tenant, (julianday('now') - 2440587.5) * 86400.0 AS stamp
    FROM memories
    WHERE length(coalesce(title, '')) + length(content) >= 300
);
