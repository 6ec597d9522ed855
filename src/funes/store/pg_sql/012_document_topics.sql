-- Topics for documents and notes indexed before they had them (issue 26), as SQLite's 015:
-- one `document-topics` job per tenant holding a document passage or note section without a topic.
INSERT INTO jobs (id, tenant, kind, payload, status, max_attempts, run_after, dedupe_key, created_at, updated_at)
SELECT 'job_topics' || substr(md5(tenant || random()::text), 1, 16), tenant, 'document-topics', '{}', 'queued', 5,
       stamp, 'document-topics:' || tenant, stamp, stamp
FROM (
    SELECT DISTINCT tenant, EXTRACT(EPOCH FROM now())::double precision AS stamp
    FROM memories
    WHERE kind IN ('document_chunk', 'markdown') AND source_id != '' AND topic IS NULL
) AS unlabelled;
