-- Issue 29: each record's length in tokens (BM25's document length), kept beside
-- its keyword vector. The keyword leg read it from memories.fts by unnesting every
-- match's whole tsvector, which made its slowest queries: 16 common terms over
-- 2,000 matches spent most of 170 ms there (bench/pg_keyword_bench.py, docs/postgres.md).
-- A generated column: every write of fts keeps it current without the writers
-- knowing, and adding it fills it for the records already stored. NULL for an
-- empty vector, as the sum it replaces (so the average length is unchanged).
CREATE OR REPLACE FUNCTION funes_fts_length(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT sum(cardinality(u.positions))::integer FROM unnest($1) u $$;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS fts_length integer GENERATED ALWAYS AS (funes_fts_length(fts)) STORED;
