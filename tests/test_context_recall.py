"""Multi-turn memory with the real embedding model: from history first, from recall once the budget drops the turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import funes

FACT = "By the way, my daughter Mira is allergic to peanuts, so keep that in mind for the offsite catering."
QUESTION = "Which food allergy should the caterer know about?"


def _conversation(session: funes.Session) -> None:
    session.add_message("user", FACT)
    session.add_message("assistant", "Understood: no peanuts for Mira. I'll flag it to the caterer.")
    session.add_message("user", "Let's hold the Q3 offsite in Lisbon, near the river, for about 40 people.")
    session.add_message("assistant", "Lisbon for 40 people works; I'll shortlist venues near the Tagus.")


@pytest.mark.slow
def test_turn_one_fact_answers_turn_three_from_history_then_from_recall(real_mem: funes.Funes) -> None:
    session = real_mem.session("offsite", project="events")
    _conversation(session)
    real_mem.remember("The office plants are watered on Mondays", type="fact", project="events")

    # Turn 3 with room for everything: the fact is in the history itself.
    roomy = session.build_context(QUESTION)
    assert FACT in [m.content for m in roomy.messages]
    assert not roomy.dropped_turns
    assert "<relevant_history>" not in roomy.system.rsplit("</memory_instructions>", 1)[1]
    assert "plants" not in roomy.system  # under the auto-retrieval threshold

    # Many turns later, the history budget forces turn 1 out: recall brings it back.
    for i in range(12):
        session.add_message("user", f"Venue option {i}: a hall with {50 + i} seats and a terrace; what do you think?")
        session.add_message("assistant", f"Option {i} looks fine; the terrace is a plus and the price is reasonable.")
    tight = session.build_context(QUESTION, budget={"conversation": 400})
    assert FACT not in [m.content for m in tight.messages]
    dropped = {d["id"] for d in tight.dropped_turns}
    first = real_mem.history(session, limit=1000)[0]
    assert first.id in dropped
    relevant = tight.system.rsplit("<relevant_history>", 1)[1].split("</relevant_history>")[0]
    assert "allergic to peanuts" in relevant
    assert "earlier turn(s) of this conversation were left out" in relevant
    recalled = {i["id"]: i for i in tight.sections["relevant_history"].included}
    item = recalled[first.record_ids[0]]
    assert item["relevance"] >= real_mem.config.context_min_relevance
    assert 'provenance="user-stated"' in relevant
    report = tight.report()
    assert report["conversation_tokens"] <= 400 and report["total_tokens"] <= report["prompt_limit"]


@pytest.mark.slow
def test_a_new_session_recalls_promoted_facts(real_mem: funes.Funes) -> None:
    first = real_mem.session("s1", project="events")
    message = first.add_message("user", FACT)
    real_mem.promote(list(message.record_ids))
    later = real_mem.session("s2", project="events").build_context(QUESTION)
    assert "allergic to peanuts" in later.system


FACTS = (
    "The team prefers vendors based in the United States.",
    "Invoices are paid on the 15th of every month.",
    "The data warehouse migrates to the new cluster in March.",
)


def _store_with_facts(path: str, embedder: object) -> None:
    with funes.open(path, embedder=embedder) as mem:
        for fact in FACTS:
            mem.remember(fact, type="fact")
        mem.session("s1").add_message("user", "Hello")


def _recalled(system: str) -> int:
    return sum(fact in system for fact in FACTS)


@pytest.mark.slow
def test_auto_min_similarity_is_honoured_by_the_library_cli_and_rest(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    """Set, the cosine floor of automatic context applies with the calibrated model in every shell."""
    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from funes.interfaces.cli import main
    from funes.interfaces.server import create_app

    db = str(tmp_path / "ctx.db")
    _store_with_facts(db, local_embedder)
    question = "Which vendors does the team prefer, and when are invoices paid?"
    with funes.open(db, embedder=local_embedder) as mem:
        assert _recalled(mem.build_context("s1", question).system) >= 1  # the default floor lets them in
    with funes.open(db, embedder=local_embedder, auto_min_similarity=0.95) as strict:
        assert _recalled(strict.build_context("s1", question).system) == 0

    runner = CliRunner()
    for value, expect_some in (("0.1", True), ("0.95", False)):
        out = runner.invoke(
            main, ["--db", db, "context", question, "--session", "s1", "--json"],
            env={"FUNES_AUTO_MIN_SIMILARITY": value},
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        assert (_recalled(json.loads(out.output)["request"]["system"]) > 0) is expect_some, value

    with funes.open(db, embedder=local_embedder, auto_min_similarity=0.95) as served:
        with TestClient(create_app(served, require_keys=False), base_url="http://127.0.0.1") as client:
            answer = client.post("/v1/teams/default/sessions/s1/context", json={"query": question})
            assert answer.status_code == 200, answer.text
            assert _recalled(answer.json()["system"]) == 0
