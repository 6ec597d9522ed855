"""Read replicas of the PostgreSQL store: reads outside a transaction go to a streaming replica (``db_read_url``).

Routing. A statement goes to the replica when it runs outside a write
transaction *and* is a pure read: it starts with ``SELECT`` or ``WITH`` and
names nothing that writes or needs the primary (``INSERT``, ``UPDATE``,
``DELETE``, ``FOR SHARE``, advisory locks, sequences, ``pg_current_wal_lsn``
...; :func:`is_pure_read`), nor the server's own state, which a standby
keeps apart (``pg_stat_*`` counts, sizes, settings, file paths: maintenance
decides from the primary's). Everything else goes to the primary: every
write transaction with every read inside it, the jobs claim, and the
access-tracking rows, which are written outside a transaction and so are
checked statement by statement (a pipeline holding one write goes to the
primary whole).

Read-your-writes, per tenant within a process. Each write on the primary
notes the WAL position it ended at (``pg_current_wal_lsn()``, sent in the same
pipeline as the ``COMMIT``, so it costs no round trip) against the acting
tenant setting (``funes.tenant``). A read by that tenant (or any read after a
write acting for no tenant) first asks the replica how far it has replayed
(``pg_last_wal_replay_lsn()``, one round trip, only while a write is waiting);
until the replica has replayed the write, the read goes to the primary. So a
request that wrote, and every later request of the same tenant served by the
same process, sees the write. Across processes, the writer's position is a
token the reader presents (:mod:`funes.store.consistency`; the REST server's
``Funes-Position`` and ``Funes-Read-After`` headers); without it, another
process's write becomes visible on the replica after the replication lag
(docs/postgres.md).

Failure. When the replica cannot be reached (at open, or a connection breaks
mid-read), the read runs on the primary instead, one warning is logged, and
the replica is tried again after ``RETRY_SECONDS``. A user never sees the
replica's failure as an error. A statement the replica cancels (a conflict
with recovery) is retried once on the primary.

The replica keeps a pool of its own, sized like the primary's
(``pg_pool_min``/``pg_pool_max``), with its own :class:`StatementCounter`
(:attr:`ReadReplica.counter`), which the tests read to show which server
served a statement.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..errors import BackendUnavailable
from . import consistency
from .consistency import wal_position
from .pg_connection import PgConnection, PgDatabase, StatementCounter, counted_connection, redact
from .tenancy import current_tenant

log = logging.getLogger("funes.store.postgres")
T = TypeVar("T")

#: Seconds an unreachable replica is left alone before it is tried again.
RETRY_SECONDS = 30.0
_CONNECT_TIMEOUT = 5  # seconds: a replica that does not answer at once is treated as down
_POSITION = "SELECT pg_current_wal_lsn()::text"
_REPLAYED = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"
# SET LOCAL: a read batch's planner setting for the statements after it (postgres_search), as a standby runs it.
_READ_START = re.compile(r"^\s*(?:SELECT|WITH|SET\s+LOCAL)\b", re.IGNORECASE)
_NEEDS_PRIMARY = re.compile(
    r"\b(?:INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|nextval|setval|pg_advisory\w*|pg_try_advisory\w*|"
    r"pg_notify|txid_current\w*|pg_current_xact_id\w*|pg_current_wal\w*|lo_\w+|"
    # The server's own state differs on a standby: activity statistics, sizes, settings, file paths. The
    # planner's statistics (pg_stats, which the keyword statement reads) are a catalog, replicated as they are.
    r"pg_stat(?!s\b)\w*|pg_\w*_size|current_setting|pg_relation_filepath)\b|\bFOR\s+(?:KEY\s+)?SHARE\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=2048)
def is_pure_read(sql: str) -> bool:
    """Whether a statement only reads, so a hot standby can run it (``SELECT``/``WITH`` naming no write,
    or a ``SET LOCAL`` planner setting).

    Cached: statements are parameterised templates, and the keyword leg's is several kB to scan.
    """
    return _READ_START.match(sql) is not None and _NEEDS_PRIMARY.search(sql) is None


class ReadReplica:
    """A streaming replica beside a :class:`PgDatabase`: serves its pure reads, falls back to it when behind or down."""

    def __init__(self, primary: PgDatabase, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.primary = primary
        self.url = url
        #: Statements and round trips served by the replica.
        self.counter = StatementCounter()
        self.pool: Any = None
        self._lock = threading.Lock()
        self._sizes = (min_size, max(min_size, max_size))
        self._down_until = 0.0
        self._warned = False
        self._waiting: dict[str, int] = {}  # tenant setting -> the WAL position its last write ended at
        self._replayed = 0
        self._connect()

    # -- the replica's pool ---------------------------------------------------------
    def _connect(self) -> bool:
        psycopg = self.primary._psycopg
        from psycopg_pool import ConnectionPool

        try:
            psycopg.connect(self.url, connect_timeout=_CONNECT_TIMEOUT).close()
            pool = ConnectionPool(
                self.url,
                min_size=self._sizes[0],
                max_size=self._sizes[1],
                timeout=_CONNECT_TIMEOUT,
                kwargs={"autocommit": True},
                connection_class=counted_connection(psycopg, self.counter),
                open=False,
            )
            pool.open(wait=True, timeout=_CONNECT_TIMEOUT)
        except Exception as exc:
            self._down(exc)
            return False
        self.pool = pool
        if self._warned:
            log.warning("The read replica at %s is back; reads go to it again.", redact(self.url))
        self._warned = False
        return True

    def _down(self, exc: BaseException) -> None:
        with self._lock:
            self._down_until = time.monotonic() + RETRY_SECONDS
            pool, self.pool = self.pool, None
            first = not self._warned
            self._warned = True
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.close(timeout=0)
        if first:
            log.warning(
                "The read replica at %s cannot be reached (%s); reads go to the primary and the replica is "
                "tried again every %.0f s.",
                redact(self.url),
                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                RETRY_SECONDS,
            )

    def _usable(self) -> bool:
        if self.pool is not None:
            return True
        if self.primary._closed or time.monotonic() < self._down_until:
            return False
        return self._connect()

    @contextlib.contextmanager
    def _borrow(self) -> Iterator[PgConnection]:
        pool = self.pool
        if pool is None:  # closed by another thread since _usable
            raise BackendUnavailable("The read replica went away.")
        raw = pool.getconn()
        try:
            conn = PgConnection(self.primary, raw)
            if self.primary._vector_ready:
                conn.register_vector()
            yield conn
        finally:
            with contextlib.suppress(Exception):  # a pool closed meanwhile (the replica went down)
                pool.putconn(raw)

    # -- read-your-writes -----------------------------------------------------------
    def commit(self, conn: PgConnection) -> None:
        """COMMIT a write transaction and note the WAL position it ended at (one round trip for both)."""
        with conn.raw.pipeline():
            conn.send_pending()  # the write's deferred statements (pg_connection.PgConnection.pending)
            conn.raw.execute("COMMIT")
            cur = conn.raw.execute(_POSITION)
        self._wrote(cur.fetchone()[0])

    def _wrote(self, position: str | None) -> None:
        tenant = current_tenant.get() or ""
        at = wal_position(position)
        consistency.wrote(at)  # the caller's token (another process reads after it)
        with self._lock:
            if at > self._waiting.get(tenant, 0):
                self._waiting[tenant] = at

    def _needed(self) -> int:
        tenant = current_tenant.get() or ""
        presented = consistency.required()  # a token another process's write handed on
        with self._lock:
            if not self._waiting:
                return presented
            if not tenant:
                return max(presented, *self._waiting.values())
            return max(presented, self._waiting.get(tenant, 0), self._waiting.get("", 0))

    def _caught_up(self, conn: PgConnection) -> bool:
        needed = self._needed()
        if needed <= self._replayed:
            return True
        recovering, replayed = conn.raw.execute(_REPLAYED).fetchone()
        # Not in recovery: the read URL names a primary (or a promoted replica), which holds every write.
        position = wal_position(replayed) if recovering else max(needed, self._replayed)
        with self._lock:
            self._replayed = max(self._replayed, position)
            self._waiting = {t: at for t, at in self._waiting.items() if at > self._replayed}
        return needed <= self._replayed

    # -- routing ---------------------------------------------------------------------
    def read(self, statements: Sequence[str], run: Callable[[PgConnection], T]) -> T:
        """Run ``run`` on the replica when its statements are pure reads and the replica holds the tenant's writes."""
        if not all(is_pure_read(sql) for sql in statements):
            with self.primary.borrow() as conn:
                out = run(conn)
                position = conn.raw.execute(_POSITION).fetchone()[0]
            self._wrote(position)
            return out
        if self._usable():
            try:
                with self._borrow() as conn:
                    if self._caught_up(conn):
                        return run(conn)
            except Exception as exc:  # the replica's failure is never the user's error
                if not _replica_failure(exc):
                    raise
                if _connection_lost(exc):
                    self._down(exc)
                else:
                    log.info("a read on the replica failed (%s); ran it on the primary", exc)
        with self.primary.borrow() as conn:
            return run(conn)

    def close(self) -> None:
        """Close the replica's pool."""
        pool, self.pool = self.pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.close()


def _replica_failure(exc: BaseException) -> bool:
    """Whether an error is the replica's (unreachable, broken, recovery conflict), not the statement's."""
    from psycopg import OperationalError
    from psycopg_pool import PoolTimeout

    cause = exc.__cause__ if isinstance(exc, BackendUnavailable) else exc
    return isinstance(cause, OperationalError | PoolTimeout) or isinstance(exc, BackendUnavailable)


def _connection_lost(exc: BaseException) -> bool:
    """Whether the replica itself is gone (as against one statement it cancelled: a conflict with recovery)."""
    from psycopg import errors

    cause = exc.__cause__ if isinstance(exc, BackendUnavailable) else exc
    return not isinstance(cause, errors.SerializationFailure | errors.QueryCanceled)
