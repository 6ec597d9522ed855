"""User query text is never parsed as FTS5 syntax: any text searches without raising."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funes
from funes.providers.embed import HashEmbedder

NASTY = ['"foo', "AND OR NOT", "*", "-x", "NEAR(", "^", "a:b", "(", ")", "'", "+", "{title}", "NOT", "foo*", "\x00"]

queries = st.one_of(
    st.text(min_size=1),
    st.lists(st.sampled_from([*NASTY, "vendor", "efficiency", " "]), min_size=1, max_size=8).map("".join),
    st.lists(st.sampled_from([*NASTY, "vendor"]), min_size=1, max_size=6).map(" ".join),
)


@pytest.fixture
def mem(store_url: str) -> Iterator[funes.Funes]:
    """A service on each backend (the tsvector query is built from bound terms, like FTS5's quoted ones)."""
    service = funes.open(store_url, embedder=HashEmbedder(64))
    yield service
    service.close()


@pytest.fixture
def seeded(mem: funes.Funes) -> funes.Funes:
    """A small store with a few records, including FTS-looking text."""
    mem.remember("I prefer US-based vendors with 90% energy efficiency", type="preference")
    mem.remember('Quotes like "foo and NEAR( appear in logs', type="fact")
    mem.remember("Unicode: naïve café, 東京, emoji 🎉", type="fact")
    return mem


@pytest.mark.parametrize("query", NASTY)
def test_fts_syntax_in_queries_never_raises(seeded: funes.Funes, query: str) -> None:
    if not query.strip():
        pytest.skip("blank query is an input error, tested in test_safety")
    seeded.search(query, track=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=queries)
def test_any_query_text_searches_without_raising(seeded: funes.Funes, query: str) -> None:
    if not query.strip():
        with pytest.raises(funes.InvalidInput):
            seeded.search(query, track=False)
        return
    hits = seeded.search(query, track=False)
    assert all(h.memory.tenant == "default" for h in hits)


def test_quoted_phrase_text_is_matched_as_words(seeded: funes.Funes) -> None:
    hits = seeded.search('"foo', track=False)
    assert hits and 'Quotes like "foo' in hits[0].memory.content
    assert hits[0].explanation.keyword_rank == 1


def test_unicode_words_are_found_by_keyword(seeded: funes.Funes) -> None:
    hits = seeded.search("cafe", track=False)
    assert hits[0].explanation.keyword_rank == 1 and "café" in hits[0].memory.content
