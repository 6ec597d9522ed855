"""Claude Code hooks: install (and --print), and each event run as a process with the JSON Claude Code sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import funes
from funes.interfaces.cli import main


def transcript(path: Path) -> Path:
    lines = [
        {"type": "summary", "summary": "ignored"},
        {"type": "user", "message": {"role": "user", "content": "Fix the flaky upload test please"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": 'Done. <save_memory type="decision" importance="0.8">Uploads retry 3 times.</save_memory>',
                    },
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}},
                ],
            },
        },
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": "Error: upload timed out\nSolution: mocked the clock"},
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{partial")
    return path


def run_hook(db: Path, event: str, payload: dict[str, object], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), "--embedder", "hash", "hooks", "run", event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


def test_hook_events_with_claude_code_stdin(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    db = tmp_path / "hooks.db"
    log = transcript(tmp_path / "session.jsonl")
    base = {"session_id": "abc", "transcript_path": str(log), "cwd": str(project)}
    stop = run_hook(db, "stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}, project)
    assert stop.returncode == 0 and stop.stdout == "", stop.stderr
    again = run_hook(db, "stop", {**base, "hook_event_name": "Stop", "stop_hook_active": True}, project)
    assert again.returncode == 0
    with funes.open(str(db), embedder="hash", worker="off") as mem:
        assert sum("Uploads retry 3 times." == m.content for m in mem.list(limit=100).items) == 1
    end = run_hook(db, "session-end", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}, project)
    assert end.returncode == 0 and end.stdout == "", end.stderr
    [day] = list((project / ".funes" / "memory").glob("*.md"))
    text = day.read_text()
    assert "**Task**: Fix the flaky upload test please" in text and "Task Summary" in text
    start = run_hook(db, "session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}, project)
    assert start.returncode == 0, start.stderr
    reply = json.loads(start.stdout)["hookSpecificOutput"]
    assert reply["hookEventName"] == "SessionStart" and "Uploads retry 3 times." in reply["additionalContext"]
    assert "mocked the clock" in reply["additionalContext"]  # the session-end insight
    bad = run_hook(db, "stop", {**base, "transcript_path": str(tmp_path / "missing.jsonl")}, project)
    assert bad.returncode == 1 and "Cannot read the transcript" in bad.stderr


def test_install_claude_code_merges_and_prints(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_text(
        json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}})
    )
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    printed = runner.invoke(main, [*base, "hooks", "install", "claude-code", "--print", "--project-dir", str(project)])
    assert printed.exit_code == 0 and "hooks run session-start" in printed.output
    assert "hooks run" not in settings.read_text()  # --print writes nothing
    for _ in range(2):  # installing twice leaves one Funes hook per event
        done = runner.invoke(main, [*base, "hooks", "install", "claude-code", "--project-dir", str(project)])
        assert done.exit_code == 0, done.output
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    commands = {event: [h["command"] for e in entries for h in e["hooks"]] for event, entries in data["hooks"].items()}
    assert commands["Stop"][0] == "echo hi" and len(commands["Stop"]) == 2
    assert commands["Stop"][1].endswith("hooks run stop")
    assert [c.split()[-1] for c in commands["SessionStart"] + commands["SessionEnd"]] == [
        "session-start",
        "session-end",
    ]
    settings.write_text("{not json")
    broken = runner.invoke(main, [*base, "hooks", "install", "claude-code", "--project-dir", str(project)])
    assert broken.exit_code == 1 and "not valid JSON" in broken.output
