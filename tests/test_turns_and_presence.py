"""Hits that carry the conversation around them, merged windows in context, and terms the memory has never seen."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import funes
from funes.memory.neighbours import merge_windows
from funes.memory.relevance import named_terms
from funes.models import SearchFilters
from funes.models.messages import Recalled

STANDUP = [
    ("user", "What time is the standup tomorrow?"),
    ("assistant", "Standup is at nine in the small room."),
    ("user", "And when is the retro?"),
    ("assistant", "Fridays at four, after the demo."),
    ("user", "Thanks, see you there."),
]


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    return backend_mem


def _chat(mem: funes.Funes, session: str, start: datetime | None = None, **kw: object) -> funes.Session:
    s = mem.session(session, **kw)  # type: ignore[arg-type]
    for n, (role, text) in enumerate(STANDUP):
        s.add_message(role, text, at=None if start is None else start + timedelta(minutes=n))
    return s


def test_a_message_hit_carries_the_turns_before_and_after_it(mem: funes.Funes) -> None:
    _chat(mem, "s1")
    hit = next(h for h in mem.search("retro", min_relevance=0) if "retro" in h.memory.content)
    assert [(t.role, t.content) for t in hit.context] == [STANDUP[1], STANDUP[3]]
    assert hit.to_dict()["context"][0]["content"] == STANDUP[1][1]
    wide = next(h for h in mem.search("retro", min_relevance=0, context_turns=2) if "retro" in h.memory.content)
    assert [t.content for t in wide.context] == [text for _, text in STANDUP[:2] + STANDUP[3:]]
    alone = next(h for h in mem.search("retro", min_relevance=0, context_turns=0) if "retro" in h.memory.content)
    assert alone.context == ()
    with pytest.raises(funes.InvalidInput, match="context_turns"):
        mem.search("retro", context_turns=11)


def test_turns_after_the_as_of_time_are_not_shown(mem: funes.Funes) -> None:
    start = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    _chat(mem, "s1", start)
    as_of = start + timedelta(minutes=2, seconds=30)  # the retro question is the last message by then
    hit = next(h for h in mem.search("retro", min_relevance=0, as_of=as_of) if "retro" in h.memory.content)
    assert [t.content for t in hit.context] == [STANDUP[1][1]]


def test_records_that_are_not_messages_carry_no_turns(mem: funes.Funes) -> None:
    mem.remember("The retro moved to the big room")
    _chat(mem, "s1")
    note = next(h for h in mem.search("retro big room", min_relevance=0) if h.memory.kind != "message")
    assert note.context == ()


def test_term_presence_counts_only_records_the_search_may_see(mem: funes.Funes) -> None:
    mem.remember("Dinner with Rosalind on Friday", user="ana", scope="session", session="a1")
    mem.remember("Zebulon fixed the build", tenant="other")
    store = mem.store
    ana = SearchFilters(tenant="default", user_id="ana")
    bob = SearchFilters(tenant="default", user_id="bob")
    assert store.term_presence(["rosalind", "dinner", "zebulon"], ana) == {"rosalind", "dinner"}
    assert store.term_presence(["rosalind"], bob) == set()  # ana's private record does not count for bob
    assert store.term_presence(["超时"], bob) == {"超时"}  # CJK: never read as absent


def test_a_term_is_present_when_a_visible_record_holds_it_or_the_walk_reaches_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """term_presence against its definition, with the walk's cap at 3 matches: present when a record the filters
    admit holds the term, or when it has at least 3 matches (unknown is never absent). Which matches the walk
    sees first (oldest or newest) changes nothing: the visible ones are first, last, alone or none."""
    from funes.store import sqlite_keyword

    monkeypatch.setattr(sqlite_keyword, "PRESENCE_SCAN", 3)
    with funes.open(str(tmp_path / "p.db")) as mem:
        # Per term, the owners of its records, oldest first: "ana" is visible to ana, "bob" is not.
        owners = {
            "alder": ["ana"],
            "birch": ["bob"],
            "cedar": ["bob", "bob"],
            "dogwood": ["ana", "bob", "bob"],
            "elm": ["bob", "bob", "ana"],
            "fir": ["bob", "bob", "bob"],
            "gorse": ["bob", "ana"],
            "hazel": ["ana", "bob"],
        }
        for n in range(3):
            for term, who in owners.items():
                if n < len(who):
                    mem.remember(f"{term} grove note {n}", user=who[n], scope="session", session=f"{who[n]}{n}")
        ana = SearchFilters(tenant="default", user_id="ana")
        expected = {t for t, who in owners.items() if "ana" in who or len(who) >= 3}
        assert (
            mem.store.term_presence(list(owners), ana)
            == expected
            == {"alder", "dogwood", "elm", "fir", "gorse", "hazel"}
        )


def test_named_terms_are_capitalised_words_inside_a_sentence() -> None:
    assert named_terms("When did Melanie paint a sunrise? Where does Jon live.") == {"melanie", "jon"}
    assert named_terms("Melanie painted. What about the RFP for Acme?") == {"acme"}  # first words, acronyms: no


def _recalled(mem: funes.Funes, query: str) -> list[Recalled]:
    hits = mem.search(query, min_relevance=0, limit=20)
    return [Recalled(h.memory, None, "recalled", h.context) for h in hits if h.memory.kind == "message"]


def test_overlapping_windows_merge_into_one_stretch_of_conversation(mem: funes.Funes) -> None:
    _chat(mem, "s1")
    items = [i for i in _recalled(mem, "standup retro") if i.memory.content in (STANDUP[0][1], STANDUP[2][1])]
    assert len(items) == 2
    merged = merge_windows(items)
    assert len(merged) == 1
    body = merged[0].body()
    assert body.splitlines() == [f"{role}: {text}" for role, text in STANDUP[:4]]


def test_windows_of_other_sessions_are_not_merged(mem: funes.Funes) -> None:
    _chat(mem, "s1")
    _chat(mem, "s2")
    items = [i for i in _recalled(mem, "retro") if "retro" in i.memory.content]
    assert len(items) == 2 and len(merge_windows(items)) == 2


@pytest.mark.slow
def test_a_question_about_a_name_the_memory_never_saw_ranks_far_lower_and_injects_nothing(
    tmp_path: Path, local_embedder
) -> None:  # type: ignore[no-untyped-def]
    with funes.open(str(tmp_path / "m.db"), embedder=local_embedder) as real:
        s = real.session("trip")
        s.add_message("user", "Caroline: I went to a pottery class with my kids last weekend.")
        s.add_message("assistant", "Melanie: That sounds lovely! What did you make?")
        s.add_message("user", "Caroline: A bowl with a sunflower painted on it.")
        seen = real.search("What did Caroline make in the pottery class?")
        assert seen and not seen[0].weak
        # The unseen name lowers every hit's relevance far under the same question about Caroline, and holds
        # them to context_unseen_name_relevance: search returns them marked weak, automatic context injects none.
        unseen = real.search("What did Gina make in the pottery class?")
        assert unseen[0].explanation.signals is not None and unseen[0].explanation.signals["absent_name"] == 1.0
        assert unseen[0].relevance < 0.2 * seen[0].relevance
        assert unseen[0].relevance >= real.config.context_min_relevance  # the plain floor alone would inject it
        assert all(h.weak for h in unseen)
        assert list(real.search("What did Gina make in the pottery class?", min_relevance=0.1)) == []
        gina = real.session("gina").build_context("What did Gina make in the pottery class?")
        assert "pottery" not in gina.system and "sunflower" not in gina.system
        built = real.session("next").build_context("What did Caroline make in the pottery class?")
        assert "A bowl with a sunflower" in built.system  # recalled from the earlier session


def test_the_cli_and_the_tools_show_the_turns_around_a_message(mem: funes.Funes) -> None:
    from funes.interfaces.cli.common import hit_line

    _chat(mem, "s1")
    hit = next(h for h in mem.search("retro", min_relevance=0) if "retro" in h.memory.content)
    text = hit_line(1, hit)
    assert f"(before) assistant: {STANDUP[1][1]}" in text and f"(after) assistant: {STANDUP[3][1]}" in text
    result = mem.execute_tool("memory_search", {"query": "when is the retro"})
    assert "(before) assistant: <memory>Standup is at nine" in result.text


def test_grouped_hits_carry_their_turns_too(mem: funes.Funes) -> None:
    _chat(mem, "s1")
    _chat(mem, "s2")
    hits = mem.search("retro", min_relevance=0, group_by="session", limit=2)
    assert hits.groups and len(hits.groups) == 2
    for group in hits.groups:
        retro = next(h for h in group.hits if "retro" in h.memory.content)
        assert [t.content for t in retro.context] == [STANDUP[1][1], STANDUP[3][1]]
