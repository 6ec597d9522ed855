"""Curation commands: history (a record's versions) and restore (an older version, as a new one)."""

from __future__ import annotations

import click

from .common import State, emit, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(history)
    group.add_command(restore)


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
            lines.append(f"version {v.version}  {v.updated_at.isoformat()}  importance {v.importance:.2f}{mark}")
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
