"""record-task in a real temporary git repository: the seed's format, hunk counts, appends, insights."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

from click.testing import CliRunner

import funes
from funes.agents.tasks import analyse, hunk_counts
from funes.interfaces.cli import main


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")
    (repo / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 41)))
    (repo / "README.md").write_text("# App\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    return repo


def test_record_task_writes_the_seed_format_with_hunk_counts(mem: funes.Funes, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    app = (repo / "app.py").read_text().replace("line 2\n", "line two\n").replace("line 35\n", "line 35!\n")
    (repo / "app.py").write_text(app)  # two hunks far apart
    (repo / "README.md").write_text("# App\n\nNow with docs.\n")
    folder = tmp_path / "memory"
    mem.add_folder(folder)
    head = git(repo, "rev-parse", "--short", "HEAD").strip()
    stderr = "Traceback (most recent call last):\nTimeoutError: connection timed out after 30s\nSolution: raised the timeout to 60s\n"
    first = mem.record_task(
        "Fix the database timeout", result="ok", stderr=stderr, exit_code=0, cwd=repo, folder=folder
    )
    assert first.commit == head and first.changes == {"app.py": 2, "README.md": 1}
    text = first.path.read_text()
    assert first.path.name == f"{datetime.now().astimezone():%Y-%m-%d}.md"
    assert f"## {datetime.now().astimezone():%Y-%m-%d} Task Summary" in text and f"**Commit**: {head}" in text
    assert "**Task**: Fix the database timeout" in text
    assert "### Changes\n- README.md (1 hunk)\n- app.py (2 hunks)" in text
    assert "### Result\n- **Result**: ok\n- **Exit Code**: 0" in text
    assert "### Errors Encountered\n```\nTraceback" in text
    categories = [m.metadata["category"] for m in first.insights]
    assert categories[0] == "Execution" and "Error" in categories and "Result" in categories
    fix = next(m for m in first.insights if m.metadata["category"] == "Result")
    assert "raised the timeout to 60s" in fix.content and "TimeoutError" in fix.content
    assert all(m.kind == "insight" and m.references[0].id == first.task_id for m in first.insights)
    second = mem.record_task("Add docs", cwd=repo, folder=folder)  # the same day: appended, never overwritten
    both = second.path.read_text()
    assert both.count("Task Summary") == 2 and "Fix the database timeout" in both and "Add docs" in both
    assert "### Errors Encountered\nNone" in both
    hits = mem.search("database timeout task summary", limit=10)
    assert any(h.memory.source.uri == str(second.path) for h in hits)  # the summary file is indexed
    assert mem.folder_status(folder)[0].drift.total == 0


def test_outside_git_the_task_is_still_recorded(mem: funes.Funes, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    record = mem.record_task("Sketch ideas", result="failed", exit_code=2, cwd=plain)
    assert record.path.parent == plain / ".funes" / "memory"
    assert record.commit is None and record.changes == {}
    assert "not in a git repository" in record.warnings[0]
    text = record.path.read_text()
    assert "**Commit**: (not a git repository)" in text and "Not in a git repository" in text
    assert record.insights[0].content == "Task 'Sketch ideas' failed with exit code 2."


def test_hunk_counts_and_heuristics() -> None:
    diff = "diff --git a/x.py b/x.py\n@@ -1 +1 @@\n-a\n+b\n@@ -9 +9 @@\n-c\n+d\ndiff --git a/img.png b/img.png\nBinary files differ\n"
    assert hunk_counts(diff) == {"x.py": 2, "img.png": 0}
    found = analyse("t", "all good\nerror: disk full\nerror: disk full\nFix: freed space", None, 1)
    assert found == [
        ("Execution", "Task 't' failed with exit code 1."),
        ("Error", "In 't': error: disk full"),
        ("Result", "In 't', the fix was: freed space after: error: disk full"),
    ]


def test_cli_record_task(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(tmp_path)
    (repo / "app.py").write_text("changed\n")
    (repo / "err.txt").write_text("ERROR: tests failed\n")
    monkeypatch.chdir(repo)
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    out = runner.invoke(
        main, [*base, "record-task", "--task", "Refactor", "--result", "failed", "--stderr", "err.txt", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["changes"] == {"app.py": 1} and Path(data["path"]).parent == repo / ".funes" / "memory"
    assert any(i["category"] == "Error" for i in data["insights"])
    bad = runner.invoke(main, [*base, "record-task", "--task", "x", "--stderr", "missing.txt"])
    assert bad.exit_code == 2 and "cannot read missing.txt" in bad.output


def test_task_insights_come_from_the_configured_llm_and_fall_back_to_rules(tmp_path: Path) -> None:
    from llm_servers import anthropic_answer, serve

    from funes.providers.embed import HashEmbedder

    plain = tmp_path / "plain"
    plain.mkdir()
    with serve(anthropic_answer) as server:
        server.reply = {
            "insights": [
                {"category": "Error", "text": "pytest failed: the login test timed out after 30 s."},
                {"category": "Result", "text": "Raising the session timeout in auth.py fixed the login test."},
            ]
        }
        with funes.open(
            str(tmp_path / "llm.db"),
            embedder=HashEmbedder(64),
            llm="anthropic",
            llm_base_url=server.url,
            llm_max_retries=0,
        ) as mem:
            record = mem.record_task(
                "Fix the login test", result="ok", stderr="E   TimeoutError: login", exit_code=0, cwd=plain
            )
            assert [m.content for m in record.insights] == [i["text"] for i in server.reply["insights"]]
            body = server.requests[0][2]
            assert (
                "Fix the login test" in body["messages"][0]["content"]
                and "TimeoutError" in body["messages"][0]["content"]
            )
            # The provider fails: the insights come from the rules, and the task is still recorded.
            server.script = [(503, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}, {})]
            again = mem.record_task("Fix the signup test", result="failed", exit_code=1, cwd=plain)
            assert again.insights[0].content == "Task 'Fix the signup test' failed with exit code 1."
