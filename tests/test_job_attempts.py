"""A job never runs more times than its attempt limit, even when each attempt kills its worker (issue 31).

A job whose file made the worker process die (out of memory, say) was claimed
again from the dead worker with no check of its attempts: it ran 10 times of 8.
Each attempt here is a real process that the job's handler kills.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import funes

WORKER = """
import os, sys
import funes
db, counter = sys.argv[1], sys.argv[2]
with funes.open(db, embedder="hash", worker="off") as mem:
    def crash(job):
        with open(counter, "a") as out:
            out.write("ran\\n")
        os._exit(3)  # the worker dies mid-job, as an out-of-memory kill does
    mem.jobs.register("crash", crash)
    mem.jobs.run_pending()
"""


@pytest.mark.parametrize("limit", [1, 3])
def test_a_job_that_kills_its_worker_runs_at_most_its_attempt_limit(store_url: str, tmp_path: Path, limit: int) -> None:
    db, counter = store_url, tmp_path / "runs.txt"
    with funes.open(db, embedder="hash", worker="off") as mem:
        mem.remember("setup")
        job_id = mem.jobs.enqueue("crash", {}, max_attempts=limit)
    for _ in range(limit + 3):
        subprocess.run([sys.executable, "-c", WORKER, db, str(counter)], timeout=120, check=False)
    assert counter.read_text().count("ran") == limit
    with funes.open(db, embedder="hash", worker="off") as mem:
        job = mem.jobs.get(job_id)
        assert job.status == "failed", job
        assert job.attempts == limit and "last allowed attempt" in (job.last_error or "")
