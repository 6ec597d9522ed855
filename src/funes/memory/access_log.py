"""The access log: who read which record when, written with the read that caused it.

Each search, get or tool call that returns records writes access rows and
bumps the records' counters before it returns, so a crash after a read never
loses its rows (issue 8); on PostgreSQL they go with the tenant's next fetch
of records, or within ``ACCESS_FLUSH_SECONDS`` (funes.store.postgres_extras),
so a search costs no round trip for them (issue 29). A store that cannot take the write (another process
holds the lock past ``busy_timeout_ms``, or it is read-only) must not fail
the read: the rows wait in memory and go with the next write that succeeds,
or at close.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime

from ..errors import FunesError
from ..models import from_epoch, utcnow
from ..store import AccessEvent, Store
from ..store.consistency import read_since

log = logging.getLogger("funes")

HELD_BACK_MAX = 10_000  # rows kept in memory while the store refuses writes


class AccessLog:
    """Access rows and counters over one store, held back in memory while it is locked."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._unwritten: list[tuple[AccessEvent, datetime]] = []
        self._lock = threading.Lock()
        self._warned = False

    def track(self, events: Sequence[AccessEvent]) -> None:
        """Write access rows and counters now, with any rows held back before."""
        if getattr(self.store, "read_only", False):
            return  # a read-only store keeps no access log; reads must still work (issue 9)
        # Inside a job the read happened at the job's start: a forget since then keeps its query text out, and
        # its gone records' rows (sqlite_forget.ACCESS_ROW), even when the rows outlive the job's rollback.
        now = utcnow()
        now = min(now, from_epoch(read_since()) or now)
        defer = getattr(self.store, "defer_accesses", None)
        if defer is not None:
            # PostgreSQL holds them to go with the tenant's next fetch of records (no round trip of
            # their own on the request path), or writes them in one statement once due; no events
            # means a flush (close, an export): everything held goes now.
            try:
                defer([(e, now) for e in events])
                if not events:
                    self.store.flush_accesses()  # type: ignore[attr-defined]
            except FunesError as exc:
                log.warning("access rows held back: %s", exc)
            return
        with self._lock:
            batch = [*self._unwritten, *((e, now) for e in events)]
            self._unwritten = []
            if not batch:
                return
            try:
                with self.store.transaction():
                    for at, group in _by_time(batch):
                        self.store.record_access(group, at)
            except FunesError as exc:
                # Once per process: a read-only store would otherwise warn on every search.
                level = logging.DEBUG if self._warned else logging.WARNING
                self._warned = True
                log.log(level, "access log held back (%d rows): %s", len(batch), exc)
                self._unwritten = batch[-HELD_BACK_MAX:]


def _by_time(batch: Sequence[tuple[AccessEvent, datetime]]) -> Iterator[tuple[datetime, list[AccessEvent]]]:
    """Access events grouped by the time they happened, in order."""
    for at, group in itertools.groupby(batch, key=lambda item: item[1]):
        yield at, [event for event, _ in group]
