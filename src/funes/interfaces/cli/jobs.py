"""Background job commands: jobs list, show, retry, run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .common import State, emit, json_option, pass_state

if TYPE_CHECKING:
    from ...models import Job

STATUSES = ("queued", "running", "done", "failed")


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(jobs)


def _line(job: Job) -> str:
    when = job.finished_at or job.run_after
    error = f"  error: {job.last_error}" if job.last_error and job.status != "done" else ""
    return (
        f"{job.id}  {job.status:<8} {job.kind:<12} attempts {job.attempts}/{job.max_attempts}  "
        f"{when.isoformat(timespec='seconds')}{error}"
    )


def _describe(job: Job) -> str:
    data = job.to_dict()
    return "\n".join(f"{key + ':':<13} {value}" for key, value in data.items() if value not in (None, {}, ""))


@click.group()
def jobs() -> None:
    """Durable background jobs: list them, show one, retry a failed one, run ready ones now."""


@jobs.command(name="list")
@click.option("--status", type=click.Choice(STATUSES), help="Only jobs in this status.")
@click.option("--kind", help="Only jobs of this kind (e.g. vectors).")
@click.option("--limit", "-n", type=int, default=50, show_default=True, help="Most jobs to list.")
@json_option
@pass_state
def jobs_list(state: State, status: str | None, kind: str | None, limit: int, as_json: bool) -> None:
    """Jobs, newest first, with their status, attempts and last error."""
    f = state.reader()
    found = f.jobs.list(status=status, kind=kind, limit=limit)
    counts = f.jobs.counts()

    def text() -> str:
        if not found:
            return "No jobs." if not status else f"No {status} jobs."
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        return "\n".join([*(_line(j) for j in found), f"({summary})"])

    emit(as_json, {"jobs": [j.to_dict() for j in found], "counts": counts}, text)


@jobs.command(name="show")
@click.argument("job_id")
@json_option
@pass_state
def jobs_show(state: State, job_id: str, as_json: bool) -> None:
    """One job with every field: payload, attempts, lease, error, result."""
    job = state.reader().jobs.get(job_id)
    emit(as_json, job.to_dict(), lambda: _describe(job))


@jobs.command(name="retry")
@click.argument("job_ids", nargs=-1, required=True)
@json_option
@pass_state
def jobs_retry(state: State, job_ids: tuple[str, ...], as_json: bool) -> None:
    """Queue failed jobs again with fresh attempts (a long-running process or `funes jobs run` runs them)."""
    f = state.reader()
    retried = [f.jobs.retry(i) for i in job_ids]
    emit(
        as_json,
        {"retried": [j.to_dict() for j in retried]},
        lambda: "\n".join(f"Queued {j.id} ({j.kind}) again." for j in retried),
    )


@jobs.command(name="run")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Stop after this many jobs.")
@click.option("--max-seconds", type=click.FloatRange(min=0), help="Stop starting new jobs after this many seconds.")
@click.option("--kind", "kinds", multiple=True, help="Only jobs of this kind (repeatable).")
@click.option(
    "--auto",
    is_flag=True,
    help="Be the store's one detached worker: exit at once if another runs, else drain what is due "
    "(waiting auto_work_linger_seconds for jobs about to fall due) and exit.",
)
@json_option
@pass_state
def jobs_run(
    state: State, max_jobs: int | None, max_seconds: float | None, kinds: tuple[str, ...], auto: bool, as_json: bool
) -> None:
    """Run the ready jobs now and exit (for cron); jobs that fail again wait for their backoff.

    Also queues the scheduled jobs (session retention) that are due and have none queued.
    """
    f = state.funes()
    if auto:
        from ...memory.autowork import drain, lock_path, worker_lock

        with worker_lock(lock_path(f.config)) as mine:
            if not mine:
                emit(as_json, {"skipped": "another worker runs"}, "Another worker runs; nothing to do.")
                return
            f.jobs.ensure_scheduled()
            counts = drain(lambda: f.run_jobs(kinds=list(kinds) or None), f.store, f.config)
    else:
        f.jobs.ensure_scheduled()
        counts = f.run_jobs(max_jobs=max_jobs, max_seconds=max_seconds, kinds=list(kinds) or None)
    left = f.jobs.counts()
    data = {**counts, "queued": left.get("queued", 0), "failed_total": left.get("failed", 0)}
    emit(
        as_json,
        data,
        lambda: (
            f"Ran {sum(counts.values())} jobs: {counts['done']} done, {counts['retrying']} to retry, "
            f"{counts['failed']} failed. {data['queued']} queued."
        ),
    )
