"""Background work without a server: one short-lived detached worker, started the way ``git gc --auto`` is.

Retention, maintenance every N writes, session retention, insights and
learning are durable jobs (:mod:`funes.memory.jobs`). A long-running process
(``funes serve``, ``mcp``, ``watch``) runs them; a CLI command or a library
script runs none. So when such a process ends with jobs due (or due within
``auto_work_linger_seconds``), it starts ``funes jobs run --auto`` detached:
that worker takes a lock beside the store, so there is never more than one,
drains what is due, waits up to the linger time for jobs about to fall due,
and exits. Nothing stays behind, and the jobs table remains the one source of
background work: a worker that dies leaves its jobs to the next one.

``auto_work = false`` (``FUNES_AUTO_WORK=off``) turns this off for scripts
that want control; ``funes jobs run`` then drains the queue, as from cron.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ..models import config as config_mod
from ..models import utcnow

if TYPE_CHECKING:
    from ..models.config import Config
    from ..store import Store

log = logging.getLogger("funes.jobs")


def lock_path(config: Config) -> Path:
    """The lock the one detached worker of a store holds: beside a SQLite file, in the home for a URL."""
    location = config.db_location
    if isinstance(location, Path):
        return location.with_name(location.name + ".worker.lock")
    digest = hashlib.sha256(str(location).encode("utf-8")).hexdigest()[:16]
    return config_mod.home() / f"worker-{digest}.lock"


@contextmanager
def worker_lock(path: Path) -> Iterator[bool]:
    """Hold the store's worker lock while the block runs; yields False (at once) when another process holds it."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def work_due(store: Store, config: Config) -> bool:
    """Whether a queued job is due now or within the linger time."""
    due = store.next_job_due()
    return due is not None and due <= utcnow() + timedelta(seconds=float(config.auto_work_linger_seconds))


def start_worker(config: Config, store: Store, settings: dict[str, str | None]) -> bool:
    """Start the detached worker when jobs are due and none runs; returns whether one was started.

    ``settings`` are the FUNES_* values the child needs to open the same store
    the same way (the database, the embedder backend): they go into its
    environment, so it reads everything else from the same files.
    """
    if not config.auto_work or not work_due(store, config):
        return False
    path = lock_path(config)
    with worker_lock(path) as free:
        if not free:
            return False  # a worker runs: it picks up what is due
    env = {**os.environ, **{k: v for k, v in settings.items() if v is not None}}
    env["FUNES_AUTO_WORK"] = "off"  # the worker itself never starts another
    log_file = path.with_name(path.name.removesuffix(".lock") + ".log")
    try:
        with open(log_file, "ab") as out:
            child = subprocess.Popen(
                [sys.executable, "-m", "funes", "jobs", "run", "--auto"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # survives the command that started it, and its Ctrl-C
                close_fds=True,
            )
    except OSError as exc:  # no process could be started: the jobs wait for the next chance
        log.warning("could not start the background worker: %s", exc)
        return False
    # Reaped when it exits, should this process live longer than it (no zombie is left behind).
    threading.Thread(target=child.wait, name="funes-worker-reaper", daemon=True).start()
    return True


def drain(
    run_pending: Callable[[], dict[str, int]],
    store: Store,
    config: Config,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, int]:
    """Run due jobs, and stay while work keeps coming; totals per outcome (the detached worker's loop).

    It exits once it has been idle for ``auto_work_linger_seconds`` with no
    job due within that time: a burst of commands is served by one worker, a
    debounced insight due in 30 s is waited for, and nothing stays for long.
    """
    totals = {"done": 0, "retrying": 0, "failed": 0, "taken_over": 0}
    linger = float(config.auto_work_linger_seconds)
    poll = max(0.05, float(config.job_poll_seconds))
    last_work = time.monotonic()
    while True:
        ran = run_pending()
        for outcome, n in ran.items():
            totals[outcome] = totals.get(outcome, 0) + n
        if any(ran.values()):
            last_work = time.monotonic()
            continue  # more may be due already
        due, now = store.next_job_due(), utcnow()
        # A job due in the past that did not run is another kind's, or another worker's: not ours to wait for.
        coming = due is not None and now < due <= now + timedelta(seconds=linger)
        if not coming and time.monotonic() - last_work >= linger:
            return totals
        sleep(min(poll, (due - now).total_seconds()) if coming and due is not None else poll)


__all__ = ["drain", "lock_path", "start_worker", "work_due", "worker_lock"]
