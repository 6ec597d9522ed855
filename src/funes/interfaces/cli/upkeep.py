"""Maintenance and curation commands: maintain, duplicates, stale, related and insights."""

from __future__ import annotations

import json
from typing import Any

import click

from .common import State, emit, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    for command in (maintain, duplicates, stale, related, insights, learn):
        group.add_command(command)


@click.command()
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@json_option
@pass_state
def maintain(state: State, dry_run: bool, as_json: bool) -> None:
    """Purge expired memories, prune stale ones, merge near-duplicates and optimise the indexes, now.

    The same run happens in the background every `maintain_every_writes`
    writes. Pinned memories are never removed. Each run that removes
    anything writes a cleanup-log row (`funes cleanup-log`).
    """
    report = state.funes().maintain(dry_run=dry_run)

    def text() -> str:
        if dry_run:
            return (
                f"Would remove {len(report['expired'])} expired, {len(report['stale'])} stale and "
                f"{len(report['duplicates'])} duplicate memories, and evict {len(report['evict'])} over retention limits."
            )
        removed = report["removed"]
        optimized = report.get("optimize", {})
        tail = " Space reclaimed." if optimized.get("vacuumed") else ""
        return (
            f"Removed {removed['expired']} expired, {removed['stale']} stale and {removed['duplicates']} "
            f"duplicate memories, evicted {removed['evicted']} over retention limits; indexes optimised.{tail}"
        )

    emit(as_json, report, text)


@click.command()
@click.option(
    "--threshold", type=click.FloatRange(0.5, 1.0), help="Cosine from which two memories count (default 0.95)."
)
@json_option
@pass_state
def duplicates(state: State, threshold: float | None, as_json: bool) -> None:
    """List near-duplicate memories and which of each pair maintenance would keep."""
    pairs = state.funes().find_duplicates(threshold=threshold)
    data: dict[str, Any] = {"pairs": [p.to_dict() for p in pairs]}
    emit(
        as_json,
        data,
        lambda: (
            "\n".join(f"{p.similarity:.3f}  keep {p.keep.id}  drop {p.drop.id}  {p.drop.content[:60]!r}" for p in pairs)
            or "No near-duplicates."
        ),
    )


@click.command()
@click.option("--project", "project_id", help="Only documents of this project (file).")
@json_option
@pass_state
def stale(state: State, project_id: str | None, as_json: bool) -> None:
    """List documents whose source file changed or vanished after they were indexed."""
    found = state.funes().find_stale(project=project_id)
    emit(
        as_json,
        {"stale": found},
        lambda: "\n".join(f"{d['uri']}: {d['reason']} (fix: {d['fix']})" for d in found) or "Nothing is stale.",
    )


@click.command()
@click.argument("document")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Documents to list.")
@json_option
@pass_state
def related(state: State, document: str, limit: int, as_json: bool) -> None:
    """List the documents nearest in content to DOCUMENT (an id, path or name)."""
    found = state.funes().find_related(document, limit=limit)
    emit(
        as_json,
        {"related": found},
        lambda: (
            "\n".join(f"{d['similarity']:.3f}  {d['name']}  ({d['document']})" for d in found)
            or "No other documents with vectors."
        ),
    )


@click.command()
@click.argument("session")
@click.option("--background", is_flag=True, help="Queue it as a job instead of waiting.")
@json_option
@pass_state
def insights(state: State, session: str, background: bool, as_json: bool) -> None:
    """Learn SESSION's insight: one memory per topic, merged across chats (or say why the chat was skipped)."""
    result = state.funes().process_chat(session, background=background)
    data = {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in result.items()}

    def text() -> str:
        if "job_id" in result:
            return f"Queued {result['job_id']} (`funes jobs show {result['job_id']}`)."
        if result["status"] == "skipped":
            return f"Skipped: {result['reason']}."
        memory = result["memory"]
        verb = "Merged into" if result["status"] == "merged" else "Created"
        return f"{verb} {memory.id} on topic {result['topic']!r}: {memory.content[:120]}"

    emit(as_json, data, text)


@click.command()
@click.argument("session", required=False)
@click.option(
    "--messages",
    "messages_file",
    type=click.File("r", encoding="utf-8"),
    help="A JSON list of messages instead of a session ('-' for stdin).",
)
@json_option
@pass_state
def learn(state: State, session: str | None, messages_file: Any, as_json: bool) -> None:
    """Learn facts, preferences and decisions from SESSION's user turns (or from --messages FILE).

    A restatement is skipped, a changed statement (moved, switched vendor,
    changed a preference) replaces the old memory as its new version, and
    anything else is added. Nothing is deleted.
    """
    if (session is None) == (messages_file is None):
        raise click.UsageError("Give a SESSION id or --messages FILE (a JSON list of {role, content}).")
    if messages_file is not None:
        try:
            source = json.loads(messages_file.read())
        except ValueError as exc:
            raise click.UsageError(f"--messages is not JSON: {exc}") from exc
    else:
        source = session
    result = state.funes().learn(source)
    data = {
        action: [{**item, "memory": item["memory"].to_dict()} for item in items] for action, items in result.items()
    }

    def text() -> str:
        lines = []
        for action in ("added", "updated", "skipped"):
            for item in result[action]:
                lines.append(f"{action:8} {item['memory'].id}  {item['statement'][:70]!r}  ({item['reason']})")
        return "\n".join(lines) or "Nothing to learn: no first-person statements of fact, preference or decision."

    emit(as_json, data, text)
