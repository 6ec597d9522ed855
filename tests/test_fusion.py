"""Fusion of the keyword and vector legs, and how boosts sit on top of it (pure, no database)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import funes
from funes.errors import InvalidInput
from funes.memory.ranking import FUSIONS, RankSettings, fuse_convex, fuse_rrf, rank, scale_to_best
from funes.models import Memory, utcnow
from funes.providers.embed import HashEmbedder

ids = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
bm25 = st.floats(min_value=0.01, max_value=50.0, allow_nan=False)
cosine = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
weights = st.one_of(st.just(0.0), st.floats(min_value=0.01, max_value=3.0))
NOW = utcnow()


def _memory(id_: str, **kw: object) -> Memory:
    fields: dict[str, object] = {"id": id_, "content": id_, "created_at": NOW, "updated_at": NOW}
    fields.update(kw)
    return Memory(**fields)  # type: ignore[arg-type]


def _rank(
    keyword: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    sims: dict[str, float] | None = None,
    records: dict[str, Memory] | None = None,
    now: datetime = NOW,
    **settings: object,
) -> list[funes.SearchHit]:
    every = {i for i, _ in keyword} | {i for i, _ in vector}
    return rank(
        keyword,
        vector,
        {**dict(vector), **(sims or {})},
        records or {i: _memory(i) for i in every},
        RankSettings(**settings),  # type: ignore[arg-type]
        now,
        100,
    )


# -- weighted RRF ------------------------------------------------------------------


@given(st.lists(st.lists(ids, unique=True, max_size=10), max_size=3), st.data())
def test_weighted_rrf_scales_each_list_by_its_weight(lists: list[list[str]], data: st.DataObject) -> None:
    w = data.draw(st.lists(weights, min_size=len(lists), max_size=len(lists)))
    scores = fuse_rrf(lists, k=60, weights=w)
    for item, score in scores.items():
        expected = sum(w[n] / (60 + ranked.index(item) + 1) for n, ranked in enumerate(lists) if item in ranked)
        assert score == pytest.approx(expected)
    assert fuse_rrf(lists, weights=[1.0] * len(lists)) == pytest.approx(fuse_rrf(lists))


def test_weighted_rrf_needs_one_weight_per_list() -> None:
    with pytest.raises(ValueError, match="one weight per list"):
        fuse_rrf([["a"], ["b"]], weights=[1.0])


# -- normalisation -------------------------------------------------------------------


@given(st.dictionaries(ids, st.one_of(bm25, cosine), min_size=1))
def test_scaling_keeps_order_and_puts_the_best_at_one(scores: dict[str, float]) -> None:
    scaled = scale_to_best(scores)
    assert all(0.0 <= v <= 1.0 for v in scaled.values())
    if max(scores.values()) > 0:
        assert max(scaled.values()) == pytest.approx(1.0)
    for a in scores:
        for b in scores:
            if scores[a] < scores[b]:
                assert scaled[a] <= scaled[b]


@given(st.dictionaries(ids, bm25, min_size=1))
def test_every_keyword_match_keeps_some_weight(scores: dict[str, float]) -> None:
    # Zero, not the weakest candidate, maps to 0: the last match still matched a term.
    assert all(v > 0.0 for v in scale_to_best(scores).values())


def test_scaling_edges() -> None:
    assert scale_to_best({}) == {}
    assert scale_to_best({"a": 0.0, "b": -0.2}) == {"a": 0.0, "b": 0.0}
    assert scale_to_best({"a": 0.8, "b": 0.4, "c": -0.1}) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})


# -- convex fusion ---------------------------------------------------------------------


@given(st.dictionaries(ids, bm25), st.dictionaries(ids, cosine), weights, weights)
def test_convex_contributions_cover_every_candidate_and_stay_in_their_weight(
    keyword: dict[str, float], vector: dict[str, float], kw: float, vw: float
) -> None:
    parts = fuse_convex(keyword, vector, kw, vw)
    assert set(parts) == set(keyword) | set(vector)
    for item, share in parts.items():
        assert 0.0 <= share["keyword"] <= kw + 1e-12 and 0.0 <= share["vector"] <= vw + 1e-12
        assert (share["keyword"] > 0) == (item in keyword and kw > 0)


@given(st.dictionaries(ids, bm25, min_size=1), st.dictionaries(ids, cosine, min_size=1), st.data())
def test_convex_score_is_monotone_in_each_leg(
    keyword: dict[str, float], vector: dict[str, float], data: st.DataObject
) -> None:
    item = data.draw(st.sampled_from(sorted(keyword)))
    before = sum(fuse_convex(keyword, vector, 0.5, 0.5)[item].values())
    raised = sum(fuse_convex({**keyword, item: keyword[item] * 2}, vector, 0.5, 0.5)[item].values())
    assert raised >= before - 1e-12
    target = data.draw(st.sampled_from(sorted(vector)))
    before = sum(fuse_convex(keyword, vector, 0.5, 0.5)[target].values())
    closer = sum(fuse_convex(keyword, {**vector, target: min(1.0, vector[target] + 0.3)}, 0.5, 0.5)[target].values())
    assert closer >= before - 1e-12


# -- rank() with each fusion ---------------------------------------------------------------


@pytest.mark.parametrize("fusion", FUSIONS)
def test_empty_legs_give_no_hits(fusion: str) -> None:
    assert _rank([], [], fusion=fusion) == []


@pytest.mark.parametrize("fusion", FUSIONS)
@given(
    st.lists(st.tuples(ids, bm25), unique_by=lambda t: t[0], max_size=8),
    st.lists(st.tuples(ids, cosine), unique_by=lambda t: t[0], max_size=8),
)
def test_explanation_adds_up(fusion: str, keyword: list[tuple[str, float]], vector: list[tuple[str, float]]) -> None:
    keyword.sort(key=lambda t: -t[1])
    vector.sort(key=lambda t: -t[1])
    hits = _rank(keyword, vector, fusion=fusion)
    for hit in hits:
        ex = hit.explanation
        assert set(ex.contributions) == {"keyword", "vector"}
        assert sum(ex.contributions.values()) == pytest.approx(ex.fused)
        product = ex.fused
        for factor in ex.boosts.values():
            product *= factor
        assert ex.score == pytest.approx(product) == hit.score
        assert (ex.contributions["keyword"] > 0) == (ex.keyword_rank is not None)
        assert ex.to_dict()["contributions"] == ex.contributions
    scores = [(-h.score, h.memory.id) for h in hits]
    assert scores == sorted(scores)  # best first, ties by id


@pytest.mark.parametrize("fusion", FUSIONS)
@given(st.lists(ids, unique=True, min_size=2, max_size=8), st.data())
def test_rank_is_monotone_in_keyword_position(fusion: str, order: list[str], data: st.DataObject) -> None:
    keyword = [(i, float(len(order) - n)) for n, i in enumerate(order)]
    item = data.draw(st.sampled_from(order[1:]))
    before = {h.memory.id: h.score for h in _rank(keyword, [], fusion=fusion)}
    moved = [item, *[i for i in order if i != item]]
    promoted = [(i, float(len(moved) - n)) for n, i in enumerate(moved)]
    after = {h.memory.id: h.score for h in _rank(promoted, [], fusion=fusion)}
    assert after[item] >= before[item]
    assert max(after, key=lambda i: (after[i], i)) == item or after[item] == max(after.values())


@pytest.mark.parametrize("fusion", FUSIONS)
def test_identical_candidates_tie_and_sort_by_id(fusion: str) -> None:
    hits = _rank([("b", 2.0), ("a", 2.0)], [("a", 0.6), ("b", 0.6)], fusion=fusion)
    if fusion == "convex":
        assert hits[0].score == hits[1].score
    assert {h.memory.id for h in hits} == {"a", "b"}


def test_equal_weights_are_classic_rrf_with_explained_legs() -> None:
    hits = _rank(
        [("a", 3.0), ("b", 2.0)], [("b", 0.9), ("c", 0.8)], fusion="rrf", keyword_weight=1.0, vector_weight=1.0
    )
    by_id = {h.memory.id: h.explanation for h in hits}
    assert by_id["b"].contributions == pytest.approx({"keyword": 1 / 62, "vector": 1 / 61})
    assert by_id["b"].fused == pytest.approx(fuse_rrf([["a", "b"], ["b", "c"]])["b"])
    assert by_id["c"].contributions["keyword"] == 0.0


def test_convex_uses_the_cosine_of_keyword_only_candidates_above_the_floor() -> None:
    # "k" matched a term but was not among the vector neighbours; its cosine is known.
    vector = [("v1", 0.8), ("v2", 0.4)]
    hits = _rank([("k", 5.0), ("j", 4.0)], vector, sims={"k": 0.6, "j": 0.05}, vector_floor=0.15)
    ex = {h.memory.id: h.explanation for h in hits}
    assert ex["k"].contributions["vector"] == pytest.approx(0.5 * 0.6 / 0.8)
    assert ex["k"].contributions["keyword"] == pytest.approx(0.5) and ex["j"].contributions["keyword"] == 0.4
    assert ex["j"].contributions["vector"] == 0.0  # under the floor: not a vector match
    assert ex["k"].vector_rank is None and ex["k"].vector_similarity == 0.6


def test_vector_noise_floor_still_exempts_the_first_neighbours() -> None:
    vector = [(f"n{i}", 0.10 - i / 100) for i in range(5)]
    hits = _rank([], vector, vector_floor=0.15, floor_exempt=3)
    # Under the floor, beyond the first three, a neighbour adds nothing to the score but stays a candidate
    # (a filtered search over two records must return both: issue 28).
    assert [h.memory.id for h in hits] == ["n0", "n1", "n2", "n3", "n4"]
    assert [h.score > 0 for h in hits] == [True, True, True, False, False]


def test_weights_choose_the_leg_that_wins() -> None:
    keyword = [("kw", 9.0), ("vec", 1.0)]
    vector = [("vec", 0.9), ("kw", 0.3), ("z", 0.2)]
    lean_kw = _rank(keyword, vector, keyword_weight=0.8, vector_weight=0.2)
    lean_vec = _rank(keyword, vector, keyword_weight=0.2, vector_weight=0.8)
    assert lean_kw[0].memory.id == "kw" and lean_vec[0].memory.id == "vec"


# -- boosts on top of the fusion ------------------------------------------------------------


def test_importance_reorders_near_ties_but_does_not_lift_weak_matches() -> None:
    important = {"importance": 1.0}
    records = {
        "top": _memory("top", importance=0.5),
        "near": _memory("near", **important),  # type: ignore[arg-type]
        "weak": _memory("weak", **important),  # type: ignore[arg-type]
        "tail": _memory("tail"),
    }
    keyword = [("top", 10.0), ("near", 9.5), ("weak", 3.0)]
    vector = [("top", 0.70), ("near", 0.68), ("weak", 0.35), ("tail", 0.30)]
    order = [h.memory.id for h in _rank(keyword, vector, records=records)]
    assert order[:3] == ["near", "top", "weak"]


def test_recency_and_team_boosts_do_not_lift_a_far_weaker_match() -> None:
    records = {
        "strong": _memory("strong", scope="session", session_id="s", updated_at=NOW - timedelta(days=400)),
        "weak": _memory("weak", scope="team"),
        "tail": _memory("tail"),
    }
    keyword = [("strong", 10.0), ("weak", 2.0)]
    vector = [("strong", 0.75), ("weak", 0.35), ("tail", 0.25)]
    assert _rank(keyword, vector, records=records)[0].memory.id == "strong"


def test_project_boost_lifts_a_comparable_project_record() -> None:
    records = {
        "team": _memory("team", scope="session", session_id="s"),
        "proj": _memory("proj", scope="project", project_id="acme"),
    }
    keyword = [("team", 2.0), ("proj", 1.8)]
    vector = [("team", 0.6), ("proj", 0.55), ("x", 0.2)]
    records["x"] = _memory("x")
    assert _rank(keyword, vector, records=records)[0].memory.id == "team"
    boosted = _rank(keyword, vector, records=records, current_project="acme")
    assert boosted[0].memory.id == "proj" and boosted[0].explanation.boosts["project"] == 1.5


# -- settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"fusion": "linear"}, "unknown fusion"),
        ({"keyword_weight": -1.0}, "weights"),
        ({"keyword_weight": 0.0, "vector_weight": 0.0}, "weights"),
        ({"rrf_k": -1}, "rrf_k"),
    ],
)
def test_rank_settings_reject_bad_fusion_knobs(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RankSettings(**fields)  # type: ignore[arg-type]


def test_search_explains_a_bad_fusion_setting(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "f.db"), embedder=HashEmbedder(32), fusion="sum") as service:
        service.remember("the boiler is serviced in March")
        with pytest.raises(InvalidInput) as err:
            service.search("boiler")
        assert "fusion" in str(err.value) and "convex" in (err.value.hint or "")
