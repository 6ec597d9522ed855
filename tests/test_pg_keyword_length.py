"""BM25 on PostgreSQL reads each record's stored length and each term's frequency exactly (issue 29).

The length in tokens is a generated column (pg_sql/018_fts_length.sql), kept by
every write of the keyword vector; term frequencies come from ``ts_rank_cd``
(a title hit counts twice, as on SQLite). The scores are checked against
Okapi BM25 computed here from the words themselves.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from funes.models import Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore
from funes.store.words import fold_word, fold_words

pytestmark = pytest.mark.postgres


def record(content: str, title: str | None = None, topic: str | None = None) -> Memory:
    now = utcnow()
    return Memory(
        id=new_id(), content=content, content_hash=content_hash(content), tenant="t", title=title, topic=topic,
        created_at=now, updated_at=now, source=SourceRef(type="user"),
    )  # fmt: skip


RECORDS = [
    ("plum plum plum and a kiwi in the bowl", "Plum notes", None),
    ("kiwi", None, None),
    ("a long note about the orchard where plum trees grow next to fig trees and kiwi vines", None, "plum"),
    ("nothing of interest here at all", "Kiwi", None),
    ("fig fig kiwi plum", None, None),
] + [(f"filler line {n} about the weather and the roads", None, None) for n in range(12)]


def tokens(m: Memory) -> list[str]:
    return " ".join(fold_words(t) for t in (m.title, m.content, m.topic) if t).split()


def expected_bm25(records: list[Memory], terms: list[str]) -> dict[str, float]:
    """Okapi BM25 (k1 1.2, b 0.75, FTS5's IDF), title words counted twice, from the words themselves."""
    lengths = {m.id: len(tokens(m)) for m in records}
    avgdl = max(1, math.floor(sum(lengths.values()) / len(records)))
    words = [fold_word(t) for t in terms]
    df = {w: sum(1 for m in records if w in tokens(m)) for w in words}
    scores: dict[str, float] = {}
    for m in records:
        title = fold_words(m.title).split()
        score = 0.0
        for w in words:
            tf = tokens(m).count(w) + title.count(w)
            if tf:
                idf = max(math.log((len(records) - df[w] + 0.5) / (df[w] + 0.5)), 1e-6)
                score += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * lengths[m.id] / avgdl))
        if score:
            scores[m.id] = score
    return scores


def test_keyword_scores_are_okapi_bm25_of_the_records_words(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        records = [record(c, title, topic) for c, title, topic in RECORDS]
        store.put_many([(m, None) for m in records])
        for terms in (["plum"], ["kiwi", "fig"], ["plum", "kiwi", "orchard"]):
            hits = dict(store.keyword_search(terms, SearchFilters(tenant="t"), limit=50, now=utcnow()))
            want = expected_bm25(records, terms)
            assert set(hits) == set(want), terms
            for memory_id, score in want.items():
                assert hits[memory_id] == pytest.approx(score, rel=1e-6), (terms, memory_id)
    finally:
        store.close()


def stored_lengths(store: PostgresStore) -> dict[str, int | None]:
    rows = store.db.reader().native("SELECT id, fts_length FROM memories").fetchall()
    return {str(i): n for i, n in rows}


def test_the_stored_length_follows_every_write_and_is_filled_for_existing_records(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        bulk = [record(c, title, topic) for c, title, topic in RECORDS]
        store.put_many([(m, None) for m in bulk])  # the batched path
        one = record("one record written alone", title="Alone")
        store.put(one, None)
        edited = replace(bulk[1], content="kiwi kiwi and more words now", updated_at=utcnow())
        store.put(edited, None)
        written = {m.id: m for m in [*bulk, one, edited]}
        assert stored_lengths(store) == {i: len(tokens(m)) for i, m in written.items()}
        # A store from before 018: no column. Opening it adds the column and fills it for every record.
        with store.db.write() as conn:
            conn.native("ALTER TABLE memories DROP COLUMN fts_length")
            conn.native("DELETE FROM migrations WHERE version = 18")
    finally:
        store.close()
    store = PostgresStore(pg_url)
    try:
        assert 18 in dict(store.migrations())
        assert stored_lengths(store) == {i: len(tokens(m)) for i, m in written.items()}
        assert store.keyword_search(["kiwi"], SearchFilters(tenant="t"), limit=5, now=utcnow())
    finally:
        store.close()
