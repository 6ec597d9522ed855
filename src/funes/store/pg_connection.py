"""PostgreSQL connections for the Postgres store: a psycopg 3 pool, per-thread connections, tenant-scoped transactions.

The store's SQL is written once with ``?`` placeholders and shared, where it is
portable, with the SQLite store's mixins. :class:`PgConnection` gives a
connection the surface those mixins use (``execute`` returning a cursor with
``fetchone``/``fetchall``/iteration/``rowcount``/``lastrowid``) and rewrites
the few SQLite spellings they use (``?``, ``INSERT OR IGNORE``, two-argument
``MAX``) into PostgreSQL.

:class:`PgDatabase` mirrors :class:`funes.store.connection.Database`: a read
outside a transaction borrows a pooled connection for one statement (its rows
are read in full, so the connection goes back at once, and a server with 40
worker threads needs no 40 connections); ``write()`` holds one connection for
its transaction, with nested calls as savepoints. No lock of this process is
held across a round trip (issue 29): threads' transactions run side by side, as
several processes' do, and the read-then-write sequences are made safe by
PostgreSQL itself (``SELECT ... FOR UPDATE`` on the row, ``SKIP LOCKED`` job
claims, single-statement ``UPDATE ... RETURNING`` / ``ON CONFLICT`` upserts,
transaction-scoped advisory locks on content identity). A deadlock or
serialisation failure between them is run again (:meth:`PgDatabase.retrying`) when
the write is a transaction of its own, else a clear "retry" error (503), never a
traceback. Reads inside a transaction run on its connection, so they see its writes. Every statement runs with
``funes.tenant`` set from :data:`funes.store.tenancy.current_tenant`, which the
row-level-security policies read; when the setting must change it travels in
one pipeline with the statement, so it costs no round trip of its own.
:meth:`PgDatabase.batch` sends several reads (with ``SET LOCAL`` planner
settings) in one round trip. Every connection counts its statements and
round trips in :attr:`PgDatabase.counter` (a pipeline is one round trip).
With a read replica attached (:mod:`funes.store.pg_replica`), the pure reads
outside a transaction go to it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..errors import BackendUnavailable, DependencyMissing, StoreCorrupt, WriteCrossed
from .tenancy import current_tenant

log = logging.getLogger("funes.store.postgres")
T = TypeVar("T")
#: How many times a self-contained write rolled back for crossing another (a deadlock) is run in all.
CROSSED_ATTEMPTS = 4

# Transaction control that a write defers (PgConnection.pending): a transaction of these alone did nothing.
_CONTROL = re.compile(r"(BEGIN|SAVEPOINT|RELEASE SAVEPOINT) ?")
# Tables whose inserts report a generated key as ``cursor.lastrowid``.
_SERIAL_KEYS = {"cleanup_log": "id", "access_log": "id", "usage": "id", "memory_vectors": "vector_id"}
# Statements PostgreSQL refuses inside a transaction block, which a pipeline of several statements is.
_OUTSIDE_TRANSACTION = re.compile(
    r"\s*(VACUUM|CLUSTER|(CREATE\s+(UNIQUE\s+)?|DROP\s+|REINDEX\s+)INDEX\s+CONCURRENTLY)\b", re.IGNORECASE
)
_INSERT = re.compile(r"^\s*INSERT\s+(OR\s+(IGNORE|REPLACE)\s+)?INTO\s+(\w+)", re.IGNORECASE)
# SQLite's scalar two-argument MAX in the shared mixins, spelled as PostgreSQL's GREATEST.
_REWRITES = (
    ("MAX(last_activity, ?)", "GREATEST(last_activity, ?)"),
    ("MAX(updated_at, COALESCE(last_accessed, 0))", "GREATEST(updated_at, COALESCE(last_accessed, 0))"),
    ("LENGTH(CAST(content AS BLOB))", "octet_length(content)"),
    (" IS ?", " IS NOT DISTINCT FROM ?"),
    ("ON CONFLICT(id)", "ON CONFLICT (tenant, id)"),  # ids are unique per tenant here (pg_sql/014)
    # A record's vectors carry its tenant here (not in SQLite): joins keep to one tenant (Citus).
    (
        "JOIN memories m ON m.rowid = v.memory_rowid",
        "JOIN memories m ON m.tenant = v.tenant AND m.rowid = v.memory_rowid",
    ),
)
# Conflict targets of the tables the shared mixins write with INSERT OR REPLACE.
_REPLACE_KEYS = {"messages": "tenant, id"}


@functools.lru_cache(maxsize=1024)
def placeholders(sql: str) -> str:
    """``?`` placeholders as ``%s`` (and literal ``%`` doubled), outside quoted strings and identifiers.

    Cached: a search's statements are a few shapes, and the character loop cost 0.3 ms a keyword statement.
    """
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
            out.append("%%" if ch == "%" else ch)
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


@functools.lru_cache(maxsize=2048)
def translate(sql: str) -> tuple[str, str | None]:
    """SQLite-flavoured shared SQL as PostgreSQL, and the key to return as ``lastrowid`` (or None)."""
    for old, new in _REWRITES:
        if old in sql:
            sql = sql.replace(old, new)
    key = None
    match = _INSERT.match(sql)
    if match is not None:
        table = match.group(3)
        if match.group(2):
            sql = _INSERT.sub(f"INSERT INTO {table}", sql, count=1)
            if match.group(2).upper() == "IGNORE":
                sql += " ON CONFLICT DO NOTHING"
            else:
                columns = re.search(r"\(([^)]*)\)", sql)
                names = [c.strip() for c in columns.group(1).split(",")] if columns else []
                target = _REPLACE_KEYS.get(table, "id")
                keys = {k.strip() for k in target.split(",")}
                sets = ", ".join(f"{c} = excluded.{c}" for c in names if c not in keys)
                sql += f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
        if table in _SERIAL_KEYS and "RETURNING" not in sql.upper():
            key = _SERIAL_KEYS[table]
            sql += f" RETURNING {key}"
    return placeholders(sql), key


class StatementCounter:
    """Statements and network round trips of one database's connections (a pipeline counts one round trip).

    ``log``, when a list, receives ``(tenant setting in force, statement)`` for each statement.
    """

    def __init__(self) -> None:
        self.statements = 0
        self.round_trips = 0
        self.log: list[tuple[str | None, str]] | None = None
        self._lock = threading.Lock()

    def statement(self, raw: Any, query: Any) -> None:
        """Count one statement sent on ``raw`` (and a round trip unless it is inside a pipeline)."""
        with self._lock:
            self.statements += 1
            if not getattr(raw, "_funes_piped", 0):
                self.round_trips += 1
            if self.log is not None:
                self.log.append((getattr(raw, "_funes_tenant", None), str(query)))

    def round_trip(self) -> None:
        """Count one round trip (a pipeline's)."""
        with self._lock:
            self.round_trips += 1


def counted_connection(psycopg: Any, counter: StatementCounter) -> type:
    """A psycopg connection class whose statements and pipelines are counted in ``counter``."""

    class CountedConnection(psycopg.Connection):  # type: ignore[misc, name-defined]
        funes_counter = counter

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            counter.statement(self, query)
            return super().execute(query, params, **kwargs)

        @contextlib.contextmanager
        def pipeline(self) -> Iterator[Any]:
            self._funes_piped = getattr(self, "_funes_piped", 0) + 1
            try:
                with super().pipeline() as pipe:
                    yield pipe
            finally:
                self._funes_piped -= 1
                if not self._funes_piped:
                    counter.round_trip()

    return CountedConnection


def _tenant_now() -> str:
    return current_tenant.get() or ""


class Deferred:
    """A statement deferred on a write's connection (:meth:`PgConnection.defer`): what it runs, as whom, its rows."""

    __slots__ = ("cursor", "params", "sql", "tenant")

    def __init__(self, sql: str, params: tuple[Any, ...] | None, tenant: str | None) -> None:
        self.sql = sql
        self.params = params
        self.tenant = tenant
        self.cursor: Any = None

    @property
    def ran(self) -> bool:
        """Whether PostgreSQL ran it (a pipeline that failed before it left it unrun)."""
        return self.cursor is not None and self.cursor.pgresult is not None

    def rows(self) -> list[Any]:
        """Its rows, once it was sent (after :meth:`PgConnection.flush` or a later statement)."""
        if self.cursor is None:
            raise RuntimeError(f"rows of a statement not sent yet: {self.sql[:60]}")
        return PgCursor(self.cursor).fetchall()


class PgCursor:
    """A statement's result, read in full (so its connection can go back to the pool at once)."""

    def __init__(self, cursor: Any, lastrowid: int | None = None) -> None:
        self.rowcount = int(cursor.rowcount)
        self._rows: list[Any] = list(cursor.fetchall()) if cursor.description is not None else []
        self._next = 0
        self.lastrowid = lastrowid

    def fetchone(self) -> Any:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        rows, self._next = self._rows[self._next :], len(self._rows)
        return rows

    def fetchmany(self, size: int) -> list[Any]:
        """Up to ``size`` more rows."""
        rows = self._rows[self._next : self._next + size]
        self._next += len(rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """A pooled connection with the shared-SQL surface, its ``funes.tenant`` kept in step with the caller's."""

    def __init__(self, db: PgDatabase, raw: Any) -> None:
        self.db = db
        self.raw = raw
        self.depth = 0
        #: Statements sent in one pipeline with the next statement that is waited for, or with the COMMIT:
        #: BEGIN, SAVEPOINT, RELEASE, a lock, and reads whose rows are taken after a :meth:`flush`.
        self.pending: list[Deferred] = []

    def defer(self, sql: str, params: Sequence[Any] | None = None, *, tenant: bool = True) -> Deferred:
        """Send ``sql`` (PostgreSQL SQL) ahead of the next statement, in its round trip; its failure fails that one.

        It runs as the tenant in force now (``tenant=False``: as any, for transaction control and locks);
        its rows are there once it was sent (:meth:`flush` sends it at once).
        """
        deferred = Deferred(sql, tuple(params) if params is not None else None, _tenant_now() if tenant else None)
        self.pending.append(deferred)
        return deferred

    def send_pending(self) -> None:
        """Inside a pipeline: the deferred statements, in their order, each as its tenant."""
        pending, self.pending = self.pending, []
        for deferred in pending:
            if deferred.tenant is not None:
                self._sync_tenant(deferred.tenant)
            deferred.cursor = self.raw.execute(deferred.sql, deferred.params)

    def flush(self) -> None:
        """Send the deferred statements now, in one round trip (their rows are then there to read)."""
        if self.pending:
            try:
                with self.raw.pipeline():
                    self.send_pending()
            except self.db.error as exc:
                self.forget_tenant()
                raise self.db.translate_error(exc) from exc

    def _tenant_stale(self) -> bool:
        # Remembered on the connection itself: pooled connections move between threads.
        return getattr(self.raw, "_funes_tenant", None) != _tenant_now()

    def _sync_tenant(self, wanted: str | None = None) -> None:
        wanted = _tenant_now() if wanted is None else wanted
        if getattr(self.raw, "_funes_tenant", None) != wanted:
            # Session-level (is_local false): it holds for the statements that follow, in or out of
            # a transaction; a rollback may undo it, so rollbacks forget the remembered value.
            self.raw._funes_tenant = wanted  # before: a failure forgets it (forget_tenant)
            self.raw.execute("SELECT set_config('funes.tenant', %s, false)", (wanted,))

    def register_vector(self) -> None:
        """Teach this connection pgvector's type (numpy arrays in, pgvector values out), once."""
        if getattr(self.raw, "_funes_vector", False):
            return
        from pgvector.psycopg import register_vector

        register_vector(self.raw)
        self.raw._funes_vector = True

    def forget_tenant(self) -> None:
        """The session's tenant setting is unknown (after a rollback): set it again before the next statement."""
        self.raw._funes_tenant = None

    def _run(self, sql: str, params: Sequence[Any] | None, key: str | None) -> PgCursor:
        args = tuple(params) if params is not None else None
        try:
            if self._tenant_stale() and _OUTSIDE_TRANSACTION.match(sql):
                self.flush()
                self._sync_tenant()  # a round trip of its own: piped together, the two would be one transaction
                cur = self.raw.execute(sql, args)
            elif self.pending or self._tenant_stale():
                with self.raw.pipeline():  # the deferred statements, the tenant setting and the statement: one trip
                    self.send_pending()
                    self._sync_tenant()
                    cur = self.raw.execute(sql, args)
            else:
                cur = self.raw.execute(sql, args)
        except self.db.error as exc:
            self.forget_tenant()
            raise self.db.translate_error(exc) from exc
        if key is not None:
            row = cur.fetchone()
            return PgCursor(cur, int(row[0]) if row is not None else None)
        return PgCursor(cur)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement of the shared SQL (``?`` placeholders)."""
        text, key = translate(sql)
        return self._run(text, params, key)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""
        text, key = translate(sql)
        if key is not None:
            text = text[: text.rindex(" RETURNING ")]
        self.flush()
        self._sync_tenant()
        self.raw.funes_counter.statement(self.raw, text)  # psycopg pipelines executemany: one round trip
        with self.raw.cursor() as cur:
            try:
                cur.executemany(text, [tuple(r) for r in rows])
            except self.db.error as exc:
                self.forget_tenant()
                raise self.db.translate_error(exc) from exc

    def native(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run PostgreSQL SQL as written (``%s`` placeholders), with the tenant set."""
        return self._run(sql, params, None)

    def executemany_returning(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Run one statement of the shared SQL per row, pipelined; the first column each returned."""
        text, _ = translate(sql)
        self.flush()
        self._sync_tenant()
        self.raw.funes_counter.statement(self.raw, text)
        out: list[Any] = []
        with self.raw.cursor() as cur:
            try:
                cur.executemany(text, [tuple(r) for r in rows], returning=True)
                while True:
                    out.append(cur.fetchone()[0])
                    if not cur.nextset():
                        break
            except self.db.error as exc:
                self.forget_tenant()
                raise self.db.translate_error(exc) from exc
        return out

    def batch(
        self,
        statements: Sequence[tuple[str, Sequence[Any] | None]],
        settings: Sequence[str] = (),
        *,
        write: bool = False,
        prepare: bool | None = None,
    ) -> list[PgCursor]:
        """Read statements (PostgreSQL SQL) in one round trip, with ``SET LOCAL`` lines in force for them alone.

        The settings need a transaction: a read-only one committed after the
        statements, or a savepoint rolled back to inside a write. ``write``:
        the statements may write, in a transaction of their own that commits
        (inside a caller's transaction the settings are left out: its commit decides).
        ``prepare``: True prepares the statements on their first run on this connection (psycopg's own
        rule, None, prepares a text on its fifth).
        """
        inside = self.depth > 0
        if write and inside:
            settings = ()
        cursors: list[Any] = []
        try:
            with self.raw.pipeline():
                self.send_pending()
                self._sync_tenant()  # before BEGIN: the rollback below leaves it in force
                if settings:
                    self.raw.execute("SAVEPOINT funes_batch" if inside else "BEGIN" if write else "BEGIN READ ONLY")
                    for line in settings:
                        self.raw.execute(line)
                cursors = [
                    self.raw.execute(sql, tuple(p) if p is not None else None, prepare=prepare) for sql, p in statements
                ]
                if settings and inside:
                    self.raw.execute("ROLLBACK TO SAVEPOINT funes_batch")
                    self.raw.execute("RELEASE SAVEPOINT funes_batch")
                elif settings:
                    # COMMIT, not ROLLBACK: a pipeline is one implicit transaction until its sync, so BEGIN takes
                    # in the tenant setting sent before it, and a rollback undid it while the connection went on
                    # believing it set: the next statement ran as the previous tenant (row-level security's tenant).
                    self.raw.execute("COMMIT")
        except self.db.error as exc:
            self.forget_tenant()
            if settings and not inside:
                with contextlib.suppress(Exception):
                    self.raw.execute("ROLLBACK")
            raise self.db.translate_error(exc) from exc
        return [PgCursor(cur) for cur in cursors]


class PgReader:
    """Statements outside a transaction: each borrows a pooled connection for just its own run (a replica's for reads)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement of the shared SQL (``?`` placeholders)."""
        return self.db.read((sql,), lambda conn: conn.execute(sql, params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter row (each commits on its own)."""
        self.db.read((sql,), lambda conn: conn.executemany(sql, rows))

    def native(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run PostgreSQL SQL as written (``%s`` placeholders)."""
        return self.db.read((sql,), lambda conn: conn.native(sql, params))

    def batch(
        self,
        statements: Sequence[tuple[str, Sequence[Any] | None]],
        settings: Sequence[str] = (),
        *,
        write: bool = False,
        prepare: bool | None = None,
    ) -> list[PgCursor]:
        """Read statements in one round trip (see :meth:`PgConnection.batch`)."""
        return self.db.read(
            [sql for sql, _ in statements], lambda conn: conn.batch(statements, settings, write=write, prepare=prepare)
        )


class PgDatabase:
    """A PostgreSQL database behind a psycopg pool: a connection is borrowed per statement, or per transaction."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 30.0) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise DependencyMissing(
                "PostgreSQL stores need psycopg 3 with its pool and the pgvector adapter.",
                hint="Run `pip install 'funes-memory[postgres]'`.",
            ) from exc
        self.url = url
        self._psycopg = psycopg
        self.error: type[Exception] = psycopg.Error
        self.read_only = False
        self.refuse_writes: str | None = None
        self.timeout = timeout
        self._local = threading.local()
        self._closed = False
        self._vector_ready = False
        #: A streaming replica serving the pure reads outside transactions (funes.store.pg_replica), or None.
        self.replica: Any = None
        #: Statements and round trips of this database's pooled connections.
        self.counter = StatementCounter()
        try:
            # One direct connection first: a wrong URL or a stopped server fails at once with the
            # server's own reason, not after the pool's timeout of retries.
            psycopg.connect(url, connect_timeout=10).close()
        except Exception as exc:
            raise BackendUnavailable(
                f"Cannot connect to PostgreSQL at {redact(url)} ({str(exc).strip()}).",
                hint="Check that the server runs and the URL (host, port, database, user, password) is right; "
                "see docs/postgres.md.",
            ) from exc
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max(min_size, max_size),
            timeout=timeout,
            kwargs={"autocommit": True},
            connection_class=counted_connection(psycopg, self.counter),
            open=False,
        )
        try:
            self.pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self.pool.close()
            raise BackendUnavailable(
                f"Cannot open a pool of connections to PostgreSQL at {redact(url)} ({exc}).",
                hint="Check the server's max_connections and the pg_pool_min setting.",
            ) from exc

    def vector_ready(self) -> None:
        """Register the pgvector adapter on every connection from now on (the extension exists)."""
        self._vector_ready = True

    def translate_error(self, exc: Exception) -> Exception:
        """A driver error as a Funes error where one fits (else the error itself)."""
        errors = self._psycopg.errors
        if isinstance(exc, errors.DiskFull):
            from ..errors import StoreFull

            return StoreFull(
                "The PostgreSQL server's disk is full; the write was rolled back and nothing was lost.",
                hint="Free space on the database server, then retry.",
            )
        if isinstance(exc, self._psycopg.DataError) and "NUL" in str(exc):
            from ..errors import InvalidInput

            return InvalidInput(
                "The text contains NUL (0x00) characters, which PostgreSQL cannot store; nothing was written.",
                hint="Remove the NUL characters (they are never meaningful in text) and try again.",
            )
        if isinstance(exc, errors.UniqueViolation):
            from ..errors import Conflict

            return Conflict(
                f"That write collides with a row that already exists ({str(exc).strip().splitlines()[0]}); "
                "nothing was written.",
                hint="Another writer got there first: read the current row and retry.",
            )
        if isinstance(exc, (errors.DeadlockDetected, errors.SerializationFailure, errors.LockNotAvailable)):
            return WriteCrossed(
                f"This write crossed a concurrent one and PostgreSQL rolled it back "
                f"({str(exc).strip().splitlines()[0]}); nothing was written.",
                hint="Retry the request: the other write has finished.",
            )
        if isinstance(exc, errors.DataCorrupted):
            return StoreCorrupt(f"PostgreSQL reports damage: {exc}", hint="Restore from pg_dump or a replica.")
        if isinstance(exc, self._psycopg.OperationalError):
            return BackendUnavailable(
                f"Lost the connection to PostgreSQL ({exc}).", hint="Check the server, then retry."
            )
        return exc

    @contextlib.contextmanager
    def borrow(self) -> Iterator[PgConnection]:
        """A connection for one statement: this thread's transaction's when it is in one, else one from the pool."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        if self._closed:
            raise BackendUnavailable("This store is closed.", hint="Open it again with funes.open().")
        try:
            raw = self.pool.getconn()
        except Exception as exc:
            raise BackendUnavailable(
                f"No PostgreSQL connection came free within {self.timeout:.0f} s ({exc}).",
                hint="Raise pg_pool_max (and the server's max_connections), or lower the concurrency.",
            ) from exc
        try:
            conn = PgConnection(self, raw)
            if self._vector_ready:
                conn.register_vector()
            yield conn
        finally:
            self.pool.putconn(raw)

    def read(self, statements: Sequence[str], run: Callable[[PgConnection], T]) -> T:
        """Run statements outside a transaction: on the read replica when they only read and it may serve them."""
        if self.replica is not None:
            return self.replica.read(statements, run)  # type: ignore[no-any-return]
        with self.borrow() as conn:
            return run(conn)

    def reader(self) -> PgConnection | PgReader:
        """Where reads go: this thread's transaction when it is in one, else a statement-at-a-time reader."""
        current = getattr(self._local, "conn", None)
        return current if current is not None else PgReader(self)

    def in_transaction(self) -> bool:
        """Whether this thread is inside a write transaction."""
        return getattr(self._local, "conn", None) is not None

    def retrying(self, run: Callable[[], T]) -> T:
        """``run()`` (a write that is one transaction of its own), again when PostgreSQL rolled it back for
        crossing a concurrent write: up to :data:`CROSSED_ATTEMPTS` times, after a short random pause.

        Inside a caller's transaction it runs once: that transaction was rolled back whole, so it is the
        caller's to run again.
        """
        attempt = 1
        while True:
            try:
                return run()
            except WriteCrossed:
                if attempt >= CROSSED_ATTEMPTS or self.in_transaction():
                    raise
                attempt += 1
                log.info("a write crossed a concurrent one; running it again (attempt %d)", attempt)
                time.sleep(random.uniform(0.005, 0.02) * 2**attempt)  # out of step with the other writer

    @contextlib.contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A transaction on one pooled connection, held by this thread until it ends; nested calls use savepoints.

        No process-wide lock: the transaction is this thread's own (threading.local), and
        concurrent writers take turns on PostgreSQL's row and advisory locks, as other
        processes' writers do.
        """
        if self.refuse_writes is not None:
            raise StoreCorrupt(f"Writes are refused: {self.refuse_writes}", hint="Check the server, then reopen.")
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            name = f"sp{conn.depth}"
            mark = len(conn.pending)
            savepoint = conn.defer(f"SAVEPOINT {name}", tenant=False)  # sent with the first statement inside it
            conn.depth += 1
            try:
                yield conn
            except BaseException:
                if savepoint.cursor is None:
                    del conn.pending[mark:]  # nothing inside it reached the server: nothing to roll back
                elif savepoint.ran:  # (else a statement before it failed, in its pipeline: the outer scope's)
                    conn.defer(f"ROLLBACK TO SAVEPOINT {name}", tenant=False)
                    conn.defer(f"RELEASE SAVEPOINT {name}", tenant=False)
                    conn.forget_tenant()
                raise
            else:
                if savepoint.cursor is None and conn.pending[mark:] == [savepoint]:
                    del conn.pending[mark:]  # an empty savepoint
                else:
                    conn.defer(f"RELEASE SAVEPOINT {name}", tenant=False)
            finally:
                conn.depth -= 1
            return
        with self.borrow() as conn:
            begin = conn.defer("BEGIN", tenant=False)  # sent with the transaction's first statement: no trip of its own
            conn.depth = 1
            self._local.conn = conn
            try:
                yield conn
            except BaseException:
                conn.pending = []
                if begin.ran:
                    with contextlib.suppress(Exception):
                        conn.raw.execute("ROLLBACK")
                conn.forget_tenant()
                raise
            else:
                try:
                    if begin.cursor is None and all(_CONTROL.match(d.sql) for d in conn.pending):
                        conn.pending = []  # nothing ran in it: nothing to commit
                    elif self.replica is not None:
                        self.replica.commit(conn)  # notes the WAL position, for read-your-writes
                    else:
                        with conn.raw.pipeline():  # the deferred statements and the COMMIT: one round trip
                            conn.send_pending()
                            conn.raw.execute("COMMIT")
                except self.error as exc:
                    conn.forget_tenant()
                    with contextlib.suppress(Exception):
                        conn.raw.execute("ROLLBACK")  # a deferred statement failed: the transaction is still open
                    raise self.translate_error(exc) from exc
            finally:
                conn.pending = []
                conn.depth = 0
                self._local.conn = None

    def secure_deletes(self) -> contextlib.AbstractContextManager[None]:
        """SQLite's zeroing of deleted cells has no PostgreSQL switch: forgetting vacuums instead."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """Close the pool and its connections."""
        self._closed = True
        if self.replica is not None:
            self.replica.close()
        with contextlib.suppress(Exception):
            self.pool.close()


def redact(url: str) -> str:
    """The URL without its password (user-info or a ``password=`` parameter), for messages and listings."""
    url = re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)
    return re.sub(r"(?i)([?&;\s]password=)[^&;\s]*", r"\1***", url)
