"""The durable job runner: real SQLite, real threads, real processes killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.cli import main
from funes.models import Job
from funes.providers.embed import HashEmbedder

FAST = {"job_backoff_seconds": 0.01, "job_backoff_max_seconds": 0.05, "job_poll_seconds": 0.05}


@pytest.fixture
def store_path(store_url: str) -> str:
    """The store of each backend (SQLite file, PostgreSQL database)."""
    return store_url


@pytest.fixture
def mem(store_path: str) -> Iterator[funes.Funes]:
    service = funes.open(store_path, embedder=HashEmbedder(32), worker="off", **FAST)
    yield service
    service.close()


def writer(mem: funes.Funes, calls: list[str] | None = None) -> Callable[[Job], Callable[[], Any]]:
    """A handler that remembers the job's text (its effect) and returns the new record id."""

    def handler(job: Job) -> Callable[[], Any]:
        if calls is not None:
            calls.append(job.id)
        text = job.payload["text"]

        def apply() -> Any:
            return {"id": mem.remember(text).id}

        return apply

    return handler


def test_a_job_runs_once_and_records_its_result(mem: funes.Funes) -> None:
    mem.jobs.register("write", writer(mem))
    job_id = mem.jobs.enqueue("write", {"text": "from a job"})
    assert mem.jobs.get(job_id).status == "queued"
    assert mem.run_jobs() == {"done": 1, "retrying": 0, "failed": 0, "taken_over": 0}
    job = mem.jobs.get(job_id)
    assert job.status == "done" and job.attempts == 1 and job.finished_at is not None
    assert mem.get(job.result["id"]).content == "from a job"
    assert mem.run_jobs()["done"] == 0  # nothing runs twice


def test_a_job_is_written_with_the_change_that_causes_it(mem: funes.Funes) -> None:
    with pytest.raises(RuntimeError), mem.store.transaction():
        mem.remember("a change that rolls back")
        mem.jobs.enqueue("write", {"text": "its job"})
        raise RuntimeError("the change failed")
    assert mem.jobs.list() == [] and list(mem.list().items) == []


def test_failures_retry_with_backoff_then_fail_with_their_error(mem: funes.Funes) -> None:
    attempts: list[float] = []

    def flaky(job: Job) -> Callable[[], Any]:
        attempts.append(time.monotonic())
        raise ConnectionError(f"server down (attempt {len(attempts)})")

    mem.jobs.register("flaky", flaky)
    job_id = mem.jobs.enqueue("flaky", {}, max_attempts=3)
    mem.run_jobs()
    job = mem.jobs.get(job_id)
    assert job.status == "queued" and job.attempts == 1 and "attempt 1" in (job.last_error or "")
    assert job.run_after > job.updated_at  # backoff: not ready at once
    deadline = time.monotonic() + 5
    while mem.jobs.get(job_id).status != "failed" and time.monotonic() < deadline:
        mem.run_jobs()
        time.sleep(0.01)
    job = mem.jobs.get(job_id)
    assert job.status == "failed" and job.attempts == 3 and "attempt 3" in (job.last_error or "")
    assert any("failed for good" in p for p in mem.doctor())
    retried = mem.jobs.retry(job_id)
    assert retried.status == "queued" and retried.attempts == 0


def test_invalid_input_fails_at_once(mem: funes.Funes) -> None:
    def bad(job: Job) -> Callable[[], Any]:
        raise InvalidInput("the payload is wrong", hint="fix it")

    mem.jobs.register("bad", bad)
    job_id = mem.jobs.enqueue("bad", {})
    mem.run_jobs()
    assert mem.jobs.get(job_id).status == "failed" and mem.jobs.get(job_id).attempts == 1


def test_a_dedupe_key_coalesces_queued_work(mem: funes.Funes) -> None:
    first = mem.jobs.enqueue("write", {"text": "x"}, dedupe_key="maintain:default")
    second = mem.jobs.enqueue("write", {"text": "x"}, dedupe_key="maintain:default")
    assert first == second and len(mem.jobs.list()) == 1
    mem.jobs.register("write", writer(mem))
    mem.run_jobs()
    third = mem.jobs.enqueue("write", {"text": "y"}, dedupe_key="maintain:default")
    assert third != first  # the key is free again once the job ran


def test_a_failed_attempt_retries_beside_a_job_of_its_dedupe_key_queued_meanwhile(mem: funes.Funes) -> None:
    """A folder's sync job fails while a watcher queues the folder's next sync: both stay, none is stuck."""
    runs: list[str] = []

    def failing_once(job: Job) -> Callable[[], Any]:
        runs.append(job.id)
        if len(runs) == 1:
            mem.jobs.enqueue("sync", {"text": "queued meanwhile"}, dedupe_key="folder-sync:default:/notes")
            raise ConnectionError("the embedding server went away")
        return writer(mem)(job)

    mem.jobs.register("sync", failing_once)
    first = mem.jobs.enqueue("sync", {"text": "first"}, dedupe_key="folder-sync:default:/notes")
    assert mem.run_jobs() == {"done": 1, "retrying": 1, "failed": 0, "taken_over": 0}  # the new one ran
    job = mem.jobs.get(first)
    assert job.status == "queued" and "went away" in (job.last_error or "")
    deadline = time.monotonic() + 10  # its backoff (FAST: milliseconds), not a timing assertion
    while mem.jobs.get(first).status == "queued" and time.monotonic() < deadline:
        mem.run_jobs()
        time.sleep(0.01)
    assert mem.jobs.get(first).status == "done" and len(runs) == 3
    assert {m.content for m in mem.list().items} == {"first", "queued meanwhile"} and mem.doctor() == []


def test_a_failed_job_retried_by_hand_runs_beside_a_job_of_its_dedupe_key(mem: funes.Funes) -> None:
    def bad(job: Job) -> Callable[[], Any]:
        raise InvalidInput("the payload is wrong", hint="fix it")

    mem.jobs.register("bad", bad)
    failed = mem.jobs.enqueue("bad", {}, dedupe_key="maintain:default")
    mem.run_jobs()
    assert mem.jobs.get(failed).status == "failed"
    queued = mem.jobs.enqueue("bad", {}, dedupe_key="maintain:default")  # the key is free: a new job holds it
    assert queued != failed
    retried = mem.jobs.retry(failed)
    assert retried.status == "queued" and mem.jobs.get(queued).status == "queued"


def test_unknown_kinds_are_left_for_a_process_that_handles_them(mem: funes.Funes) -> None:
    job_id = mem.jobs.enqueue("someone-elses-kind", {})
    assert mem.run_jobs()["done"] == 0
    assert mem.jobs.get(job_id).status == "queued"


def test_a_worker_that_lost_its_lease_has_its_writes_rolled_back(store_path: str) -> None:
    """Worker A stalls past its lease; B takes the job over and applies it; A's late apply is rolled back."""
    settings = {**FAST, "job_lease_seconds": 0.3}
    a = funes.open(store_path, embedder=HashEmbedder(32), worker="off", **settings)
    b = funes.open(store_path, embedder=HashEmbedder(32), worker="off", **settings)
    try:
        release = threading.Event()

        def stalling(job: Job) -> Callable[[], Any]:
            release.wait(10)
            return writer(a)(job)

        a.jobs.register("write", stalling)
        b.jobs.register("write", writer(b))
        job_id = a.jobs.enqueue("write", {"text": "written once"})
        # A's heartbeat would keep the lease; stop it by making renewals fail for A only.
        a.jobs._heartbeat = lambda *args: None  # type: ignore[method-assign]
        result: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: result.update(job=a.jobs.run_one()))
        thread.start()
        time.sleep(0.5)  # A's lease (0.3 s) has expired while it stalls
        assert b.run_jobs()["done"] == 1
        release.set()
        thread.join(10)
        job = b.jobs.get(job_id)
        assert job.status == "done" and job.locked_by == b.jobs.worker_id and job.attempts == 2
        assert [m.content for m in b.list().items] == ["written once"]
    finally:
        a.close()
        b.close()


def test_the_worker_thread_runs_jobs_as_they_are_queued(store_path: str) -> None:
    with funes.open(store_path, embedder=HashEmbedder(32), **FAST) as mem:  # worker="auto"
        mem.jobs.register("write", writer(mem))
        assert not mem.jobs.running
        job_id = mem.jobs.enqueue("write", {"text": "picked up by the worker"})
        assert mem.jobs.running
        deadline = time.monotonic() + 10
        while mem.jobs.get(job_id).status != "done" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mem.jobs.get(job_id).status == "done"
    assert not mem.jobs.running


def test_visibility_errors(mem: funes.Funes) -> None:
    with pytest.raises(NotFound, match="funes jobs list"):
        mem.jobs.get("job_nope")
    with pytest.raises(InvalidInput):
        mem.jobs.list(status="sleeping")
    job_id = mem.jobs.enqueue("write", {"text": "x"})
    with pytest.raises(InvalidInput, match="funes jobs run"):
        mem.jobs.retry(job_id)


def test_cli_jobs_list_show_retry_run(store_path: str) -> None:
    with funes.open(store_path, embedder=HashEmbedder(32), worker="off", **FAST) as mem:

        def broken(job: Job) -> Callable[[], Any]:
            raise InvalidInput("no handler can do this", hint="x")

        mem.jobs.register("vectors", broken)
        job_id = mem.jobs.enqueue("vectors", {"ids": []})
        mem.run_jobs()
    runner = CliRunner()
    base = ["--db", store_path, "--embedder", "hash:32"]
    listed = runner.invoke(main, [*base, "jobs", "list", "--status", "failed", "--json"])
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    assert [j["id"] for j in data["jobs"]] == [job_id] and data["counts"] == {"failed": 1}
    shown = runner.invoke(main, [*base, "jobs", "show", job_id])
    assert shown.exit_code == 0 and "no handler can do this" in shown.output
    assert runner.invoke(main, [*base, "jobs", "retry", job_id]).exit_code == 0
    ran = runner.invoke(main, [*base, "jobs", "run", "--json"])
    assert ran.exit_code == 0, ran.output
    # The real vectors handler (nothing to embed) and the scheduled session retention `jobs run` queues.
    assert json.loads(ran.output)["done"] == 2
    again = runner.invoke(main, [*base, "jobs", "show", job_id, "--json"])
    assert json.loads(again.output)["status"] == "done"
    missing = runner.invoke(main, [*base, "jobs", "show", "job_nope"])
    assert missing.exit_code == 1 and "funes jobs list" in missing.output


# -- SIGKILL: a job killed mid-way is resumed and never applied twice ---------------------------
WORKER_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    import funes
    from funes.providers.embed import HashEmbedder

    path, marker, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    mem = funes.open(path, embedder=HashEmbedder(32), worker="off", job_lease_seconds=600)

    def handler(job):
        n = job.payload["n"]
        def apply():
            mem.remember(f"effect of job {n}")
            if mode == "die-in-apply" and n == 1:
                # The effect is written inside the job's transaction: dying now must leave nothing.
                marker.write_text("in apply")
                os.kill(os.getpid(), signal.SIGKILL)
            return {"n": n}
        if mode == "die-in-handler" and n == 1:
            marker.write_text("in handler")
            time.sleep(60)  # killed here by the test
        return apply

    mem.jobs.register("effect", handler)
    print(mem.run_jobs(), flush=True)
    mem.close()
    """
)


@pytest.mark.parametrize("mode", ["die-in-handler", "die-in-apply"])
def test_a_job_killed_mid_way_is_resumed_on_the_next_start_and_applied_once(tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "kill.db")
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    marker = tmp_path / "marker"
    with funes.open(path, embedder=HashEmbedder(32), worker="off") as mem:
        ids = [mem.jobs.enqueue("effect", {"n": n}) for n in range(3)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    first = subprocess.Popen([sys.executable, str(script), path, str(marker), mode], env=env)
    if mode == "die-in-handler":
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), "the worker never reached job 1"
        first.send_signal(signal.SIGKILL)
    first.wait(60)
    assert first.returncode == -signal.SIGKILL
    with funes.open(path, embedder=HashEmbedder(32), worker="off") as mem:
        killed = mem.jobs.get(ids[1])
        assert killed.status == "running"  # held by a dead worker; its lease has 10 minutes to go
        assert [m.content for m in mem.list().items if m.content == "effect of job 1"] == []
    # The next start resumes it at once: the lease's holder is a dead process on this host.
    second = subprocess.run(
        [sys.executable, str(script), path, str(marker), "resume"], env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr
    with funes.open(path, embedder=HashEmbedder(32), worker="off") as mem:
        jobs = {j.id: j for j in mem.jobs.list()}
        assert all(jobs[i].status == "done" for i in ids)
        assert jobs[ids[1]].attempts == 2
        effects = sorted(m.content for m in mem.list(limit=100).items)
        assert effects == ["effect of job 0", "effect of job 1", "effect of job 2"]
        assert mem.doctor() == []


ACCESS_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import funes
    from funes.providers.embed import HashEmbedder

    mem = funes.open(sys.argv[1], embedder=HashEmbedder(32))
    hits = mem.search("wifi password", session="s1")
    print(hits[0].memory.id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no atexit: only what was written survives
    """
)


def test_access_rows_survive_a_crash_right_after_the_search_returned(tmp_path: Path) -> None:
    path = str(tmp_path / "access.db")
    with funes.open(path, embedder=HashEmbedder(32), worker="off") as mem:
        note = mem.remember("the wifi password is on the fridge")
    script = tmp_path / "search.py"
    script.write_text(ACCESS_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, str(script), path], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGKILL and run.stdout.strip() == note.id
    with funes.open(path, embedder=HashEmbedder(32), worker="off") as mem:
        assert mem.get(note.id).access_count == 1
        rows = mem.store.access_log(note.id)  # type: ignore[attr-defined]
        assert [(r["action"], r["session_id"]) for r in rows] == [("search", "s1")]
