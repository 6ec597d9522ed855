"""Facts from conversations (issue 12): learn() extracts, skips restatements, supersedes changes, never deletes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.curation.learn import statements
from funes.interfaces.cli import main
from funes.models.messages import Message
from funes.providers.embed import HashEmbedder


def test_statements_come_from_user_turns_only_and_skip_questions() -> None:
    found = statements(
        [
            Message("user", "Hi there! I prefer aisle seats on long flights. Which airline is cheapest?"),
            Message("assistant", "I prefer to recommend direct flights."),
            Message("user", "Actually, we decided to ship releases on Tuesdays. Also I moved to Berlin last month."),
            Message("user", "ok thanks"),
        ]
    )
    assert [(c.content, c.memory_type, c.frame) for c in found] == [
        ("I prefer aisle seats on long flights.", "preference", "preference"),
        ("We decided to ship releases on Tuesdays.", "decision", "decision"),
        ("I moved to Berlin last month.", "fact", "residence"),
    ]


def _say(mem: funes.Funes, sid: str, *lines: str) -> None:
    mem.session(sid)
    for line in lines:
        mem.add_message(sid, "user", line)
        mem.add_message(sid, "assistant", "Noted, thanks for telling me that.")


@pytest.mark.slow
def test_a_preference_changed_two_sessions_later_is_answered_with_the_new_value(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = funes.open(str(tmp_path / "l.db"), embedder=local_embedder, worker="off", user="ana")
    try:
        _say(mem, "s1", "I prefer window seats on flights.", "My manager is Priya.", "I live in Lyon.")
        first = mem.learn("s1")
        assert len(first["added"]) == 3 and first["updated"] == [] and first["skipped"] == []
        window = next(i["memory"] for i in first["added"] if "window" in i["statement"])
        lyon = next(i["memory"] for i in first["added"] if "Lyon" in i["statement"])
        _say(mem, "s2", "Can you book the train to Paris?", "I prefer window seats on flights.")
        second = mem.learn("s2")
        assert [i["memory"].id for i in second["skipped"]] == [window.id] and second["added"] == []
        assert mem.get(window.id).access_count >= 1  # a restatement counts as a use
        _say(mem, "s3", "Actually, I prefer aisle seats on flights now.", "I moved to Berlin in March.")
        third = mem.learn("s3")
        assert {i["memory"].id for i in third["updated"]} == {window.id, lyon.id}, third
        seat = mem.get(window.id)
        assert seat.content == "I prefer aisle seats on flights now." and seat.version == 2
        assert seat.previous_versions[0].content == "I prefer window seats on flights."
        home = mem.get(lyon.id)
        assert home.content == "I moved to Berlin in March." and home.previous_versions[0].content == "I live in Lyon."
        hits = mem.search("which seat do I prefer on a plane?", kinds=["memory"], limit=3)
        assert hits[0].memory.id == window.id and "aisle" in hits[0].memory.content
        assert not any("window" in h.memory.content for h in hits)  # never two silent truths (the chat keeps it)
        assert mem.get(lyon.id).metadata["learned_from"] == "s3"
        # Unrelated preferences are not replaced by each other.
        fourth = mem.learn([{"role": "user", "content": "I prefer dark mode in my code editor."}])
        assert len(fourth["added"]) == 1 and mem.get(window.id).content.startswith("I prefer aisle")
    finally:
        mem.close()


def test_another_users_memory_is_never_rewritten(tmp_path: Path) -> None:
    mem = funes.open(str(tmp_path / "l.db"), embedder=HashEmbedder(64), worker="off")
    try:
        mem.learn([{"role": "user", "content": "I live in Lyon with my cat."}], user="bob")
        result = mem.learn([{"role": "user", "content": "I live in Lyon with my cat."}], user="ana")
        assert len(result["added"]) == 1 and result["added"][0]["memory"].user_id == "ana"
        assert len(mem.list(user="bob").items) >= 1
    finally:
        mem.close()


def test_learn_rejects_what_is_not_messages(tmp_path: Path) -> None:
    mem = funes.open(str(tmp_path / "l.db"), embedder=HashEmbedder(64), worker="off")
    try:
        with pytest.raises(funes.InvalidInput, match="not a message"):
            mem.learn([{"role": "user"}])
        with pytest.raises(funes.InvalidInput, match="session or a list"):
            mem.learn({"role": "user", "content": "x"})  # type: ignore[arg-type]
        with pytest.raises(funes.NotFound):
            mem.learn("no-such-session")
    finally:
        mem.close()


def test_auto_learn_is_a_durable_job_over_the_new_messages(tmp_path: Path) -> None:
    db = str(tmp_path / "l.db")
    mem = funes.open(db, embedder=HashEmbedder(64), worker="off", auto_learn=True, insights_delay_seconds=0)
    try:
        mem.session("s")
        mem.add_message("s", "user", "We decided to deploy on Tuesdays from now on.")
        mem.add_message("s", "assistant", "Understood.")
        mem.add_message("s", "user", "I prefer short standups of ten minutes.")
        (job,) = mem.jobs.list(kind="learn")
        assert job.payload["after_seq"] == 0
    finally:
        mem.close()
    again = funes.open(db, embedder=HashEmbedder(64), worker="off")
    try:
        assert again.run_jobs(kinds=["learn"])["done"] == 1
        result = again.jobs.list(kind="learn")[0].result
        assert len(result["added"]) == 2
        contents = sorted(m.content for m in again.list(kinds=["memory"]).items)
        assert contents == ["I prefer short standups of ten minutes.", "We decided to deploy on Tuesdays from now on."]
    finally:
        again.close()


def test_cli_learn(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    messages = tmp_path / "m.json"
    stamp = datetime(2026, 5, 1, tzinfo=UTC).isoformat()
    messages.write_text(json.dumps([{"role": "user", "content": "Our main database is PostgreSQL 16.", "at": stamp}]))
    base = ["--db", db, "--embedder", "hash:64"]
    result = CliRunner().invoke(main, [*base, "learn", "--messages", str(messages), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [i["statement"] for i in data["added"]] == ["Our main database is PostgreSQL 16."]
    usage = CliRunner().invoke(main, [*base, "learn"])
    assert usage.exit_code == 2 and "SESSION" in usage.output
