"""The `funes` command through click's CliRunner (and a real process for start-up cost)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from funes.interfaces.cli import main, run


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI tests use the deterministic hash embedder (the real model is tested elsewhere)."""
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")


def cli(*args: str, input: str | None = None) -> Result:
    """Run the CLI in-process."""
    return CliRunner().invoke(main, list(args), input=input)


def ok(*args: str, input: str | None = None) -> Result:
    """Run the CLI and require exit code 0."""
    result = cli(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def data(*args: str, input: str | None = None) -> Any:
    """Run the CLI with --json and parse stdout."""
    return json.loads(ok(*args, "--json", input=input).stdout)


def test_add_search_get_list_round_trip() -> None:
    added = data("add", "I prefer US-based vendors", "--type", "preference", "--importance", "0.9", "--project", "acme")
    assert (added["memory_type"], added["importance"], added["scope"], added["project_id"]) == (
        "preference",
        0.9,
        "project",
        "acme",
    )
    hits = data("search", "which vendors?", "--limit", "5", "--project", "acme")
    assert hits[0]["memory"]["id"] == added["id"] and hits[0]["explanation"]["boosts"]["project"] == 1.5
    assert hits[0]["attribution"] == "user-stated"
    assert data("get", added["id"])["content"] == "I prefer US-based vendors"
    listed = data("list", "--type", "preference")
    assert [m["id"] for m in listed["items"]] == [added["id"]] and listed["next_cursor"] is None
    text = ok("search", "vendors", "--explain").output
    assert "I prefer US-based vendors" in text and "keyword_rank" in text
    assert added["id"] in ok("get", added["id"]).output


def test_add_every_option() -> None:
    added = data(
        "add",
        "Ship the beta",
        "--type",
        "decision",
        "--scope",
        "session",
        "--session",
        "s1",
        "--title",
        "Beta",
        "--topic",
        "launch",
        "--pin",
        "--expires",
        "2999-01-01",
        "--ref",
        "ticket:T-1",
        "--meta",
        "k=v",
    )
    assert added["scope"] == "session" and added["session_id"] == "s1" and added["pinned"] is True
    assert added["references"] == [{"type": "ticket", "id": "T-1"}] and added["metadata"] == {"k": "v"}
    assert added["expires_at"].startswith("2999-01-01")


def test_stdin_is_read_when_piped() -> None:
    added = data("add", "--type", "fact", input="piped memory text\n")
    assert added["content"] == "piped memory text"
    hits = data("search", input="piped memory")
    assert hits[0]["memory"]["id"] == added["id"]
    edited = data("edit", added["id"], "-", input="new piped text")
    assert edited["content"] == "new piped text" and edited["version"] == 2


def test_list_pagination_and_filters() -> None:
    ids = [data("add", f"note number {n}")["id"] for n in range(5)]
    first = data("list", "-n", "2")
    assert len(first["items"]) == 2 and first["next_cursor"]
    rest = data("list", "-n", "10", "--cursor", first["next_cursor"])
    assert sorted([m["id"] for m in first["items"] + rest["items"]]) == sorted(ids)
    assert "funes list --cursor" in ok("list", "-n", "2").output
    data("pin", ids[0])
    assert [m["id"] for m in data("list", "--pinned")["items"]] == [ids[0]]
    assert ok("list", "--type", "decision").output.strip() == "No memories."


def test_edit_pin_unpin_rm() -> None:
    memory_id = data("add", "draft wording")["id"]
    edited = data("edit", memory_id, "final wording", "--importance", "0.3", "--title", "T")
    assert (edited["content"], edited["version"], edited["importance"], edited["title"]) == (
        "final wording",
        2,
        0.3,
        "T",
    )
    assert edited["previous_versions"][0]["content"] == "draft wording"
    assert data("edit", memory_id, "--expires", "2999-01-01")["expires_at"].startswith("2999")
    assert data("edit", memory_id, "--expires", "never")["expires_at"] is None
    assert data("pin", memory_id)["pinned"] is True
    assert "Unpinned" in ok("unpin", memory_id).output
    assert data("rm", memory_id) == {"removed": [memory_id]}
    result = cli("get", memory_id)
    assert result.exit_code == 1 and "Hint:" in result.output


def test_rm_of_several_ids_is_all_or_nothing() -> None:
    memory_id = data("add", "keep unless all ids exist")["id"]
    result = cli("rm", memory_id, "mem_missing")
    assert result.exit_code == 1 and "mem_missing" in result.output
    assert data("get", memory_id)["id"] == memory_id


def test_stats_doctor_reindex() -> None:
    data("add", "one", "--type", "preference")
    stats = data("stats")
    assert stats["records"] == 1 and stats["by_type"] == {"preference": 1}
    assert "records:    1" in ok("stats").output
    assert data("doctor")["ok"] is True and "healthy" in ok("doctor").output
    assert data("reindex") == {"reindexed": 1}


def test_embedder_mismatch_names_reindex_and_reindex_fixes_it(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    data("--db", db, "add", "made with 64 dims")
    result = cli("--db", db, "--embedder", "hash:32", "search", "dims")
    assert result.exit_code == 1 and "funes reindex" in result.output
    doctor = cli("--db", db, "--embedder", "hash:32", "doctor")
    assert doctor.exit_code == 1 and "reindex" in doctor.output
    assert data("--db", db, "--embedder", "hash:32", "reindex") == {"reindexed": 1}
    assert data("--db", db, "--embedder", "hash:32", "search", "dims")[0]["memory"]["content"] == "made with 64 dims"


def test_export_import_stdout_file_and_stdin(tmp_path: Path) -> None:
    data("add", "exported memory", "--type", "decision")
    dump = ok("export").stdout
    assert dump.splitlines()[0].startswith('{"embedder"') and len(dump.splitlines()) == 2
    backup = tmp_path / "backup.jsonl"
    assert data("export", str(backup)) == {"file": str(backup), "records": 1}
    assert backup.read_text(encoding="utf-8") == dump
    other = str(tmp_path / "other.db")
    assert data("--db", other, "import", str(backup)) == {
        "imported": 1,
        "unchanged": 0,
        "reembedded": 0,
        "duplicates": 0,
    }
    assert data("--db", other, "import", input=dump) == {
        "imported": 0,
        "unchanged": 1,
        "reembedded": 0,
        "duplicates": 0,
    }
    assert ok("--db", other, "export").stdout == dump
    missing = cli("import", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1 and "Hint:" in missing.output
    bad = cli("import", input=dump + "{not json\n")
    assert bad.exit_code == 1 and "Line 3" in bad.output


def test_config_show_get_set_path(funes_home: Path) -> None:
    shown = data("config")
    names = {row["name"] for row in shown["settings"]}
    assert {"rrf_k", "tenant", "embedder"} <= names and shown["home"] == str(funes_home)
    assert data("config", "get", "rrf_k") == {"name": "rrf_k", "value": 60, "origin": "default"}
    ok("config", "set", "rrf_k", "12")
    assert data("config", "get", "rrf_k")["value"] == 12
    assert ok("config", "path").output.strip() == str(funes_home / "funes.toml")
    bad = cli("config", "set", "rrf_k", "twelve")
    assert bad.exit_code == 1 and "Hint:" in bad.output
    unknown = cli("config", "get", "nope")
    assert unknown.exit_code == 1 and "funes config" in unknown.output


@pytest.mark.parametrize(
    ("args", "input"),
    [
        (["add", "   "], None),
        (["add", "x", "--importance", "3"], None),
        (["add", "x", "--scope", "project"], None),
        (["get", "mem_missing"], None),
        (["pin", "mem_missing"], None),
        (["edit", "mem_missing", "text"], None),
        (["search", "x", "--since", "someday"], None),
        (["search", "x", "--kind", "tweet"], None),
        (["list", "-n", "0"], None),
        (["import"], "not an export\n"),
    ],
)
def test_errors_exit_1_with_a_hint(args: list[str], input: str | None) -> None:
    result = cli(*args, input=input)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and "\nHint: " in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["add", "x", "--type", "opinion"],
        ["nonsense-command"],
        ["search", "x", "--limit", "many"],
        ["edit", "mem_1"],
        ["add", "x", "--ref", "no-colon"],
        ["config", "set", "rrf_k"],
        ["get"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert cli(*args).exit_code == 2


def test_run_returns_exit_codes() -> None:
    assert run(["--help"]) == 0
    assert run(["get", "mem_missing"]) == 1
    assert run(["nonsense"]) == 2


def test_every_command_accepts_json() -> None:
    for name, command in main.commands.items():
        params = {o for p in command.params for o in getattr(p, "opts", [])}
        assert "--json" in params or hasattr(command, "commands"), f"funes {name} has no --json"


def test_help_is_instant_and_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from funes.interfaces import cli\n"
        "try:\n"
        "    cli.main.main(['--help'], prog_name='funes')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('torch', 'numpy', 'sentence_transformers', 'transformers', 'pypdf', 'openpyxl',"
        " 'mcp', 'tiktoken', 'httpx', 'sqlite_vec', 'funes.service') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "Usage: funes" in out.stdout
    assert "HEAVY []" in out.stdout, out.stdout


def test_console_script_runs_in_a_fresh_process(tmp_path: Path, funes_home: Path) -> None:
    script = Path(sys.executable).parent / "funes"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    env = {"FUNES_HOME": str(funes_home), "FUNES_EMBEDDER": "hash", "PATH": str(script.parent)}
    added = subprocess.run(
        [str(script), "add", "--json"], input="from a real pipe", capture_output=True, text=True, env=env, timeout=120
    )
    assert added.returncode == 0, added.stderr
    found = subprocess.run(
        [str(script), "search", "real pipe", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert json.loads(found.stdout)[0]["memory"]["content"] == "from a real pipe"
    missing = subprocess.run([str(script), "get", "mem_x"], capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == 1 and "Hint:" in missing.stderr and missing.stdout == ""
