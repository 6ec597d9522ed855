"""Bulk operations: remember_many, add_messages, forget_many and clear, on real SQLite with sqlite-vec."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.cli import main
from funes.providers.embed import HashEmbedder


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[funes.Funes]:
    service = funes.open(str(tmp_path / "bulk.db"), embedder=HashEmbedder(32), worker="off")
    yield service
    service.close()


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting its batches (to show a bulk call embeds once)."""

    def __init__(self) -> None:
        super().__init__(32)
        self.batches: list[int] = []

    def embed_batch(self, texts: Any, *, query: bool = False) -> Any:
        self.batches.append(len(texts))
        return super().embed_batch(texts, query=query)


# -- remember_many --------------------------------------------------------------------------
def test_remember_many_stores_each_item_with_one_embedding_call(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with funes.open(str(tmp_path / "b.db"), embedder=embedder, worker="off", embed_batch_size=1000) as mem:
        results = mem.remember_many(
            [
                "The office wifi password is on the fridge",
                {"content": "Prefer EU vendors", "type": "preference", "project": "acme"},
                {"content": "Ship mobile first", "type": "decision", "importance": 0.8, "title": "Roadmap"},
            ],
            topic="batch",
        )
        assert [r.status for r in results] == ["created", "created", "created"]
        assert embedder.batches == [3]  # one call for the whole batch
        stored = [mem.get(r.memory.id) for r in results if r.memory]
        assert [m.memory_type for m in stored] == ["fact", "preference", "decision"]
        assert stored[1].scope == "project" and stored[1].project_id == "acme"
        assert stored[2].importance == 0.8 and stored[2].title == "Roadmap"
        assert {m.topic for m in stored} == {"batch"}  # the defaults apply to every item
        assert [h.memory.id for h in mem.search("wifi fridge password", limit=1)] == [stored[0].id]
        assert mem.doctor() == []


def test_remember_many_dedupes_within_the_batch_and_against_the_store(mem: funes.Funes) -> None:
    old = mem.remember("Alice likes green tea")
    results = mem.remember_many(
        [
            "Alice likes green tea",
            "Bob likes coffee",
            "Bob likes coffee",
            {"content": "Bob likes coffee", "project": "x"},
        ]
    )
    assert [r.status for r in results] == ["duplicate", "created", "duplicate", "created"]
    assert results[0].memory is not None and results[0].memory.id == old.id
    assert results[1].memory is not None and results[2].memory is not None
    assert results[2].memory.id == results[1].memory.id  # the later copy points at the first
    assert results[3].memory is not None and results[3].memory.id != results[1].memory.id  # another scope
    assert len(mem.list().items) == 3
    # Run again: everything is a duplicate and nothing is written.
    assert [r.status for r in mem.remember_many(["Alice likes green tea", "Bob likes coffee"])] == ["duplicate"] * 2
    assert len(mem.list().items) == 3


def test_remember_many_renews_an_expired_duplicate_like_remember(mem: funes.Funes) -> None:
    old = mem.remember("The parking code is 4711", expires_at="2001-01-01")
    (result,) = mem.remember_many(["The parking code is 4711"])
    assert result.status == "created" and result.memory is not None
    assert result.memory.id == old.id and result.memory.expires_at is None
    assert len(mem.list(include_expired=True).items) == 1


def test_invalid_items_do_not_sink_the_valid_ones(mem: funes.Funes) -> None:
    results = mem.remember_many(
        ["fine", "   ", {"content": "bad type", "type": "opinion"}, {"text": "no content key"}, 42, "also fine"]
    )
    assert [r.status for r in results] == ["created", "error", "error", "error", "error", "created"]
    assert [r.index for r in results] == list(range(6))
    errors = [r.error for r in results if r.error is not None]
    assert all(e.hint for e in errors)  # each says what to do
    assert "opinion" in errors[1].message and "text" in errors[2].message
    assert results[1].to_dict() == {"index": 1, "status": "error", "error": errors[0].to_dict()}
    assert len(mem.list().items) == 2
    # Wrong types from a file are that item's error, never a crash of the batch.
    typed = mem.remember_many(
        [{"content": "a", "expires_at": 123}, {"content": "b", "pinned": "yes"}, {"content": "c", "tenant": 5}, "ok"]
    )
    assert [r.status for r in typed] == ["error", "error", "error", "created"]
    assert typed[1].error is not None and "pinned must be bool" in typed[1].error.message


def test_atomic_remember_many_stores_nothing_when_an_item_is_invalid(mem: funes.Funes) -> None:
    with pytest.raises(InvalidInput, match="Item 1"):
        mem.remember_many(["fine", {"content": "x", "importance": 7}], atomic=True)
    assert mem.list().items == ()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_remember_many_and_add_messages_accept_writes_while_the_embedder_is_down(tmp_path: Path) -> None:
    # A real OpenAI-compatible client pointed at a port nobody listens on: every call is refused.
    down = {
        "embedder": "openai",
        "embed_base_url": f"http://127.0.0.1:{_closed_port()}/v1",
        "embed_model": "nobody-home",
        "embed_dimensions": 16,
        "embed_timeout": 1.0,
    }
    with funes.open(str(tmp_path / "down.db"), worker="off", **down) as mem:
        results = mem.remember_many(["The cat sat on the mat", "The dog barks at night"])
        assert [r.status for r in results] == ["created", "created"]
        session = mem.session("s1")
        messages = session.add_messages([{"role": "user", "content": "Where is the wifi password?"}])
        assert [h.memory.id for h in mem.search("barks")] == [results[1].memory.id]  # type: ignore[union-attr]
        assert mem.search("wifi").degraded == "keyword-only"
        assert mem.store.pending_vectors() == 3
        jobs = mem.jobs.list()
        ids = sorted(i for job in jobs for i in job.payload["ids"])
        assert {job.kind for job in jobs} == {"vectors"}
        assert ids == sorted([*(r.memory.id for r in results if r.memory), *messages[0].record_ids])
        assert mem.doctor() == []  # nothing is lost: the missing vectors are owed by jobs


# -- add_messages ---------------------------------------------------------------------------
def test_add_messages_stores_a_conversation_in_one_call(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with funes.open(str(tmp_path / "c.db"), embedder=embedder, worker="off", embed_batch_size=1000) as mem:
        session = mem.session("trip", title="Trip planning")
        added = session.add_messages(
            [
                {"role": "user", "content": "Book a hotel in Lisbon", "at": "2026-01-03T10:00:00Z"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "hotels", "arguments": '{"city": "Lisbon"}'},
                        }
                    ],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 15, "model": "gpt-x"},
                },
                {"role": "tool", "content": "Hotel Avenida, 90 EUR", "tool_call_id": "call_1"},
                {"role": "assistant", "content": [{"type": "text", "text": "Hotel Avenida is free at 90 EUR."}]},
            ]
        )
        assert embedder.batches == [3]  # three messages with text, one embedding call
        assert [m.seq for m in added] == [1, 2, 3, 4]
        assert [m.role for m in session.history()] == ["user", "assistant", "tool", "assistant"]
        history = session.history()
        assert history[1].tool_calls[0].name == "hotels" and history[1].tool_calls[0].arguments == {"city": "Lisbon"}
        assert history[0].created_at is not None and history[0].created_at.isoformat().startswith("2026-01-03T10:00")
        assert session.usage()["totals"]["prompt_tokens"] == 120
        hit = mem.search("Avenida hotel price", session="trip", limit=1)[0]
        assert hit.memory.kind == "message" and hit.memory.source is not None
        assert hit.memory.source.locator["seq"] in (3, 4)


def test_add_messages_reads_anthropic_tool_use_and_tool_result_blocks(mem: funes.Funes) -> None:
    session = mem.session("a")
    session.add_messages(
        [
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3 C, snow"}]},
        ]
    )
    history = session.history()
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    assert history[1].content == "Let me check." and history[1].tool_calls[0].arguments == {"city": "Oslo"}
    assert history[2].tool_call_id == "toolu_1" and history[2].content == "-3 C, snow"


def test_add_messages_rejects_the_whole_conversation_when_one_message_is_invalid(mem: funes.Funes) -> None:
    """With atomic=True (the default stores the rest: see the next test)."""
    session = mem.session("bad")
    for messages, expected in [
        ([{"role": "user", "content": "hi"}, {"role": "system", "content": "be nice"}], "Message 1: Invalid role"),
        ([{"role": "user", "content": "hi"}, {"role": "tool", "content": "result"}], "Message 1: A tool message"),
        ([{"role": "user", "content": "hi", "colour": "red"}], "Message 0: Unknown message field"),
        ([{"role": "user", "content": "hi", "at": "yesterday"}], "Message 0: The message time"),
        ([], "no messages"),
        ("hello", "list of message objects"),
    ]:
        with pytest.raises(InvalidInput, match=expected) as info:
            session.add_messages(messages, atomic=True)  # type: ignore[arg-type]
        assert info.value.hint
    assert session.history() == [] and mem.list().items == ()


def test_add_messages_stores_the_valid_messages_and_reports_each_invalid_one(mem: funes.Funes) -> None:
    """One empty turn no longer sinks a 6-turn import: it is reported by index, as remember_many does."""
    session = mem.session("partial")
    added = session.add_messages(
        [
            {"role": "user", "content": "We ship the release on Friday."},
            {"role": "assistant", "content": "   "},
            {"role": "user", "content": "Then the retro is on Monday."},
            {"role": "system", "content": "be terse"},
            {"role": "assistant", "content": "Noted: release Friday, retro Monday."},
            {"role": "user", "content": "x" * 1_000_001},
        ]
    )
    assert [m.content[:20] for m in added] == ["We ship the release ", "Then the retro is on", "Noted: release Frida"]
    assert added.inputs == (0, 2, 4)  # how a stored message maps back to its turn
    assert [m.seq for m in added] == [1, 2, 3]  # no gap in seq; a skipped turn is mapped through inputs
    reasons = {s.index: s.error.message for s in added.skipped}
    assert set(reasons) == {1, 3, 5}
    assert reasons[1].startswith("Message 1: The message is empty")
    assert reasons[3].startswith("Message 3: Invalid role")
    assert reasons[5].startswith("Message 5: Content is") and "over the limit" in reasons[5]
    assert all(s.error.hint for s in added.skipped)
    assert [m.content for m in session.history()] == [m.content for m in added]
    data = added.to_dict()
    assert [m["input"] for m in data["messages"]] == [0, 2, 4] and [s["index"] for s in data["skipped"]] == [1, 3, 5]
    with pytest.raises(InvalidInput, match="None of the messages can be added; Message 0: The message is empty"):
        session.add_messages([{"role": "user", "content": ""}])


def test_chat_import_lists_skipped_turns_and_exits_1(tmp_path: Path) -> None:
    convo = tmp_path / "chat.json"
    convo.write_text(
        json.dumps([{"role": "user", "content": "Book the venue."}, {"role": "assistant", "content": ""}]),
        encoding="utf-8",
    )
    out = CliRunner().invoke(
        main, ["--db", str(tmp_path / "c.db"), "--embedder", "hash", "chat", "import", str(convo), "--session", "s"]
    )
    assert out.exit_code == 1, out.output
    assert "Added 1 messages (#1-#1) to session s." in out.output
    assert "Skipped message 1: The message is empty. (Pass the message text.)" in out.output


def test_add_message_is_add_messages_of_one(mem: funes.Funes) -> None:
    session = mem.session("one")
    first = session.add_message("user", "hello there")
    more = mem.add_messages("one", [{"role": "assistant", "content": "hi"}])
    assert [first.seq, more[0].seq] == [1, 2]
    with pytest.raises(InvalidInput, match="needs the id of the call"):
        session.add_message("tool", "result")


# -- forget_many ----------------------------------------------------------------------------
def test_forget_many_deletes_what_the_caller_sees_and_reports_the_rest(mem: funes.Funes) -> None:
    mine = [r.memory.id for r in mem.remember_many(["one", "two", "three"]) if r.memory]
    theirs = mem.remember("another tenant's secret", tenant="other")
    result = mem.forget_many([mine[0], mine[1], mine[0], "mem_missing", theirs.id])
    assert [m.id for m in result.deleted] == mine[:2]
    assert result.not_found == ("mem_missing", theirs.id)  # another tenant's record is never deleted
    assert result.to_dict() == {"deleted": mine[:2], "not_found": ["mem_missing", theirs.id]}
    assert mem.get(theirs.id, tenant="other").content == "another tenant's secret"
    assert [m.id for m in mem.list().items] == [mine[2]]
    assert mem.doctor() == []


def test_atomic_forget_many_deletes_nothing_when_an_id_is_missing(mem: funes.Funes) -> None:
    kept = mem.remember("keep me")
    with pytest.raises(NotFound, match="mem_missing") as info:
        mem.forget_many([kept.id, "mem_missing"], atomic=True)
    assert "--ignore-missing" in (info.value.hint or "")
    assert mem.get(kept.id).id == kept.id
    with pytest.raises(InvalidInput):
        mem.forget_many([])


# -- clear ----------------------------------------------------------------------------------
def _fill(mem: funes.Funes, tmp_path: Path) -> dict[str, str]:
    ids = {
        "team": mem.remember("Team rule: reviews on Fridays", scope="team").id,
        "acme": mem.remember("Acme wants invoices in EUR", project="acme", pinned=True).id,
        "other": mem.remember("Globex wants invoices in USD", project="globex").id,
    }
    session = mem.session("s-acme", project="acme")
    session.add_messages([{"role": "user", "content": "acme kickoff notes"}, {"role": "assistant", "content": "noted"}])
    mem.session("s-free").add_message("user", "a chat outside any project")
    note = tmp_path / "acme-notes.md"
    note.write_text("# Acme\n\nAcme's fiscal year starts in April.\n")
    ids["doc"] = mem.ingest(str(note), project="acme").document.id
    return ids


def test_clear_project_removes_its_records_sessions_and_documents_only(mem: funes.Funes, tmp_path: Path) -> None:
    ids = _fill(mem, tmp_path)
    preview = mem.clear(project="acme", dry_run=True)
    assert preview["dry_run"] is True and preview["records"] == 4  # pinned fact, 2 messages, 1 document chunk
    assert mem.get(ids["acme"]).id == ids["acme"]  # a dry run removes nothing
    report = mem.clear(project="acme")
    assert {k: report[k] for k in ("scope", "records", "messages", "sessions", "documents")} == {
        "scope": "project",
        "records": 4,
        "messages": 2,
        "sessions": 1,
        "documents": 1,
    }
    # VACUUM rebuilds every b-tree; when little was freed it may take one page more than before.
    assert report["vectors"] >= 4 and report["bytes_after"] <= report["bytes_before"] + 4096
    left = {m.id for m in mem.list().items}
    assert ids["team"] in left and ids["other"] in left and ids["acme"] not in left
    assert [s.id for s in mem.sessions()] == ["s-free"]
    assert mem.documents() == []
    assert mem.doctor() == []
    (row, *_) = mem.cleanup_log()
    assert row["scope"] == "project" and row["project_id"] == "acme"
    assert row["records_deleted"] == 4 and row["messages_deleted"] == 2
    assert "1 documents" in row["reason"] and row["bytes_reclaimed"] == max(
        0, report["bytes_before"] - report["bytes_after"]
    )


def test_clear_session_and_clear_all(mem: funes.Funes, tmp_path: Path) -> None:
    _fill(mem, tmp_path)
    outsider = mem.remember("another tenant keeps everything", tenant="other")
    report = mem.clear(session="s-free")
    assert (report["records"], report["messages"], report["sessions"]) == (1, 1, 1)
    everything = mem.clear(all=True)
    assert everything["scope"] == "all" and everything["records"] == 6 and everything["documents"] == 1
    assert mem.list().items == () and mem.sessions() == [] and mem.documents() == []
    assert mem.get(outsider.id, tenant="other").id == outsider.id
    assert [r["scope"] for r in mem.cleanup_log()] == ["all", "session"]
    assert mem.clear(all=True)["records"] == 0  # clearing an empty tenant is fine


def test_clear_needs_exactly_one_target_and_names_a_typo(mem: funes.Funes) -> None:
    for kwargs in ({}, {"session": "a", "project": "b"}, {"all": True, "project": "b"}):
        with pytest.raises(InvalidInput, match="exactly one"):
            mem.clear(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="project 'acme'") as info:
        mem.clear(project="acme")
    assert "sessions list" in (info.value.hint or "")
    assert mem.cleanup_log() == []


def test_clear_keeps_another_users_records(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "u.db"), embedder=HashEmbedder(32), worker="off") as mem:
        alice = mem.remember("alice's private note", project="acme", user="alice")
        bob = mem.remember("bob's private note", project="acme", user="bob")
        shared = mem.remember("a shared project note", project="acme")
        report = mem.clear(project="acme", user="alice")
        assert report["records"] == 2
        assert mem.get(bob.id, user="bob").id == bob.id
        for gone in (alice.id, shared.id):
            with pytest.raises(NotFound):
                mem.get(gone)


@pytest.mark.slow
def test_batched_vectors_match_one_by_one_with_the_real_model(tmp_path: Path, local_embedder: Any) -> None:
    # Batches are sorted by length and padded: the mask must keep each text's vector what it is alone.
    texts = [
        "Short note.",
        "The quarterly budget review moved to the second Monday of April because of the audit.",
        "Alice prefers vendors based in the EU with at least ninety percent energy efficiency ratings "
        "and a support contract that covers weekends and public holidays in every country we operate in.",
        "Ship the mobile app first.",
    ]
    with (
        funes.open(str(tmp_path / "one.db"), embedder=local_embedder, worker="off") as one,
        funes.open(str(tmp_path / "many.db"), embedder=local_embedder, worker="off") as many,
    ):
        singles = [one.remember(t) for t in texts]
        batch = [r.memory for r in many.remember_many(texts) if r.memory]
        alone = one.store.vectors_for([m.id for m in singles])
        together = many.store.vectors_for([m.id for m in batch])
        for a, b in zip(singles, batch, strict=True):
            assert np.allclose(alone[a.id][0], together[b.id][0], atol=1e-5)
        hits = many.search("which suppliers does Alice like?", limit=1)
        assert hits[0].memory.id == batch[2].id


@pytest.mark.parametrize("auto_vacuum", [0, 2])
def test_clear_gives_the_space_back(tmp_path: Path, auto_vacuum: int) -> None:
    import sqlite3

    path = tmp_path / f"space-{auto_vacuum}.db"
    with sqlite3.connect(path) as conn:  # a file made with incremental auto-vacuum (2), or the default (0)
        conn.execute(f"PRAGMA auto_vacuum = {auto_vacuum}")
        conn.execute("VACUUM")
    with funes.open(str(path), embedder=HashEmbedder(32), worker="off") as mem:
        mem.remember_many([f"record {i} " + "filler words to take some room " * 40 for i in range(300)], project="p")
        report = mem.clear(project="p")
        assert report["records"] == 300 and report["bytes_after"] < report["bytes_before"] // 2
        conn = mem.store.db.reader()
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == auto_vacuum
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0


def test_messages_for_a_session_cleared_meanwhile_are_refused_and_nothing_is_written(backend_mem: funes.Funes) -> None:
    """A caller holding a Session whose row was cleared since (another thread, process or request).

    Before, both stores failed on the messages' foreign key with a raw database error (an IntegrityError
    on SQLite, a ForeignKeyViolation on PostgreSQL) instead of saying what happened and what to do.
    """
    held = backend_mem.session("s-gone")
    backend_mem.add_message(held, "user", "first turn, before the clear")
    backend_mem.clear_session("s-gone")
    with pytest.raises(NotFound, match="it was deleted") as info:
        backend_mem.add_message(held, "user", "a turn for a session that is gone")
    assert "funes.session" in (info.value.hint or "")
    with pytest.raises(NotFound):
        backend_mem.add_messages(held, [{"role": "user", "content": "two"}, {"role": "assistant", "content": "turns"}])
    assert backend_mem.list().items == ()
    assert backend_mem.sessions() == []
    backend_mem.session("s-gone").add_message("user", "created again, it takes messages")
    assert [m.content for m in backend_mem.history("s-gone")] == ["created again, it takes messages"]
