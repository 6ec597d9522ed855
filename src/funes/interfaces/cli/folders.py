"""Memory-folder commands: ``funes folders``, ``sync``, ``status``, ``watch`` and ``memory-tool``.

Only click and the standard library load at start-up; watchdog loads when
``funes watch`` runs.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .common import State, emit, json_option, pass_state, read_text_arg

if TYPE_CHECKING:
    from ...knowledge.folders import Folder, FolderStatus, SyncReport


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    for command in (folders, sync, status, watch, memory_tool, capture, record_task, hooks):
        group.add_command(command)


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at else "never"


def _folder_line(folder: Folder) -> str:
    where = f"project={folder.project_id}" if folder.project_id else folder.scope
    return f"{folder.path}  ({where}; last sync {_when(folder.last_sync_at)})"


def _sync_line(report: SyncReport) -> str:
    d = report.drift
    parts = [f"{len(d.new)} new", f"{len(d.changed)} changed", f"{len(d.removed)} removed", f"{len(d.renamed)} renamed"]
    lines = [f"Synced {report.folder.path}: {', '.join(parts)}, {d.unchanged} unchanged in {report.seconds:.1f}s."]
    lines += [
        f"  failed  {r.name}: {r.error}" + (f"\n          Hint: {r.hint}" if r.hint else "")
        for r in report.ingest.failed
    ]
    return "\n".join(lines)


def _jobs_text(f: Any) -> str | None:
    """One line on background work: queued (how many due now) and failed jobs, and what runs them."""
    from ...models import utcnow

    counts = f.jobs.counts()
    queued, failed = counts.get("queued", 0), counts.get("failed", 0)
    if not queued and not failed:
        return None
    now = utcnow()
    due = sum(1 for j in f.jobs.list(status="queued", limit=1000) if j.run_after <= now)
    runner = (
        "a background worker runs them after each command"
        if f.config.auto_work
        else "auto_work is off: `funes jobs run` runs them now"
    )
    return f"Background jobs: {queued} queued ({due} due now), {failed} failed; {runner}" + (
        " (`funes jobs list --status failed`, `funes jobs retry ID`)." if failed else "."
    )


def _status_text(found: list[FolderStatus]) -> str:
    if not found:
        return "No memory folders. Register one with `funes folders add PATH` (default: .funes/memory)."
    out = []
    for s in found:
        d = s.drift
        state = "in sync" if d.total == 0 else f"DRIFT: {d.total} file(s) not yet indexed"
        out.append(f"{s.folder.path}  {state}; last sync {_when(s.folder.last_sync_at)}")
        if not s.exists:
            out.append("  the folder does not exist (a sync removes its notes from the index)")
        for label, paths in (("new", d.new), ("changed", d.changed), ("removed", d.removed)):
            out += [f"  {label:<8} {p}" for p in paths]
        out += [f"  renamed  {a} -> {b}" for a, b in d.renamed]
        out += [f"  failed   {p}" for p in d.failed]
        if s.queued_jobs:
            out.append(f"  {s.queued_jobs} folder-sync job(s) queued (`funes jobs run` runs them now)")
    if any(s.drift.total for s in found):
        out.append("Run `funes sync` to index the drift now, or keep `funes watch` running.")
    return "\n".join(out)


@click.group()
def folders() -> None:
    """Markdown memory folders kept in sync with the index: add, list, rm."""


@folders.command(name="add")
@click.argument("path", required=False)
@json_option
@pass_state
def folders_add(state: State, path: str | None, as_json: bool) -> None:
    """Register a folder (default: .funes/memory under the project root) and sync it."""
    f = state.funes()
    folder = f.add_folder(path, project=state.project)
    [report] = f.sync(folder.path)
    emit(as_json, {"folder": folder.to_dict(), "sync": report.to_dict()}, lambda: _sync_line(report))


@folders.command(name="list")
@json_option
@pass_state
def folders_list(state: State, as_json: bool) -> None:
    """List registered folders with their last sync time."""
    found = state.reader().folders()
    emit(as_json, [x.to_dict() for x in found], lambda: "\n".join(map(_folder_line, found)) or "No memory folders.")


@folders.command(name="rm")
@click.argument("path")
@click.option("--forget", is_flag=True, help="Also remove the folder's notes from the index.")
@json_option
@pass_state
def folders_rm(state: State, path: str, forget: bool, as_json: bool) -> None:
    """Stop syncing a folder (its notes stay indexed unless --forget)."""
    folder = state.reader().remove_folder(path, forget_documents=forget)
    emit(as_json, folder.to_dict(), f"Stopped syncing {folder.path}" + (" and removed its notes." if forget else "."))


@click.command()
@click.argument("path", required=False)
@json_option
@pass_state
def sync(state: State, path: str | None, as_json: bool) -> None:
    """Reconcile memory folders with the index now (PATH, else every registered folder)."""
    reports = state.funes().sync(path)
    emit(as_json, [r.to_dict() for r in reports], lambda: "\n".join(map(_sync_line, reports)))
    if any(r.ingest.failed for r in reports):
        sys.exit(1)


@click.command()
@click.argument("path", required=False)
@json_option
@pass_state
def status(state: State, path: str | None, as_json: bool) -> None:
    """Show each memory folder's drift (files not yet indexed) and last sync time."""
    f = state.reader()
    found = f.folder_status(path)
    emit(as_json, [s.to_dict() for s in found], lambda: "\n".join(filter(None, [_status_text(found), _jobs_text(f)])))


@click.command()
@click.argument("path", required=False)
@click.option("--debounce", type=float, help="Seconds changes must settle before a sync (default 1).")
@json_option
@pass_state
def watch(state: State, path: str | None, debounce: float | None, as_json: bool) -> None:
    """Keep memory folders indexed as files change, until Ctrl-C (reconciles on start).

    Each settled batch of changes is a folder-sync job run by this process;
    --json prints one JSON line per batch on stdout.
    """
    from ...knowledge.folders import debounce_seconds

    if debounce is not None:
        debounce = debounce_seconds(debounce)  # before anything is registered: bad input changes nothing
    f = state.funes(worker="on")
    if path is not None and not any(Path(x.path) == Path(path).expanduser().resolve() for x in f.folders()):
        # `funes watch DIR` on a folder nobody registered: register it first, and say so (the start reconciles it).
        folder = f.add_folder(path, project=state.project)
        where = f"project {folder.project_id}" if folder.project_id else "team"
        click.echo(
            f"Registered {folder.path} as a memory folder ({where} scope); `funes folders rm` forgets it.", err=True
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def told(folder: Folder, reason: str) -> None:
        if as_json:
            click.echo(json.dumps({"at": datetime.now().isoformat(), "folder": folder.path, "reason": reason}))
        click.echo(f"{datetime.now():%H:%M:%S} sync queued for {folder.path} ({reason})", err=True)

    def trouble(folder: Folder, line: str) -> None:
        click.echo(f"{datetime.now():%H:%M:%S} {line}", err=True)

    click.echo("Watching; Ctrl-C stops.", err=True)
    try:
        f.watch(path, stop=stop, debounce=debounce, on_batch=told, on_problem=trouble)
    except KeyboardInterrupt:
        stop.set()


@click.command(name="memory-tool")
@click.argument("command_json", required=False)
@click.option("--folder", help="Memory folder (default: .funes/memory under the project root).")
@json_option
@pass_state
def memory_tool(state: State, command_json: str | None, folder: str | None, as_json: bool) -> None:
    """Run one Claude memory-tool call (a JSON object, or piped) and print its result (exit 1 on an error)."""
    text = read_text_arg(command_json, "memory-tool call (JSON)")
    try:
        command: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(
            f'The call is not JSON ({exc.msg}); send e.g. {{"command": "view", "path": "/memories"}}.'
        ) from exc
    out = state.funes().memory_tool(command, folder=folder)
    emit(as_json, {"result": out, "is_error": out.startswith("Error: ")}, out)
    if out.startswith("Error: "):
        sys.exit(1)


@click.command()
@click.argument("text", required=False)
@click.option("--to-markdown", is_flag=True, help="Also append each memory to today's file in the memory folder.")
@click.option("--folder", help="Memory folder for --to-markdown (default: .funes/memory under the project root).")
@json_option
@pass_state
def capture(state: State, text: str | None, to_markdown: bool, folder: str | None, as_json: bool) -> None:
    """Remember the <save_memory>...</save_memory> tags in TEXT (or piped text, e.g. a model's reply)."""
    body = read_text_arg(text, "text with <save_memory> tags")
    results = state.funes().capture(body, project=state.project, to_markdown=to_markdown, folder=folder)
    lines = [f"{r.status} {r.memory.id}: {r.memory.content[:80]}" if r.memory else f"error: {r.error}" for r in results]
    emit(as_json, [r.to_dict() for r in results], "\n".join(lines) or "No <save_memory> tags found.")
    if any(r.status == "error" for r in results):
        sys.exit(1)


def _read_file(path: str | None, what: str) -> str:
    if path is None:
        return ""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path} ({exc.strerror})", param_hint=what) from exc


@click.command(name="record-task")
@click.option("--task", required=True, help="What the task was.")
@click.option("--result", type=click.Choice(["ok", "failed"]), help="How it ended (default: from --exit-code).")
@click.option("--exit-code", type=int, help="The task's exit code.")
@click.option("--stdout", "stdout_file", help="File holding the task's output ('-' for stdin), analysed for insights.")
@click.option("--stderr", "stderr_file", help="File holding the task's errors ('-' for stdin); kept in the summary.")
@click.option("--folder", help="Memory folder (default: .funes/memory under the project root).")
@json_option
@pass_state
def record_task(
    state: State,
    task: str,
    result: str | None,
    exit_code: int | None,
    stdout_file: str | None,
    stderr_file: str | None,
    folder: str | None,
    as_json: bool,
) -> None:
    """Append a task summary (commit, `git diff HEAD` files with hunk counts, result, errors) to today's file."""
    record = state.funes().record_task(
        task,
        result=result,
        exit_code=exit_code,
        stdout=_read_file(stdout_file, "--stdout"),
        stderr=_read_file(stderr_file, "--stderr"),
        folder=folder,
        project=state.project,
    )

    def text() -> str:
        lines = [f"Recorded task {record.task_id} in {record.path} ({len(record.changes)} changed file(s))."]
        lines += [f"  insight [{m.metadata.get('category')}] {m.content}" for m in record.insights]
        lines += [f"  note: {w}" for w in record.warnings]
        return "\n".join(lines)

    emit(as_json, record.to_dict(), text)


@click.group()
def hooks() -> None:
    """Coding-agent hooks: install them (claude-code), or run one (what the agent calls)."""


@hooks.command(name="install")
@click.argument("agent", type=click.Choice(["claude-code"]))
@click.option("--print", "print_only", is_flag=True, help="Print the settings instead of writing them.")
@click.option("--project-dir", help="Project whose .claude/settings.json to change (default: the git root).")
@json_option
@pass_state
def hooks_install(state: State, agent: str, print_only: bool, project_dir: str | None, as_json: bool) -> None:
    """Add SessionStart, Stop and SessionEnd hooks that run Funes to the project's Claude Code settings."""
    path, settings = state.reader().install_claude_code(project_dir, write=not print_only)
    if print_only or as_json:
        click.echo(json.dumps(settings, indent=2))
    else:
        click.echo(f"Added the Funes hooks (SessionStart, Stop, SessionEnd) to {path}.")


@hooks.command(name="run")
@click.argument("event", type=click.Choice(["session-start", "stop", "session-end"]))
@pass_state
def hooks_run(state: State, event: str) -> None:
    """Handle one hook event with the JSON the agent passes on stdin (prints the hook's JSON reply)."""
    raw = sys.stdin.read() if sys.stdin is not None and not sys.stdin.isatty() else ""
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"The hook input on stdin is not JSON ({exc.msg}).") from exc
    reply = state.funes().run_hook(event, payload)
    if reply.get("output"):
        click.echo(json.dumps(reply["output"]))  # stdout is the agent's channel: only what it should read
