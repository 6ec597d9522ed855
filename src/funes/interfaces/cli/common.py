"""What every command module of the CLI shares: options, the lazily opened service, output and errors.

Command modules import this module and nothing else of the CLI; the entry
module (``__init__``) imports the command modules. Nothing heavy is imported
here: the service (and the embedding model) load only when a command needs them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from ...models import turns_around

if TYPE_CHECKING:
    from ...models import Memory, SearchHit
    from ...service import Funes

MEMORY_TYPES = ("preference", "fact", "decision", "context", "conversation")
SCOPES = ("session", "project", "team")
MESSAGE_ROLES = ("user", "assistant", "system", "tool")


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
        """Open the service on first use.

        A short command never runs background jobs (``worker="off"``: they
        wait for a long-running process or `funes jobs run`); long-running
        commands pass ``worker="on"``. Commands that never embed pass
        ``check_embedder=False`` so a changed embedder setting cannot lock a
        user out of listing, exporting or deleting.
        """
        if self._funes is None:
            import funes

            kwargs.setdefault("worker", "off")
            settings = {"tenant": self.tenant, "user": self.user, "project": self.project, "embedder": self.embedder}
            self._funes = funes.open(self.db, **settings, **kwargs)
        return self._funes

    def reader(self) -> Funes:
        """The service for a command that never embeds (list, get, stats, export, rm, doctor, jobs)."""
        return self.funes(check_embedder=False)

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
        return read_stdin_text()
    return value


def read_stdin_text() -> str:
    """All of stdin as text: UTF-8, else Windows-1252/Latin-1 with a note on stderr.

    Reading through the locale's text layer turned Latin-1 bytes into lone
    surrogates and a misleading error (issue 9); legacy 8-bit text is common in
    pipes, and every byte sequence is valid Latin-1, so nothing is refused.
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text-only stdin (tests, embedding hosts)
        return sys.stdin.read()
    data = buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
        label = "Windows-1252"
    except UnicodeDecodeError:
        text, label = data.decode("latin-1"), "Latin-1"
    click.echo(f"Note: stdin is not UTF-8; read it as {label}.", err=True)
    return text


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
        f"source:       {memory.attribution}  (written by {memory.written_by})",
        f"version:      {memory.version}  ({len(memory.previous_versions)} previous)"
        f"  valid from {memory.valid_since.isoformat()}",
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
    if memory.proposal:
        lines += ["", f"proposal ({memory.proposal.get('author')}: {memory.proposal.get('reason') or 'new text'}):"]
        lines += [f"    {line}" for line in str(memory.proposal.get("content")).splitlines() or [""]]
        lines.append(f"    `funes proposals accept {memory.id}` or `funes proposals dismiss {memory.id}`")
    if memory.previous_versions:
        # Newest first: the version just replaced is the one people look for.
        lines += ["", "previous versions:"]
        for old in reversed(memory.history):
            until = f"  valid until {old.valid_to.isoformat()}" if old.valid_to else ""
            lines.append(
                f"  version {old.version}  {old.updated_at.isoformat()}  importance {old.importance:.2f}{until}"
            )
            shown = f"[redacted; {old.content_hash}]" if old.redacted_at is not None else old.content
            lines += [f"    {line}" for line in shown.splitlines() or [""]]
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
    if hit.memory.valid_to is not None:  # a past state (--include-superseded / --as-of)
        text = f"(v{hit.memory.version}, superseded {hit.memory.valid_to:%Y-%m-%d}) {text}"
    line = (
        f"{n}. [{hit.attribution}] {text}\n   {hit.memory.id}  relevance={hit.relevance:.2f}{' (weak)' if hit.weak else ''} "
        f"cos={sim} {' '.join(why)} score={hit.score:.4f}"
    )
    before, after = turns_around(hit.memory, hit.context)  # the conversation around a message hit
    for where, turns in (("before", before), ("after", after)):
        for turn in turns:
            said = " ".join(turn.content.split())
            said = said if len(said) <= 120 else said[:119] + "…"
            line += f"\n   ({where}) {turn.role}: {said}"
    return line


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
    from ...errors import BackendUnavailable, StoreCorrupt

    text = str(exc).lower()
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return StoreCorrupt(
            f"The store is damaged ({exc}).",
            hint="Run `funes doctor --repair` to salvage what is readable into a new store file.",
        )
    from ...store.connection import write_error

    clear = write_error("the store", exc)
    if clear is not None:
        return clear
    if "locked" in text or "busy" in text:
        return BackendUnavailable(
            f"The store is busy ({exc}).", hint="Retry; another process is holding the write lock."
        )
    return BackendUnavailable(f"The store failed: {exc}.", hint="Run `funes doctor` to check the store.")


class FunesGroup(click.Group):
    """A click group that turns Funes errors into exit code 1 with a hint."""

    def invoke(self, ctx: click.Context) -> Any:
        from ...errors import FunesError

        try:
            return super().invoke(ctx)
        except FunesError as exc:
            raise FunesCommandError(exc) from exc
        except UnicodeError as exc:
            from ...errors import InvalidInput

            raise FunesCommandError(
                InvalidInput(
                    f"The input is not valid UTF-8 text ({exc}).",
                    hint="Convert it to UTF-8 first (e.g. `iconv -f latin1 -t utf-8`), or pass --encoding where offered.",
                )
            ) from exc
        except BrokenPipeError:
            # `funes export | head`: the reader went away; that is not an error.
            sys.stderr.close()
            ctx.exit(0)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or not exc.filename:
                translated = _store_error(exc)
                if translated is None:
                    raise
                raise FunesCommandError(translated) from exc
            from ...errors import InvalidInput

            # A missing, unreadable or unwritable file named on the command line is the user's to fix.
            raise FunesCommandError(
                InvalidInput(
                    f"Cannot use {exc.filename} ({exc.strerror or exc}).",
                    hint="Check the path and its permissions.",
                )
            ) from exc
        except Exception as exc:
            translated = _store_error(exc)
            if translated is None:
                if os.environ.get("FUNES_DEBUG"):
                    raise
                from ...errors import FunesError as Internal

                # Every CLI path ends in a message and exit 1, never a traceback (issue 9).
                translated = Internal(
                    f"Funes failed unexpectedly ({type(exc).__name__}: {exc}).",
                    hint="This is a Funes bug: rerun with FUNES_DEBUG=1 for the traceback and report it.",
                )
            raise FunesCommandError(translated) from exc
