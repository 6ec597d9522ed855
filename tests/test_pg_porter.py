"""The PostgreSQL keyword index holds Porter stems, as SQLite's FTS5 ``porter`` tokenizer does (issue 29).

Parity of matches between the stores, and migration 013's backfill of the
keyword vectors of records written with the earlier suffix fold.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store import open_store
from funes.store.postgres import PostgresStore
from funes.store.words import fold_words

pytestmark = pytest.mark.postgres

TEXTS = [
    "Relational databases keep generalization rules",
    "The ponies were running across the meadow",
    "A general relation between the vendors",
    "Caresses and hopeful words at the café",
    "Nothing to see here at all",
]
# Each query word differs from its records' words by a suffix the earlier fold did not remove.
QUERIES = [["relation"], ["generalize"], ["pony"], ["runs"], ["caress"], ["hope"], ["cafe"], ["relations", "vendor"]]


def record(content: str, tenant: str = "t") -> Memory:
    now = utcnow()
    return Memory(
        id=new_id(), content=content, content_hash=content_hash(content), tenant=tenant,
        created_at=now, updated_at=now, source=SourceRef(type="user"),
    )  # fmt: skip


def test_the_index_words_are_porter_stems() -> None:
    assert fold_words("Relational generalization ponies running Café") == "relat gener poni run cafe"
    assert fold_words("東京タワー ab") == "東京タワー ab"  # other scripts and short words stay as they are


def test_the_words_are_those_sqlite_fts5_indexes() -> None:
    """Against FTS5's own tokenizer (the one sql/001_core.sql declares), Porter's C departures included."""
    text = (
        "Technology and biology of physiology; possibly reversibly assembled ponies were running. "
        "Generalization, relational hopefulness, caresses, agreed, feed, snake_case, naïve café, "
        "happiness sensibility responsibly electrical adjustable conformabli"
    )
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'row')")
    conn.execute("INSERT INTO f (x) VALUES (?)", (text,))
    assert set(fold_words(text).split()) == {t for (t,) in conn.execute("SELECT term FROM v")}


def test_postgres_matches_the_records_sqlite_matches(pg_url: str, tmp_path: Path) -> None:
    found: dict[str, list[set[str]]] = {}
    for name, url in (("sqlite", str(tmp_path / "kw.db")), ("postgres", pg_url)):
        store = open_store(url)
        try:
            store.set_identity(EmbedderIdentity("test-model", 16))
            records = [record(t) for t in TEXTS]
            store.put_many([(r, None) for r in records])
            text = {r.id: r.content for r in records}
            found[name] = [
                {text[i] for i, _ in store.keyword_search(q, SearchFilters(tenant="t"), limit=10, now=utcnow())}
                for q in QUERIES
            ]
        finally:
            store.close()
    assert found["postgres"] == found["sqlite"]
    assert all(found["postgres"]), found  # every query finds something on both


def test_migration_013_refolds_the_keyword_vectors_of_existing_records(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        store.put_many([(record(t, tenant=f"t{i % 2}"), None) for i, t in enumerate(TEXTS)])
        # Back to the store as it was before 013: unstemmed words in the keyword vectors.
        with store.db.write() as conn:
            conn.native("UPDATE memories SET fts = to_tsvector('simple', lower(content))")
            conn.native("DELETE FROM migrations WHERE version = 13")
        assert not store.keyword_search(["relation"], SearchFilters(tenant="t0"), limit=5, now=utcnow())
    finally:
        store.close()
    store = PostgresStore(pg_url)
    try:
        assert 13 in dict(store.migrations())
        hits = store.keyword_search(["relation"], SearchFilters(tenant="t0"), limit=5, now=utcnow())
        assert {store.get(i).content for i, _ in hits} == {TEXTS[0], TEXTS[2]}  # type: ignore[union-attr]
        hits = store.keyword_search(["pony"], SearchFilters(tenant="t1"), limit=5, now=utcnow())
        assert [store.get(i).content for i, _ in hits] == [TEXTS[1]]  # type: ignore[union-attr]
    finally:
        store.close()


def test_the_average_length_is_of_the_whole_store_not_of_its_newest_records(pg_url: str) -> None:
    """Long records first, then many short ones: FTS5 averages over its whole index, and so must BM25 here."""
    store = PostgresStore(pg_url)
    try:
        long_text = " ".join(f"word{n}" for n in range(40))
        store.put_many([(record(f"alpha {long_text}"), None) for _ in range(400)])
        store.put_many([(record("beta gamma"), None) for _ in range(1200)])
        assert store.keyword_search(["alpha"], SearchFilters(tenant="t"), limit=5, now=utcnow())
        avgdl = store._fts_stats["\0avgdl"][0]
        assert 9 <= avgdl <= 13, avgdl  # (400 x 41 + 1200 x 2) / 1600 = 11.75; the newest 1,000 alone: 2
    finally:
        store.close()
