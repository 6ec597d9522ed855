"""Record commands: add, search, get, list, edit, rm, pin, unpin."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ...models import SearchQuery
from ...models.sources import describe_source_filters
from .common import (
    MEMORY_TYPES,
    MESSAGE_ROLES,
    SCOPES,
    State,
    describe,
    emit,
    hit_line,
    json_option,
    pass_state,
    read_text_arg,
    short,
)


def entity_filters(f: Any) -> Any:
    """The --entity-type, --entity-id and --ref filters of list and search."""
    f = click.option("--ref", "filter_refs", multiple=True, help="Only records carrying this reference TYPE:ID.")(f)
    f = click.option("--entity-id", "entity_ids", multiple=True, help="Only records of these entity ids.")(f)
    return click.option(
        "--entity-type", "entity_types", multiple=True, help="Only records of these entity types (CODE_CELL, ...)."
    )(f)


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(add)
    group.add_command(search)
    group.add_command(get)
    group.add_command(list_)
    group.add_command(edit)
    group.add_command(rm)
    group.add_command(pin)
    group.add_command(unpin)


@click.command()
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
@click.option("--entity-type", help="Entity type (CODE_CELL, DATA_TABLE, CONNECTION, ...); with --entity-id.")
@click.option("--entity-id", help="Entity id: a second write of the same entity updates its record as a new version.")
@click.option("--meta", "meta", multiple=True, help="Metadata KEY=VALUE (repeatable).")
@click.option(
    "--many",
    is_flag=True,
    help="Remember one item per line of stdin (or of the file CONTENT): plain text, or a JSON object "
    'like {"content": "...", "type": "decision"}; the other options are defaults. One transaction.',
)
@click.option("--atomic", is_flag=True, help="With --many: store nothing if any line is invalid.")
@click.option("--to-markdown", is_flag=True, help="Also append it to today's YYYY-MM-DD.md in the memory folder.")
@click.option("--folder", help="Memory folder for --to-markdown (default: .funes/memory under the project root).")
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
    entity_type: str | None,
    entity_id: str | None,
    meta: tuple[str, ...],
    many: bool,
    atomic: bool,
    to_markdown: bool,
    folder: str | None,
    as_json: bool,
) -> None:
    """Remember something. CONTENT is read from stdin when piped."""
    if atomic and not many:
        raise click.UsageError("--atomic goes with --many.")
    if to_markdown and many:
        raise click.UsageError("--to-markdown goes with one memory, not --many.")
    text = _read_items(content) if many else read_text_arg(content, "content to remember")
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
    if many:
        defaults: dict[str, Any] = {
            "type": type_,
            "importance": importance,
            "scope": scope,
            "project": project or state.project,
            "session": session,
            "title": title,
            "topic": topic,
            "pinned": pin,
            "expires_at": expires,
            "metadata": metadata,
            "references": references,
            "entity_type": entity_type,
            "entity_id": entity_id,
        }
        results = f.remember_many(_parse_items(text), atomic=atomic, **defaults)
        lines = [
            f"item {r.index + 1}: {r.status} {r.memory.id}" if r.memory else f"item {r.index + 1}: error: {r.error}"
            for r in results
        ]
        emit(as_json, [r.to_dict() for r in results], "\n".join(lines))
        if any(r.status == "error" for r in results):
            sys.exit(1)
        return
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
        entity_type=entity_type,
        entity_id=entity_id,
        to_markdown=to_markdown,
        folder=folder,
    )
    emit(as_json, memory.to_dict(), lambda: f"Remembered {memory.id} ({memory.memory_type}, {memory.scope}).")


def _read_items(source: str | None) -> str:
    """The lines for --many: from stdin ('-' or no CONTENT), or from the file CONTENT names."""
    if source in (None, "-"):
        return read_text_arg(None, "items (one per line)")
    try:
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        from ...errors import InvalidInput

        raise InvalidInput(f"Cannot read {source}: {exc.strerror}.", hint="With --many, CONTENT is a file.") from exc


def _parse_items(text: str) -> list[Any]:
    """One item per non-blank line: a JSON object is a record's fields, anything else is its text."""
    items: list[Any] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                items.append(json.loads(line))
                continue
            except json.JSONDecodeError:
                pass  # text that happens to start with a brace
        items.append(line)
    if not items:
        raise click.UsageError("No items: give one per line.")
    return items


@click.command()
@click.argument("query", required=False)
@click.option("--limit", "-n", type=int, help="Most hits to return (default: the search_limit setting, 10).")
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
    help=f"Only records from these sources: {describe_source_filters()}; "
    "or a source type (pdf, sheet, text, markdown, chat, user, agent, import).",
)
@click.option("--source", "source_ids", multiple=True, help="Only records from these source ids.")
@click.option("--since", help="Created at or after (ISO-8601).")
@click.option("--until", help="Created at or before (ISO-8601).")
@click.option(
    "--as-of",
    "as_of",
    help="Read memory as it was then (ISO-8601; a date alone is the end of that day): each record's version of "
    "that time, later records left out; recency and dates in the query ('last May') count from it.",
)
@click.option(
    "--include-superseded",
    "include_superseded",
    is_flag=True,
    help="Also show each hit's earlier versions, marked with when they stopped being true.",
)
@click.option("--min-similarity", type=float, help="Drop hits under this cosine (strong keyword hits stay).")
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    help="Drop hits under this calibrated relevance (default: the search_min_relevance setting; 0 keeps all).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=click.Choice(MESSAGE_ROLES),
    help="Only chat messages said in this role (repeatable).",
)
@click.option(
    "--group-by",
    "group_by",
    type=click.Choice(["session"]),
    help="Group chat messages by conversation; --limit then counts sessions, and other records are left out.",
)
@click.option("--explain", is_flag=True, help="Show the per-signal score breakdown.")
@entity_filters
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
    as_of: str | None,
    include_superseded: bool,
    min_similarity: float | None,
    min_relevance: float | None,
    roles: tuple[str, ...],
    group_by: str | None,
    explain: bool,
    entity_types: tuple[str, ...],
    entity_ids: tuple[str, ...],
    filter_refs: tuple[str, ...],
    as_json: bool,
) -> None:
    """Search memory by meaning and keywords. QUERY is read from stdin when piped.

    Hits under the relevance floor are left out; when none passes, it says
    "No relevant memories" and exits 0 (nothing relevant is an answer).
    With --group-by session it lists the conversations the hits come from,
    best first, each with its best messages (--json: a list of groups).
    """
    text = read_text_arg(query, "search query")
    hits = state.funes().search(
        SearchQuery(
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
            entity_types=entity_types or None,
            entity_ids=entity_ids or None,
            refs=filter_refs or None,
            min_relevance=min_relevance,
            as_of=as_of,
            include_superseded=include_superseded,
            roles=roles or None,
            group_by=group_by,
        )
    )

    def hit_lines(n: int, hit: Any, indent: str) -> list[str]:
        lines = [indent + line for line in hit_line(n, hit).splitlines()]
        if explain:
            lines.append(indent + "   " + json.dumps(hit.explanation.to_dict()))
        return lines

    def text_out() -> str:
        if not hits:
            return "No relevant memories."
        lines = []
        if hits.groups is not None:
            for n, group in enumerate(hits.groups, 1):
                lines.append(group_line(n, group))
                for m, hit in enumerate(group.hits, 1):
                    lines += hit_lines(m, hit, "   ")
            return "\n".join(lines)
        for n, hit in enumerate(hits, 1):
            lines += hit_lines(n, hit, "")
        return "\n".join(lines)

    if hits.degraded:
        click.echo(
            f"Warning: search is degraded ({hits.degraded}): the embedding server is unreachable, so these are "
            "keyword matches only. `funes doctor` checks the embedder.",
            err=True,
        )
    extra = {"degraded": hits.degraded} if hits.degraded else {}
    items = hits if hits.groups is None else hits.groups
    emit(as_json, [{**item.to_dict(), **extra} for item in items], text_out)


def group_line(n: int, group: Any) -> str:
    """A numbered conversation of a grouped search: title, session id, when its hits were said, relevance."""
    name = f'"{group.title}" ({group.session_id})' if group.title else group.session_id
    first, last = (f"{t:%Y-%m-%d %H:%M}" for t in (group.first_at, group.last_at))
    when = first if first == last else f"{first} to {last}"
    count = f"{len(group.hits)} hit" + ("s" if len(group.hits) != 1 else "")
    return f"{n}. Session {name} · {when} · {count} · relevance={group.relevance:.2f} score={group.score:.4f}"


@click.command()
@click.argument("memory_id")
@json_option
@pass_state
def get(state: State, memory_id: str, as_json: bool) -> None:
    """Show one memory with every field."""
    memory = state.reader().get(memory_id)
    emit(as_json, memory.to_dict(), lambda: describe(memory))


@click.command(name="list")
@click.option("--type", "types", multiple=True, type=click.Choice(MEMORY_TYPES), help="Only these memory types.")
@click.option("--kind", "kinds", multiple=True, help="Only these kinds.")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Only these scopes.")
@click.option("--session", help="Restrict session-scope records to this session.")
@click.option("--project", "project", help="Restrict project-scope records to this project (overrides --project).")
@click.option("--pinned/--unpinned", default=None, help="Only pinned (or unpinned) records.")
@click.option("--expired", is_flag=True, help="Include expired records.")
@click.option("--limit", "-n", type=int, default=50, show_default=True, help="Records per page.")
@click.option("--cursor", help="Cursor from the previous page.")
@entity_filters
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
    entity_types: tuple[str, ...],
    entity_ids: tuple[str, ...],
    filter_refs: tuple[str, ...],
    as_json: bool,
) -> None:
    """List memories, newest first, with cursor pagination."""
    page = state.reader().list(
        types=types or None,
        kinds=kinds or None,
        scopes=scopes or None,
        project=project or state.project,
        session=session,
        pinned=pinned,
        include_expired=expired,
        limit=limit,
        cursor=cursor,
        entity_types=entity_types or None,
        entity_ids=entity_ids or None,
        refs=filter_refs or None,
    )

    def text_out() -> str:
        lines = [short(m) for m in page.items] or ["No memories."]
        if page.next_cursor:
            lines.append(f"-- more: funes list --cursor {page.next_cursor}")
        return "\n".join(lines)

    emit(as_json, {"items": [m.to_dict() for m in page.items], "next_cursor": page.next_cursor}, text_out)


@click.command()
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


@click.command()
@click.argument("memory_ids", nargs=-1)
@click.option(
    "--ignore-missing",
    is_flag=True,
    help="Forget the ids that exist and list the others (default: all or nothing).",
)
@json_option
@pass_state
def rm(state: State, memory_ids: tuple[str, ...], ignore_missing: bool, as_json: bool) -> None:
    """Forget memories by id. With no ids (or '-'), reads them from stdin: one per line or space-separated."""
    ids = list(memory_ids)
    if not ids or ids == ["-"]:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError(
                "Give the ids to forget, or pipe them on stdin "
                "(e.g. `funes list --json | jq -r '.items[].id' | funes rm`)."
            )
        ids = sys.stdin.read().split()
        if not ids:
            raise click.UsageError("No ids on stdin: pipe one id per line.")
    # All or nothing by default, so a typo never leaves a half-done rm.
    result = state.reader().forget_many(ids, atomic=not ignore_missing)
    data: dict[str, Any] = {"removed": [m.id for m in result.deleted]}
    if result.not_found:
        data["not_found"] = list(result.not_found)
    lines = [f"Forgot {m.id}." for m in result.deleted] + [f"Not found: {i}." for i in result.not_found]
    emit(as_json, data, "\n".join(lines))


@click.command()
@click.argument("memory_id")
@json_option
@pass_state
def pin(state: State, memory_id: str, as_json: bool) -> None:
    """Pin a memory so retention never removes it."""
    memory = state.reader().pin(memory_id)
    emit(as_json, memory.to_dict(), f"Pinned {memory.id}.")


@click.command()
@click.argument("memory_id")
@json_option
@pass_state
def unpin(state: State, memory_id: str, as_json: bool) -> None:
    """Unpin a memory."""
    memory = state.reader().unpin(memory_id)
    emit(as_json, memory.to_dict(), f"Unpinned {memory.id}.")
