"""The harness's study of names turned down (bench/quality_names.py): pairing two runs' cosines, the staged fit."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import quality_lodo
from quality_names import FEATURES, compared, joint, judged, pair, paired, staged


def _hit(cosine: float, keyword: float = 0.0, coverage: float = 0.0) -> dict[str, float]:
    return {"cosine": cosine, "keyword": keyword, "coverage": coverage, "question": 0.0, "absent": 0.0}


def _query(query: str, units: list[str], cosines: list[float], relevant: set[str] | None = None) -> SimpleNamespace:
    return SimpleNamespace(query=query, units=units, signals=[_hit(c) for c in cosines], relevant=relevant or set())


def test_pairing_gives_each_hit_both_cosines_and_imputes_a_missing_one_by_the_querys_ratio() -> None:
    plain = {"s": ([_query("Where does Ana sit?", ["a", "b", "c"], [0.6, 0.5, 0.4])], [])}
    blend = {"s": ([_query("Where does Ana sit?", ["b", "a", "d"], [0.55, 0.3, 0.2])], [])}
    named = lambda q: "Ana" in q  # noqa: E731
    pair(blend, plain, "cw", "c0", named)
    hits = dict(zip(blend["s"][0][0].units, blend["s"][0][0].signals, strict=True))
    assert (hits["a"]["cw"], hits["a"]["c0"]) == (0.3, 0.6)
    assert (hits["b"]["cw"], hits["b"]["c0"]) == (0.55, 0.5)
    # "d" is not in the plain run's hits: plain / blend over a and b is 2.0 and 0.909..., their median 1.4545...
    assert hits["d"]["c0"] == pytest.approx(0.2 * (2.0 + 0.5 / 0.55) / 2)
    assert hits["d"]["named"] == 1.0


def test_a_query_that_names_no_one_has_one_cosine() -> None:
    plain = {"s": ([_query("Where is the seat?", ["a"], [0.6])], [])}
    blend = {"s": ([_query("Where is the seat?", ["z"], [0.2])], [])}
    pair(blend, plain, "cw", "c0", lambda q: False)
    signals = blend["s"][0][0].signals[0]
    assert (signals["cw"], signals["c0"], signals["named"]) == (0.2, 0.2, 0.0)


def test_pairing_refuses_dumps_of_other_queries() -> None:
    plain = {"s": ([_query("one", ["a"], [0.6])], [])}
    blend = {"s": ([_query("two", ["a"], [0.6])], [])}
    with pytest.raises(AssertionError):
        pair(blend, plain, "cw", "c0", lambda q: False)


def _sets(
    rng: np.random.Generator, queries: int = 60
) -> dict[str, tuple[list[SimpleNamespace], list[SimpleNamespace]]]:
    """Two sets of named and unnamed queries whose answer is the hit with the higher name-free cosine."""
    sets = {}
    for name in ("x", "y"):
        on = []
        for n in range(queries):
            named = n % 2 == 0
            c0 = rng.uniform(0.2, 0.8, 20)
            cw = c0 + (rng.normal(0.0, 0.05, 20) if named else 0.0)
            answer = int(np.argmax(cw + rng.normal(0.0, 0.02, 20)))
            r = _query(f"q{n}", [str(i) for i in range(20)], list(c0), {str(answer)})
            for s, a, b in zip(r.signals, cw, c0, strict=True):
                s.update(cw=float(a), c0=float(b), named=float(named))
            on.append(r)
        sets[name] = (on, [])
    return sets


def test_the_staged_fit_keeps_the_plain_models_relevance_for_a_query_that_names_no_one() -> None:
    sets = _sets(np.random.default_rng(7))
    feats = FEATURES["plain+shift"]
    plain = joint(FEATURES["plain"])(sets)
    both = staged(feats)(sets)
    assert both[1][-1] > 0  # the shift says which hit answers: a positive weight
    for r in sets["x"][0][:4]:
        for s in r.signals:
            with_shift = both[0] + float(np.dot(both[1], feats(s)))
            without = plain[0] + float(np.dot(plain[1], FEATURES["plain"](s)))
            if s["named"]:
                assert with_shift != pytest.approx(without)
            else:
                assert math.isclose(with_shift, without, rel_tol=0, abs_tol=1e-12)


def test_a_shift_ranks_named_queries_answers_first() -> None:
    sets = _sets(np.random.default_rng(11))
    feats = FEATURES["plain+shift"]
    model = staged(feats)(sets)
    named = [r for r in sets["y"][0] if r.signals[0]["named"]]
    first = [quality_lodo.rescored(r, model, feats)[0][0] in r.relevant for r in named]
    plain = joint(FEATURES["plain"])(sets)
    before = [quality_lodo.rescored(r, plain, FEATURES["plain"])[0][0] in r.relevant for r in named]
    assert sum(first) > sum(before)


def test_compared_counts_and_names_the_figures_that_drop() -> None:
    ref = {"a": {"R@1": 0.5, "kept": 0.9}, "b": {"R@1": 0.7, "kept": 1.0}}
    rows = {"a": {"R@1": 0.6, "kept": 0.8}, "b": {"R@1": 0.7, "kept": 1.0}}
    down, up, lower = compared(rows, ref)
    assert (down, up) == (1, 1)
    assert lower == ["a kept 0.900→0.800"]


def test_a_bootstrap_draws_the_training_sets_queries_and_keeps_the_held_out_set_whole() -> None:
    sets = _sets(np.random.default_rng(3))
    seen: list[dict[str, tuple[list[SimpleNamespace], list[SimpleNamespace]]]] = []

    def fitter(train: dict[str, tuple[list[SimpleNamespace], list[SimpleNamespace]]]) -> tuple[float, np.ndarray]:
        seen.append(train)
        return joint(FEATURES["plain"])(train)

    rows = judged(sets, FEATURES["plain"], fitter, np.random.default_rng(0))
    assert set(rows) == {"x", "y"} and [set(t) for t in seen] == [{"y"}, {"x"}]
    for train, name in zip(seen, ("y", "x"), strict=True):
        drawn = train[name][0]
        assert len(drawn) == len(sets[name][0])
        assert all(any(r is q for q in sets[name][0]) for r in drawn)
        assert len({id(r) for r in drawn}) < len(drawn)  # with replacement: some queries twice
    # Without a generator the fit sees the sets as they are.
    seen.clear()
    judged(sets, FEATURES["plain"], fitter)
    assert seen[0]["y"] is sets["y"]


def test_paired_bootstraps_draw_the_same_queries_for_both_models() -> None:
    sets = _sets(np.random.default_rng(5), queries=24)
    # The same model on the same runs: every draw's change is exactly 0 only if both fits saw the same queries.
    same = paired(sets, sets, (FEATURES["plain"], joint), draws=2)
    assert {v for row in same.values() for v in row.values()} == {(0.0, 0.0)}
    shifted = paired(sets, sets, (FEATURES["plain+shift"], staged), draws=2)
    assert shifted["x"]["R@1"][1] > 0  # the shift ranks the synthetic answers first more often
