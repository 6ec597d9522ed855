"""The harness's context floor fitted with the model (bench/quality_floor.py): what each rule picks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from quality_floor import Judged, best_tradeoff, fitted_floors


def _judged(answers: list[float], off_tops: list[float], named_answers: list[float] = ()) -> Judged:
    """Each on-topic query: its answer first at that relevance, then a non-answer at 0.0001; named ones too."""
    on = [(["a", "b"], [p, 0.0001], {"a"}, False) for p in answers]
    on += [(["a", "b"], [p, 0.0001], {"a"}, True) for p in named_answers]
    off = [([p, p / 2], False) for p in off_tops]
    return Judged(on, off)


def test_recall_kept_and_off_topic_empty_at_a_floor() -> None:
    judged = _judged([0.01] * 9 + [0.002], [0.001] * 9 + [0.02])
    assert judged.at(0.0) == (1.0, 0.0)
    assert judged.at(0.002) == (1.0, 0.9)
    assert judged.at(0.003) == pytest.approx((0.9, 0.9))
    assert judged.at(0.03) == (0.0, 1.0)


def test_each_rule_picks_its_floor_on_every_training_set() -> None:
    a = _judged([0.01] * 9 + [0.002], [0.001] * 9 + [0.02])
    b = _judged([0.01] * 10, [0.004] * 10)
    floors = fitted_floors({"a": a, "b": b}, name_floor=0.1)
    # recall-first: a loses its 0.002 answer above 0.002; abstain-first: b needs more than 0.004 for 90% empty.
    assert floors == {"recall-first": 0.002, "abstain-first": 0.0041}


def test_the_unseen_name_floors_own_loss_does_not_count_against_recall_first() -> None:
    # One named query's answer (0.05) is under the unseen-name floor 0.1 whatever the context floor.
    judged = _judged([0.01] * 9, [0.001] * 10, named_answers=[0.05])
    assert judged.at(0.0, 0.1)[0] == pytest.approx(0.9)
    assert fitted_floors({"a": judged}, name_floor=0.1)["recall-first"] == 0.01
    assert fitted_floors({"a": judged}, name_floor=0.0)["recall-first"] == 0.01


def test_the_held_out_best_trade_off() -> None:
    judged = _judged([0.01] * 9 + [0.002], [0.001] * 9 + [0.02])
    best = best_tradeoff(judged, name_floor=0.0)
    assert best["empty_at_kept"] == 0.9  # floors up to 0.002 keep every answer and empty 9 of 10
    assert best["kept_at_empty"] == 1.0
    # An off-topic query above every floor tried is never empty: no floor reaches 90%.
    assert best_tradeoff(_judged([0.01], [0.5]), 0.0) == {"empty_at_kept": 0.0, "kept_at_empty": None}
