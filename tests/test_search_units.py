"""What one search hit is: a long message split into parts comes back once."""

from __future__ import annotations

import funes


def test_parts_of_one_long_message_collapse_into_one_hit(mem: funes.Funes) -> None:
    session = mem.session("long")
    text = " ".join(f"Paragraph {n}: the kubernetes cluster upgrade needs a maintenance window." for n in range(120))
    message = session.add_message("user", text)
    assert len(message.record_ids) > 1  # the message really was split
    session.add_message("assistant", "The kubernetes upgrade is scheduled for Sunday night.")
    hits = mem.search("kubernetes cluster upgrade", session="long", min_relevance=0)
    sources = [h.memory.source.locator["message_id"] for h in hits if h.memory.source]
    assert len(sources) == len(set(sources)) == 2
    assert message.id in sources


def test_search_still_fills_the_limit_after_collapsing(mem: funes.Funes) -> None:
    session = mem.session("many")
    text = " ".join(f"Note {n}: the espresso machine descaling schedule." for n in range(150))
    session.add_message("user", text)
    for n in range(6):
        session.add_message("assistant", f"Espresso machine descaling tip {n}: monthly.")
    hits = mem.search("espresso machine descaling", session="many", limit=5, min_relevance=0)
    assert len(hits) == 5
    sources = [h.memory.source.locator["message_id"] for h in hits if h.memory.source]
    assert len(set(sources)) == 5


def test_as_of_searches_as_of_that_time(mem: funes.Funes) -> None:
    session = mem.session("history")
    early = session.add_message("user", "We picked Lisbon for the team offsite", at="2023-01-10T10:00:00Z")
    late = session.add_message("user", "We moved the team offsite to Porto", at="2023-06-10T10:00:00Z")
    then = mem.search("team offsite", as_of="2023-02-01T00:00:00Z", min_relevance=0)
    assert [h.memory.id for h in then] == list(early.record_ids)
    now = mem.search("team offsite", min_relevance=0)
    assert {h.memory.id for h in now} == {*early.record_ids, *late.record_ids}
    # Recency is measured from as_of: just after the second message, it is the fresher one.
    after = mem.search("team offsite", as_of="2023-06-11T00:00:00Z", min_relevance=0)
    boosts = {h.memory.id: h.explanation.boosts["recency"] for h in after}
    assert boosts[late.record_ids[0]] > boosts[early.record_ids[0]] > 1.0
