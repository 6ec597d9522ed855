"""The harness's study of ``name_excess`` (bench/quality_excess.py): which hits hold the name, and their excess."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from quality_excess import annotate, holds


def test_a_record_holds_a_name_the_query_is_asked_about() -> None:
    assert holds("How should I get in touch with Bruno?", "Bruno lives in Montreal.") == 1.0
    assert holds("When should we celebrate Bruno's birthday?", "Bruno's birthday is on May 21.") == 1.0
    assert holds("How should I get in touch with Bruno?", "Ana lives in Lisbon.") == 0.0
    assert holds("Which database did we pick?", "We picked PostgreSQL.") == 0.0  # names no one


def test_the_excess_is_the_cosine_over_the_names_cosine_for_holders_only() -> None:
    query = "How should I get in touch with Bruno?"
    signals = [
        {"cosine": 0.68, "name_cos": 0.72, "free": 0.24, "name_excess": 0.5},  # the name explains it all
        {"cosine": 0.667, "name_cos": 0.488, "free": 0.33},
        {"cosine": 0.4, "name_cos": 0.05, "free": 0.4},  # about someone else
    ]
    texts = ["Bruno lives in Montreal.", "Bruno prefers text messages.", "Ana prefers email."]
    sets = {"s": ([SimpleNamespace(query=query, signals=signals, texts=texts)], [])}
    annotate(sets)
    assert [s["excess"] for s in signals] == pytest.approx([0.0, 0.179, 0.0])
    assert [s["signed"] for s in signals] == pytest.approx([-0.04, 0.179, 0.0])
    assert "name_excess" not in signals[0]  # a run that ranked on it is compared with the features without it
