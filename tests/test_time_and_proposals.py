"""Time on every record, as-of reads, and human edits that stick (issue 25; issue 28: a bare as_of date).

A preference stated and changed twice is read as it was at three times; the
context names the superseded value; machine processes propose instead of
overwriting what a person wrote; bad input changes nothing.
"""

from __future__ import annotations

import copy
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.cli import main
from funes.memory.timeline import as_of_time, state_at
from funes.models import Caller, Memory, PreviousVersion, timed_versions
from funes.providers.embed import HashEmbedder
from funes.providers.llm import OfflineLLM

SEAT = "which seat do I prefer on a plane?"
MARCH = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 2, 15, 30, tzinfo=UTC)  # afternoon: as_of="2026-05-02" must still see it
JULY = datetime(2026, 7, 10, 11, 0, tzinfo=UTC)


def _said(mem: funes.Funes, sid: str, at: datetime, line: str) -> dict[str, Any]:
    mem.session(sid)
    mem.add_message(sid, "user", line, at=at)
    mem.add_message(sid, "assistant", "Noted, thanks for telling me that.", at=at + timedelta(seconds=5))
    return mem.learn(sid)


def _seat(mem: funes.Funes, **options: Any) -> list[Memory]:
    return [h.memory for h in mem.search(SEAT, kinds=["memory"], min_relevance=0, limit=5, **options)]


@pytest.mark.slow
def test_a_preference_changed_twice_is_read_as_it_was_at_three_times(store_url: str, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = funes.open(store_url, embedder=local_embedder, worker="off", user="ana")
    try:
        first = _said(mem, "s1", MARCH, "I prefer aisle seats on flights.")
        seat_id = first["added"][0]["memory"].id
        assert _said(mem, "s2", MAY, "Actually, I prefer window seats on flights now.")["updated"]
        assert _said(mem, "s3", JULY, "I prefer middle seats on flights now.")["updated"]
        current = mem.get(seat_id)
        assert current.version == 3 and "middle" in current.content
        assert current.valid_since == JULY and current.written_by == "llm"
        assert current.created_at == MARCH and current.recorded_at > JULY  # dated when said; stored now
        aisle, window = current.history
        assert (aisle.valid_from, aisle.valid_to) == (MARCH, MAY)
        assert (window.valid_from, window.valid_to) == (MAY, JULY)

        # Without as_of: the current state only; the old values never stand beside it.
        now = _seat(mem)
        assert now[0].id == seat_id and "middle" in now[0].content and now[0].valid_to is None
        assert not any("aisle" in m.content or "window" in m.content for m in now)
        # As of three times: the version valid then, marked with when it stopped being true.
        april = _seat(mem, as_of="2026-04-01")
        assert april[0].id == seat_id and "aisle" in april[0].content
        assert april[0].version == 1 and april[0].valid_to == MAY and april[0].superseded
        # A date alone is the whole day (issue 28): the change made that afternoon counts.
        may = _seat(mem, as_of="2026-05-02")
        assert "window" in may[0].content and may[0].valid_to == JULY
        assert "aisle" in _seat(mem, as_of="2026-05-02T08:00:00Z")[0].content
        august = _seat(mem, as_of="2026-08-01")
        assert "middle" in august[0].content and august[0].valid_to is None
        # Before it was said, it was not known.
        assert all(m.id != seat_id for m in _seat(mem, as_of="2026-02-01"))
        # include_superseded: the current state first, then each earlier one, newest first.
        every = [m for m in _seat(mem, include_superseded=True) if m.id == seat_id]
        assert [m.version for m in every] == [3, 2, 1]
        assert [m.superseded for m in every] == [False, True, True]
        assert [m.version for m in _seat(mem, as_of="2026-06-01", include_superseded=True) if m.id == seat_id] == [
            2,
            1,
        ]

        # The assembled context shows the current value and one line naming the superseded one.
        mem.session("s4")
        built = mem.build_context("s4", "Which seat do I prefer on flights?")
        system = built.system
        assert "I prefer middle seats on flights now." in system
        assert "previously: I prefer window seats on flights now., until 2026-07-10" in system
        # build_context passes as_of through: in April the aisle seat stood, with nothing before it.
        april_context = mem.build_context("s4", "Which seat do I prefer on flights?", as_of="2026-04-01").system
        assert "I prefer aisle seats on flights." in april_context and "middle" not in april_context
    finally:
        mem.close()


def test_as_of_in_the_future_or_not_a_date_is_refused_and_changes_nothing(mem: funes.Funes) -> None:
    record = mem.remember("The office moved to the fourth floor.")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    for bad in (tomorrow, "2999-01-01T00:00:00Z", "last tuesday"):
        with pytest.raises(InvalidInput) as err:
            mem.search("office floor", as_of=bad)
        assert "as_of" in err.value.message and err.value.hint
    assert mem.get(record.id).access_count == 0  # the refused searches touched nothing
    # Today's date is the end of today, capped at now: everything so far.
    assert mem.search("office floor", as_of=datetime.now(UTC).date().isoformat(), min_relevance=0)
    runner = CliRunner()
    out = runner.invoke(main, ["--db", mem.config.db_location, "search", "office", "--as-of", tomorrow])
    assert out.exit_code == 1 and "future" in out.output


def test_a_bare_date_means_the_end_of_that_day() -> None:
    now = datetime(2026, 11, 26, tzinfo=UTC)
    assert as_of_time("2026-05-02", now) == datetime(2026, 5, 2, 23, 59, 59, 999999, tzinfo=UTC)
    assert as_of_time("2026-05-02T08:00:00Z", now) == datetime(2026, 5, 2, 8, tzinfo=UTC)
    assert as_of_time("2026-11-26", now) == now  # today: up to now
    assert as_of_time(None, now) is None


def test_histories_written_before_validity_times_are_backfilled_from_their_timestamps() -> None:
    t1, t2, t3 = (datetime(2025, m, 1, tzinfo=UTC) for m in (1, 2, 3))
    old = (PreviousVersion(1, "a", "h1", 0.5, t1), PreviousVersion(2, "b", "h2", 0.5, t2))
    filled = timed_versions(old, t3)
    assert [(v.valid_from, v.valid_to) for v in filled] == [(t1, t2), (t2, t3)]
    record = Memory(id="m", content="c", previous_versions=old, valid_from=t3, created_at=t1)
    assert state_at(record, t1 + timedelta(days=3)).content == "a"  # type: ignore[union-attr]
    assert state_at(record, t2 + timedelta(days=3)).content == "b"  # type: ignore[union-attr]
    assert state_at(record, t3).content == "c"  # type: ignore[union-attr]
    # Round trip through the JSON form keeps the times.
    again = Memory.from_dict(json.loads(json.dumps(record.to_dict())))
    assert [(v.valid_from, v.valid_to) for v in again.history] == [(t1, t2), (t2, t3)]


def test_every_record_says_who_wrote_it(mem: funes.Funes, tmp_path: Path) -> None:
    assert mem.remember("I like tea.").written_by == "user"
    saved = mem.writeback.capture("Sure. <save_memory>The user likes green tea.</save_memory>")
    assert saved[0].memory is not None and saved[0].memory.written_by == "agent"
    assert saved[0].memory.attribution != "user-stated"
    sid = mem.session("s").id
    mem.add_message(sid, "user", "hello there")
    mem.add_message(sid, "assistant", "hi, how can I help?")
    roles = {m.content: m.written_by for m in mem.list(kinds=["message"]).items}
    assert roles == {"hello there": "user", "hi, how can I help?": "agent"}
    edited = mem.update(mem.remember("Draft note", source=funes.SourceRef(type="import")).id, content="Final note")
    assert edited.written_by == "user" and edited.history[0].author == "import"


# -- human edits are sovereign ---------------------------------------------------------------------
PAYLOAD: list[dict[str, Any]] = [
    {
        "type": "DATA_TABLE",
        "id": "Table1",
        "fields": {"name": "Table1", "columns": ["bar", "visited", "rating"], "bounds": "A1:C40"},
    }
]


@pytest.fixture
def backend(store_url: str) -> Any:
    service = funes.open(store_url, embedder=HashEmbedder(64), worker="off")
    service.entities.llm = OfflineLLM()
    yield service
    service.close()


def _forced(mem: funes.Funes, entities: list[dict[str, Any]]) -> dict[str, Any]:
    apply = mem.entities.plan("f1", entities, tenant="default", force=True)
    with mem.store.transaction():
        return apply()


def test_reconcile_after_a_hand_edit_keeps_the_edit_and_proposes_the_machine_text(backend: funes.Funes) -> None:
    mem = backend
    mem.reconcile("f1", PAYLOAD)
    summary = mem.list(kinds=["entity_summary"], project="f1").items[0]
    assert summary.written_by == "llm"
    hand = "Table1 lists ramen bar visits with a rating per visit."
    edited = mem.update(summary.id, content=hand, pinned=True)
    assert edited.written_by == "user" and edited.sovereign
    changed = copy.deepcopy(PAYLOAD)
    changed[0]["fields"]["columns"].append("price")
    counts = mem.reconcile("f1", changed)
    assert counts["proposed"] == 1 and counts["updated"] == 0
    now = mem.get(summary.id)
    assert now.content == hand and now.version == edited.version  # the edit stands
    assert now.proposal is not None and "price" in now.proposal["content"] and now.proposal["author"] == "llm"
    assert [m.id for m in mem.proposals()] == [summary.id]
    # A regenerate (a forced reconcile, as its job runs it) also only proposes.
    assert _forced(mem, changed).get("proposed") == 1
    assert mem.get(summary.id).content == hand
    # Dismiss: the proposal goes, and the same text is not proposed again.
    dismissed = mem.dismiss_proposal(summary.id)
    assert dismissed.proposal is None and dismissed.content == hand and mem.proposals() == []
    _forced(mem, changed)
    assert mem.get(summary.id).proposal is None
    # A new machine text is proposed again; accepting makes it the next version, the edit kept in history.
    changed[0]["fields"]["columns"].append("city")
    mem.reconcile("f1", changed)
    accepted = mem.accept_proposal(summary.id)
    assert "city" in accepted.content and accepted.version == edited.version + 1 and accepted.proposal is None
    assert accepted.history[-1].content == hand and accepted.history[-1].author == "user"
    assert accepted.written_by == "llm" and mem.proposals() == []


def test_regenerate_after_a_hand_edit_keeps_the_edit_and_proposes(tmp_path: Path) -> None:
    mem = funes.open(str(tmp_path / "g.db"), embedder=HashEmbedder(64), worker="off", generate_cooldown_seconds=0.1)
    try:
        mem.entities.llm = OfflineLLM()
        table = {"entity_type": "DATA_TABLE", "entity_id": "Table1", "content": "bar, visited, rating"}
        mem.generate("nb", [table], tenant="t")
        assert mem.run_jobs()["done"] == 1
        summary = mem.list(tenant="t", kinds=["entity_summary"]).items[0]
        hand = "Table1 lists ramen bar visits (checked by hand)."
        mem.update(summary.id, content=hand, tenant="t")
        time.sleep(0.2)
        job = mem.regenerate("nb", tenant="t")
        assert mem.run_jobs()["done"] == 1
        assert mem.jobs.get(job["job_id"]).result.get("proposed") == 1
        now = mem.get(summary.id, tenant="t")
        assert now.content == hand and now.proposal is not None and now.proposal["content"] == summary.content
        assert [m.id for m in mem.proposals(tenant="t")] == [summary.id]
    finally:
        mem.close()


@pytest.mark.slow
def test_learn_proposes_instead_of_rewriting_a_users_own_memory(real_mem: funes.Funes) -> None:
    mem = real_mem
    own = mem.remember("I prefer aisle seats on flights.", type="preference")
    result = mem.learn([{"role": "user", "content": "Actually, I prefer window seats on flights now."}])
    assert [p["memory"].id for p in result["proposed"]] == [own.id] and not result["updated"], result
    stands = mem.get(own.id)
    assert stands.content == own.content and stands.version == 1
    assert stands.proposal is not None and stands.proposal["content"] == "I prefer window seats on flights now."


def test_bad_proposal_input_is_a_clear_error_and_changes_nothing(mem: funes.Funes) -> None:
    record = mem.remember("Plain note")
    with pytest.raises(NotFound) as missing:
        mem.accept_proposal("mem_nope")
    assert missing.value.hint
    with pytest.raises(NotFound) as none:
        mem.dismiss_proposal(record.id)
    assert "no pending proposal" in none.value.message
    assert mem.get(record.id) == record


def test_proposals_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    with funes.open(db, embedder=HashEmbedder(64), worker="off") as mem:
        mem.entities.llm = OfflineLLM()
        mem.reconcile("f1", PAYLOAD)
        summary = mem.list(kinds=["entity_summary"], project="f1").items[0]
        mem.update(summary.id, content="By hand.")
        changed = copy.deepcopy(PAYLOAD)
        changed[0]["fields"]["columns"].append("price")
        mem.reconcile("f1", changed)
    runner = CliRunner()
    base = ["--db", db, "--embedder", "hash:64"]
    listed = runner.invoke(main, [*base, "proposals", "--json"])
    assert listed.exit_code == 0, listed.output
    items = json.loads(listed.output)
    assert [i["id"] for i in items] == [summary.id] and "price" in items[0]["proposal"]["content"]
    shown = runner.invoke(main, [*base, "proposals"])
    assert summary.id in shown.output and "By hand." in shown.output
    accepted = runner.invoke(main, [*base, "proposals", "accept", summary.id])
    assert accepted.exit_code == 0, accepted.output
    assert "price" in runner.invoke(main, [*base, "get", summary.id, "--json"]).output
    again = runner.invoke(main, [*base, "proposals", "dismiss", summary.id])
    assert again.exit_code == 1 and "no pending proposal" in again.output


def test_a_store_from_before_the_migration_is_backfilled(tmp_path: Path) -> None:
    """Migration 011 on a store written before it: times from the timestamps, authors from kind and source."""
    import sqlite3

    db = tmp_path / "old.db"
    with funes.open(str(db), embedder=HashEmbedder(64), worker="off") as mem:
        note = mem.remember("Standup at nine.")
        mem.update(note.id, content="Standup at ten.")
        edited = mem.update(note.id, content="Standup at half past ten.")
        imported = mem.remember("Legacy fact", source=funes.SourceRef(type="import"))
    # Take the store back to its pre-011 shape: no columns, histories without validity times.
    conn = sqlite3.connect(db)
    with conn:
        rows = json.loads(conn.execute("SELECT previous_versions FROM memories WHERE id = ?", (note.id,)).fetchone()[0])
        old = [{k: v[k] for k in ("version", "content", "content_hash", "importance", "updated_at")} for v in rows]
        conn.execute("UPDATE memories SET previous_versions = ? WHERE id = ?", (json.dumps(old), note.id))
        conn.execute("DROP INDEX memories_proposals")
        conn.execute("DROP INDEX memories_created")
        for column in ("valid_from", "author", "proposal"):
            conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        conn.execute("DELETE FROM migrations WHERE version = 11")
    conn.close()
    with funes.open(str(db), embedder=HashEmbedder(64), worker="off") as mem:
        now = mem.get(note.id)
        assert now.content == "Standup at half past ten." and now.written_by == "user"
        assert now.valid_since == edited.updated_at  # an edited record: valid from its last write
        first, second = now.history
        assert first.valid_from == first.updated_at and first.valid_to == second.updated_at
        assert second.valid_to == now.valid_since
        assert mem.get(imported.id).written_by == "import" and mem.get(imported.id).valid_since == imported.created_at
        then = state_at(now, second.updated_at)
        assert then is not None and then.content == "Standup at ten."


def test_cli_search_shows_superseded_states_and_history_their_validity(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    with funes.open(db, embedder=HashEmbedder(64), worker="off") as mem:
        note = mem.remember("The standup is at nine in room Ada.")
        mem.update(note.id, content="The standup is at ten in room Ada.")
    runner = CliRunner()
    base = ["--db", db, "--embedder", "hash:64"]
    out = runner.invoke(main, [*base, "search", "standup room Ada", "--include-superseded", "--min-relevance", "0"])
    assert out.exit_code == 0, out.output
    assert "at ten" in out.output and "(v1, superseded " in out.output and "at nine" in out.output
    hist = runner.invoke(main, [*base, "history", note.id])
    assert "by user" in hist.output and "valid " in hist.output
    got = json.loads(runner.invoke(main, [*base, "get", note.id, "--json"]).output)
    assert got["author"] == "user" and got["previous_versions"][0]["valid_to"] == got["valid_from"]


def test_the_keyword_scan_bound_keeps_records_dated_before_they_were_stored(mem: funes.Funes) -> None:
    """The as_of rowid bound is exact: history imported later (a higher rowid, an older date) is still found."""
    for n in range(30):
        mem.remember(f"zebra crossing note {n} written today")
    mem.session("old")
    mem.add_message("old", "user", "the zebra crossing on Elm street was repainted", at="2025-01-10T10:00:00Z")
    # as_of on the message's own day counts the whole day; until keeps its instant.
    for options in ({"as_of": "2025-06-01"}, {"until": "2025-06-01"}, {"as_of": "2025-01-10"}):
        hits = mem.search("zebra crossing", min_relevance=0, **options)
        assert [h.memory.content for h in hits] == ["the zebra crossing on Elm street was repainted"], options
    assert mem.search("zebra crossing", as_of="2025-01-09", min_relevance=0) == []


def test_rest_and_the_agent_tool_pass_as_of_and_proposals_through(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from funes.interfaces.server import create_app

    service = funes.open(str(tmp_path / "r.db"), embedder=HashEmbedder(64), worker="off")
    service.entities.llm = OfflineLLM()
    try:
        key = {"Authorization": f"Bearer {service.keys.create('acme', 'admin')[0]}"}
        with TestClient(create_app(service)) as client:
            made = client.post(
                "/v1/teams/acme/memories", json={"content": "Lunch is at noon in the atrium."}, headers=key
            ).json()
            client.patch(
                f"/v1/teams/acme/memories/{made['id']}", json={"content": "Lunch is at one in the atrium."}, headers=key
            )
            search = "/v1/teams/acme/memories/search"
            every = client.get(search, params={"q": "lunch atrium", "include_superseded": "true"}, headers=key).json()
            states = [(h["memory"]["version"], h["memory"]["superseded"]) for h in every["hits"]]
            assert states == [(2, False), (1, True)], every
            future = client.get(search, params={"q": "lunch", "as_of": "2999-01-01"}, headers=key)
            assert future.status_code == 400 and "future" in future.json()["error"]["message"]
            assert client.get("/v1/teams/acme/proposals", headers=key).json() == {"items": []}
            missing = client.post(f"/v1/teams/acme/memories/{made['id']}/proposal/accept", headers=key)
            assert missing.status_code == 404 and missing.json()["error"]["hint"]
            assert client.get(f"/v1/teams/acme/memories/{made['id']}", headers=key).json()["version"] == 2
            client.post("/v1/teams/acme/sessions/s1/messages", json={"role": "user", "content": "hi"}, headers=key)
            body = {"query": "when is lunch?", "as_of": made["created_at"]}
            built = client.post("/v1/teams/acme/sessions/s1/context", json=body, headers=key)
            assert built.status_code == 200 and "at one" not in built.json()["system"]
        tool = service.execute_tool(
            "search_memories", {"query": "lunch atrium", "include_superseded": True}, caller=Caller(tenant="acme")
        )
        assert "superseded" in tool.text and [r["version"] for r in tool.data["results"]] == [2, 1]
        refused = service.execute_tool(
            "search_memories", {"query": "lunch", "as_of": "2999-01-01"}, caller=Caller(tenant="acme")
        )
        assert refused.is_error and "future" in refused.text
    finally:
        service.close()


@pytest.mark.postgres
def test_a_postgres_store_from_before_the_migration_is_backfilled(pg_url: str) -> None:
    """PostgreSQL migration 008 on a store written before it: the same backfill as SQLite's 011."""
    import psycopg

    with funes.open(pg_url, embedder=HashEmbedder(64), worker="off") as mem:
        note = mem.remember("Standup at nine.")
        edited = mem.update(note.id, content="Standup at ten.")
        summary = mem.remember("Table orders", entity_type="DATA_TABLE", entity_id="orders", project="f1")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX memories_proposals")
        for column in ("valid_from", "author", "proposal"):
            conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        conn.execute("UPDATE memories SET kind = 'entity_summary' WHERE id = %s", (summary.id,))
        conn.execute("DELETE FROM migrations WHERE version = 8")
    with funes.open(pg_url, embedder=HashEmbedder(64), worker="off") as mem:
        now = mem.get(note.id)
        assert now.written_by == "user" and now.valid_since == edited.updated_at
        assert now.history[0].valid_to == now.valid_since
        assert mem.get(summary.id).written_by == "llm"
        assert mem.search("standup", as_of=now.valid_since - timedelta(microseconds=1), min_relevance=0)[
            0
        ].memory.content == ("Standup at nine.")
