"""Store commands: stats, export, import, reindex, doctor, backup, config, demo."""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import State, emit, hit_line, json_option, pass_state


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(stats)
    group.add_command(export_)
    group.add_command(import_)
    group.add_command(reindex)
    group.add_command(doctor)
    group.add_command(backup)
    group.add_command(config)
    group.add_command(demo)


@click.command()
@click.option("--storage", is_flag=True, help="Break records and bytes down per tier, kind and source.")
@json_option
@pass_state
def stats(state: State, storage: bool, as_json: bool) -> None:
    """Counts, sizes and the embedder of the store."""
    data = state.reader().stats(tenant=state.tenant, storage=storage)

    def text_out() -> str:
        lines = [
            f"store:      {data['path']}",
            f"records:    {data['records']}",
            f"size:       {data['size_bytes']:,} bytes",
        ]
        for key in ("by_kind", "by_type", "by_scope", "by_source"):
            if data.get(key):
                lines.append(f"{key[3:]:<11} " + ", ".join(f"{k}={v}" for k, v in sorted(data[key].items())))
        emb = data.get("embedder") or {}
        lines.append(f"embedder:   {emb.get('model_id')} ({emb.get('dimensions')} dims)")
        for key, value in data.items():
            if key not in (
                "path",
                "records",
                "size_bytes",
                "by_kind",
                "by_type",
                "by_scope",
                "by_source",
                "storage",
                "embedder",
                "embedder_configured",
            ):
                lines.append(f"{key + ':':<11} {value}")
        if "storage" in data:
            lines.append("storage:    tier      kind            source        records    text bytes  vector bytes")
            for row in data["storage"]["rows"]:
                lines.append(
                    f"            {row['tier']:<9} {row['kind']:<15} {row['source']:<10} {row['records']:>10,} "
                    f"{row['text_bytes']:>13,} {row['vector_bytes']:>13,}"
                )
            for tier, totals in sorted(data["storage"]["tiers"].items()):
                lines.append(
                    f"  {tier} total: {totals['records']:,} records, "
                    f"{totals['text_bytes'] + totals['vector_bytes']:,} bytes"
                )
            lines.append(f"  database file: {data['storage']['database_bytes']:,} bytes")
        return "\n".join(lines)

    emit(as_json, data, text_out)


@click.command(name="export")
@click.argument("file", required=False, type=click.Path(dir_okay=False, writable=True))
@click.option("--all-tenants", is_flag=True, help="Export every tenant, not only the current one.")
@json_option
@pass_state
def export_(state: State, file: str | None, all_tenants: bool, as_json: bool) -> None:
    """Export to lossless JSONL (stdout, or FILE)."""
    f = state.reader()
    tenant = None if all_tenants else f.config.tenant
    if file in (None, "-"):
        count = f.export(sys.stdout, tenant=tenant, user=f.config.user or None)
        click.echo(f"Exported {count} records.", err=True)
        return
    import os
    import tempfile

    from ...errors import InvalidInput

    if not file.strip():
        raise click.BadParameter("The export FILE name is empty.", param_hint="FILE")
    directory = os.path.dirname(os.path.abspath(file))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".funes-export-", suffix=".jsonl")
    except OSError as exc:
        raise InvalidInput(
            f"Cannot write to {directory} ({exc.strerror}).", hint="Check the path and its permissions."
        ) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            count = f.export(out, tenant=tenant, user=f.config.user or None)
        os.replace(tmp, file)  # a crash never leaves a half-written backup under the real name
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise InvalidInput(
            f"Cannot write {file} ({exc.strerror}).", hint="Check the path and its permissions."
        ) from exc
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    emit(as_json, {"file": file, "records": count}, f"Exported {count} records to {file}.")


@click.command(name="import")
@click.argument("file", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@json_option
@pass_state
def import_(state: State, file: str | None, as_json: bool) -> None:
    """Import a JSONL export (FILE, or stdin). Re-embeds when the model differs.

    With --tenant, everything goes into that tenant; without it, records keep the tenant they were exported from.
    """
    into = state.tenant  # only an explicit --tenant moves records (issue 9: it used to be ignored)
    if file in (None, "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("Give the export FILE, or pipe it on stdin.")
        result = state.funes().import_(sys.stdin, tenant=into)
    else:
        try:
            handle = open(file, encoding="utf-8")
        except FileNotFoundError as exc:
            from ...errors import InvalidInput

            raise InvalidInput(f"No such file: {file}.", hint="Check the path of the export.") from exc
        with handle:
            result = state.funes().import_(handle, tenant=into)
    duplicates = f", {result['duplicates']} repeated ids (the last line of each kept)" if result["duplicates"] else ""
    stores = result.get("memory_stores", 0)
    extra = f"; {stores} memory stores with {result.get('memory_store_versions', 0)} versions" if stores else ""
    if result.get("forgotten"):
        extra += f"; {result['forgotten']} forgotten rows left out"
    emit(
        as_json,
        result,
        f"Imported {result['imported']} records ({result['unchanged']} unchanged, {result['reembedded']} "
        f"re-embedded{duplicates}){extra}.",
    )


@click.command()
@json_option
@pass_state
def reindex(state: State, as_json: bool) -> None:
    """Re-embed every record with the configured embedder and rebuild the keyword index."""
    f = state.funes(check_embedder=False)
    progress = None
    if sys.stderr.isatty() and not as_json:

        def progress(done: int, total: int) -> None:
            click.echo(f"\rembedding {done}/{total}", err=True, nl=done >= total)

    count = f.reindex(progress=progress)
    emit(as_json, {"reindexed": count}, f"Reindexed {count} records with {f.embedder.model_id}.")


def _default_copy(state: State, label: str) -> str:
    """A new file next to the store, named for the time: funes.backup-20261123T081500.db."""
    import time
    from pathlib import Path

    from ...models import config as cfg

    db = Path(state.db).expanduser() if state.db else cfg.load().db_file
    return str(db.with_name(f"{db.stem}.{label}-{time.strftime('%Y%m%dT%H%M%S')}{db.suffix or '.db'}"))


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@json_option
@pass_state
def backup(state: State, file: str | None, as_json: bool) -> None:
    """Copy the store to FILE (default: a dated file next to it), consistent while other processes write."""
    target = file or _default_copy(state, "backup")
    result = state.reader().backup(target)
    emit(as_json, result, f"Backed up {result['records']} records to {result['file']} ({result['bytes']:,} bytes).")


def _repair(state: State, as_json: bool) -> None:
    """Salvage what is readable into a new file and say how to switch to it."""
    from pathlib import Path

    from ...errors import InvalidInput
    from ...models import config as cfg
    from ...store import is_postgres_url
    from ...store.sqlite import salvage_path

    if is_postgres_url(state.db or cfg.load().db_location):
        raise InvalidInput(
            "`funes doctor --repair` salvages a SQLite file; this store is a PostgreSQL database.",
            hint="Restore from `pg_dump` or a replica, or `funes export FILE` what is readable.",
        )
    source = Path(state.db).expanduser() if state.db else cfg.load().db_file
    target = _default_copy(state, "repaired")
    report = salvage_path(source, Path(target))

    def text() -> str:
        lines = [
            f"Salvaged {report['records']} records into {target}"
            + (f" ({report['unreadable_rows']} rows could not be read)." if report["unreadable_rows"] else "."),
            f"The damaged store {source} is unchanged.",
            f"Use the new one: `funes --db {target} doctor`, then move it into place once the store is closed "
            f"(mv {target} {source}; remove {source}-wal, {source}-shm and {source}.corrupt first).",
        ]
        if report.get("records_without_vectors"):
            lines.append(
                f"{report['records_without_vectors']} records lost their vectors: run `funes --db {target} reindex`."
            )
        return "\n".join(lines)

    emit(as_json, report, text)


@click.command()
@click.option("--repair", is_flag=True, help="Salvage every readable row into a new store file next to this one.")
@json_option
@pass_state
def doctor(state: State, repair: bool, as_json: bool) -> None:
    """Check the store: rows, keyword entries and vectors agree; the embedder matches."""
    from ...errors import EmbedderMismatch

    if repair:
        _repair(state, as_json)
        return
    notes: list[str] = []
    extra: dict[str, Any] = {}
    try:
        f = state.reader()
        health = f.health()
        problems, notes = health["problems"], health["notes"]
        extra = {"pending_vectors": health["pending_vectors"], "jobs": health["jobs"]}
        path = f.store.path
    except EmbedderMismatch as exc:
        problems, path = [str(exc)], state.db or ""

    def text() -> str:
        lines = [*problems] if problems else [f"OK: {path} is healthy."]
        return "\n".join(lines + [f"Note: {n}" for n in notes])

    emit(as_json, {"ok": not problems, "problems": problems, "notes": notes, "path": path, **extra}, text)
    if problems:
        sys.exit(1)


@click.command()
@click.argument("action", required=False, type=click.Choice(["show", "get", "set", "path"]), default="show")
@click.argument("name", required=False)
@click.argument("value", required=False)
@click.option(
    "--project",
    "project_id",
    help="A project's own settings (enabled, max_records, chunk_size, chunk_overlap, retrieval_k), kept in the store.",
)
@json_option
@click.pass_context
def config(
    ctx: click.Context, action: str, name: str | None, value: str | None, project_id: str | None, as_json: bool
) -> None:
    """Show settings with their origin; `config get NAME`, `config set NAME VALUE`, `config path`.

    With --project P: that project's settings, stored in the store
    (`funes config --project P`, `funes config set --project P enabled false`).
    """
    from ...models import config as cfg

    if project_id is not None:
        _project_config(ctx.find_object(State), action, project_id, name, value, as_json)
        return

    if action == "path":
        emit(as_json, {"path": str(cfg.config_path()), "home": str(cfg.home())}, str(cfg.config_path()))
        return
    if action == "set":
        if not name or value is None:
            raise click.UsageError("Usage: funes config set NAME VALUE")
        path = cfg.write_setting(name, value)
        capped = _chunk_cap(cfg.load()) if name == "chunk_tokens" else None
        note = capped[1] if capped else None
        emit(
            as_json,
            {"name": name, "value": _shown(value), "file": str(path), **({"note": note} if note else {})},
            f"Set {name} in {path}." + (f"\nNote: {note}" if note else ""),
        )
        return
    loaded = cfg.load()
    if action == "get":
        if not name:
            raise click.UsageError("Usage: funes config get NAME")
        if name not in cfg.SETTINGS:
            from ...errors import InvalidInput

            raise InvalidInput(f"Unknown setting {name!r}.", hint="`funes config` lists every setting.")
        emit(
            as_json,
            {"name": name, "value": _shown(loaded.values[name]), "origin": loaded.origins[name]},
            str(_shown(loaded.values[name])),
        )
        return
    rows = [
        {
            "name": s.name,
            "value": _shown(loaded.values[s.name]),
            "origin": loaded.origins[s.name],
            "env": s.env,
            "help": s.help,
        }
        for s in cfg.SETTINGS.values()
    ]
    capped = _chunk_cap(loaded)
    if capped is not None:
        # What ingestion really uses: the embedding model caps the chunk size.
        next(r for r in rows if r["name"] == "chunk_tokens")["effective"] = capped[0]
    emit(
        as_json,
        {"home": str(cfg.home()), "config_file": str(cfg.config_path()), "settings": rows},
        lambda: "\n".join(
            [f"# home: {cfg.home()}", f"# config file: {cfg.config_path()}"]
            + [
                f"{r['name']} = {r['value']!r}  ({r['origin']})"
                + (f"  [effective {r['effective']}: the embedding model's limit]" if "effective" in r else "")
                + f"  # {r['help']}"
                for r in rows
            ]
        ),
    )


def _chunk_cap(loaded: Any) -> tuple[int, str] | None:
    """(the size ingestion uses, the note it gives) when chunk_tokens is over the embedder's limit, else None.

    No model is loaded to know the limit; an embedder that cannot be set up says so where it is used.
    """
    from ...errors import FunesError
    from ...memory.chunking import chunk_size_for
    from ...providers.embed import create_embedder

    try:
        size, note = chunk_size_for(loaded.chunk_tokens, create_embedder(loaded).max_tokens)
    except FunesError:
        return None
    return (size, note) if note else None


def _shown(value: Any) -> Any:
    """A setting's value as `funes config` prints it: a store URL's password masked (issue 31)."""
    from ...store.pg_connection import redact

    return redact(value) if isinstance(value, str) else value


def _project_config(
    state: State, action: str, project: str, name: str | None, value: str | None, as_json: bool
) -> None:
    if action == "path":
        raise click.UsageError("Project settings live in the store; `funes config --project P` shows them.")
    f = state.funes()
    if action == "set":
        if not name or value is None:
            raise click.UsageError("Usage: funes config set --project P NAME VALUE")
        data = f.configure_project(project, {name: None if value == "default" else value}, tenant=state.tenant)
        note = f.chunk_note(tenant=state.tenant, project=project) if name == "chunk_size" else None
        emit(
            as_json,
            {**data, **({"note": note} if note else {})},
            f"Set {name} of project {project}." + (f"\nNote: {note}" if note else ""),
        )
        return
    data = f.project_settings(project, tenant=state.tenant)
    if action == "get":
        if not name:
            raise click.UsageError("Usage: funes config get --project P NAME")
        if name not in data["settings"]:
            from ...errors import InvalidInput

            raise InvalidInput(
                f"Unknown project setting {name!r}.", hint=f"Project settings are: {', '.join(data['settings'])}."
            )
        emit(as_json, {"name": name, "value": data["settings"][name]}, str(data["settings"][name]))
        return
    emit(
        as_json,
        data,
        lambda: "\n".join(
            [f"# project {project}: {data['records']:,} records"]
            + [f"{k} = {v!r}  ({'project' if k in data['own'] else 'store-wide'})" for k, v in data["settings"].items()]
        ),
    )


DEMO_MEMORIES = (
    ("I prefer US-based vendors with at least 90% energy efficiency", "preference"),
    ("Our fiscal year starts in April; budget reviews happen every March", "fact"),
    ("We decided to ship the mobile app before the desktop app", "decision"),
    ("The team is currently migrating the billing service to PostgreSQL", "context"),
    ("Alice asked for weekly status summaries on Fridays", "preference"),
)


@click.command()
@click.option("--query", default="which suppliers does the user like?", show_default=True, help="What to search for.")
@json_option
@pass_state
def demo(state: State, query: str, as_json: bool) -> None:
    """Remember a few sample memories in a demo store and answer a search.

    Uses $FUNES_HOME/demo.db (or --db), so your own memories are untouched.
    Running it again adds nothing: the same content in the same scope is
    never stored twice.
    """
    from ...models import config as cfg

    if state.db is None:
        state.db = str(cfg.home() / "demo.db")
    f = state.funes()
    stored = [f.remember(text, type=kind) for text, kind in DEMO_MEMORIES]
    hits = f.search(query, limit=3)
    data = {
        "store": f.store.path,
        "remembered": [m.id for m in stored],
        "query": query,
        "hits": [h.to_dict() for h in hits],
    }

    def text_out() -> str:
        lines = [f"Demo store: {f.store.path}", f"Remembered {len(stored)} sample memories.", "", f"Search: {query!r}"]
        lines += [hit_line(n, h) for n, h in enumerate(hits, 1)]
        lines += ["", 'Next: funes add "..." --type preference; funes search "..."; funes --help']
        return "\n".join(lines)

    emit(as_json, data, text_out)
