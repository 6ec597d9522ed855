"""Search by message role, and search grouped by conversation (issue 10, section 3)."""

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
from funes.memory.grouping import fetch_size
from funes.memory.ranking import query_terms
from funes.models import Caller, SearchFilters, SourceRef
from funes.providers.embed import HashEmbedder


@pytest.fixture
def mem(store_url: str) -> Iterator[funes.Funes]:
    """The hash embedder on each backend (the legs' filters, not ranking, are under test)."""
    service = funes.open(store_url, embedder=HashEmbedder(64))
    yield service
    service.close()


@pytest.fixture
def real(store_url: str, local_embedder: Any) -> Iterator[funes.Funes]:
    """The real model on each backend, with few candidates per leg so a cut after ranking would show."""
    service = funes.open(store_url, embedder=local_embedder, candidates=5)
    yield service
    service.close()


def _roles(hits: Any) -> list[str]:
    return [h.memory.source.locator["role"] for h in hits]


# -- roles ---------------------------------------------------------------------------------------
def test_the_role_filter_runs_inside_the_keyword_and_the_vector_leg(mem: funes.Funes) -> None:
    chat = mem.session("support")
    asked = chat.add_message("user", "Ticket ZX4411: the printer on floor two jams.")
    answered = chat.add_message("assistant", "Ticket ZX4411 is assigned to facilities.")
    # Not a chat message, though its locator says "role": a role filter never matches it.
    mem.remember("ZX4411 printer notes", source=SourceRef(type="chat", locator={"role": "user"}))
    store = mem.core.store
    users = SearchFilters(tenant=mem.core.tenant_of(None), roles=("user",))
    keyword = store.keyword_search(query_terms("ZX4411"), users, limit=10)
    assert [i for i, _ in keyword] == list(asked.record_ids)
    vector = mem.core.embedding.embed_query("ZX4411 printer")
    nearest = store.vector_search(vector, users, k=10)
    assert [i for i, _ in nearest] == list(asked.record_ids)
    assistants = SearchFilters(tenant=users.tenant, roles=("assistant",))
    assert [i for i, _ in store.vector_search(vector, assistants, k=10)] == list(answered.record_ids)
    both = mem.search("ZX4411", roles=["user", "assistant"], min_relevance=0)
    assert sorted(_roles(both)) == ["assistant", "user"]
    assert all(h.memory.kind == "message" for h in both)


@pytest.mark.parametrize("pg_exact_max", [4000, 0])
def test_role_filtered_vector_search_equals_brute_force_for_common_and_rare_roles(
    store_url: str, pg_exact_max: int
) -> None:
    # 300 messages: the 200 nearest without the role cannot be all of them, so SQLite's shortcut
    # (k of the 4k nearest pass the role) is taken for "user"; "tool" is rare and is scanned exactly.
    # PostgreSQL searches exactly, or (pg_exact_max 0) through HNSW with the role inside the scan.
    mem = funes.open(store_url, embedder=HashEmbedder(64), pg_exact_max=pg_exact_max)
    try:
        _compare_with_brute_force(mem)
    finally:
        mem.close()


def _compare_with_brute_force(mem: funes.Funes) -> None:
    words = "lisbon hotel kayak invoice printer garden tomato budget sushi ramen canoe boat".split()
    messages: list[dict[str, Any]] = []
    for n in range(300):
        text = " ".join(words[(n * 7 + j * 5) % len(words)] for j in range(6)) + f" note {n}"
        if n % 60 == 0:
            messages.append({"role": "tool", "content": text, "tool_call_id": f"call{n}"})
        else:
            messages.append({"role": "user" if n % 2 else "assistant", "content": text})
    mem.session("bulk").add_messages(messages)
    store, tenant = mem.core.store, mem.core.tenant_of(None)
    vector = mem.core.embedding.embed_query("kayak invoice near the boat")
    for role in ("user", "tool"):
        only = SearchFilters(tenant=tenant, roles=(role,))
        ids = [m.id for m in store.list(only, limit=1000).items]
        assert ids and all(m.source.locator["role"] == role for m in store.list(only, limit=1000).items)
        exact = {i: max(float(v @ vector) for v in vs) for i, vs in store.vectors_for(ids).items()}
        best = sorted(exact.values(), reverse=True)[:10]
        found = store.vector_search(vector, only, k=10)
        # The ten best similarities, each that of the record returned (ties may come in either order).
        assert [s for _, s in found] == pytest.approx(best, abs=1e-5)
        assert all(exact[i] == pytest.approx(s, abs=1e-5) for i, s in found)


def test_imported_chat_exports_match_the_role_filter_too(mem: funes.Funes) -> None:
    export = [
        {"role": "user", "content": "Where did we park the boat in Porto?"},
        {"role": "assistant", "content": "The boat is parked at the Porto marina, pier 4."},
    ]
    mem.ingest(json.dumps(export).encode(), name="chat.json")
    hits = mem.search("boat Porto", roles=["assistant"], min_relevance=0)
    assert [h.memory.content for h in hits] == ["The boat is parked at the Porto marina, pier 4."]


def test_an_invalid_role_names_the_allowed_ones(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput) as caught:
        mem.search("anything", roles=["bot"])
    assert "'bot'" in caught.value.message and "user, assistant, system, tool" in (caught.value.hint or "")
    with pytest.raises(funes.InvalidInput, match="list"):
        mem.search("anything", roles="user")  # type: ignore[arg-type]


def test_a_rare_user_message_is_found_however_many_assistant_messages_outrank_it(real: funes.Funes) -> None:
    chat = real.session("hotels")
    chat.add_messages(
        [
            {"role": "assistant", "content": f"Lisbon hotel option {n}: a Lisbon hotel near the station."}
            for n in range(20)
        ]
        + [{"role": "user", "content": "My sister lives in Lisbon."}]
    )
    user_ids = {h.memory.id for h in real.search("Lisbon hotel", roles=["user"], limit=1, min_relevance=0)}
    said = next(m for m in chat.history(limit=50) if m.role == "user")
    assert user_ids == set(said.record_ids)
    # Unfiltered, both legs' candidates are all assistant messages: a filter after ranking would find nothing.
    store, every = real.core.store, SearchFilters(tenant=real.core.tenant_of(None))
    keyword = {i for i, _ in store.keyword_search(query_terms("Lisbon hotel"), every, limit=5)}
    nearest = {i for i, _ in store.vector_search(real.core.embedding.embed_query("Lisbon hotel"), every, k=5)}
    assert not (keyword | nearest) & user_ids
    unfiltered = real.search("Lisbon hotel", limit=5, min_relevance=0)
    assert _roles(unfiltered) == ["assistant"] * 5


def test_a_vector_only_match_passes_the_role_filter(real: funes.Funes) -> None:
    chat = real.session("food")
    chat.add_message("user", "I adore eating sushi and ramen.")
    chat.add_message("assistant", "Noted: favourite Japanese cuisine recorded.")
    hits = real.search("favourite Japanese food", roles=["user"], min_relevance=0)
    assert [h.memory.content for h in hits] == ["I adore eating sushi and ramen."]
    assert hits[0].explanation.keyword_rank is None and hits[0].explanation.vector_rank == 1


def test_the_memory_search_tool_filters_by_role(mem: funes.Funes) -> None:
    chat = mem.session("plans")
    chat.add_message("user", "Remind me about the dentist on Friday.")
    chat.add_message("assistant", "Dentist reminder for Friday is set.")
    caller = Caller(tenant="default")
    result = mem.execute_tool("memory_search", {"query": "dentist Friday", "role": "assistant"}, caller=caller)
    assert not result.is_error, result.text
    assert [r["content"] for r in result.data["results"]] == ["Dentist reminder for Friday is set."]
    assert result.data["role"] == "assistant"
    bad = mem.execute_tool("memory_search", {"query": "dentist", "role": "bot"}, caller=caller)
    assert bad.is_error and "role" in bad.text


# -- grouping ------------------------------------------------------------------------------------
def test_group_by_session_lists_the_best_conversations_with_their_best_messages(real: funes.Funes) -> None:
    trip = real.session("trip", title="Lisbon trip")
    trip.add_messages(
        [
            {"role": "user", "content": "Book a hotel in Lisbon for the trip.", "at": "2024-05-01T09:00:00Z"},
            {"role": "assistant", "content": "I booked a Lisbon hotel near Rossio.", "at": "2024-05-01T09:01:00Z"},
            {"role": "user", "content": "Is the Lisbon hotel close to the tram?", "at": "2024-05-02T10:00:00Z"},
            {"role": "assistant", "content": "Yes, the Lisbon hotel is by tram 28.", "at": "2024-05-02T10:01:00Z"},
            {"role": "user", "content": "Great, the Lisbon hotel works for me.", "at": "2024-05-03T08:00:00Z"},
        ]
    )
    budget = real.session("budget")
    budget.add_messages(
        [
            {"role": "user", "content": "Hotels in Porto cost too much this year.", "at": "2024-06-01T09:00:00Z"},
            {"role": "assistant", "content": "Quarterly revenue grew by eight percent.", "at": "2024-06-01T09:01:00Z"},
        ]
    )
    garden = real.session("garden")
    garden.add_message("user", "The tomatoes need watering twice a week.", at="2024-07-01T09:00:00Z")
    note = real.remember("The Lisbon hotel booking reference is LX-220.")
    found = real.search("Lisbon hotel", group_by="session", limit=2, min_relevance=0)
    assert found.groups is not None
    assert [g.session_id for g in found.groups] == ["trip", "budget"]
    first, second = found.groups
    assert first.title == "Lisbon trip" and second.title is None
    assert len(first.hits) == 3 and len(second.hits) == 2  # a neighbour under the vector floor is still a candidate
    assert [h.relevance for h in first.hits] == sorted((h.relevance for h in first.hits), reverse=True)
    assert first.relevance == first.hits[0].relevance > second.relevance
    assert first.relevance == first.hits[0].relevance
    times = [h.memory.created_at for h in first.hits]
    assert (first.first_at, first.last_at) == (min(times), max(times))
    # The list is the groups' hits, flattened; a record that is not a session's message is left out.
    assert [h.memory.id for h in found] == [h.memory.id for g in found.groups for h in g.hits]
    assert note.id not in {h.memory.id for h in found}
    assert all(h.memory.kind == "message" for h in found)
    plain = real.search("Lisbon hotel", limit=2, min_relevance=0)
    assert plain.groups is None


def test_group_by_is_checked_and_fetches_a_bounded_number_of_hits(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput) as caught:
        mem.search("anything", group_by="topic")
    assert "session" in (caught.value.hint or "")
    assert fetch_size(None, 7) == 7
    assert fetch_size("session", 3) == 30
    assert fetch_size("session", 500) == 1000
    assert fetch_size("session", 1000) == 1000


def test_roles_and_grouping_combine(mem: funes.Funes) -> None:
    for sid in ("one", "two"):
        chat = mem.session(sid)
        chat.add_message("user", f"Invoice {sid} for the kayak rental.")
        chat.add_message("assistant", f"Kayak rental invoice {sid} is paid.")
    found = mem.search("kayak rental invoice", roles=["assistant"], group_by="session", min_relevance=0)
    assert found.groups is not None and {g.session_id for g in found.groups} == {"one", "two"}
    assert all(_roles(g.hits) == ["assistant"] for g in found.groups)


# -- shells --------------------------------------------------------------------------------------
def test_cli_role_and_group_by(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(main, ["--db", str(tmp_path / "cli.db"), *args])
        assert result.exit_code == 0, result.output
        return result

    run("chat", "add", "--session", "s1", "The canoe trip starts at dawn.")
    run("chat", "add", "--session", "s1", "--role", "assistant", "Canoe trip: pack a dry bag.")
    run("chat", "add", "--session", "s2", "Canoe paddles are in the shed.")
    hits = json.loads(run("search", "canoe", "--role", "assistant", "--json").stdout)
    assert [h["memory"]["source"]["locator"]["role"] for h in hits] == ["assistant"]
    both = json.loads(run("search", "canoe", "--role", "assistant", "--role", "user", "--json").stdout)
    assert len(both) == 3
    groups = json.loads(run("search", "canoe", "--group-by", "session", "--json").stdout)
    assert {g["session_id"] for g in groups} == {"s1", "s2"}
    assert all(g["hits"] and g["first_at"] and "relevance" in g for g in groups)
    text = run("search", "canoe", "--group-by", "session", "--limit", "1").output
    assert text.startswith("1. Session s") and "   1. [" in text and "2. Session" not in text
    bad = runner.invoke(main, ["--db", str(tmp_path / "cli.db"), "search", "canoe", "--role", "bot"])
    assert bad.exit_code == 2 and "user" in bad.output


def test_rest_role_and_group_by(tmp_path: Path) -> None:
    service = funes.open(str(tmp_path / "rest.db"), embedder=HashEmbedder(64))
    try:
        chat = service.session("s1", tenant="acme", title="Kickoff")
        chat.add_message("user", "The kickoff agenda has three items.")
        chat.add_message("assistant", "Kickoff agenda noted.")
        service.remember("Kickoff agenda template lives in the wiki.", tenant="acme")
        key = service.keys.create("acme", "read")[0]
        headers = {"Authorization": f"Bearer {key}"}
        with TestClient(create_app(service)) as client:
            url = "/v1/teams/acme/memories/search"
            only = client.get(url, params={"q": "kickoff agenda", "role": "user"}, headers=headers).json()
            assert [h["memory"]["content"] for h in only["hits"]] == ["The kickoff agenda has three items."]
            assert "groups" not in only
            grouped = client.get(url, params={"q": "kickoff agenda", "group_by": "session"}, headers=headers).json()
            assert [g["session_id"] for g in grouped["groups"]] == ["s1"]
            assert grouped["groups"][0]["title"] == "Kickoff" and len(grouped["groups"][0]["hits"]) == 2
            assert len(grouped["hits"]) == 2  # the wiki memory is not a session's message
            bad = client.get(url, params={"q": "kickoff", "role": "bot"}, headers=headers)
            assert bad.status_code == 400 and "assistant" in bad.json()["error"]["hint"]
            wrong = client.get(url, params={"q": "kickoff", "group_by": "topic"}, headers=headers)
            assert wrong.status_code == 400
    finally:
        service.close()
