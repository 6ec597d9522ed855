-- Keyword matching for Chinese, Japanese and Korean (issue 10).
--
-- unicode61 splits on spaces and punctuation, so a CJK sentence is one long
-- token and "超时" never matches "连接超时了". This trigram index holds only
-- the records whose title or content has CJK characters (U+2E80-U+9FFF:
-- radicals, kana, ideographs; U+AC00-U+D7AF: Hangul; U+F900-U+FAFF), so an
-- English store pays nothing but the trigger's GLOB test per write.
-- Queries match runs of 3+ CJK characters by trigram (MATCH, ranked by
-- bm25) and 2-character words by LIKE on this table (see SqliteStore).
CREATE VIRTUAL TABLE memories_cjk USING fts5 (
    title, content,
    content = 'memories', content_rowid = 'rowid',
    tokenize = 'trigram'
);
INSERT INTO memories_cjk (rowid, title, content)
    SELECT rowid, title, content FROM memories
    WHERE (coalesce(title, '') || ' ' || content) GLOB '*[⺀-鿿가-힯豈-﫿]*';
CREATE TRIGGER memories_cjk_ai AFTER INSERT ON memories
WHEN (coalesce(new.title, '') || ' ' || new.content) GLOB '*[⺀-鿿가-힯豈-﫿]*' BEGIN
    INSERT INTO memories_cjk (rowid, title, content) VALUES (new.rowid, new.title, new.content);
END;
-- External content: delete exactly what was indexed (the old values, same test).
CREATE TRIGGER memories_cjk_ad AFTER DELETE ON memories
WHEN (coalesce(old.title, '') || ' ' || old.content) GLOB '*[⺀-鿿가-힯豈-﫿]*' BEGIN
    INSERT INTO memories_cjk (memories_cjk, rowid, title, content) VALUES ('delete', old.rowid, old.title, old.content);
END;
-- One trigger, statements in order: SQLite fires separate triggers newest first,
-- which would delete the new entry right after inserting it.
CREATE TRIGGER memories_cjk_au AFTER UPDATE OF title, content ON memories BEGIN
    INSERT INTO memories_cjk (memories_cjk, rowid, title, content)
        SELECT 'delete', old.rowid, old.title, old.content
        WHERE (coalesce(old.title, '') || ' ' || old.content) GLOB '*[⺀-鿿가-힯豈-﫿]*';
    INSERT INTO memories_cjk (rowid, title, content)
        SELECT new.rowid, new.title, new.content
        WHERE (coalesce(new.title, '') || ' ' || new.content) GLOB '*[⺀-鿿가-힯豈-﫿]*';
END;
