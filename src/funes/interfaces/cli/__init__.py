"""The ``funes`` command: a thin shell over :class:`funes.Funes`.

It parses options, calls the service and formats the result. Every command
takes ``--json``; text arguments are read from stdin when piped; exit codes
are 0 (ok), 1 (error) and 2 (usage). Nothing heavy is imported at start-up:
the service (and the embedding model) load only when a command needs them.

Layout: this entry module defines the group and imports the command modules
(one per command group); they share :mod:`.common` and never import back here.
"""

from __future__ import annotations

import click

from ... import __version__
from . import admin, chat, cleanup, curation, docs, folders, forgetting, jobs, records, server, tools, upkeep
from .common import FunesGroup, State


@click.group(cls=FunesGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="FUNES_DB_PATH", help="Store file (default $FUNES_HOME/funes.db).")
@click.option("--tenant", help="Tenant (team or user space); default from settings.")
@click.option("--user", help="User id within the tenant.")
@click.option("--project", help="Current project id.")
@click.option("--embedder", help="Embedding backend: local or openai.")
@click.version_option(version=__version__, prog_name="funes")
@click.pass_context
def main(
    ctx: click.Context,
    db: str | None,
    tenant: str | None,
    user: str | None,
    project: str | None,
    embedder: str | None,
) -> None:
    """Funes: local-first long-term memory for AI assistants and agents."""
    state = State(db=db, tenant=tenant, user=user, project=project, embedder=embedder)
    ctx.obj = state
    ctx.call_on_close(state.close)


for _module in (records, admin, docs, folders, chat, tools, jobs, cleanup, curation, forgetting, upkeep, server):
    _module.register(main)


def run(args: list[str] | None = None) -> int:
    """Run the CLI and return its exit code: 0 ok, 1 error, 2 usage."""
    try:
        main.main(args=args, prog_name="funes", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
