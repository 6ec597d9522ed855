"""`funes watch` under churn: files created, renamed, deleted, replaced by folders, symlinks and FIFOs (issue 31).

A real `funes watch` process watches a folder while a bounded loop churns it;
the watcher must print no traceback and none of watchdog's notes, answer each
file it cannot index with one line saying what to do, keep working when the
folder itself is deleted and recreated, and index the files that survive.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import funes


def _churn(notes: Path, rounds: int) -> None:
    rnd = random.Random(31)
    for i in range(rounds):
        target = notes / f"n{rnd.randrange(12)}.md"
        try:
            if target.is_symlink() or target.is_file() or (target.exists() and not target.is_dir()):
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            op = rnd.randrange(11)
            if op < 3:
                target.write_text(f"# Churn\n\nnote {i}\n")
            elif op == 3:
                target.mkdir()
                (target / "inner.md").write_text("inner")
            elif op == 4:
                target.symlink_to("/etc/hostname")
            elif op == 5:
                os.mkfifo(target)
            elif op == 6:
                (notes / "tmp.md").write_text(f"renamed {i}")
                (notes / "tmp.md").rename(target)
            elif op == 7:
                target.symlink_to(target.name)  # a loop
            elif op == 8:
                target.write_bytes(bytes(range(256)))
            elif op == 9:
                deep = notes / f"d{rnd.randrange(3)}"
                shutil.rmtree(deep, ignore_errors=True)
                (deep / "a" / "b").mkdir(parents=True)
                (deep / "a" / "b" / "x.md").write_text("deep")
            elif rnd.random() < 0.3:
                shutil.rmtree(notes)  # the watched folder itself goes and comes back
                notes.mkdir()
        except OSError:
            pass  # the loop raced itself; the watcher is what is under test
        if i % 7 == 0:
            time.sleep(0.01)


def test_watch_survives_churn_with_one_line_answers(tmp_path: Path) -> None:
    db = tmp_path / "watch.db"
    notes = tmp_path / "notes"
    notes.mkdir()
    with funes.open(str(db), embedder="hash") as mem:
        mem.add_folder(notes)
    log = tmp_path / "watch.err"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "--db", str(db), "--embedder", "hash", "watch", "--debounce", "0.05"],
            env=env,
            stderr=err,
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while "Watching" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            _churn(notes, 1500)
            (notes / "binary.md").write_bytes(bytes(range(256)) * 4)
            for n in range(3):
                (notes / f"survivor{n}.md").write_text(f"# Survivor\n\nThe survivor{n} pelican stays.\n")
            found: set[int] = set()
            deadline = time.monotonic() + 40
            while len(found) < 3 and time.monotonic() < deadline:
                with funes.open(str(db), embedder="hash", worker="off") as reader:
                    for n in range(3):
                        if any(f"survivor{n}" in h.memory.content for h in reader.search(f"survivor{n} pelican")):
                            found.add(n)
                time.sleep(0.2)
            deadline = time.monotonic() + 20
            while "binary.md is not indexed" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            # A later sync of the folder meets binary.md again: it is not told twice.
            (notes / "later.md").write_text("# Later\n\nThe albatross lands.\n")
            deadline = time.monotonic() + 30
            landed = False
            while not landed and time.monotonic() < deadline:
                with funes.open(str(db), embedder="hash", worker="off") as reader:
                    landed = any("albatross" in h.memory.content for h in reader.search("albatross"))
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    output = log.read_text()
    assert proc.returncode == 0, output[-3000:]
    assert found == {0, 1, 2}, output[-3000:]
    assert "Traceback" not in output and "Warning" not in output, output[:3000]
    for line in output.splitlines():
        assert len(line) <= 600, line[:300]
        assert "Watching" in line or "sync queued" in line or " is not indexed: " in line, line
    assert output.count("binary.md is not indexed: ") == 1 and "binary file" in output, output[-3000:]
    assert landed


def test_a_file_replaced_by_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    # Before: os.fdopen on the folder's descriptor raised IsADirectoryError, and the sync job failed whole.
    from funes.errors import InvalidInput
    from funes.knowledge.paths import read_regular

    (tmp_path / "note.md").mkdir()
    with pytest.raises(InvalidInput, match="not a regular file") as caught:
        read_regular(tmp_path / "note.md", "note.md", 1000, hint="-", within=tmp_path)
    assert caught.value.hint


def test_a_link_removed_while_it_is_resolved_is_left_out_of_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: os.path.realpath saw the link (lstat), then it was gone (readlink raised FileNotFoundError), and
    # the folder-sync job failed whole; the watcher printed "a sync ... failed" under churn.
    from funes.errors import InvalidInput
    from funes.knowledge.paths import read_regular

    (tmp_path / "target.md").write_text("# Target\n")
    (tmp_path / "link.md").symlink_to("target.md")

    def vanished(path: Any, *args: Any, **kwargs: Any) -> str:
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(os, "readlink", vanished)
    with pytest.raises(InvalidInput, match=r"No such file: link\.md") as caught:
        read_regular(tmp_path / "link.md", "link.md", 1000, hint="-", within=tmp_path)
    assert caught.value.hint
    with funes.open(str(tmp_path / "store.db"), embedder="hash", worker="off") as mem:
        mem.add_folder(tmp_path)
        (report,) = mem.sync(str(tmp_path))
    assert report.drift.new == (str(tmp_path / "target.md"),), report.drift
