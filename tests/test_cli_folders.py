"""The folder commands through the CLI: folders add/list/rm, sync, status, memory-tool, and `funes watch` as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

import funes
from funes.interfaces.cli import main


def test_folders_sync_status_and_memory_tool(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe pangolin has scales.\n")
    added = runner.invoke(main, [*base, "folders", "add", str(notes)])
    assert added.exit_code == 0 and "1 new" in added.output, added.output
    assert str(notes) in runner.invoke(main, [*base, "folders", "list"]).output
    (notes / "b.md").write_text("# B\n\nThe gecko climbs glass.\n")
    drift = runner.invoke(main, [*base, "status"])
    assert "DRIFT: 1 file(s)" in drift.output and "funes sync" in drift.output and "last sync 20" in drift.output
    data = json.loads(runner.invoke(main, [*base, "status", "--json"]).output)
    assert data[0]["drift"] == 1 and data[0]["new"] == [str(notes / "b.md")] and data[0]["last_sync_at"]
    synced = runner.invoke(main, [*base, "sync", "--json"])
    assert synced.exit_code == 0 and json.loads(synced.output)[0]["new"] == [str(notes / "b.md")]
    assert "in sync" in runner.invoke(main, [*base, "status"]).output
    call = json.dumps({"command": "str_replace", "path": "/memories/b.md", "old_str": "glass", "new_str": "walls"})
    edited = runner.invoke(main, [*base, "memory-tool", "--folder", str(notes)], input=call)
    assert edited.exit_code == 0 and "has been edited" in edited.output
    assert "walls" in runner.invoke(main, [*base, "search", "gecko walls"]).output
    escape = runner.invoke(main, [*base, "memory-tool", "--folder", str(notes), '{"command":"view","path":"/etc"}'])
    assert escape.exit_code == 1 and "absolute path outside /memories" in escape.output
    assert runner.invoke(main, [*base, "memory-tool", "not json"]).exit_code == 2
    removed = runner.invoke(main, [*base, "folders", "rm", str(notes), "--forget"])
    assert removed.exit_code == 0 and "removed its notes" in removed.output
    assert "No memory folders" in runner.invoke(main, [*base, "status"]).output


def _watch_until_found(db: Path, args: list[str], word: str, save: Path | None = None) -> str:
    """Run `funes watch ARGS` as a process until a search finds ``word`` (after writing ``save``); its stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--db", str(db), "--embedder", "hash", "watch", *args, "--debounce", "0.3"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if save is not None:
            save.write_text(f"# Saved\n\nThe {word} whistles.\n")
        deadline = time.monotonic() + 20
        hit = False
        while time.monotonic() < deadline and not hit:
            with funes.open(str(db), embedder="hash", worker="off") as reader:
                hit = any(word in h.memory.content for h in reader.search(word))
            time.sleep(0.1)
        assert hit, f"the watcher process never indexed {word}"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return err


def test_funes_watch_process_indexes_a_save_and_stops_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "watch.db"
    notes = tmp_path / "notes"
    with funes.open(str(db), embedder="hash") as mem:
        mem.add_folder(notes)
    err = _watch_until_found(db, [], "marmot", save=notes / "saved.md")
    assert "Watching" in err and "sync queued" in err


def test_funes_watch_on_an_unregistered_folder_registers_it_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    notes = tmp_path / "fresh"
    notes.mkdir()
    (notes / "first.md").write_text("# First\n\nThe pika gathers hay.\n")
    err = _watch_until_found(db, [str(notes)], "pika")
    assert f"Registered {notes.resolve()} as a memory folder (team scope)" in err
    with funes.open(str(db), embedder="hash", worker="off") as reader:
        assert [f.path for f in reader.folders()] == [str(notes.resolve())]
