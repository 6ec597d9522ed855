"""Background work without a server: CLI commands leave due jobs to one short-lived detached worker.

Each `funes` command here is a real process, as a user runs it; the worker is the
real `funes jobs run --auto` they start, and its lock and log sit beside the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import funes
from funes.memory.autowork import drain, lock_path, worker_lock
from funes.models import config as config_mod
from funes.providers.embed import HashEmbedder


def _cli(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = "from funes.interfaces.cli import main; main()"
    full = {**os.environ, "FUNES_EMBEDDER": "hash", "FUNES_AUTO_WORK": "on", **env}
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), *args], env=full, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def _count(db: Path) -> int:
    return len(json.loads(_cli(db, "list", "--project", "p", "--limit", "100", "--json").stdout)["items"])


def _worker_runs(db: Path) -> list[str]:
    log = db.with_name(db.name + ".worker.log")
    return [line for line in log.read_text().splitlines() if line.startswith("Ran ")] if log.exists() else []


def _wait(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _twelve_writes_over_a_limit_of_ten(db: Path, env: dict[str, str]) -> None:
    _cli(db, "config", "set", "--project", "p", "max_records", "10", **env)
    for i in range(12):
        _cli(db, "add", f"Project note number {i} about the quarterly budget", "--project", "p", **env)


def _worker_gone(db: Path) -> bool:
    with worker_lock(db.with_name(db.name + ".worker.lock")) as free:
        return free


@pytest.mark.slow
def test_retention_runs_after_writes_over_the_limit_with_no_command_and_one_worker(tmp_path: Path) -> None:
    db = tmp_path / "auto.db"
    _twelve_writes_over_a_limit_of_ten(db, {"FUNES_MAINTAIN_EVERY_WRITES": "3", "FUNES_AUTO_WORK_LINGER_SECONDS": "15"})
    # Retention brings the project back to 80% of its 10 records, with nobody running `funes jobs run`.
    assert _wait(lambda: _count(db) <= 8, 30), _count(db)
    assert _wait(lambda: _worker_gone(db), 60), "the worker did not exit"
    runs = _worker_runs(db)
    assert len(runs) == 1, runs  # one worker drained every job, and none is left behind
    queued = json.loads(_cli(db, "jobs", "list", "--status", "queued", "--json").stdout)["jobs"]
    assert {j["kind"] for j in queued} <= {"session-retention"}  # only the next scheduled run waits


@pytest.mark.slow
def test_a_library_script_hands_its_due_jobs_to_the_worker_when_it_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FUNES_AUTO_WORK", "on")
    monkeypatch.setenv("FUNES_AUTO_WORK_LINGER_SECONDS", "2")
    db = tmp_path / "lib.db"
    with funes.open(str(db), embedder="hash", worker="off") as mem:
        for i in range(6):
            mem.remember(f"Script note {i} on the roadmap", project="p")
        mem.configure_project("p", {"max_records": 4})  # queues retention
    assert _wait(lambda: _count(db) <= 3, 30), _count(db)  # 80% of 4
    assert _wait(lambda: _worker_gone(db), 30) and len(_worker_runs(db)) == 1


@pytest.mark.slow
def test_auto_work_off_leaves_the_jobs_queued(tmp_path: Path) -> None:
    db = tmp_path / "off.db"
    env = {"FUNES_MAINTAIN_EVERY_WRITES": "3", "FUNES_AUTO_WORK": "off"}
    _twelve_writes_over_a_limit_of_ten(db, env)
    time.sleep(2)
    assert _count(db) == 12 and _worker_runs(db) == []
    status = _cli(db, "status", **env).stdout
    assert "Background jobs:" in status and "queued" in status and "funes jobs run" in status


def test_the_worker_lock_admits_one_process_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "store.db.worker.lock"
    with worker_lock(path) as first:
        assert first
        code = (
            "import sys; from pathlib import Path; from funes.memory.autowork import worker_lock\n"
            f"with worker_lock(Path({str(path)!r})) as got: sys.exit(0 if got else 3)"
        )
        assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 3
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_the_lock_sits_beside_a_sqlite_file_and_in_the_home_for_a_url(tmp_path: Path) -> None:
    sqlite = config_mod.load(db_path=str(tmp_path / "m.db"))
    assert lock_path(sqlite) == tmp_path / "m.db.worker.lock"
    url = config_mod.load(db_path="postgresql://u:secret@db.example/funes")
    assert lock_path(url).parent == config_mod.home() and "secret" not in lock_path(url).name


def test_drain_waits_for_jobs_about_to_fall_due_then_stops(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    with funes.open(db, embedder=HashEmbedder(32), worker="off", auto_work_linger_seconds=1.5) as mem:
        seen: list[str] = []
        mem.jobs.register("note", lambda job: lambda: seen.append(job.payload["n"]))
        mem.jobs.enqueue("note", {"n": "now"})
        mem.jobs.enqueue("note", {"n": "soon"}, delay=0.5)
        mem.jobs.enqueue("note", {"n": "later"}, delay=3600)
        totals = drain(mem.run_jobs, mem.store, mem.config)
        assert seen == ["now", "soon"] and totals["done"] == 2  # "later" is left to a later worker


def test_a_job_of_another_kind_does_not_keep_the_worker_alive(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    with funes.open(db, embedder=HashEmbedder(32), worker="off", auto_work_linger_seconds=0.5) as mem:
        mem.jobs.enqueue("someone-elses-kind", {})
        started = time.monotonic()
        assert drain(mem.run_jobs, mem.store, mem.config)["done"] == 0
        assert time.monotonic() - started < 5
