"""Calibrated relevance: the pure signal functions, and the floor through search, the CLI and the tools."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.interfaces.cli import main
from funes.memory.relevance import (
    Signals,
    context_floor,
    coverage,
    idf,
    keyword_signal,
    relevance,
)
from funes.store.words import fold_word


def test_idf_matches_fts5_and_never_goes_negative() -> None:
    assert idf(100, 1) == pytest.approx(math.log(99.5 / 1.5))
    assert idf(100, 90) == 1e-6  # a word in most rows: FTS5's floor
    assert idf(10, 50) > 0  # a stale total below the count is not a domain error


def test_keyword_signal_is_bm25_over_the_ceiling_of_the_query_terms() -> None:
    idfs = [2.0, 1.0]
    assert keyword_signal(None, idfs) == 0.0
    assert keyword_signal(2.2, idfs) == pytest.approx(2.2 / (2.2 * 3.0))
    assert keyword_signal(100.0, idfs) == 1.0  # clamped


def test_coverage_weights_rare_terms_and_folds_suffixes() -> None:
    weights = {"kafka": 5.0, "meeting": 1.0}
    assert coverage(["kafka", "meeting"], "Kafka lag alerts", weights) == pytest.approx(5 / 6)
    assert coverage(["kafka", "meeting"], "Two meetings today", weights) == pytest.approx(1 / 6)
    assert fold_word("meetings") == fold_word("meeting")
    assert coverage([], "anything", weights) == 0.0


def test_coverage_stems_as_the_keyword_index_does() -> None:
    """Every inflection the keyword index stems alike counts as the term, whichever form the query used."""
    office = "The office moves to the fourth floor of the Harbour building in June."
    assert coverage(["move"], office, {}) == 1.0  # "move" and "moves" (a suffix fold made "move" / "mov")
    assert coverage(["moving"], office, {}) == 1.0
    assert coverage(["study"], "Lena studied law in Lyon.", {}) == 1.0  # "studi"
    assert coverage(["happy"], "A happier team.", {}) == 0.0  # Porter keeps "happier" apart, as FTS5 does
    assert coverage(["cafe"], "Meet at the Café Noir.", {}) == 1.0  # diacritics go, as remove_diacritics does
    assert coverage(["after"], "Afterwards we left.", {}) == 0.0  # "after" is no prefix of a stem it is not


def test_coverage_finds_cjk_terms_inside_unspaced_text() -> None:
    assert coverage(["超时"], "数据库连接超时了", {}) == 1.0


def test_relevance_is_a_probability_that_grows_with_each_signal() -> None:
    low = Signals(cosine=0.1, keyword=0.0, coverage=0.0)
    high = Signals(cosine=0.8, keyword=0.5, coverage=1.0)
    assert 0.0 <= relevance(low) < relevance(high) <= 1.0
    for field in ("cosine", "coverage"):
        better = Signals(**{**low.to_dict(), field: 0.9})  # type: ignore[arg-type]
        assert relevance(better) > relevance(low), field
    # Keyword-only search (embedder down) has no cosine and still gets a probability.
    assert 0.0 < relevance(Signals(None, 0.5, 1.0, 0.0)) < 1.0


def test_a_query_naming_what_no_memory_mentions_needs_the_higher_context_floor() -> None:
    assert context_floor({"absent_name": 1.0}, 0.005, 0.1) == 0.1
    assert context_floor({"absent_name": 0.0}, 0.005, 0.1) == 0.005
    assert context_floor(None, 0.005, 0.1) == 0.005
    assert context_floor({"absent_name": 1.0}, 0.3, 0.1) == 0.3  # never lower than the plain floor


def test_every_hit_carries_relevance_in_its_explanation(mem: funes.Funes) -> None:
    mem.remember("The quarterly report is due on Friday")
    hit = mem.search("quarterly report", min_relevance=0)[0]
    assert hit.relevance == hit.explanation.relevance
    assert hit.to_dict()["relevance"] == hit.relevance
    assert set(hit.explanation.to_dict()["signals"]) == {
        "cosine",
        "keyword",
        "coverage",
        "question",
        "absent",
        "absent_name",
        "name_excess",
        "calibrated",
    }


def test_min_relevance_out_of_range_is_rejected(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput):
        mem.search("anything", min_relevance=1.5)


NOTES = [
    "The staging database password rotates every 90 days",
    "Maria prefers window seats on long flights",
    "Our team retro happens every second Thursday at 3pm",
    "The invoice for the March catering order is still unpaid",
]


@pytest.mark.slow
def test_off_topic_search_marks_every_hit_weak_and_on_topic_still_finds(real_mem: funes.Funes) -> None:
    for text in NOTES:
        real_mem.remember(text)
    floor = real_mem.config.context_min_relevance
    # Explicit search favours recall: weak hits come back marked weak; at the context floor nothing does.
    weak = real_mem.search("quantum chromodynamics lecture")
    assert len(weak) == len(NOTES) and all(h.weak and h.relevance < floor for h in weak)
    assert list(real_mem.search("quantum chromodynamics lecture", min_relevance=floor)) == []
    hits = real_mem.search("which seat does Maria like on planes")
    assert hits and hits[0].memory.content == NOTES[1] and not hits[0].weak
    assert hits[0].relevance > 0.1 > max(h.relevance for h in weak)


@pytest.mark.slow
def test_cli_search_with_nothing_relevant_exits_zero(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    for text in NOTES:
        assert runner.invoke(main, ["--db", db, "add", text]).exit_code == 0
    result = runner.invoke(main, ["--db", db, "search", "quantum chromodynamics lecture", "--min-relevance", "0.005"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "No relevant memories."
    weak = runner.invoke(main, ["--db", db, "search", "quantum chromodynamics lecture"])
    assert weak.exit_code == 0 and "(weak)" in weak.output
    found = runner.invoke(main, ["--db", db, "search", "when is the retro", "--json"])
    assert found.exit_code == 0
    assert json.loads(found.stdout)[0]["memory"]["content"] == NOTES[2]


@pytest.mark.slow
def test_tools_show_the_calibrated_relevance_and_mark_weak_matches(real_mem: funes.Funes) -> None:
    for text in NOTES:
        real_mem.execute_tool("create_memory", {"content": text, "memory_type": "fact"})
    result = real_mem.execute_tool("search_memories", {"query": "is the catering invoice paid"})
    top = result.data["results"][0]
    assert top["content"] == NOTES[3]
    hit = real_mem.search("is the catering invoice paid", kinds=["memory"], min_relevance=0)[0]
    assert f"Relevance: {round(hit.relevance * 100)}%" in result.text
    weak = real_mem.execute_tool("search_memories", {"query": "quantum chromodynamics lecture"})
    assert not weak.is_error and weak.data["count"] == len(NOTES)
    assert "(weak match)" in weak.text and all(r["weak"] for r in weak.data["results"])


@pytest.mark.slow
def test_the_message_being_answered_is_not_recalled_as_its_own_history(real_mem: funes.Funes) -> None:
    session = real_mem.session("s1")
    session.add_message("user", "My flight to Lisbon leaves on the 14th from gate B12")
    session.add_message("assistant", "Noted, Lisbon on the 14th.")
    question = "Which gate does my flight to Lisbon leave from, and is it still the 14th?"
    session.add_message("user", question)  # apps often store the message before building context
    built = session.build_context(question)
    recalled = built.sections["relevant_history"].included
    texts = [real_mem.get(str(i["id"])).content for i in recalled if "id" in i]
    assert question not in texts
