"""A named query's answer raised by what its name does not explain (issue 28, ``name_excess``).

"How should I get in touch with Bruno?" is nearer "Bruno lives in Montreal."
than Bruno's contact preference: the name carries most of a short text's
cosine. ``name_excess`` (a record holding the name: its cosine minus its
cosine with the name alone, for a name held by at least 2% of the records;
the ``name_excess`` setting, on by default)
raises the record that says something about the question, with the query's
own vector (``name_free_query_weight`` 0), and judges a query naming no one,
or only someone no record holds, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_name_free_query import ANA, BRUNO, CONTACT

import funes
from funes.memory.query_names import names_text
from funes.memory.relevance import Signals, relevance, signal_judge, subject_names


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (CONTACT, "Bruno"),
        ("When should we celebrate Ana's birthday?", "Ana"),
        ("What is James' job?", "James"),
        ("What did Caroline and Melanie do in May?", "Caroline Melanie"),  # a month is not a name
        ("Which database did we pick for invoicing?", ""),
    ],
)
def test_the_names_text_is_the_querys_names_in_their_own_spelling(query: str, expected: str) -> None:
    assert names_text(query) == expected


def test_the_excess_raises_relevance_and_only_for_a_record_holding_the_name() -> None:
    plain = Signals(cosine=0.6, keyword=0.1, coverage=0.2)
    assert relevance(Signals(**{**plain.to_dict(), "name_excess": 0.2})) > relevance(plain)  # type: ignore[arg-type]
    judge = signal_judge(["bruno"], 100, {"bruno": 3}, has_vector=True, names={"bruno"}, name_cosines={"a": 0.4})
    holder = type("R", (), {"id": "a", "title": None, "content": "Bruno lives in Montreal."})()
    other = type("R", (), {"id": "a", "title": None, "content": "Ana lives in Lisbon."})()
    fused = type("F", (), {"id": "a", "keyword_score": 1.0, "vector_similarity": 0.7, "boosts": {}})()
    assert judge(fused, holder)[1][6] == pytest.approx(0.3)  # 0.7 - 0.4
    assert judge(fused, other)[1][6] == 0.0  # does not hold the name
    assert judge.bound(fused) >= judge(fused, holder)[0]
    # A name in under NAME_SHARE of the records (a gene in a few abstracts) is itself the evidence: no excess.
    rare = signal_judge(["bruno"], 100, {"bruno": 1}, has_vector=True, names={"bruno"}, name_cosines={"a": 0.4})
    assert rare(fused, holder)[1][6] == 0.0
    assert subject_names({"bruno", "ana"}, 100, {"bruno": 2, "ana": 1}) == {"bruno"}


@pytest.mark.slow
def test_a_persons_right_fact_beats_their_other_facts_with_the_querys_own_vector(
    tmp_path: Path, local_embedder: Any
) -> None:
    with funes.open(str(tmp_path / "people.db"), embedder=local_embedder, name_excess=False) as mem:
        mem.remember_many([{"content": text} for text in (*ANA, *BRUNO)])
        # Off (as before): "Bruno lives in Montreal." first (cosine 0.680 against 0.667), no excess anywhere.
        hits = mem.search(CONTACT, limit=3, min_relevance=0)
        assert hits[0].memory.content == "Bruno lives in Montreal."
        assert all(h.explanation.signals["name_excess"] == 0 for h in hits)
    with funes.open(str(tmp_path / "people.db"), embedder=local_embedder) as mem:  # on by default
        assert mem.config.name_excess and mem.config.name_free_query_weight == 0
        hits = mem.search(CONTACT, limit=3, min_relevance=0)
        assert hits[0].memory.content == BRUNO[2]
        assert hits[0].explanation.signals["name_excess"] > 0
        for question, answer in (
            ("Where does Ana like to sit?", ANA[0]),
            ("What diet does Bruno follow?", BRUNO[1]),
            ("Which city is Ana's home?", ANA[7]),
        ):
            assert mem.search(question, limit=1, min_relevance=0)[0].memory.content == answer, question
        # A query naming no one, or only someone no record holds, has no excess anywhere.
        for question in ("Who prefers to be contacted by email?", "How should I get in touch with Yusuf?"):
            assert all(h.explanation.signals["name_excess"] == 0 for h in mem.search(question, min_relevance=0))
