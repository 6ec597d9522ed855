-- Time and authorship on every record (issue 25).
-- valid_from: when the current text became true (a learned fact's statement
-- date, a message's date, else the write time); kept versions carry their own
-- valid_from/valid_to inside previous_versions (older histories get theirs from
-- the neighbouring versions' timestamps when read: funes.models.timed_versions).
-- author: who wrote the current text (user, agent, llm, document, import; '' is
-- read from the kind and source, as for chat messages, whose role decides).
-- proposal: a machine's new text for a record a person wrote or pinned, kept
-- for a person to accept or dismiss (JSON), never written over the text.
ALTER TABLE memories ADD COLUMN valid_from DOUBLE PRECISION;
ALTER TABLE memories ADD COLUMN author TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN proposal TEXT;
-- Backfill: the current text is valid from its creation, or from its last
-- write when it has been edited since.
UPDATE memories SET valid_from = CASE WHEN version = 1 THEN created_at ELSE updated_at END;
UPDATE memories SET author = CASE
    WHEN kind IN ('insight', 'entity_summary') THEN 'llm'
    WHEN kind IN ('document_chunk', 'markdown') THEN 'document'
    WHEN kind = 'message' THEN ''
    WHEN source_type IN ('user', 'agent', 'import') THEN source_type
    WHEN source_type = 'chat' THEN 'llm'
    ELSE 'user' END;
CREATE INDEX memories_proposals ON memories (tenant) WHERE proposal IS NOT NULL;
