-- Issue 29: the keyword vector (memories.fts) holds Porter stems, as SQLite's
-- FTS5 `porter` tokenizer indexes, instead of a cruder English suffix fold
-- (funes.store.postgres_search.fold_word). The stems are computed in Python,
-- so the backfill that recomputes every record's vector runs in the same
-- transaction right after this file (PostgresStore._migrate, refold_keywords
-- in funes.store.postgres_bulk). The column, its GIN index and its row-level
-- security policy are unchanged.
COMMENT ON COLUMN memories.fts IS
    'Keyword vector: Porter-stemmed folded words (postgres_search.fold_words); title weight A, content D, topic C.';
