"""Read-your-writes across processes: a position token a writer hands on and a reader presents.

With a read replica (``db_read_url``), a process sends a tenant's reads to the
primary until the replica has replayed that tenant's last write
(:mod:`funes.store.pg_replica`). That covers one process. When the write and
the read are served by different processes (two ``funes serve`` behind a load
balancer, a worker that writes and a web process that reads), the reader
cannot know what the writer wrote. The writer's position is the token:

* :func:`noting_writes` collects, for one unit of work, the WAL position its
  last write on the primary ended at (:attr:`WriteMark.token`, e.g.
  ``"0/3A2F1C8"``, or None when it wrote nothing that a replica lags behind).
* :func:`reading_after` makes every read inside it wait for that position:
  it is served by the replica only once the replica has replayed it, else by
  the primary. The read never waits on the replica; it goes where the data is.

The REST server does both per request (headers ``Funes-Position`` out,
``Funes-Read-After`` in: :mod:`funes.interfaces.server.consistency`). Without a
replica (SQLite, or PostgreSQL without ``db_read_url``) every read already
sees every committed write: no token is noted and a presented one is checked
for its form only.

May import: ``funes.errors``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import InvalidInput

_TOKEN = re.compile(r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")


class WriteMark:
    """The furthest position the writes of one unit of work (a request, a ``with`` block) ended at."""

    def __init__(self) -> None:
        self.position = 0
        self._lock = threading.Lock()  # a request's work may run in more than one thread

    def note(self, position: int) -> None:
        """Move the mark to ``position`` if that is further."""
        with self._lock:
            self.position = max(self.position, position)

    @property
    def token(self) -> str | None:
        """The position as PostgreSQL writes a WAL position (``'16/B374D848'``); None before any write."""
        return as_token(self.position) if self.position else None


_marks: ContextVar[tuple[WriteMark, ...]] = ContextVar("funes_write_marks", default=())
_after: ContextVar[int] = ContextVar("funes_read_after", default=0)


def wal_position(text: str | None) -> int:
    """A WAL position (``'16/B374D848'``) as one comparable number (0 for none)."""
    if not text:
        return 0
    high, _, low = str(text).partition("/")
    return (int(high, 16) << 32) + int(low or "0", 16)


def as_token(position: int) -> str:
    """The text form of a position: the inverse of :func:`wal_position`."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def parse_token(token: str | None) -> int:
    """A presented token as a position (0 for none); a token of another form is refused with what to send."""
    if token is None or not token.strip():
        return 0
    if not _TOKEN.match(token.strip()):
        raise InvalidInput(
            f"{token[:40]!r} is not a Funes position token.",
            hint="Send back the Funes-Position a write answered with (two hex numbers, e.g. '0/3A2F1C8'), or nothing.",
        )
    return wal_position(token.strip())


@contextmanager
def noting_writes() -> Iterator[WriteMark]:
    """Collect the position the writes inside the block end at (nested blocks all see them)."""
    mark = WriteMark()
    reset = _marks.set((*_marks.get(), mark))
    try:
        yield mark
    finally:
        _marks.reset(reset)


@contextmanager
def reading_after(token: str | int | None) -> Iterator[None]:
    """Serve the reads inside the block from a replica only once it holds the write ``token`` names."""
    position = token if isinstance(token, int) else parse_token(token)
    reset = _after.set(max(_after.get(), position))
    try:
        yield
    finally:
        _after.reset(reset)


def wrote(position: int) -> None:
    """Note that a write of the current unit of work ended at ``position`` (the store calls this)."""
    for mark in _marks.get():
        mark.note(position)


def required() -> int:
    """The position the current unit of work's reads must see (0: none presented)."""
    return _after.get()


_read_at: ContextVar[float | None] = ContextVar("funes_read_at", default=None)


@contextmanager
def read_at(stamp: float) -> Iterator[None]:
    """Treat what is done inside as resting on reads made at ``stamp`` (epoch seconds; a job's start): an
    embedding cached or an access logged after a forget since then must not bring forgotten text back."""
    reset = _read_at.set(stamp)
    try:
        yield
    finally:
        _read_at.reset(reset)


def read_since() -> float | None:
    """The ``stamp`` of the innermost :func:`read_at` block (None outside any)."""
    return _read_at.get()
