-- Topics for documents and notes indexed before they had them (issue 26): one
-- `document-topics` job per tenant that holds a document passage or a note
-- section without a topic; the job labels them from their documents
-- (funes.knowledge.topics). A new store, or one with nothing to label, queues nothing.
INSERT INTO jobs (id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, created_at, updated_at)
SELECT 'job_topics' || lower(hex(randomblob(8))), tenant, 'document-topics', '{}', 'queued', 5, stamp,
       'document-topics:' || tenant, stamp, stamp
FROM (
    SELECT DISTINCT tenant, (julianday('now') - 2440587.5) * 86400.0 AS stamp
    FROM memories
    WHERE kind IN ('document_chunk', 'markdown') AND source_id != '' AND topic IS NULL
);
