"""CLI commands for knowledge ingestion: ``funes ingest`` and ``funes docs``.

Registered on the main group by cli.py. Only click and the standard library
are imported at load time; the service (and pypdf, openpyxl, the embedding model) load
when a command runs. Progress goes to stderr, and only on a TTY.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .common import SCOPES, State, emit, json_option, pass_state

if TYPE_CHECKING:
    from ...knowledge.documents import Document, IngestProgress, IngestReport, IngestResult

KINDS = ("text", "markdown", "pdf", "sheet", "xlsx", "csv", "tsv", "chat")
_BAR = 24


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


def progress_printer(stream: Any = None) -> tuple[Callable[[IngestProgress], None], Callable[[], None]]:
    """A progress callback drawing one bar line (files, chunks, ETA), and a function clearing it."""
    last = [0.0]
    width = [0]

    def show(p: IngestProgress) -> None:
        now = time.monotonic()
        if p.current is not None and now - last[0] < 0.1:
            return
        last[0] = now
        frac = min(1.0, p.bytes_done / p.bytes_total) if p.bytes_total else (p.files_done / max(p.files_total, 1))
        filled = int(frac * _BAR)
        name = (p.current or "")[-30:]
        line = (
            f"[{'#' * filled}{'-' * (_BAR - filled)}] {p.files_done}/{p.files_total} files  "
            f"{p.chunks_done:,} chunks  ETA {_clock(p.eta)}  {name}"
        )
        width[0] = max(width[0], len(line))
        click.echo("\r" + line.ljust(width[0]), err=True, nl=False, file=stream)

    def clear() -> None:
        if width[0]:
            click.echo("\r" + " " * width[0] + "\r", err=True, nl=False, file=stream)

    return show, clear


def _result_line(r: IngestResult) -> str:
    if r.status == "failed":
        text = f"  failed     {r.name}: {r.error}"
        return text + (f"\n             Hint: {r.hint}" if r.hint else "")
    if r.status == "skipped":
        return f"  skipped    {r.error or r.name}"
    details = []
    if r.document is not None:
        details.append(f"v{r.document.version}")
        details.append(f"{r.document.chunk_count} chunks")
        if r.document.pages:
            details.append(f"{r.document.pages} pages")
    line = f"  {r.status:<10} {r.name}" + (f"  ({', '.join(details)})" if details else "")
    return line + "".join(f"\n             note: {w}" for w in r.warnings if r.status != "unchanged")


def summary(report: IngestReport) -> str:
    """The end-of-run summary: totals, then each input with its status or reason."""
    head = (
        f"Indexed {len(report.indexed)} file(s) ({report.chunks:,} chunks), {len(report.unchanged)} unchanged, "
        f"{len(report.failed)} failed"
        + (f", {len(report.removed)} removed (file gone)" if report.removed else "")
        + (f", {len(report.skipped)} skipped" if report.skipped else "")
        + f" in {report.seconds:.1f}s."
    )
    return "\n".join([head, *(f"Note: {n}" for n in report.notes), *(_result_line(r) for r in report.results)])


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(KINDS), help="Reader to use (default: detected from content and extension).")
@click.option("--name", help="Name (and uri) of the document read from stdin ('-'); default 'stdin'.")
@click.option("--scope", type=click.Choice(SCOPES), help="Default: project if --project is set, else team.")
@click.option("--project", "project", help="Project id of the documents (overrides the global --project).")
@click.option("--session", help="Session id (for session scope).")
@click.option("--encoding", help="Text encoding of non-UTF-8 files (e.g. cp1252); detected when not given.")
@click.option("--password", help="Password of an encrypted PDF.")
@click.option("--hidden-sheets", is_flag=True, default=None, help="Also index hidden sheets of workbooks.")
@click.option("--force", is_flag=True, help="Rebuild documents even when they are unchanged.")
@click.option("--sync", is_flag=True, help="Mirror each folder: remove the documents of files no longer in it.")
@json_option
@pass_state
def ingest(
    state: State,
    paths: tuple[str, ...],
    kind: str | None,
    name: str | None,
    scope: str | None,
    project: str | None,
    session: str | None,
    encoding: str | None,
    password: str | None,
    hidden_sheets: bool | None,
    force: bool,
    sync: bool,
    as_json: bool,
) -> None:
    """Index files, folders and globs (PATH... ; '-' reads stdin) as managed documents.

    Reads text, Markdown, PDF, .xlsx/.xlsm, .csv/.tsv and chat exports. Each
    file's outcome is listed at the end; the exit code is 1 if any failed.
    """
    from ...errors import FunesError
    from ...knowledge.documents import IngestReport, IngestResult

    f = state.funes()
    options: dict[str, Any] = dict(
        kind=kind,
        scope=scope,
        project=project or state.project,
        session=session,
        encoding=encoding,
        password=password,
        hidden_sheets=True if hidden_sheets else None,
        force=force,
    )
    started = time.monotonic()
    results: list[IngestResult] = []
    if "-" in paths:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("'-' reads a document from stdin, but nothing is piped.")
        label = name or "stdin"
        try:
            results.append(f.ingest(sys.stdin.buffer.read(), name=label, **options))
        except FunesError as exc:
            results.append(IngestResult(uri=label, name=label, status="failed", error=exc.message, hint=exc.hint))
    files = [p for p in paths if p != "-"]
    notes: tuple[str, ...] = ()
    if files:
        show, clear = (None, None)
        if sys.stderr.isatty() and not as_json:
            show, clear = progress_printer()
        try:
            report = f.ingest_paths(files, progress=show, sync=sync, **options)
        finally:
            if clear is not None:
                clear()
        results.extend(report.results)
        notes = report.notes
    total = IngestReport(results=tuple(results), seconds=time.monotonic() - started, notes=notes)
    emit(as_json, total.to_dict(), lambda: summary(total))
    if total.failed:
        sys.exit(1)


def _doc_line(d: Document) -> str:
    when = d.indexed_at.strftime("%Y-%m-%d %H:%M") if d.indexed_at else "never"
    line = f"{d.id}  {d.status:<8} v{d.version:<3} {d.chunk_count:>6} chunks  {d.kind:<8} {when}  {d.name}"
    if d.status == "failed" and d.error:
        line += f"\n    {d.error}"
    return line


def _describe(d: Document) -> str:
    lines = [
        f"id:          {d.id}",
        f"name:        {d.name}",
        f"uri:         {d.uri}",
        f"kind:        {d.kind}",
        f"status:      {d.status}" + (f" ({d.error})" if d.error else ""),
        f"version:     {d.version}",
        f"chunks:      {d.chunk_count}",
        f"size:        {d.size_bytes:,} bytes",
        f"hash:        {d.content_hash}",
        f"scope:       {d.scope}"
        + (f"  project={d.project_id}" if d.project_id else "")
        + (f"  session={d.session_id}" if d.session_id else ""),
        f"indexed at:  {d.indexed_at.isoformat() if d.indexed_at else 'never'}",
    ]
    if d.pages:
        lines.append(f"pages:       {d.pages}")
    lines += [f"note:        {w}" for w in d.warnings]
    return "\n".join(lines)


@click.group()
def docs() -> None:
    """Managed documents: list, show, rm, reindex."""


@docs.command(name="list")
@click.option("--status", type=click.Choice(["indexed", "failed"]), help="Only documents with this status.")
@click.option("--kind", type=click.Choice(["text", "markdown", "pdf", "sheet", "chat"]), help="Only this kind.")
@json_option
@pass_state
def docs_list(state: State, status: str | None, kind: str | None, as_json: bool) -> None:
    """List documents with their status, version and chunk count."""
    found = state.reader().documents(status=status, kind=kind)
    emit(as_json, [d.to_dict() for d in found], lambda: "\n".join(_doc_line(d) for d in found) or "No documents.")


@docs.command(name="show")
@click.argument("ref")
@click.option("--chunks", "show_chunks", is_flag=True, help="Also list the document's chunks with their attribution.")
@json_option
@pass_state
def docs_show(state: State, ref: str, show_chunks: bool, as_json: bool) -> None:
    """Show one document (by id or path)."""
    f = state.reader()
    doc = f.document(ref)
    chunks = f.document_chunks(doc.id) if show_chunks else []
    data = doc.to_dict()
    if show_chunks:
        data["chunks"] = [{"id": m.id, "attribution": m.attribution, "content": m.content} for m in chunks]

    def text() -> str:
        out = [_describe(doc)]
        for m in chunks:
            snippet = " ".join(m.content.split())
            out.append(f"  {m.id}  [{m.attribution}] {snippet[:100]}{'…' if len(snippet) > 100 else ''}")
        return "\n".join(out)

    emit(as_json, data, text)


@docs.command(name="rm")
@click.argument("refs", nargs=-1, required=True)
@json_option
@pass_state
def docs_rm(state: State, refs: tuple[str, ...], as_json: bool) -> None:
    """Remove documents (by id or path) with their chunks and vectors."""
    f = state.reader()
    removed = [f.remove_document(r) for r in refs]
    emit(
        as_json,
        {"removed": [{"id": d.id, "name": d.name, "chunks": d.chunk_count} for d in removed]},
        lambda: "\n".join(f"Removed {d.id} {d.name} ({d.chunk_count} chunks)." for d in removed),
    )


@docs.command(name="reindex")
@click.argument("refs", nargs=-1)
@click.option("--all", "all_docs", is_flag=True, help="Reindex every document.")
@click.option("--password", help="Password of an encrypted PDF.")
@json_option
@pass_state
def docs_reindex(state: State, refs: tuple[str, ...], all_docs: bool, password: str | None, as_json: bool) -> None:
    """Read documents' files again and rebuild their chunks (REF... or --all).

    With --all, documents whose file no longer exists are removed.
    """
    if not refs and not all_docs:
        raise click.UsageError("Name the documents to reindex (ids or paths), or pass --all.")
    show, clear = (None, None)
    if sys.stderr.isatty() and not as_json:
        show, clear = progress_printer()
    try:
        report = state.funes().reindex_documents(list(refs) if refs else None, password=password, progress=show)
    finally:
        if clear is not None:
            clear()
    emit(as_json, report.to_dict(), lambda: summary(report))
    if report.failed:
        sys.exit(1)


def register(group: click.Group) -> None:
    """Add ``ingest`` and the ``docs`` group to the main group."""
    group.add_command(ingest)
    group.add_command(docs)
