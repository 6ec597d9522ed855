"""Cleanup commands: clear (a session, a project or everything) and cleanup-log."""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import State, emit, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(clear)
    group.add_command(cleanup_log)


def stdin_is_tty() -> bool:
    """Whether someone can answer a prompt (stdin is a terminal)."""
    return sys.stdin is not None and sys.stdin.isatty()


def _counts(report: dict[str, Any]) -> str:
    return (
        f"{report['records']} records, {report['vectors']} vectors, {report['messages']} messages, "
        f"{report['sessions']} sessions, {report['documents']} documents"
    )


@click.command()
@click.option("--session", "session_id", help="Clear this session: its records, messages and usage.")
@click.option("--project", "project_id", help="Clear this project: its records, documents and sessions.")
@click.option("--all", "everything", is_flag=True, help="Clear everything of the tenant.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed when stdin is not a terminal).")
@click.option("--dry-run", is_flag=True, help="Only count what would be removed.")
@json_option
@pass_state
def clear(
    state: State,
    session_id: str | None,
    project_id: str | None,
    everything: bool,
    yes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Remove a session, a project or everything, then reclaim the disk space.

    Removes records (pinned ones too), their vectors and keyword entries,
    sessions with their messages and usage, and documents; team records stay
    when a project is cleared. Asks you to type the session id, the project
    name or 'all' to confirm, unless --yes. Each clear is logged
    (`funes cleanup-log`).
    """
    chosen = [v for v in (session_id, project_id, "all" if everything else None) if v]
    if len(chosen) != 1:
        raise click.UsageError("Say what to clear: exactly one of --session ID, --project NAME or --all.")
    word = chosen[0]
    target = {"session": session_id, "project": project_id, "all": everything}
    f = state.reader()
    preview = f.clear(**target, dry_run=True)
    if dry_run:
        emit(as_json, preview, f"Would remove {_counts(preview)}.")
        return
    if not yes:
        if not stdin_is_tty():
            raise click.UsageError(
                "`funes clear` asks you to confirm, but stdin is not a terminal. "
                "Pass --yes to clear without asking (--dry-run shows what would go)."
            )
        what = "everything" if everything else f"{'session' if session_id else 'project'} {word!r}"
        click.echo(f"This removes {what}: {_counts(preview)}. It cannot be undone.", err=True)
        answer = click.prompt(f"Type {word!r} to confirm", default="", show_default=False, err=True)
        if answer.strip() != word:
            click.echo("Not confirmed; nothing was removed.", err=True)
            sys.exit(1)
    report = f.clear(**target)

    def text_out() -> str:
        line = f"Removed {_counts(report)}."
        if report.get("bytes_before") is not None:
            line += f" Database {report['bytes_before']:,} -> {report['bytes_after']:,} bytes."
        elif report.get("reclaim_error"):
            line += f" Space not reclaimed yet: {report['reclaim_error']['message']}"
        return line

    emit(as_json, report, text_out)


@click.command(name="cleanup-log")
@click.option("--limit", "-n", type=click.IntRange(1, 10_000), default=50, show_default=True, help="Rows to show.")
@json_option
@pass_state
def cleanup_log(state: State, limit: int, as_json: bool) -> None:
    """Show the cleanup log: clears, cleared sessions and retention runs, newest first."""
    rows = state.reader().cleanup_log(limit=limit)

    def text_out() -> str:
        if not rows:
            return "The cleanup log is empty."
        lines = []
        for r in rows:
            target = r["session_id"] or r["project_id"] or ""
            lines.append(
                f"{r['at'][:19]}  {r['scope'] or '-':<8} {target:<20} records={r['records_deleted']} "
                f"messages={r['messages_deleted']} kept={r['records_kept']} reclaimed={r['bytes_reclaimed']:,}B  "
                f"{r['reason']}"
            )
        return "\n".join(lines)

    emit(as_json, rows, text_out)
