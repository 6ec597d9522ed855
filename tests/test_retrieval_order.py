"""Retrieval you can read (issue 28): one order and one number, answers before questions, no hidden evidence.

With the real local model: results are ordered by the relevance they show on
every shell, a hit's relevance does not depend on ``limit`` or on the other
hits, month names are dates and not unseen names, ``limit`` says how many come
back (weak hits marked weak), and filtered searches return every match.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import funes
from funes.interfaces.cli import main
from funes.interfaces.server import create_app
from funes.memory.relevance import named_terms

ANA = ("Ana always books a window seat.", "Ana is vegetarian.", "Ana prefers to be contacted by email, never by phone.")
FILLER = [
    f"{topic} review number {n} went fine."
    for n in range(4)
    for topic in ("Budget", "Roadmap", "Hiring", "Security", "Vendor", "Design", "Release", "Support")
]


@pytest.fixture
def real(tmp_path: Path, local_embedder: Any) -> Iterator[funes.Funes]:
    service = funes.open(str(tmp_path / "order.db"), embedder=local_embedder)
    yield service
    service.close()


def _descending(values: list[float]) -> bool:
    return values == sorted(values, reverse=True)


def test_the_three_memory_store_puts_the_window_seat_first_with_the_highest_relevance(real: funes.Funes) -> None:
    for text in ANA:
        real.remember(text, type="preference")
    hits = real.search("Where does Ana like to sit?", min_relevance=0)
    assert hits[0].memory.content == ANA[0]
    assert all(hits[0].relevance >= h.relevance for h in hits)
    # The agent tool shows the model the same order with the same numbers.
    shown = real.execute_tool("search_memories", {"query": "Where does Ana like to sit?"})
    assert shown.data["results"][0]["content"] == ANA[0]
    assert _descending([r["relevance"] for r in shown.data["results"]])


def test_results_are_ordered_by_the_relevance_they_show_on_every_shell(real: funes.Funes, tmp_path: Path) -> None:
    for text in (*ANA, *FILLER):
        real.remember(text)
    team = real.config.tenant
    queries = ("Where does Ana like to sit?", "how did the vendor review go", "security", "what does Ana eat")
    for query in queries:
        hits = real.search(query, min_relevance=0, limit=20)
        assert len(hits) == 20
        assert _descending([h.relevance for h in hits]), query
    key = real.keys.create(team, "read")[0]
    with TestClient(create_app(real)) as client:
        for query in queries:
            body = client.get(
                f"/v1/teams/{team}/memories/search",
                params={"q": query, "limit": 15},
                headers={"Authorization": f"Bearer {key}"},
            ).json()
            assert len(body["hits"]) == 15
            assert _descending([h["relevance"] for h in body["hits"]]), query
    tool = real.execute_tool("memory_search", {"query": queries[1]})
    assert _descending([r["relevance"] for r in tool.data["results"]])
    real.close()
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "order.db"), "search", queries[1], "--json"])
    assert out.exit_code == 0, out.output
    shown = [h["relevance"] for h in json.loads(out.stdout)]
    assert len(shown) == 10 and _descending(shown)


def test_a_hits_relevance_does_not_depend_on_limit_or_on_the_other_hits(real: funes.Funes) -> None:
    for text in (*ANA, *FILLER):
        real.remember(text)
    query = "Which review went fine for the vendor?"
    few = real.search(query, limit=3, min_relevance=0)
    many = real.search(query, limit=40, min_relevance=0)
    by_id = {h.memory.id: h.relevance for h in many}
    assert [h.memory.id for h in few] == [h.memory.id for h in many[:3]]
    assert all(by_id[h.memory.id] == pytest.approx(h.relevance) for h in few)
    # A record's relevance is its own: adding unrelated records leaves it as it was.
    target = next(h for h in many if h.memory.content == FILLER[4])
    for n in range(20):
        real.remember(f"Gardening note {n}: water the tomatoes.")
    again = {h.memory.id: h.relevance for h in real.search(query, limit=60, min_relevance=0)}
    assert again[target.memory.id] == pytest.approx(target.relevance, abs=0.02)


def test_month_and_weekday_names_are_dates_not_unseen_names(real: funes.Funes) -> None:
    assert named_terms("What did Melanie paint in March, and on Friday?") == {"melanie"}
    assert named_terms("Did Ana go to the lake in May?") == {"ana"}
    real.session("s").add_message("user", "Melanie painted a sunset by the lake.", at="2023-03-10T10:00:00Z")
    hit = real.search("What did Melanie paint in March?", min_relevance=0, as_of="2023-06-01T00:00:00Z")[0]
    assert hit.explanation.signals is not None and hit.explanation.signals["absent_name"] == 0.0
    assert "sunset" in hit.memory.content and hit.relevance >= 0.1
    unseen = real.search("What did Zebulon paint in March?", min_relevance=0, as_of="2023-06-01T00:00:00Z")[0]
    assert unseen.explanation.signals is not None and unseen.explanation.signals["absent_name"] == 1.0


def test_limit_says_how_many_come_back_and_weak_hits_are_marked(real: funes.Funes) -> None:
    for text in (*ANA, *FILLER):
        real.remember(text)
    hits = real.search("Where does Ana like to sit?")  # the default floor
    assert len(hits) == 10
    assert hits[0].memory.content == ANA[0] and not hits[0].weak
    assert any(h.weak for h in hits)  # the budget reviews are returned, marked weak
    assert all(h.weak == (h.relevance < real.config.context_min_relevance) for h in hits)
    assert hits[0].to_dict()["weak"] is False and hits[-1].to_dict()["weak"] is True


def test_a_filtered_search_returns_every_match_the_vector_floor_would_have_hidden(real: funes.Funes) -> None:
    for text in FILLER:
        real.remember(text, type="fact")
    wanted = [
        real.remember("Prefers LED fixtures in every warehouse.", type="preference"),
        real.remember("Likes invoices split by cost centre.", type="preference"),
    ]
    hits = real.search("new RFP for the office", types=["preference"], min_relevance=0)
    assert {h.memory.id for h in hits} == {m.id for m in wanted}


def test_a_stored_question_does_not_outrank_the_turn_that_answers_it(real: funes.Funes) -> None:
    chat = real.session("audit")
    chat.add_messages(
        [
            {"role": "user", "content": "Which vendors are on probation after the audit?"},
            {"role": "assistant", "content": "Acme Corp and Globex are on probation until they fix their reports."},
            {"role": "user", "content": "Thanks, noted."},
        ]
    )
    for text in FILLER:
        real.remember(text)
    hits = real.search("Which vendors are on probation after the audit?", min_relevance=0, context_turns=0)
    contents = [h.memory.content for h in hits]
    answer = contents.index("Acme Corp and Globex are on probation until they fix their reports.")
    question = contents.index("Which vendors are on probation after the audit?")
    assert answer < question
    assert hits[answer].relevance >= hits[question].relevance


def test_group_by_session_returns_limit_groups_when_there_are_that_many(real: funes.Funes) -> None:
    for n in range(12):
        chat = real.session(f"s{n}", title=f"standup {n}")
        chat.add_message("user", f"Standup {n}: the deploy of service {n} is blocked on review.")
        chat.add_message("assistant", "Noted, I will ping the reviewers.")
    found = real.search("deploy blocked", group_by="session", limit=10)
    assert found.groups is not None and len(found.groups) == 10
    assert _descending([g.relevance for g in found.groups])


def test_an_uncalibrated_embedder_keeps_one_order_and_one_number(mem: funes.Funes) -> None:
    # The hash embedder's cosines are not what the relevance constants were fitted on: the fused score orders,
    # and the relevance shown never rises down the list.
    for text in (*ANA, *FILLER):
        mem.remember(text)
    for query in ("Where does Ana like to sit?", "vendor review", "budget"):
        hits = mem.search(query, min_relevance=0, limit=20)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert _descending([h.relevance for h in hits]), query


def test_rest_search_honours_min_similarity(real: funes.Funes) -> None:
    for text in (*ANA, *FILLER):
        real.remember(text)
    team = real.config.tenant
    key = real.keys.create(team, "read")[0]
    with TestClient(create_app(real)) as client:
        url = f"/v1/teams/{team}/memories/search"
        auth = {"Authorization": f"Bearer {key}"}
        loose = client.get(url, params={"q": "Where does Ana like to sit?"}, headers=auth).json()["hits"]
        strict = client.get(url, params={"q": "Where does Ana like to sit?", "min_similarity": 0.4}, headers=auth)
        hits = strict.json()["hits"]
        assert len(loose) == 10 and 0 < len(hits) < len(loose)
        assert hits[0]["memory"]["content"] == ANA[0]
        assert all(h["explanation"]["vector_similarity"] >= 0.4 or h["explanation"]["keyword_rank"] <= 3 for h in hits)
        bad = client.get(url, params={"q": "x", "min_similarity": 3}, headers=auth)
        assert bad.status_code == 400
