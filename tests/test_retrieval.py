"""Ranking as pure functions: fusion, boosts, thresholds and query terms (no database)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from funes.memory.ranking import RankSettings, boosts_for, fuse_rrf, query_terms, rank
from funes.models import Memory, utcnow

ids = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
ranked_lists = st.lists(st.lists(ids, unique=True, max_size=12), max_size=4)


@given(ranked_lists, st.integers(min_value=0, max_value=200))
def test_rrf_scores_every_item_by_its_ranks(lists: list[list[str]], k: int) -> None:
    scores = fuse_rrf(lists, k=k)
    assert set(scores) == {i for ranked in lists for i in ranked}
    for item, score in scores.items():
        expected = sum(1.0 / (k + ranked.index(item) + 1) for ranked in lists if item in ranked)
        assert score == pytest.approx(expected)


@given(ranked_lists)
def test_rrf_does_not_depend_on_list_order(lists: list[list[str]]) -> None:
    forward = fuse_rrf(lists)
    backward = fuse_rrf(list(reversed(lists)))
    assert forward.keys() == backward.keys()
    assert all(forward[i] == pytest.approx(backward[i]) for i in forward)


@given(st.lists(ids, unique=True, min_size=2, max_size=12))
def test_rrf_keeps_the_order_of_a_single_list(ranked: list[str]) -> None:
    scores = fuse_rrf([ranked])
    assert sorted(ranked, key=lambda i: -scores[i]) == ranked


@given(st.lists(ids, unique=True, min_size=1, max_size=8), st.lists(ids, unique=True, max_size=8))
def test_rrf_an_item_in_both_lists_beats_its_single_list_score(a: list[str], b: list[str]) -> None:
    both = fuse_rrf([a, b])
    alone = fuse_rrf([a])
    for item in a:
        assert both[item] >= alone[item]
        if item in b:
            assert both[item] > alone[item]


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError):
        fuse_rrf([["a"]], k=-1)


def _memory(id_: str, **kw: object) -> Memory:
    now = utcnow()
    fields: dict[str, object] = {"id": id_, "content": id_, "created_at": now, "updated_at": now}
    fields.update(kw)
    return Memory(**fields)  # type: ignore[arg-type]


def test_boosts_scope_importance_and_recency() -> None:
    now = utcnow()
    settings = RankSettings(current_project="acme")
    project = boosts_for(_memory("p", scope="project", project_id="acme", importance=0.5), settings, now)
    assert project["project"] == 1.5 and project["importance"] == pytest.approx(1.0)
    assert project["recency"] == pytest.approx(1.2)
    other = boosts_for(_memory("o", scope="project", project_id="globex"), settings, now)
    assert "project" not in other and "team" not in other
    team = boosts_for(_memory("t", scope="team", importance=0.9), settings, now)
    assert team["team"] == 1.3 and team["importance"] == pytest.approx(1.2)
    old = _memory("old", updated_at=now - timedelta(days=30))
    assert boosts_for(old, settings, now)["recency"] == pytest.approx(1.1)


def test_rank_threshold_keeps_strong_keyword_hits_only() -> None:
    now = utcnow()
    records = {i: _memory(i) for i in "abcd"}
    keyword = [("a", 5.0), ("b", 4.0), ("c", 3.0), ("d", 2.0)]
    sims = {"a": 0.1, "b": 0.1, "c": 0.1, "d": 0.1}
    hits = rank(keyword, [], sims, records, RankSettings(min_similarity=0.5, strong_keyword_rank=2), now, 10)
    assert [h.memory.id for h in hits] == ["a", "b"]
    hits = rank(keyword, [], sims, records, RankSettings(min_similarity=None), now, 10)
    assert [h.memory.id for h in hits] == ["a", "b", "c", "d"]


def test_rank_drops_vector_candidates_under_the_threshold() -> None:
    now = utcnow()
    records = {i: _memory(i) for i in "xy"}
    vector = [("x", 0.9), ("y", 0.45)]
    hits = rank([], vector, dict(vector), records, RankSettings(min_similarity=0.5), now, 10)
    assert [h.memory.id for h in hits] == ["x"]
    assert hits[0].explanation.vector_similarity == 0.9 and hits[0].explanation.keyword_rank is None


def test_rank_never_returns_expired_or_unknown_records() -> None:
    now = utcnow()
    records = {"live": _memory("live"), "gone": _memory("gone", expires_at=now - timedelta(seconds=1))}
    keyword = [("gone", 3.0), ("missing", 2.0), ("live", 1.0)]
    hits = rank(keyword, [], {}, records, RankSettings(), now, 10)
    assert [h.memory.id for h in hits] == ["live"]


def test_rank_project_boost_reorders_and_limit_cuts() -> None:
    now = utcnow()
    records = {
        "team": _memory("team", scope="session", session_id="s"),
        "proj": _memory("proj", scope="project", project_id="acme"),
    }
    # A near tie: boosts reorder comparable matches (a far weaker one stays below; see test_fusion.py).
    keyword = [("team", 2.0), ("proj", 1.8)]
    plain = rank(keyword, [], {}, records, RankSettings(), now, 10)
    assert [h.memory.id for h in plain] == ["team", "proj"]
    boosted = rank(keyword, [], {}, records, RankSettings(current_project="acme"), now, 1)
    assert [h.memory.id for h in boosted] == ["proj"]
    assert boosted[0].explanation.boosts["project"] == 1.5


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ('"foo', ["foo"]),
        ("AND OR NOT", ["and", "or", "not"]),
        ("*", []),
        ("-x", ["x"]),
        ("NEAR(a b)", ["near", "b"]),  # "a" is a stopword
        ("^start col:value", ["start", "col", "value"]),
        ("which vendors do we like?", ["vendors", "like"]),
        ("Vendors vendors VENDORS", ["vendors"]),
        ("Café naïve", ["café", "naïve"]),
    ],
)
def test_query_terms(query: str, terms: list[str]) -> None:
    assert query_terms(query) == terms


@given(st.text())
def test_query_terms_are_plain_words(query: str) -> None:
    terms = query_terms(query)
    assert len(terms) <= 16 and len(set(terms)) == len(terms)
    for term in terms:
        assert term and all(ch.isalnum() or ch == "_" for ch in term)
