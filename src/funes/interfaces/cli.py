"""The ``funes`` command: a thin shell over :class:`funes.Funes`.

It parses options, calls the service and formats the result. Every command
takes ``--json``; text arguments are read from stdin when piped; exit codes
are 0 (ok), 1 (error) and 2 (usage). Nothing heavy is imported at start-up:
the service (and torch) load only when a command needs them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..models import Memory, SearchHit
    from ..service import Funes

MEMORY_TYPES = ("preference", "fact", "decision", "context", "conversation")
SCOPES = ("session", "project", "team")


@dataclass
class State:
    """Options shared by every command, and the lazily opened service."""

    db: str | None = None
    tenant: str | None = None
    user: str | None = None
    project: str | None = None
    embedder: str | None = None
    _funes: Funes | None = field(default=None, repr=False)

    def funes(self, **kwargs: Any) -> Funes:
        """Open the service on first use."""
        if self._funes is None:
            import funes

            settings = {"tenant": self.tenant, "user": self.user, "project": self.project, "embedder": self.embedder}
            self._funes = funes.open(self.db, **settings, **kwargs)
        return self._funes

    def close(self) -> None:
        """Close the service if it was opened."""
        if self._funes is not None:
            self._funes.close()
            self._funes = None


pass_state = click.make_pass_decorator(State)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--json`` flag every command takes."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(f)


def emit(as_json: bool, data: Any, text: Callable[[], str] | str | None = None) -> None:
    """Print data as JSON, or as text for people."""
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        out = text() if callable(text) else text
        if out:
            click.echo(out)


def read_text_arg(value: str | None, what: str) -> str:
    """The argument, or stdin when it is '-' or missing and stdin is piped."""
    if value in (None, "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError(f"Give the {what} as an argument, or pipe it on stdin.")
        return sys.stdin.read()
    return value


def short(memory: Memory, width: int = 100) -> str:
    """One line describing a record."""
    text = " ".join(memory.content.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    flags = " [pinned]" if memory.pinned else ""
    return f"{memory.id}  {memory.memory_type:<12} {memory.scope:<8} {memory.importance:.2f}{flags}  {text}"


def describe(memory: Memory) -> str:
    """Every field of a record, for people."""
    lines = [
        f"id:           {memory.id}",
        f"type:         {memory.memory_type} ({memory.kind})",
        f"scope:        {memory.scope}"
        + (f"  project={memory.project_id}" if memory.project_id else "")
        + (f"  session={memory.session_id}" if memory.session_id else ""),
        f"tenant:       {memory.tenant}" + (f"  user={memory.user_id}" if memory.user_id else ""),
        f"importance:   {memory.importance:.2f}{'  pinned' if memory.pinned else ''}",
        f"source:       {memory.attribution}",
        f"version:      {memory.version}  ({len(memory.previous_versions)} previous)",
        f"created:      {memory.created_at.isoformat()}",
        f"updated:      {memory.updated_at.isoformat()}",
        f"accessed:     {memory.access_count} times"
        + (f", last {memory.last_accessed.isoformat()}" if memory.last_accessed else ""),
    ]
    if memory.expires_at:
        lines.append(f"expires:      {memory.expires_at.isoformat()}")
    if memory.title:
        lines.append(f"title:        {memory.title}")
    if memory.topic:
        lines.append(f"topic:        {memory.topic}")
    if memory.references:
        lines.append("references:   " + ", ".join(f"{r.type}:{r.id}" for r in memory.references))
    if memory.metadata:
        lines.append("metadata:     " + json.dumps(memory.metadata, ensure_ascii=False))
    lines += ["", memory.content]
    return "\n".join(lines)


def hit_line(n: int, hit: SearchHit) -> str:
    """A numbered search hit with its attribution and score."""
    text = " ".join(hit.memory.content.split())
    if len(text) > 160:
        text = text[:159] + "…"
    ex = hit.explanation
    why = []
    if ex.keyword_rank is not None:
        why.append(f"kw#{ex.keyword_rank}")
    if ex.vector_rank is not None:
        why.append(f"vec#{ex.vector_rank}")
    sim = f"{hit.similarity:.2f}" if ex.vector_similarity is not None else "-"
    return f"{n}. [{hit.attribution}] {text}\n   {hit.memory.id}  score={hit.score:.4f} cos={sim} {' '.join(why)}"


class FunesCommandError(click.ClickException):
    """A FunesError shown as one line plus a hint, exit code 1."""

    exit_code = 1

    def __init__(self, error: Any) -> None:
        super().__init__(error.message)
        self.error = error

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.error.message}", err=True)
        if self.error.hint:
            click.echo(f"Hint: {self.error.hint}", err=True)


def _store_error(exc: Exception) -> Any:
    """A SQLite driver error as a FunesError with a hint, or None for anything else.

    A store damaged after it was opened fails in the middle of a command; the
    user gets one line and what to do, not a traceback.
    """
    if not type(exc).__module__.startswith(("sqlite3", "pysqlite3")):
        return None
    from ..errors import BackendUnavailable, StoreCorrupt

    text = str(exc).lower()
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return StoreCorrupt(
            f"The store is damaged ({exc}).",
            hint="Run `funes doctor` to see the damage; save what is readable with `funes export FILE`, "
            "then restore into a new store with `funes --db NEW.db import FILE`.",
        )
    if "locked" in text or "busy" in text:
        return BackendUnavailable(
            f"The store is busy ({exc}).", hint="Retry; another process is holding the write lock."
        )
    return BackendUnavailable(f"The store failed: {exc}.", hint="Run `funes doctor` to check the store.")


class FunesGroup(click.Group):
    """A click group that turns Funes errors into exit code 1 with a hint."""

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import FunesError

        try:
            return super().invoke(ctx)
        except FunesError as exc:
            raise FunesCommandError(exc) from exc
        except BrokenPipeError:
            # `funes export | head`: the reader went away; that is not an error.
            sys.stderr.close()
            ctx.exit(0)
        except Exception as exc:
            translated = _store_error(exc)
            if translated is None:
                raise
            raise FunesCommandError(translated) from exc


@click.group(cls=FunesGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="FUNES_DB_PATH", help="Store file (default $FUNES_HOME/funes.db).")
@click.option("--tenant", help="Tenant (team or user space); default from settings.")
@click.option("--user", help="User id within the tenant.")
@click.option("--project", help="Current project id.")
@click.option("--embedder", help="Embedding backend: local or openai.")
@click.version_option(package_name="funes")
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


@main.command()
@click.argument("content", required=False)
@click.option(
    "--type", "type_", type=click.Choice(MEMORY_TYPES), default="fact", show_default=True, help="Memory type."
)
@click.option("--importance", type=float, help="0 to 1; defaults by type (preference 0.9 ... conversation 0.3).")
@click.option("--scope", type=click.Choice(SCOPES), help="Default: project if --project is set, else team.")
@click.option("--session", help="Session id (for session scope).")
@click.option("--project", "project", help="Project id (overrides the global --project).")
@click.option("--title", help="Short title.")
@click.option("--topic", help="Topic label.")
@click.option("--pin", is_flag=True, help="Pin the memory.")
@click.option("--expires", help="Expiry date, ISO-8601 (e.g. 2026-12-31).")
@click.option("--ref", "refs", multiple=True, help="External reference TYPE:ID (repeatable).")
@click.option("--meta", "meta", multiple=True, help="Metadata KEY=VALUE (repeatable).")
@json_option
@pass_state
def add(
    state: State,
    content: str | None,
    type_: str,
    importance: float | None,
    scope: str | None,
    session: str | None,
    project: str | None,
    title: str | None,
    topic: str | None,
    pin: bool,
    expires: str | None,
    refs: tuple[str, ...],
    meta: tuple[str, ...],
    as_json: bool,
) -> None:
    """Remember something. CONTENT is read from stdin when piped."""
    text = read_text_arg(content, "content to remember")
    references = []
    for r in refs:
        if ":" not in r:
            raise click.BadParameter(f"{r!r} is not TYPE:ID", param_hint="--ref")
        references.append(tuple(r.split(":", 1)))
    metadata = {}
    for item in meta:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--meta")
        k, v = item.split("=", 1)
        metadata[k] = v
    f = state.funes()
    memory = f.remember(
        text,
        type=type_,
        importance=importance,
        scope=scope,
        project=project or state.project,
        session=session,
        title=title,
        topic=topic,
        pinned=pin,
        expires_at=expires,
        metadata=metadata,
        references=references,
    )
    emit(as_json, memory.to_dict(), lambda: f"Remembered {memory.id} ({memory.memory_type}, {memory.scope}).")


@main.command()
@click.argument("query", required=False)
@click.option("--limit", "-n", type=int, help="Most hits to return (default 10).")
@click.option("--type", "types", multiple=True, type=click.Choice(MEMORY_TYPES), help="Only these memory types.")
@click.option(
    "--kind", "kinds", multiple=True, help="Only these kinds (memory, document_chunk, message, markdown, ...)."
)
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Only these scopes.")
@click.option("--session", help="Restrict session-scope records to this session.")
@click.option("--project", "project", help="Current project: restricts and boosts its records (overrides --project).")
@click.option(
    "--source-type",
    "source_types",
    multiple=True,
    help="Only records from these sources: documents, sheets, chat, markdown, or a type (pdf, sheet, text, user, agent, import).",
)
@click.option("--source", "source_ids", multiple=True, help="Only records from these source ids.")
@click.option("--since", help="Created at or after (ISO-8601).")
@click.option("--until", help="Created at or before (ISO-8601).")
@click.option("--min-similarity", type=float, help="Drop hits under this cosine (strong keyword hits stay).")
@click.option("--explain", is_flag=True, help="Show the per-signal score breakdown.")
@json_option
@pass_state
def search(
    state: State,
    query: str | None,
    limit: int | None,
    types: tuple[str, ...],
    kinds: tuple[str, ...],
    scopes: tuple[str, ...],
    session: str | None,
    project: str | None,
    source_types: tuple[str, ...],
    source_ids: tuple[str, ...],
    since: str | None,
    until: str | None,
    min_similarity: float | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Search memory by meaning and keywords. QUERY is read from stdin when piped."""
    text = read_text_arg(query, "search query")
    hits = state.funes().search(
        text,
        limit=limit,
        types=types or None,
        kinds=kinds or None,
        scopes=scopes or None,
        project=project or state.project,
        session=session,
        source_types=source_types or None,
        source_ids=source_ids or None,
        since=since,
        until=until,
        min_similarity=min_similarity,
    )

    def text_out() -> str:
        if not hits:
            return "No matches."
        lines = []
        for n, hit in enumerate(hits, 1):
            lines.append(hit_line(n, hit))
            if explain:
                lines.append("   " + json.dumps(hit.explanation.to_dict()))
        return "\n".join(lines)

    emit(as_json, [h.to_dict() for h in hits], text_out)


@main.command()
@click.argument("memory_id")
@json_option
@pass_state
def get(state: State, memory_id: str, as_json: bool) -> None:
    """Show one memory with every field."""
    memory = state.funes().get(memory_id)
    emit(as_json, memory.to_dict(), lambda: describe(memory))


@main.command(name="list")
@click.option("--type", "types", multiple=True, type=click.Choice(MEMORY_TYPES), help="Only these memory types.")
@click.option("--kind", "kinds", multiple=True, help="Only these kinds.")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Only these scopes.")
@click.option("--session", help="Restrict session-scope records to this session.")
@click.option("--project", "project", help="Restrict project-scope records to this project (overrides --project).")
@click.option("--pinned/--unpinned", default=None, help="Only pinned (or unpinned) records.")
@click.option("--expired", is_flag=True, help="Include expired records.")
@click.option("--limit", "-n", type=int, default=50, show_default=True, help="Records per page.")
@click.option("--cursor", help="Cursor from the previous page.")
@json_option
@pass_state
def list_(
    state: State,
    types: tuple[str, ...],
    kinds: tuple[str, ...],
    scopes: tuple[str, ...],
    session: str | None,
    project: str | None,
    pinned: bool | None,
    expired: bool,
    limit: int,
    cursor: str | None,
    as_json: bool,
) -> None:
    """List memories, newest first, with cursor pagination."""
    page = state.funes().list(
        types=types or None,
        kinds=kinds or None,
        scopes=scopes or None,
        project=project or state.project,
        session=session,
        pinned=pinned,
        include_expired=expired,
        limit=limit,
        cursor=cursor,
    )

    def text_out() -> str:
        lines = [short(m) for m in page.items] or ["No memories."]
        if page.next_cursor:
            lines.append(f"-- more: funes list --cursor {page.next_cursor}")
        return "\n".join(lines)

    emit(as_json, {"items": [m.to_dict() for m in page.items], "next_cursor": page.next_cursor}, text_out)


@main.command()
@click.argument("memory_id")
@click.argument("content", required=False)
@click.option("--importance", type=float, help="New importance, 0 to 1.")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), help="New memory type.")
@click.option("--expires", help="New expiry (ISO-8601), or 'never'.")
@click.option("--title", help="New title.")
@click.option("--topic", help="New topic.")
@json_option
@pass_state
def edit(
    state: State,
    memory_id: str,
    content: str | None,
    importance: float | None,
    type_: str | None,
    expires: str | None,
    title: str | None,
    topic: str | None,
    as_json: bool,
) -> None:
    """Change a memory. New CONTENT keeps the old one as a previous version ('-' reads stdin)."""
    if content == "-":
        content = read_text_arg("-", "new content")
    kwargs: dict[str, Any] = {}
    if expires is not None:
        kwargs["expires_at"] = None if expires.lower() in ("never", "none", "") else expires
    if title is not None:
        kwargs["title"] = title
    if topic is not None:
        kwargs["topic"] = topic
    if content is None and importance is None and type_ is None and not kwargs:
        raise click.UsageError("Nothing to change: give new CONTENT or an option such as --importance.")
    memory = state.funes().update(memory_id, content=content, importance=importance, type=type_, **kwargs)
    emit(as_json, memory.to_dict(), lambda: f"Updated {memory.id} (version {memory.version}).")


@main.command()
@click.argument("memory_ids", nargs=-1, required=True)
@json_option
@pass_state
def rm(state: State, memory_ids: tuple[str, ...], as_json: bool) -> None:
    """Forget memories by id."""
    f = state.funes()
    ids = list(dict.fromkeys(memory_ids))
    for memory_id in ids:
        f.get(memory_id)  # all ids must exist before anything is forgotten: no half-done rm
    removed = [f.forget(i).id for i in ids]
    emit(as_json, {"removed": removed}, lambda: "\n".join(f"Forgot {i}." for i in removed))


@main.command()
@click.argument("memory_id")
@json_option
@pass_state
def pin(state: State, memory_id: str, as_json: bool) -> None:
    """Pin a memory so retention never removes it."""
    memory = state.funes().pin(memory_id)
    emit(as_json, memory.to_dict(), f"Pinned {memory.id}.")


@main.command()
@click.argument("memory_id")
@json_option
@pass_state
def unpin(state: State, memory_id: str, as_json: bool) -> None:
    """Unpin a memory."""
    memory = state.funes().unpin(memory_id)
    emit(as_json, memory.to_dict(), f"Unpinned {memory.id}.")


@main.command()
@json_option
@pass_state
def stats(state: State, as_json: bool) -> None:
    """Counts, sizes and the embedder of the store."""
    data = state.funes().stats(tenant=state.tenant)

    def text_out() -> str:
        lines = [
            f"store:      {data['path']}",
            f"records:    {data['records']}",
            f"size:       {data['size_bytes']:,} bytes",
        ]
        for key in ("by_kind", "by_type", "by_scope"):
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
                "embedder",
                "embedder_configured",
            ):
                lines.append(f"{key + ':':<11} {value}")
        return "\n".join(lines)

    emit(as_json, data, text_out)


@main.command(name="export")
@click.argument("file", required=False, type=click.Path(dir_okay=False, writable=True))
@click.option("--all-tenants", is_flag=True, help="Export every tenant, not only the current one.")
@json_option
@pass_state
def export_(state: State, file: str | None, all_tenants: bool, as_json: bool) -> None:
    """Export to lossless JSONL (stdout, or FILE)."""
    f = state.funes()
    tenant = None if all_tenants else f.config.tenant
    if file in (None, "-"):
        count = f.export(sys.stdout, tenant=tenant)
        click.echo(f"Exported {count} records.", err=True)
        return
    import os
    import tempfile

    directory = os.path.dirname(os.path.abspath(file))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".funes-export-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            count = f.export(out, tenant=tenant)
        os.replace(tmp, file)  # a crash never leaves a half-written backup under the real name
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    emit(as_json, {"file": file, "records": count}, f"Exported {count} records to {file}.")


@main.command(name="import")
@click.argument("file", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@json_option
@pass_state
def import_(state: State, file: str | None, as_json: bool) -> None:
    """Import a JSONL export (FILE, or stdin). Re-embeds when the model differs."""
    if file in (None, "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("Give the export FILE, or pipe it on stdin.")
        result = state.funes().import_(sys.stdin)
    else:
        try:
            handle = open(file, encoding="utf-8")
        except FileNotFoundError as exc:
            from ..errors import InvalidInput

            raise InvalidInput(f"No such file: {file}.", hint="Check the path of the export.") from exc
        with handle:
            result = state.funes().import_(handle)
    emit(
        as_json,
        result,
        f"Imported {result['imported']} records ({result['unchanged']} unchanged, {result['reembedded']} re-embedded).",
    )


@main.command()
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


@main.command()
@json_option
@pass_state
def doctor(state: State, as_json: bool) -> None:
    """Check the store: rows, keyword entries and vectors agree; the embedder matches."""
    from ..errors import EmbedderMismatch

    try:
        f = state.funes(check_embedder=False)
        problems = f.doctor()
        path = f.store.path
    except EmbedderMismatch as exc:
        problems, path = [str(exc)], state.db or ""
    emit(
        as_json,
        {"ok": not problems, "problems": problems, "path": path},
        lambda: "\n".join(problems) if problems else f"OK: {path} is healthy.",
    )
    if problems:
        sys.exit(1)


@main.command()
@click.argument("action", required=False, type=click.Choice(["show", "get", "set", "path"]), default="show")
@click.argument("name", required=False)
@click.argument("value", required=False)
@json_option
def config(action: str, name: str | None, value: str | None, as_json: bool) -> None:
    """Show settings with their origin; `config get NAME`, `config set NAME VALUE`, `config path`."""
    from .. import config as cfg

    if action == "path":
        emit(as_json, {"path": str(cfg.config_path()), "home": str(cfg.home())}, str(cfg.config_path()))
        return
    if action == "set":
        if not name or value is None:
            raise click.UsageError("Usage: funes config set NAME VALUE")
        path = cfg.write_setting(name, value)
        emit(as_json, {"name": name, "value": value, "file": str(path)}, f"Set {name} in {path}.")
        return
    loaded = cfg.load()
    if action == "get":
        if not name:
            raise click.UsageError("Usage: funes config get NAME")
        if name not in cfg.SETTINGS:
            from ..errors import InvalidInput

            raise InvalidInput(f"Unknown setting {name!r}.", hint="`funes config` lists every setting.")
        emit(
            as_json,
            {"name": name, "value": loaded.values[name], "origin": loaded.origins[name]},
            str(loaded.values[name]),
        )
        return
    rows = [
        {"name": s.name, "value": loaded.values[s.name], "origin": loaded.origins[s.name], "env": s.env, "help": s.help}
        for s in cfg.SETTINGS.values()
    ]
    emit(
        as_json,
        {"home": str(cfg.home()), "config_file": str(cfg.config_path()), "settings": rows},
        lambda: "\n".join(
            [f"# home: {cfg.home()}", f"# config file: {cfg.config_path()}"]
            + [f"{r['name']} = {r['value']!r}  ({r['origin']})  # {r['help']}" for r in rows]
        ),
    )


DEMO_MEMORIES = (
    ("I prefer US-based vendors with at least 90% energy efficiency", "preference"),
    ("Our fiscal year starts in April; budget reviews happen every March", "fact"),
    ("We decided to ship the mobile app before the desktop app", "decision"),
    ("The team is currently migrating the billing service to PostgreSQL", "context"),
    ("Alice asked for weekly status summaries on Fridays", "preference"),
)


@main.command()
@click.option("--query", default="which suppliers does the user like?", show_default=True, help="What to search for.")
@json_option
@pass_state
def demo(state: State, query: str, as_json: bool) -> None:
    """Remember a few sample memories in a demo store and answer a search.

    Uses $FUNES_HOME/demo.db (or --db), so your own memories are untouched.
    Running it again adds nothing: the same content in the same scope is
    never stored twice.
    """
    from .. import config as cfg

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


def _register_extensions() -> None:
    """Commands that live beside this module (each imports only click at load time)."""
    from . import cli_chat, cli_docs, cli_tools

    for module in (cli_docs, cli_chat, cli_tools):
        module.register(main)


_register_extensions()


def run(args: list[str] | None = None) -> int:
    """Run the CLI and return its exit code: 0 ok, 1 error, 2 usage."""
    try:
        main.main(args=args, prog_name="funes", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
