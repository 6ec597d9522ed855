"""The durable job runner: one jobs table, one worker, every kind of background work.

Background work (vectors that wait for an embedding server, and later
watcher batches, maintenance, insights, retention and the server's 202
work) is a row in the store's ``jobs`` table, written in the same transaction
as the change that causes it. Nothing in the background lives only in memory.

A **handler** is registered per job kind. It runs in two phases, so that slow
work never holds the write lock and a job's effect is never applied twice:

1. ``handler(job)`` computes outside any transaction (embeds, reads a file,
   calls an LLM) and returns ``apply``, a callable that makes the writes;
2. the runner calls ``apply()`` and marks the job done in ONE transaction.
   If this worker lost its lease meanwhile (it stalled and another worker
   took the job over), the transaction rolls back: the other worker's run is
   the one that counts. If the job's tenant forgot anything since the job
   started, it rolls back too and the job is queued again: what it read may
   be forgotten text (docs/forgetting.md).

A process killed mid-job leaves the job ``running`` under its lease: it is
claimed again once the lease expires, or at once by the next worker on the
same host when the dead worker's process is gone. Failures are retried with
exponential backoff (``job_backoff_seconds`` doubling up to
``job_backoff_max_seconds``) and recorded with their error; after
``job_max_attempts`` the job is ``failed`` and stays listed until retried.
An unreachable backend is an outage, not a failure of the job: such jobs
are retried for as long as it lasts, and vectors jobs are run at once when
the embedder answers again.

Who runs jobs: long-running processes (``funes mcp``, later ``funes watch``
and ``funes serve``) start the worker thread; ``funes jobs run`` drains the
queue (for cron); a library process starts the worker when it queues a job
(``worker="auto"``, the default of :func:`funes.open`); a short CLI command
never waits for jobs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, ForgetCrossed, InvalidInput, NotFound
from ..models import JOB_STATUSES, Job, to_epoch, utcnow
from ..store.consistency import read_at
from ..store.tenancy import acting_for

if TYPE_CHECKING:
    from .core import Core

log = logging.getLogger("funes.jobs")

JobHandler = Callable[[Job], Callable[[], Any]]
WORKER_MODES = ("auto", "on", "off")
_HOUSEKEEPING_SECONDS = 600.0  # how often a worker trims old finished jobs
SCHEDULED_TENANT = "*"  # the tenant of store-wide scheduled jobs


class LeaseLost(Exception):
    """This worker no longer holds the job (another worker took it over); its writes are rolled back."""


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


class Jobs:
    """Queue, run and inspect durable background jobs (a feature service over the core)."""

    def __init__(self, core: Core, *, worker: str = "off") -> None:
        if worker not in WORKER_MODES:
            raise InvalidInput(f"Invalid worker mode {worker!r}.", hint=f"Use one of: {', '.join(WORKER_MODES)}.")
        self.core = core
        self.store = core.store
        self.config = core.config
        self.host = socket.gethostname()
        self.worker_id = f"{self.host}:{os.getpid()}:{secrets.token_hex(4)}"
        self.mode = worker
        self._handlers: dict[str, JobHandler] = {}
        self._schedules: dict[str, Callable[[], float]] = {}
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._last_housekeeping = 0.0
        core.on_job_queued = self._job_queued
        self.register("vectors", core.vectors_job)
        self.register("ann-index", core.index_job)

    # -- handlers and queueing ---------------------------------------------------------
    def register(self, kind: str, handler: JobHandler) -> None:
        """Handle jobs of ``kind`` in this process (see the module docstring for the two phases)."""
        self._handlers[kind] = handler

    def schedule(self, kind: str, every: Callable[[], float], handler: JobHandler) -> None:
        """Run ``kind`` every ``every()`` seconds (0 or less: never), store-wide, as a durable job.

        The next run is a queued job (tenant ``*``) written in the same
        transaction that applies this run, so a crash never loses the
        schedule; long-running workers and ``funes jobs run`` queue the first
        one (:meth:`ensure_scheduled`).
        """

        def run(job: Job) -> Callable[[], Any]:
            apply = handler(job)

            def apply_and_reschedule() -> Any:
                result = apply()
                interval = float(every())
                if interval > 0:
                    self.core.enqueue_job(kind, {}, tenant=SCHEDULED_TENANT, delay=interval, dedupe_key=f"every:{kind}")
                return result

            return apply_and_reschedule

        self._schedules[kind] = every
        self.register(kind, run)

    def ensure_scheduled(self) -> list[str]:
        """Queue the first run of each scheduled kind that has none queued or running; returns the kinds queued."""
        queued = []
        for kind, every in self._schedules.items():
            if float(every()) <= 0:
                continue
            pending = [
                j for status in ("queued", "running") for j in self.store.list_jobs(None, status=status, kind=kind)
            ]
            if not pending:
                self.core.enqueue_job(kind, {}, tenant=SCHEDULED_TENANT, dedupe_key=f"every:{kind}")
                queued.append(kind)
        return queued

    @property
    def kinds(self) -> list[str]:
        """The job kinds this process can run."""
        return sorted(self._handlers)

    def enqueue(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        tenant: str | None = None,
        delay: float = 0.0,
        dedupe_key: str | None = None,
        max_attempts: int | None = None,
    ) -> str:
        """Queue a job (inside the caller's store transaction when there is one); returns its id."""
        return self.core.enqueue_job(
            kind, payload or {}, tenant=tenant, delay=delay, dedupe_key=dedupe_key, max_attempts=max_attempts
        )

    def _job_queued(self) -> None:
        self._wake.set()
        if self.mode == "auto":
            self.start()

    # -- running ---------------------------------------------------------------------------
    def _dead_workers(self) -> list[str]:
        """Workers of this host holding running jobs whose process is gone (their jobs are claimable now)."""
        dead = []
        for worker in self.store.running_workers():
            host, _, rest = worker.partition(":")
            pid = rest.split(":", 1)[0]
            if host == self.host and pid.isdigit() and worker != self.worker_id and not _process_alive(int(pid)):
                dead.append(worker)
        return dead

    def run_one(self, *, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> Job | None:
        """Claim and run one ready job (not one of ``exclude``); returns it as it ended (None: nothing ready)."""
        wanted = [k for k in (kinds or self._handlers) if k in self._handlers]
        if not wanted:
            return None
        lease = float(self.config.job_lease_seconds)
        job = self.store.claim_job(
            self.worker_id,
            now=utcnow(),
            lease_seconds=lease,
            kinds=wanted,
            dead_workers=self._dead_workers(),
            exclude=exclude,
        )
        if job is None:
            return None
        started = to_epoch(utcnow())  # what the job reads is read from now on
        stop_heartbeat = threading.Event()
        heartbeat = threading.Thread(
            target=self._heartbeat, args=(job.id, lease, stop_heartbeat), name="funes-job-lease", daemon=True
        )
        heartbeat.start()
        try:
            # Row-level security (Postgres) sees the job's tenant for every read and write of the run.
            # A forget of the tenant since the job started: its reads may hold what was forgotten (a learned fact
            # of a forgotten message, a cache row of a forgotten text), so nothing it made is written
            # (ForgetCrossed: the job is given back and runs again from what remains).
            with acting_for(job.tenant), read_at(started):
                apply = self._handlers[job.kind](job)
                with self.store.unforgotten_write(job.tenant, started, f"job {job.id} ({job.kind}) ran"):
                    result = apply()
                    if not self.store.finish_job(job.id, self.worker_id, result, now=utcnow()):
                        raise LeaseLost(job.id)
        except LeaseLost:
            log.warning(
                "job %s (%s) was taken over by another worker; this run's writes were rolled back", job.id, job.kind
            )
        except ForgetCrossed:
            log.info("job %s (%s) ran across a forget; its writes were rolled back, it runs again", job.id, job.kind)
            now = utcnow()
            self.store.fail_job(
                job.id, self.worker_id, "a forget ran meanwhile; run again", now=now, retry_at=now, counted=False
            )
        except Exception as exc:
            self._failed(job, exc)
        finally:
            stop_heartbeat.set()
            heartbeat.join()
        return self.store.get_job(job.id)

    def _heartbeat(self, job_id: str, lease: float, stop: threading.Event) -> None:
        while not stop.wait(lease / 3):
            try:
                if not self.store.extend_job_lease(job_id, self.worker_id, utcnow() + timedelta(seconds=lease)):
                    return
            except Exception:  # a busy store delays the renewal; the next beat tries again
                log.debug("could not renew the lease of job %s", job_id, exc_info=True)

    def _failed(self, job: Job, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        permanent = isinstance(exc, (InvalidInput, NotFound))
        # An unreachable backend (the embedding server, a busy store) is an
        # outage, not a bad job: it is retried (at most every
        # job_backoff_max_seconds) for as long as the outage lasts.
        outage = isinstance(exc, BackendUnavailable)
        retry_at = None
        if not permanent and (outage or job.attempts < job.max_attempts):
            base = float(self.config.job_backoff_seconds) * 2 ** max(job.attempts - 1, 0)
            wait = min(base, float(self.config.job_backoff_max_seconds)) * random.uniform(0.9, 1.1)
            retry_at = utcnow() + timedelta(seconds=wait)
        log.log(
            logging.WARNING if retry_at is None else logging.INFO,
            "job %s (%s) attempt %d/%d failed: %s%s",
            job.id,
            job.kind,
            job.attempts,
            job.max_attempts,
            error,
            "" if retry_at is None else f"; retrying at {retry_at.isoformat()}",
        )
        self.store.fail_job(job.id, self.worker_id, error[:2000], now=utcnow(), retry_at=retry_at)

    def run_pending(
        self, *, max_jobs: int | None = None, max_seconds: float | None = None, kinds: Sequence[str] | None = None
    ) -> dict[str, int]:
        """Run the ready jobs once each (a job that fails waits for its next turn); counts per outcome.

        Each job is tried at most once per call, so a drain during an outage
        ends instead of retrying the same jobs for as long as it lasts.
        """
        started = time.monotonic()
        counts = {"done": 0, "retrying": 0, "failed": 0, "taken_over": 0}
        tried: list[str] = []
        while max_jobs is None or sum(counts.values()) < max_jobs:
            if max_seconds is not None and time.monotonic() - started > max_seconds:
                break
            job = self.run_one(kinds=kinds, exclude=tried)
            if job is None:
                break
            tried.append(job.id)
            if job.status == "done":
                counts["done"] += 1
            elif job.status == "failed":
                counts["failed"] += 1
            elif job.status == "queued":
                counts["retrying"] += 1
            else:
                counts["taken_over"] += 1
        return counts

    # -- the worker thread -------------------------------------------------------------------
    def start(self) -> None:
        """Start this process's worker thread (once); it runs jobs until :meth:`stop`."""
        if self._thread is not None and self._thread.is_alive():
            return
        with self._thread_lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="funes-jobs", daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        """Whether this process's worker thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        poll = max(0.05, float(self.config.job_poll_seconds))
        if self.mode == "on":  # a long-running process keeps the schedules going
            try:
                self.ensure_scheduled()
            except Exception as exc:
                # One line, not a traceback (issue 31: a watcher under churn printed 20); details at debug level.
                log.warning(
                    "could not queue the scheduled jobs (%s: %s); they are queued at the next start",
                    type(exc).__name__,
                    exc,
                )
                log.debug("scheduled jobs", exc_info=True)
        while not self._stop.is_set():
            try:
                self._housekeeping()
                job = self.run_one()
            except Exception as exc:  # the store may be busy or closing; never let the worker die of it
                if self._stop.is_set():
                    # Closing while a job ran: its lease lets a later worker run it again, so nothing is lost.
                    log.info("the job worker stopped mid-job; the job runs again under a new lease")
                    break
                log.warning("the job worker hit an error and carries on (%s: %s)", type(exc).__name__, exc)
                log.debug("job worker", exc_info=True)
                job = None
            if job is None:
                self._wake.wait(poll)
                self._wake.clear()

    def _housekeeping(self) -> None:
        if time.monotonic() - self._last_housekeeping < _HOUSEKEEPING_SECONDS:
            return
        self._last_housekeeping = time.monotonic()
        keep = timedelta(days=float(self.config.job_keep_days))
        self.store.trim_jobs(utcnow() - keep)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker thread, letting the job in hand finish (up to ``timeout`` seconds).

        A job still running after that is left under its lease and claimed
        again later: stopping never loses work.
        """
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        with contextlib.suppress(RuntimeError):
            thread.join(timeout)
        self._thread = None

    def hand_off(self, settings: dict[str, str | None]) -> bool:
        """When this process runs no worker and leaves jobs due, start the store's detached one (memory.autowork).

        ``settings`` (FUNES_* values) let the child open the same store the same
        way. Never fails the caller: a worker that cannot start leaves the jobs
        queued for the next chance or ``funes jobs run``.
        """
        if self.mode == "on":
            return False
        from .autowork import start_worker

        try:
            return start_worker(self.config, self.store, settings)
        except Exception:  # the store is closing or busy: the jobs stay queued, nothing is lost
            log.warning("could not hand the due jobs to a background worker", exc_info=True)
            return False

    # -- visibility ---------------------------------------------------------------------------
    def list(
        self, *, tenant: str | None = None, status: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[Job]:
        """Jobs, newest first (all tenants unless one is named)."""
        if status is not None and status not in JOB_STATUSES:
            raise InvalidInput(f"Invalid job status {status!r}.", hint=f"Use one of: {', '.join(JOB_STATUSES)}.")
        if not 1 <= int(limit) <= 1000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
        return self.store.list_jobs(tenant, status=status, kind=kind, limit=int(limit))

    def get(self, job_id: str) -> Job:
        """A job by id."""
        job = self.store.get_job(job_id)
        if job is None:
            raise NotFound(f"No job with id {job_id!r}.", hint="`funes jobs list` shows jobs.")
        return job

    def retry(self, job_id: str) -> Job:
        """Queue a failed job again, with fresh attempts."""
        job = self.get(job_id)
        if job.status not in ("failed", "done"):
            raise InvalidInput(
                f"Job {job_id} is {job.status}; only failed or done jobs can be retried.",
                hint="A queued or running job runs on its own; `funes jobs run` runs ready jobs now.",
            )
        retried = self.store.retry_job(job_id, now=utcnow())
        assert retried is not None
        self._job_queued()
        return retried

    def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Jobs per status."""
        return self.store.job_counts(tenant)
