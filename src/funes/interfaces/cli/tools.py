"""CLI commands for agent tools: ``funes tools`` and ``funes mcp`` (registered on the main group by cli.py).

Only click and the standard library are imported at load time; the tool
definitions (pydantic) and the MCP SDK load when a command runs.
"""

from __future__ import annotations

import functools
import json
import sys

import click

from .common import State, pass_state

FORMATS = ("anthropic", "openai", "responses", "mcp")


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(tools)
    group.add_command(mcp)


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="anthropic",
    show_default=True,
    help="anthropic (Messages tools), openai (Chat Completions, strict), responses (Responses API), mcp.",
)
@click.option("--name", "names", multiple=True, help="Only this tool (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (the output is always JSON).")
def tools(fmt: str, names: tuple[str, ...], as_json: bool) -> None:
    """Print the agent tools' definitions, ready to pass to an LLM API."""
    from ...agents.specs import render_tools

    rendered = render_tools(fmt, list(names) if names else None)
    click.echo(json.dumps(rendered, indent=2, ensure_ascii=False))


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=int, help="HTTP port (default: the mcp_port setting, 8765).")
@click.option("--project", "project", help="Default project (else --project, the config, the git root or cwd name).")
@click.option("--session", "session_id", help="Session id for session-scope memories (default: one per server run).")
@click.option(
    "--json", "as_json", is_flag=True, help="Accepted for consistency; the server speaks MCP, not JSON lines."
)
@pass_state
def mcp(
    state: State, use_http: bool, port: int | None, project: str | None, session_id: str | None, as_json: bool
) -> None:
    """Run the MCP server: stdio by default (for Claude, Cursor, VS Code, Codex), or --http."""
    from ...models import config as cfg

    try:
        from .. import mcp_server
    except ImportError as exc:
        from ...errors import DependencyMissing

        raise DependencyMissing(
            f"The MCP server needs the official MCP SDK ({exc.name or 'mcp'} is not installed).",
            hint="pip install 'funes-memory[mcp]'",
        ) from exc
    loaded = cfg.load(project=state.project)
    resolved = mcp_server.resolve_project(project, loaded.project or None)
    # A long-running process: it runs the background job worker.
    open_funes = functools.partial(state.funes, worker="on")
    state.project = resolved
    if use_http:
        chosen = port if port is not None else int(loaded.mcp_port)
        if not 0 < chosen < 65536:
            raise click.BadParameter(f"{chosen} is not a TCP port.", param_hint="--port")
        mcp_server.run_http(open_funes, project=resolved, port=chosen, session_id=session_id)
    else:
        if sys.stdin is not None and sys.stdin.isatty():
            click.echo(
                "Funes MCP server on stdio; an MCP client starts it (see docs/mcp.md). Ctrl-D stops it.", err=True
            )
        mcp_server.run_stdio(open_funes, project=resolved, session_id=session_id)
