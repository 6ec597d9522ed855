"""Date-aware search: a time the query names lifts records of that time (a boost, not a filter)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import funes
from funes.providers.embed import HashEmbedder

DINNER = "I had dinner with my mother at the little Italian place downtown."


def ids(hits: Iterable[funes.SearchHit]) -> list[str]:
    return [h.memory.id for h in hits]


OTHERS = (
    "The quarterly report is due on Friday and still needs the revenue chart.",
    "My bike has a flat tyre, I should buy a new inner tube.",
    "We are planning a hiking trip to the mountains with the kids.",
    "The new espresso machine makes great coffee but is loud.",
    "Remember to renew the passport before the summer holidays.",
)


def two_dinners(mem: funes.Funes, early: str, late: str) -> tuple[str, str]:
    """The same words said on two days, in two sessions: the record ids said on ``early`` and on ``late``.

    Other talk around them gives the keyword index real word statistics.
    """
    chat = mem.session("other")
    for n, text in enumerate(OTHERS):
        chat.add_message("user", text, at=f"2023-04-0{n + 1}T12:00:00Z")
    first = mem.session("spring").add_message("user", DINNER, at=early)
    second = mem.session("later").add_message("user", DINNER, at=late)
    return first.record_ids[0], second.record_ids[0]


@contextmanager
def real_pair(path: Path, local_embedder) -> Iterator[tuple[funes.Funes, funes.Funes]]:  # type: ignore[no-untyped-def]
    """The store opened with the default date boost and with ``date_boost=0``, after it was written."""
    with (
        funes.open(str(path), embedder=local_embedder) as on,
        funes.open(str(path), embedder=local_embedder, date_boost=0) as off,
    ):
        yield on, off


def test_a_named_date_ranks_the_record_of_that_date_first(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    with funes.open(str(tmp_path / "dates.db"), embedder=local_embedder) as writer:
        may3, may28 = two_dinners(writer, "2023-05-03T19:00:00Z", "2023-05-28T19:00:00Z")
    with real_pair(tmp_path / "dates.db", local_embedder) as (on, off):
        # ISO on purpose: a message's date is also indexed as words ("3 May 2023"), which the keyword leg
        # matches by itself; "2023-05-03" shares only "2023" with both, so the boost alone decides here.
        query = "Who did I have dinner with on 2023-05-03?"
        as_of = "2023-06-01T00:00:00Z"
        # Without the boost the store's own order stands: the same words, so the fresher record first.
        assert ids(off.search(query, as_of=as_of, min_relevance=0))[:2] == [may28, may3]
        hits = on.search(query, as_of=as_of, min_relevance=0)
        assert ids(hits)[:2] == [may3, may28]
        top = hits[0].explanation
        assert top.boosts["date"] == pytest.approx(1.0 + on.config.date_boost)
        assert hits[1].explanation.boosts["date"] < 1.01  # 25 days away: faded out
        assert [d["phrase"] for d in top.to_dict()["dates"]] == ["2023-05-03"]
        assert top.to_dict()["dates"][0]["start"].startswith("2023-05-03")
        # The boost never hides anything: both are still found.
        assert {may3, may28} <= set(ids(hits))


def test_relative_phrases_resolve_against_as_of(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    with funes.open(str(tmp_path / "dates.db"), embedder=local_embedder) as writer:
        may3, may16 = two_dinners(writer, "2023-05-03T19:00:00Z", "2023-05-16T19:00:00Z")
    with real_pair(tmp_path / "dates.db", local_embedder) as (on, off):
        query = "who did I have dinner with two weeks ago"
        assert ids(off.search(query, as_of="2023-05-17T09:00:00Z", min_relevance=0))[:2] == [may16, may3]
        # Two weeks before May 17 is May 3; asked on May 17 "yesterday" is May 16.
        assert ids(on.search(query, as_of="2023-05-17T09:00:00Z", min_relevance=0))[:2] == [may3, may16]
        yesterday = "who did I have dinner with yesterday"
        assert ids(on.search(yesterday, as_of="2023-05-17T09:00:00Z", min_relevance=0))[:2] == [may16, may3]
        # The same words a year later name another time: neither record is in it, so no date boost applies.
        later = on.search(query, as_of="2024-05-17T09:00:00Z", min_relevance=0)
        assert all(h.explanation.boosts["date"] < 1.01 for h in later)


def test_a_month_without_a_year_also_finds_that_month_of_an_earlier_year(real_mem: funes.Funes) -> None:
    june, august = two_dinners(real_mem, "2023-06-14T19:00:00Z", "2023-08-20T19:00:00Z")
    # Asked today (years later): "in June" is this year's June, but the store's June is 2023's.
    hits = real_mem.search("who did I have dinner with in June", min_relevance=0)
    assert ids(hits)[:2] == [june, august]
    assert hits[0].explanation.dates[0]["every_year"] is True


def test_a_query_naming_no_time_has_no_date_boost(real_mem: funes.Funes) -> None:
    two_dinners(real_mem, "2023-05-03T19:00:00Z", "2023-05-28T19:00:00Z")
    hits = real_mem.search("May I ask who I had dinner with?", min_relevance=0)
    assert hits and all("date" not in h.explanation.boosts and not h.explanation.dates for h in hits)


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    """The hash embedder on SQLite and PostgreSQL."""
    return backend_mem


def test_both_backends_boost_by_the_time_a_message_was_said(mem: funes.Funes) -> None:
    may3, may28 = two_dinners(mem, "2023-05-03T19:00:00Z", "2023-05-28T19:00:00Z")
    hits = mem.search("dinner mother italian on 2023-05-03", as_of="2023-06-01T00:00:00Z", min_relevance=0)
    assert ids(hits)[:2] == [may3, may28]
    assert hits[0].explanation.boosts["date"] > hits[1].explanation.boosts["date"]


def test_date_boost_zero_turns_it_off(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "off.db"), embedder=HashEmbedder(64), date_boost=0) as off:
        two_dinners(off, "2023-05-03T19:00:00Z", "2023-05-28T19:00:00Z")
        hits = off.search("dinner mother on 2023-05-03", as_of="2023-06-01T00:00:00Z", min_relevance=0)
        assert hits and all("date" not in h.explanation.boosts and not h.explanation.dates for h in hits)


def test_a_span_around_an_event_is_dated_by_the_memory_of_that_event(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    # "Two weeks before the trip": no date in the question; the memory of the trip dates it (Aug 11).
    with funes.open(str(tmp_path / "event.db"), embedder=local_embedder) as writer:
        two_dinners(writer, "2023-07-30T19:00:00Z", "2023-09-20T19:00:00Z")
        writer.session("trip").add_message(
            "user", "We just got back from our sailing trip around the Greek islands!", at="2023-08-11T10:00:00Z"
        )
        early, late = (
            writer.search(DINNER, as_of="2023-10-01T00:00:00Z", min_relevance=0)[n].memory.id for n in (1, 0)
        )
    with real_pair(tmp_path / "event.db", local_embedder) as (on, off):
        query = "Who did I have dinner with two weeks before the sailing trip?"
        as_of = "2023-10-01T00:00:00Z"

        def dinners(hits: funes.SearchResults) -> list[funes.SearchHit]:
            return [h for h in hits if h.memory.id in (early, late)]

        # Without the boost the same words rank the fresher dinner first; the trip's date turns them round.
        assert ids(dinners(off.search(query, as_of=as_of, min_relevance=0))) == [late, early]
        hits = dinners(on.search(query, as_of=as_of, min_relevance=0))
        assert ids(hits) == [early, late]
        window = hits[0].explanation.dates[0]
        assert window["phrase"] == "two weeks before the sailing trip (the sailing trip: 2023-08-11)"
        assert window["start"].startswith("2023-07-28") and window["end"].startswith("2023-08-12")
        assert hits[0].explanation.boosts["date"] == pytest.approx(1.0 + on.config.date_boost)
        # An event the memory does not hold dates nothing: no window, the store's own order.
        unknown = on.search("Who did I have dinner with two weeks before the quantum chromodynamics exam?", as_of=as_of)
        assert all(not h.explanation.dates for h in unknown)


def test_a_disabled_project_dates_no_event(real_mem: funes.Funes) -> None:
    two_dinners(real_mem, "2023-05-03T19:00:00Z", "2023-05-28T19:00:00Z")
    real_mem.remember("We booked the sailing trip around the Greek islands.", scope="project", project="acme")
    query = "Who did I have dinner with two weeks before the sailing trip?"
    dated = real_mem.search(query, min_relevance=0)
    assert dated and dated[0].explanation.dates[0]["phrase"].startswith("two weeks before the sailing trip (")
    # A disabled project recalls nothing, and that includes the date of its records.
    real_mem.configure_project("acme", {"enabled": False})
    assert all(not h.explanation.dates for h in real_mem.search(query, min_relevance=0))
