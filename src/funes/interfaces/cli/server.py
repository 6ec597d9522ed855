"""Team server commands: serve, and keys create / list / revoke."""

from __future__ import annotations

import click

from ...memory.keys import ROLES
from .common import State, emit, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(serve)
    group.add_command(keys)


@click.command()
@click.option("--db", "serve_db", help="Store: a SQLite path or a postgresql:// URL (default: the global --db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told).")
@click.option(
    "--port", default=8700, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: a free one)."
)
@click.option(
    "--keys/--no-keys",
    "require_keys",
    default=None,
    help="Require API keys (default: yes, except SQLite on loopback with no key created yet).",
)
@json_option
@pass_state
def serve(state: State, serve_db: str | None, host: str, port: int, require_keys: bool | None, as_json: bool) -> None:
    """Run the team server: REST API under /v1, MCP at /mcp, web UI at /ui; runs background jobs.

    With --json the start-up announcement on stderr is one JSON object.
    """
    from ..server import serve as run

    if serve_db:
        state.db = serve_db
    run(state.funes(worker="on"), host=host, port=port, require_keys=require_keys, announce_json=as_json)
    state._funes = None  # the server closed it


@click.group()
def keys() -> None:
    """API keys of the team server: create (shown once), list, revoke."""


@keys.command(name="create")
@click.option("--team", required=True, help="The team (tenant) the key acts for.")
@click.option("--role", required=True, type=click.Choice(ROLES), help="read < write < admin.")
@click.option("--user", "key_user", help="The user the key acts for (personal memories); none: the team.")
@click.option("--name", help="A label for the key.")
@json_option
@pass_state
def keys_create(state: State, team: str, role: str, key_user: str | None, name: str | None, as_json: bool) -> None:
    """Create a key; it is printed once and only its hash is stored."""
    key, row = state.reader().keys.create(team, role, user=key_user, name=name)
    data = {**row, "created_at": row["created_at"].isoformat(), "key": key}
    emit(as_json, data, lambda: f"{key}\n(key {row['id']} for team {team}, role {role}; shown once, store it now)")


@keys.command(name="list")
@click.option("--team", help="Only this team's keys.")
@json_option
@pass_state
def keys_list(state: State, team: str | None, as_json: bool) -> None:
    """Keys, newest first (prefix, team, user, role, last use; never the key)."""
    rows = state.reader().keys.list(team)

    def when(value: object) -> str | None:
        return value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else None  # type: ignore[union-attr]

    out = [{k: (when(v) if k.endswith("_at") else v) for k, v in r.items()} for r in rows]

    def text() -> str:
        if not out:
            return "No keys."
        return "\n".join(
            f"{r['id']}  {r['prefix']}…  team {r['team']}  role {r['role']}  user {r['user_id'] or '-'}"
            f"  {'revoked' if r['revoked_at'] else 'live'}  last used {r['last_used_at'] or 'never'}"
            for r in out
        )

    emit(as_json, {"keys": out}, text)


@keys.command(name="revoke")
@click.argument("key_id")
@json_option
@pass_state
def keys_revoke(state: State, key_id: str, as_json: bool) -> None:
    """Revoke a key; running servers refuse it within 5 seconds."""
    state.reader().keys.revoke(key_id)
    emit(as_json, {"revoked": key_id}, f"Revoked {key_id}.")
