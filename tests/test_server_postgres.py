"""Two `funes serve` processes on one PostgreSQL share accepted work; a SIGKILLed server loses none of it.

Real server processes (uvicorn on 127.0.0.1), a real PostgreSQL with pgvector
(pgserver), real HTTP. Each accepted generate request is a durable job
written before its 202; the job's effect (one summary per entity) must exist
exactly once whichever server ran it, and however many were killed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import funes
from funes.providers.embed import HashEmbedder

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
SERVE = "import sys; from funes.interfaces.cli import main; sys.exit(main())"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One `funes serve` process."""

    def __init__(self, url: str, home: Path, name: str) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("FUNES_")}
        env.update(FUNES_HOME=str(home), FUNES_EMBEDDER="hash:64", HF_HUB_OFFLINE="1", FUNES_JOB_POLL_SECONDS="0.1")
        self.log = (home / f"{name}.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--db", url, "--port", str(self.port)],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{name} exited: {(home / f'{name}.log').read_text()}")
            try:
                if httpx.get(self.base + "/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError(f"{name} did not start: {(home / f'{name}.log').read_text()}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def team(pg_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    with funes.open(pg_url, embedder=HashEmbedder(64), worker="off") as mem:
        key, _ = mem.keys.create("acme", "write")
    yield pg_url, {"Authorization": f"Bearer {key}"}


def _entities(file_no: int) -> list[dict[str, str]]:
    return [
        {"entity_type": "CODE_CELL", "entity_id": f"c{n}", "content": f"cell {n} of file {file_no} loads data"}
        for n in range(3)
    ]


def _accept(server: Server, headers: dict[str, str], files: range) -> dict[int, str]:
    """Send the burst from ten clients at once, so it is accepted faster than one worker can do it."""

    def send(n: int) -> tuple[int, str]:
        body = {"file_id": f"file{n}", "entities": _entities(n)}
        answer = httpx.post(server.base + "/v1/teams/acme/memories/generate", json=body, headers=headers, timeout=30)
        assert answer.status_code == 202, answer.text
        return n, answer.json()["job_id"]

    with ThreadPoolExecutor(max_workers=10) as pool:
        return dict(pool.map(send, files))


def _wait_done(url: str, job_ids: list[str], timeout: float = 120) -> list[funes.models.Job]:
    with funes.open(url, embedder=HashEmbedder(64), worker="off") as mem:
        deadline = time.monotonic() + timeout
        while True:
            jobs = [mem.jobs.get(j) for j in job_ids]
            if all(j.status == "done" for j in jobs) or time.monotonic() > deadline:
                return jobs
            time.sleep(0.2)


def _summaries_per_file(url: str) -> dict[str, list[str]]:
    with funes.open(url, embedder=HashEmbedder(64), worker="off") as mem:
        out: dict[str, list[str]] = {}
        for m in mem.store.iter_records("acme"):
            if m.kind == "entity_summary":
                out.setdefault(str(m.project_id), []).append(str(m.entity_id))
        return out


def test_two_servers_share_a_burst_and_run_every_job_once(team: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, headers = team
    a, b = Server(url, tmp_path, "a"), Server(url, tmp_path, "b")
    try:
        accepted = {**_accept(a, headers, range(0, 20, 2)), **_accept(b, headers, range(1, 20, 2))}
        jobs = _wait_done(url, list(accepted.values()))
        assert [j.status for j in jobs] == ["done"] * 20, [(j.id, j.status, j.last_error) for j in jobs]
        assert all(j.attempts == 1 for j in jobs)  # claimed once each: SKIP LOCKED never hands a job out twice
        workers = {str(j.locked_by).split(":")[1] for j in jobs}
        assert workers == {str(a.proc.pid), str(b.proc.pid)}  # both servers took work
        per_file = _summaries_per_file(url)
        assert len(per_file) == 20
        assert all(sorted(ids) == ["c0", "c1", "c2"] for ids in per_file.values())  # each effect exactly once
    finally:
        a.stop()
        b.stop()


def test_a_sigkilled_server_loses_no_accepted_job(team: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, headers = team
    first = Server(url, tmp_path, "first")
    try:
        accepted = _accept(first, headers, range(30))
    finally:
        first.kill()  # mid-burst: some jobs done, some running under its lease, the rest still queued
    with funes.open(url, embedder=HashEmbedder(64), worker="off") as mem:
        at_kill = [mem.jobs.get(j).status for j in accepted.values()]
    assert at_kill.count("done") < len(at_kill), "the kill came after every job finished: nothing was tested"
    second = Server(url, tmp_path, "second")  # same host: the dead server's running jobs are reclaimed at once
    try:
        jobs = _wait_done(url, list(accepted.values()))
        assert [j.status for j in jobs] == ["done"] * 30, [(j.id, j.status, j.last_error) for j in jobs]
        per_file = _summaries_per_file(url)
        assert len(per_file) == 30
        assert all(sorted(ids) == ["c0", "c1", "c2"] for ids in per_file.values())
        # What the client sees: every file's memories, once.
        listed = httpx.get(
            second.base + "/v1/teams/acme/memories", params={"file_id": "file7"}, headers=headers, timeout=30
        ).json()
        assert sorted(m["entity_id"] for m in listed["items"]) == ["c0", "c1", "c2"]
    finally:
        second.stop()
