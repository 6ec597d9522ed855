"""`funes rm` from stdin, `funes clear` and `funes cleanup-log`, through click's CliRunner."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from funes.interfaces.cli import cleanup, main


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deterministic hash embedder: these tests are about the commands, not retrieval."""
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def as_json(*args: str, input: str | None = None) -> Any:
    result = run(*args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_rm_reads_ids_from_stdin_and_reports_each() -> None:
    ids = [as_json("add", text)["id"] for text in ("first", "second", "third")]
    result = run("rm", input=f"{ids[0]}\n{ids[1]}  \n\n")
    assert result.exit_code == 0 and result.stdout.splitlines() == [f"Forgot {ids[0]}.", f"Forgot {ids[1]}."]
    assert [m["id"] for m in as_json("list")["items"]] == [ids[2]]


def test_rm_from_stdin_is_all_or_nothing_unless_told_to_ignore_missing() -> None:
    kept = as_json("add", "still here")["id"]
    refused = run("rm", "-", input=f"{kept} mem_gone\n")
    assert refused.exit_code == 1 and "mem_gone" in refused.output and "--ignore-missing" in refused.output
    assert as_json("get", kept)["id"] == kept
    done = as_json("rm", "--ignore-missing", input=f"{kept}\nmem_gone\n")
    assert done == {"removed": [kept], "not_found": ["mem_gone"]}
    text = run("rm", "--ignore-missing", "mem_gone")
    assert text.exit_code == 0 and text.stdout.strip() == "Not found: mem_gone."


def test_rm_without_ids_or_stdin_is_a_usage_error() -> None:
    result = run("rm", input="")
    assert result.exit_code == 2 and "No ids on stdin" in result.output


def _fill() -> dict[str, str]:
    return {
        "team": as_json("add", "team-wide rule", "--scope", "team")["id"],
        "acme": as_json("add", "acme detail", "--project", "acme")["id"],
        "globex": as_json("add", "globex detail", "--project", "globex")["id"],
    }


def test_clear_without_yes_off_a_terminal_is_a_usage_error_with_a_hint() -> None:
    ids = _fill()
    result = run("clear", "--project", "acme")
    assert result.exit_code == 2 and "--yes" in result.output
    assert as_json("get", ids["acme"])["id"] == ids["acme"]
    both = run("clear", "--project", "acme", "--all", "--yes")
    assert both.exit_code == 2 and "exactly one" in both.output


def test_clear_asks_for_the_name_typed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _fill()
    monkeypatch.setattr(cleanup, "stdin_is_tty", lambda: True)
    wrong = run("clear", "--project", "acme", input="acm\n")
    assert wrong.exit_code == 1 and "nothing was removed" in wrong.output
    assert "1 records" in wrong.output  # the prompt said what would go
    assert as_json("get", ids["acme"])["id"] == ids["acme"]
    right = run("clear", "--project", "acme", input="acme\n")
    assert right.exit_code == 0 and "Removed 1 records" in right.output and "bytes" in right.output
    assert run("get", ids["acme"]).exit_code == 1
    everything = run("clear", "--all", input="all\n")
    assert everything.exit_code == 0 and "Removed 2 records" in everything.output
    assert as_json("list")["items"] == []


def test_clear_reports_and_logs_and_cleanup_log_shows_it() -> None:
    ids = _fill()
    preview = as_json("clear", "--project", "globex", "--dry-run")
    assert preview["records"] == 1 and preview["dry_run"] is True
    report = as_json("clear", "--project", "globex", "--yes")
    # VACUUM rebuilds every b-tree; when little was freed it may take one page more than before.
    assert report["records"] == 1 and report["vectors"] == 1 and report["bytes_before"] + 4096 >= report["bytes_after"]
    assert {m["id"] for m in as_json("list")["items"]} == {ids["team"], ids["acme"]}
    missing = run("clear", "--session", "no-such-session", "--yes")
    assert missing.exit_code == 1 and "Hint:" in missing.output
    (row,) = as_json("cleanup-log")
    assert row["scope"] == "project" and row["project_id"] == "globex" and row["records_deleted"] == 1
    text = run("cleanup-log")
    assert text.exit_code == 0 and "globex" in text.stdout and "records=1" in text.stdout


def test_chat_import_adds_a_conversation_from_a_file_or_stdin(tmp_path: Any) -> None:
    path = tmp_path / "talk.json"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "Book Lisbon"}, {"role": "assistant", "content": "Done"}]})
    )
    added = as_json("chat", "import", str(path), "--session", "trip")
    assert added["session"] == "trip" and [m["seq"] for m in added["messages"]] == [1, 2]
    lines = '{"role": "user", "content": "And a car?"}\n{"role": "assistant", "content": "Booked"}\n'
    text = run("chat", "import", "--session", "trip", input=lines)
    assert text.exit_code == 0 and "Added 2 messages (#3-#4)" in text.output
    assert [m["role"] for m in as_json("chat", "history", "trip")] == ["user", "assistant"] * 2
    bad = run("chat", "import", "--session", "trip", input='[{"role": "system", "content": "x"}]')
    assert bad.exit_code == 1 and "Message 0" in bad.output and "Hint:" in bad.output


def test_add_many_remembers_one_item_per_line() -> None:
    lines = 'Standup is at 9:30\n\n{"content": "Use EU vendors", "type": "decision"}\nStandup is at 9:30\n'
    results = as_json("add", "--many", "--project", "acme", input=lines)
    assert [r["status"] for r in results] == ["created", "created", "duplicate"]
    assert results[2]["id"] == results[0]["id"]
    decision = as_json("get", results[1]["id"])
    assert decision["memory_type"] == "decision" and decision["project_id"] == "acme"
    mixed = run("add", "--many", input='fine line\n{"content": "x", "type": "opinion"}\n')
    assert mixed.exit_code == 1 and "item 2: error: Invalid memory type" in mixed.output
    assert "item 1: created" in mixed.output
    atomic = run("add", "--many", "--atomic", input='another line\n{"content": "x", "importance": 9}\n')
    assert atomic.exit_code == 1 and "Item 1" in atomic.output
    assert "another line" not in json.dumps(as_json("list"))
    assert run("add", "--atomic", "text").exit_code == 2
