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
