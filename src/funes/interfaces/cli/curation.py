"""Curation commands: history (a record's versions), restore (an older version, as a new one), redact, reconcile,
proposals."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .common import State, emit, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(history)
    group.add_command(restore)
    group.add_command(redact)
    group.add_command(reconcile)
    group.add_command(proposals)


@click.command()
@click.argument("memory_id")
@json_option
@pass_state
def history(state: State, memory_id: str, as_json: bool) -> None:
    """Show a memory's versions with their timestamps, newest first."""
    versions = state.reader().versions(memory_id)

    def text_out() -> str:
        lines: list[str] = []
        for v in versions:
            mark = "  (current)" if v.current else ""
            since = f"  valid {v.valid_from:%Y-%m-%d}" if v.valid_from else ""
            until = f"..{v.valid_to:%Y-%m-%d}" if v.valid_to else ""
            lines.append(
                f"version {v.version}  {v.updated_at.isoformat()}  importance {v.importance:.2f}  "
                f"by {v.author}{since}{until}{mark}"
            )
            if v.redacted_at is not None:
                lines.append(f"    [redacted {v.redacted_at.isoformat()}; {v.content_hash}]")
                continue
            lines += [f"    {line}" for line in v.content.splitlines() or [""]]
        return "\n".join(lines)

    emit(as_json, [v.to_dict() for v in versions], text_out)


@click.command()
@click.argument("memory_id")
@click.option("--version", "version", type=int, required=True, help="The version to restore (`funes history ID`).")
@json_option
@pass_state
def restore(state: State, memory_id: str, version: int, as_json: bool) -> None:
    """Make an older version current again; the current text is kept in history."""
    memory = state.funes().restore(memory_id, version)
    emit(
        as_json,
        memory.to_dict(),
        lambda: f"Restored version {version} of {memory.id} as version {memory.version}.",
    )


@click.command()
@click.argument("memory_id")
@click.option(
    "--version", "version", type=int, required=True, help="The earlier version to redact (`funes history ID`)."
)
@json_option
@pass_state
def redact(state: State, memory_id: str, version: int, as_json: bool) -> None:
    """Erase an earlier version's text for good; its number, time and content hash stay for audit."""
    redacted = state.funes().redact_version(memory_id, version)
    emit(
        as_json,
        redacted.to_dict(),
        lambda: f"Redacted version {version} of {memory_id} (kept: its time and {redacted.content_hash}).",
    )


@click.command()
@click.argument("payload", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--scope", "scope", help="The file (project) the entities belong to; default: the payload's scope.")
@click.option("--background", is_flag=True, help="Queue it as a job (run by a worker or `funes jobs run`).")
@json_option
@pass_state
def reconcile(state: State, payload: str, scope: str | None, background: bool, as_json: bool) -> None:
    """Reconcile a file's entity summaries with PAYLOAD (JSON: {"scope", "entities"} or a list; '-' reads stdin)."""
    text = sys.stdin.read() if payload == "-" else Path(payload).read_text(encoding="utf-8")
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="PAYLOAD") from exc
    if isinstance(data, dict) and "entities" not in data:
        # An empty reconcile deletes every summary of the file: it must be said, never implied.
        raise click.BadParameter('the payload object has no "entities" list', param_hint="PAYLOAD")
    entities = data.get("entities") if isinstance(data, dict) else data
    target = scope or (data.get("scope") if isinstance(data, dict) else None) or state.project
    if not target:
        raise click.UsageError('Say which file the entities belong to: --scope FILE_ID, or "scope" in the payload.')
    counts = state.funes().reconcile(target, entities, background=background)
    if "job_id" in counts:
        emit(as_json, counts, f"Queued reconcile job {counts['job_id']}.")
        return
    emit(
        as_json,
        counts,
        "{created} created, {updated} updated, {skipped} skipped, {deleted} deleted ({llm_calls} LLM calls).".format(
            **counts
        ),
    )


@click.group(invoke_without_command=True)
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="Most records to list.")
@json_option
@pass_state
@click.pass_context
def proposals(ctx: click.Context, state: State, limit: int, as_json: bool) -> None:
    """List machine proposals on memories a person wrote or pinned (accept or dismiss each)."""
    if ctx.invoked_subcommand is not None:
        return
    items = state.reader().proposals(limit=limit)

    def text_out() -> str:
        if not items:
            return "No pending proposals."
        lines: list[str] = []
        for m in items:
            p = m.proposal or {}
            lines.append(
                f"{m.id}  (v{m.version}, by {m.written_by}; proposed by {p.get('author')} {p.get('proposed_at')})"
            )
            lines.append(f"  now:      {' '.join(m.content.split())[:200]}")
            lines.append(f"  proposed: {' '.join(str(p.get('content')).split())[:200]}")
            if p.get("reason"):
                lines.append(f"  why:      {p['reason']}")
        lines.append("")
        lines.append("`funes proposals accept ID` makes it the next version; `funes proposals dismiss ID` drops it.")
        return "\n".join(lines)

    emit(as_json, [m.to_dict() for m in items], text_out)


@proposals.command(name="accept")
@click.argument("memory_id")
@json_option
@pass_state
def accept_proposal(state: State, memory_id: str, as_json: bool) -> None:
    """Make a memory's proposal its next version (the current text stays in history)."""
    memory = state.funes().accept_proposal(memory_id)
    emit(as_json, memory.to_dict(), lambda: f"Accepted: {memory.id} is now version {memory.version}.")


@proposals.command(name="dismiss")
@click.argument("memory_id")
@json_option
@pass_state
def dismiss_proposal(state: State, memory_id: str, as_json: bool) -> None:
    """Drop a memory's proposal; the same text is not proposed again."""
    memory = state.funes().dismiss_proposal(memory_id)
    emit(as_json, memory.to_dict(), lambda: f"Dismissed the proposal on {memory.id}; version {memory.version} stays.")
