-- Issue 29: a short pending list for the keyword index. GIN's fast update queues new
-- entries in a pending list that every keyword lookup reads through, unsorted, until
-- it holds gin_pending_list_limit (4 MB by default) or a vacuum/autoanalyze empties it.
-- After a bulk load of 100k records the list held 340 pages: each lookup of a rare word
-- read 344 pages (1.06 ms) where the index alone needs 4 (0.007 ms), and a search makes
-- five or six of them (the keyword statement, the term counts, the term presence).
-- At 256 kB a lookup reads a few dozen pages (0.1-0.3 ms); inserts flush more often.
ALTER INDEX memories_fts SET (gin_pending_list_limit = 256);
SELECT gin_clean_pending_list('memories_fts'::regclass);
