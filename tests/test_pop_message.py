"""Funes.pop_message: undoing the newest message of a session (the Agents SDK's pop_item)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import funes
from funes.errors import NotFound
from funes.providers.embed import HashEmbedder


@pytest.fixture
def mem(store_url: str) -> Iterator[funes.Funes]:
    """A service on each backend (SQLite, PostgreSQL)."""
    service = funes.open(store_url, embedder=HashEmbedder(64), worker="off")
    yield service
    service.close()


def test_pop_removes_the_newest_message_with_its_records_and_usage(mem: funes.Funes) -> None:
    session = mem.session("s1", user="ana")
    mem.add_message(session, "user", "The launch moved to Tuesday.")
    reply = mem.add_message(
        session, "assistant", "Noted: the launch is on Tuesday.", usage={"prompt_tokens": 10, "completion_tokens": 5}
    )
    assert reply.record_ids and mem.usage("s1")["calls"] == 1
    popped = mem.pop_message("s1")
    assert popped is not None and (popped.id, popped.content, popped.seq) == (reply.id, reply.content, 2)
    assert [m.content for m in mem.history("s1")] == ["The launch moved to Tuesday."]
    for record_id in reply.record_ids:
        with pytest.raises(NotFound):
            mem.get(record_id)
    assert mem.usage("s1")["calls"] == 0
    assert mem.session("s1").message_count == 1
    # The next message takes the freed place in the order.
    assert mem.add_message("s1", "assistant", "Tuesday it is.").seq == 2
    assert mem.pop_message("s1") is not None and mem.pop_message("s1") is not None
    assert mem.pop_message("s1") is None  # empty: nothing to pop
    assert mem.history("s1") == []


def test_pop_respects_tenants_and_users(mem: funes.Funes) -> None:
    mem.session("s2", tenant="acme", user="ana")
    mem.add_message("s2", "user", "hello", tenant="acme", user="ana")
    with pytest.raises(NotFound):
        mem.pop_message("s2")  # another tenant's session reads as missing
    with pytest.raises(NotFound):
        mem.pop_message("s2", tenant="acme", user="bob")
    assert mem.pop_message("s2", tenant="acme", user="ana") is not None
