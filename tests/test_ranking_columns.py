"""Fusion, boosts and relevance over column arrays give the same doubles as the per-candidate functions.

:func:`funes.memory.ranking.rank_scored` fuses, boosts and orders a search's
candidates on numpy columns; the reference here is the per-candidate loop it
replaced (:func:`fuse_convex` / :func:`fuse_rrf` and :func:`boosts_for` for each
candidate, the boosts multiplied one by one). :meth:`SignalJudge.many` and
:meth:`SignalJudge.bounds` judge a batch of candidates on columns; the
reference is the judge called on each. Every comparison is ``==`` on floats:
an order never rests on a tolerance.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_judging import _WORDS, _fused, _query_judge, _text

from funes.memory.dates import DateWindow
from funes.memory.ranking import (
    RankSettings,
    Scored,
    boosts_for,
    date_matcher,
    fuse_convex,
    fuse_rrf,
    rank_scored,
)
from funes.memory.relevance import Signals, boost_factor, signal_dict
from funes.models import RankFields

NOW = datetime(2026, 11, 26, 12, 0, 0, 123456, tzinfo=UTC)
IDS = [f"m{n:02d}" for n in range(24)]


def _reference(
    keyword: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    similarities: dict[str, float],
    records: dict[str, RankFields],
    s: RankSettings,
    now: datetime,
    limit: int,
) -> list[tuple[Any, ...]]:
    """The per-candidate loop (the path before the columns): (id, score, fused, bm25, cosine, boosts, parts)."""
    kw_ids = [i for i, _ in keyword]
    floor = s.vector_floor
    vec_ids = [i for r, (i, sim) in enumerate(vector, start=1) if floor is None or sim >= floor or r <= s.floor_exempt]
    kw_rank = {i: r for r, i in enumerate(kw_ids, start=1)}
    if s.fusion == "rrf":
        kw_part = fuse_rrf([kw_ids], k=s.rrf_k, weights=[s.keyword_weight])
        vec_part = fuse_rrf([vec_ids], k=s.rrf_k, weights=[s.vector_weight])
        parts = {
            i: {"keyword": kw_part.get(i, 0.0), "vector": vec_part.get(i, 0.0)}
            for i in dict.fromkeys([*kw_ids, *vec_ids])
        }
    else:
        admitted = set(vec_ids)
        cosines = {i: c for i, c in vector if i in admitted}
        for i in kw_ids:
            sim = similarities.get(i)
            if i not in cosines and sim is not None and (floor is None or sim >= floor):
                cosines[i] = sim
        parts = fuse_convex(dict(keyword), cosines, s.keyword_weight, s.vector_weight)
    for i, _ in vector:
        parts.setdefault(i, {"keyword": 0.0, "vector": 0.0})
    match = date_matcher(s.date_windows) if s.date_windows else None
    kept = []
    for memory_id, contributions in parts.items():
        memory = records.get(memory_id)
        if memory is None or memory.is_expired(now):
            continue
        sim = similarities.get(memory_id)
        strong = kw_rank.get(memory_id, 10**9) <= s.strong_keyword_rank
        if s.min_similarity is not None and not strong and (sim is None or sim < s.min_similarity):
            continue
        boosts = boosts_for(memory, s, now, match)
        fused = score = sum(contributions.values())
        for factor in boosts.values():
            score *= factor
        kept.append((score, memory_id, fused, dict(keyword).get(memory_id), sim, boosts, contributions))
    kept.sort(key=lambda h: (-h[0], h[1]))
    return [(i, score, fused, bm25, sim, boosts, c) for score, i, fused, bm25, sim, boosts, c in kept[:limit]]


def _columns(scored: list[Scored]) -> list[tuple[Any, ...]]:
    out = []
    for s in scored:
        e = s.explanation
        assert (e.score, e.fused, e.boosts, e.keyword_score, e.vector_similarity) == (
            s.score,
            s._fused,
            s.boosts,
            s.keyword_score,
            s.vector_similarity,
        )
        assert s.factor == boost_factor(s.boosts)  # what relevance.boosted multiplies the odds by
        out.append((s.id, s.score, s._fused, s.keyword_score, s.vector_similarity, s.boosts, e.contributions))
    return out


_score = st.floats(0.0, 30.0, allow_nan=False)
_cosine = st.floats(-0.3, 1.0, allow_nan=False)
_record = st.tuples(
    st.sampled_from(["team", "project", "session", "user"]),
    st.sampled_from([None, "alpha", "beta"]),
    st.one_of(st.floats(0.0, 1.0, allow_nan=False), st.sampled_from([0, 1, 0.5])),
    st.integers(-3 * 10**12, 4 * 10**13),  # microseconds before now (negative: written "after" now)
    st.one_of(st.none(), st.integers(-(10**10), 10**10)),  # expiry, microseconds after now
    st.one_of(st.none(), st.integers(0, 4 * 10**13)),  # created, microseconds before now
)


@settings(max_examples=400, deadline=None)
@given(
    keyword=st.lists(st.tuples(st.sampled_from(IDS), _score), max_size=12, unique_by=lambda kv: kv[0]),
    vector=st.lists(st.tuples(st.sampled_from(IDS), _cosine), max_size=12, unique_by=lambda kv: kv[0]),
    sims=st.dictionaries(st.sampled_from(IDS), _cosine),
    rows=st.dictionaries(st.sampled_from(IDS[:20]), _record, min_size=1),
    fusion=st.sampled_from(["convex", "rrf"]),
    weights=st.tuples(st.floats(0.0, 2.0), st.floats(0.05, 2.0)),
    min_similarity=st.one_of(st.none(), _cosine),
    floor=st.one_of(st.none(), _cosine),
    project=st.sampled_from([None, "alpha"]),
    dated=st.booleans(),
    half_life=st.sampled_from([30.0, 0.0, 7.5]),
    limit=st.integers(1, 30),
)
def test_rank_scored_on_columns_gives_the_per_candidate_doubles(
    keyword: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    sims: dict[str, float],
    rows: dict[str, tuple[Any, ...]],
    fusion: str,
    weights: tuple[float, float],
    min_similarity: float | None,
    floor: float | None,
    project: str | None,
    dated: bool,
    half_life: float,
    limit: int,
) -> None:
    vector = sorted(vector, key=lambda kv: -kv[1])
    similarities = {**sims, **dict(vector)}
    us = timedelta(microseconds=1)
    records = {
        i: RankFields(
            id=i,
            scope=scope,
            project_id=project_id,
            importance=importance,
            updated_at=NOW - age * us,
            expires_at=None if expiry is None else NOW + expiry * us,
            created_at=None if created is None else NOW - created * us,
        )
        for i, (scope, project_id, importance, age, expiry, created) in rows.items()
    }
    window = DateWindow(start=NOW - timedelta(days=40), end=NOW - timedelta(days=39), phrase="x", every_year=True)
    s = RankSettings(
        fusion=fusion,
        keyword_weight=weights[0],
        vector_weight=weights[1],
        min_similarity=min_similarity,
        vector_floor=floor,
        current_project=project,
        recency_half_life_days=half_life,
        date_boost=0.4 if dated else 0.0,
        date_windows=(window,) if dated else (),
    )
    got = rank_scored(keyword, vector, similarities, records, s, NOW, limit)
    assert _columns(got) == _reference(keyword, vector, similarities, records, s, NOW, limit)


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(st.sampled_from([w.lower() for w in _WORDS]), max_size=4, unique=True),
    counts=st.lists(st.integers(0, 1000), min_size=4, max_size=4),
    candidates=st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(0.0, 40.0, allow_nan=False)),
            st.one_of(st.none(), st.floats(-1.0, 1.0, allow_nan=False)),
            st.lists(st.floats(0.5, 2.0, allow_nan=False), max_size=4),
            _text,
            st.one_of(st.none(), _text),
        ),
        max_size=12,
    ),
    has_vector=st.booleans(),
    seen=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_a_batch_is_judged_and_bounded_as_each_candidate_alone(
    terms: list[str],
    counts: list[int],
    candidates: list[tuple[Any, ...]],
    has_vector: bool,
    seen: list[bool],
) -> None:
    judge = _query_judge(terms, counts, has_vector, seen)
    fused = [_fused(bm25, cosine, boosts) for bm25, cosine, boosts, _, _ in candidates]
    memories = [SimpleNamespace(title=title, content=text) for _, _, _, text, title in candidates]
    judged = judge.many(fused, memories)
    assert judged == [judge(f, m) for f, m in zip(fused, memories, strict=True)]
    for _, values, calibrated in judged:  # an explanation's signals
        assert signal_dict(values, calibrated) == {**Signals(*values).to_dict(), "calibrated": calibrated}
    assert judge.bounds(fused) == [judge.bound(f) for f in fused]


@pytest.mark.parametrize(
    "scores",
    [[-1e308, 5e-324], [1e308, 1e-300, -1e308], [0.0, -1.0], [3.0, 1.5, 0.0]],
    ids=["tiny", "huge", "none", "plain"],
)
def test_scaling_to_the_best_on_columns_matches_the_scalar_path_at_the_float_range_s_ends(scores: list[float]) -> None:
    """Hypothesis found a huge negative score over a tiny best: Python's division gives -inf (then 0), numpy warned."""
    from funes.memory.ranking import _scaled_to_best, scale_to_best

    expected = scale_to_best({str(n): s for n, s in enumerate(scores)})
    assert _scaled_to_best(scores).tolist() == [expected[str(n)] for n in range(len(scores))]
