"""SQLite connections that can load sqlite-vec.

Many Python builds (this machine's, python.org's macOS installer) ship a
``sqlite3`` module without ``enable_load_extension``. We use the standard
library when it can load extensions, else ``pysqlite3`` (the
``pysqlite3-binary`` wheel), else fail with an error that says what to install.

Connections are opened in autocommit mode; :class:`Database` runs explicit
``BEGIN IMMEDIATE`` transactions for writes, behind one writer lock per
process, and keeps one read connection per thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from ..errors import BackendUnavailable, Conflict, DependencyMissing, StoreCorrupt, StoreFull, StoreReadOnly

_DRIVER: ModuleType | None = None
T = TypeVar("T")
CACHE_KIB = 128 * 1024  # page cache per connection, in KiB (allocated as used)
# Address space mapped for reads (not memory used). Mapping all of a 2.8 GB store (1M records) made a
# read-only search run cheaper, but end-to-end searches, which also write the access log, cost 1.2x the
# CPU with it (measured, cause not isolated; issue 29, docs/benchmarks.md): 1 GB stays.
MMAP_BYTES = 1 << 30


def _can_load_extensions(module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:")
    except Exception:
        return False
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def driver() -> ModuleType:
    """The DB-API module used for SQLite: stdlib if it loads extensions, else pysqlite3."""
    global _DRIVER
    if _DRIVER is not None:
        return _DRIVER
    import sqlite3

    if _can_load_extensions(sqlite3):
        _DRIVER = sqlite3
        return sqlite3
    try:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise DependencyMissing(
            "This Python's sqlite3 module cannot load extensions, so sqlite-vec cannot be loaded.",
            hint="Run `pip install pysqlite3-binary` (Linux x86-64), or use a Python built with "
            "--enable-loadable-sqlite-extensions (e.g. Homebrew's or uv's on macOS).",
        ) from exc
    _DRIVER = dbapi2
    return dbapi2


def is_locked(exc: BaseException) -> bool:
    """Whether an exception is SQLite's 'database is locked/busy'."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _translate(path: str, exc: Exception) -> Exception:
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StoreCorrupt(
            f"The store {path} is damaged or is not a Funes database ({exc}).",
            hint="Run `funes doctor --repair` to salvage what is readable into a new file, or restore a backup "
            "(`funes backup` copies, `funes import BACKUP.jsonl` into a new --db).",
        )
    if "already exists" in text:
        # Migration 001 collided with another application's tables.
        return StoreCorrupt(
            f"The file {path} is an SQLite database of another application, not a Funes store ({exc}).",
            hint="Point Funes at a new file with --db PATH or FUNES_HOME.",
        )
    if "unable to open" in text or "readonly" in text or "read-only" in text:
        return BackendUnavailable(
            f"Cannot open the store {path} ({exc}).",
            hint="Check that the directory exists and is writable, or set FUNES_HOME / --db.",
        )
    return exc


def write_error(path: str, exc: Exception) -> Exception | None:
    """A clear Funes error for a write that failed on a full disk, a read-only store or damage; else None."""
    text = str(exc).lower()
    if "disk is full" in text or "database or disk is full" in text:
        return StoreFull(
            f"The disk holding the store {path} is full; the write was rolled back and nothing was lost.",
            hint=f"Free space on the disk of {os.path.dirname(os.path.abspath(path))} (the store needs room for its "
            "write-ahead log too), then retry. The store itself is intact.",
        )
    if "readonly" in text or "read-only" in text:
        return read_only_error(path)
    if "malformed" in text or "not a database" in text:
        return StoreCorrupt(
            f"The store {path} is damaged ({exc}); the write was rolled back.",
            hint="Run `funes doctor --repair` to salvage what is readable into a new file.",
        )
    return None


def read_only_error(path: str) -> StoreReadOnly:
    """The error for a write to a store that can only be read."""
    return StoreReadOnly(
        f"The store {path} is read-only (a read-only filesystem, or a read-only or immutable file): "
        "reads work, writes cannot.",
        hint="Make it writable (remount the disk read-write, `chmod u+w`, or `chattr -i` for an immutable file), "
        "or copy it with `funes backup COPY.db` and use the copy.",
    )


def writable(path: str) -> bool:
    """Whether SQLite can write the store: the file (if it exists) and its directory (for the WAL)."""
    if path == ":memory:":
        return True
    target = Path(path).expanduser()
    directory = target.parent if str(target.parent) else Path(".")
    if target.exists() and not os.access(target, os.W_OK):
        return False
    # The WAL and shared-memory files are created next to the store.
    return os.access(directory, os.W_OK) if directory.exists() else True


class Database:
    """A SQLite file with sqlite-vec loaded: one writer behind a lock, readers per thread.

    A store that cannot be written (read-only filesystem, read-only or immutable
    file) is opened read-only: reads work and every write raises
    :class:`~funes.errors.StoreReadOnly` (issue 9: `list` and `export` used to fail too).
    """

    def __init__(self, path: str, *, busy_timeout_ms: int = 15000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._local = threading.local()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        self._depth = 0
        #: Why writes are refused (damage found by a check), or None.
        self.refuse_writes: str | None = None
        if path != ":memory:" and writable(path):
            # Owner-only: the store holds every memory of every tenant (issue 31). SQLite gives
            # its -wal and -shm files the permissions of the database file.
            file = Path(path).expanduser()
            file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not file.exists():
                os.close(os.open(file, os.O_CREAT | os.O_WRONLY, 0o600))
        self.read_only = path != ":memory:" and Path(path).expanduser().exists() and not writable(path)
        self._writer = self._open()

    def _connect(self, module: ModuleType) -> Any:
        if not self.read_only:
            return module.connect(self.path, isolation_level=None, check_same_thread=False)
        quoted = urllib.parse.quote(str(Path(self.path).expanduser().absolute()))
        wal = Path(self.path + "-wal")
        # mode=ro still needs the -shm file of a WAL store; when nothing waits in a WAL,
        # immutable=1 reads the file as it is without creating one.
        pending_wal = wal.exists() and wal.stat().st_size > 0
        suffix = "?mode=ro" if pending_wal else "?mode=ro&immutable=1"
        return module.connect(f"file:{quoted}{suffix}", isolation_level=None, check_same_thread=False, uri=True)

    def _open(self) -> Any:
        module = driver()
        try:
            conn = self._connect(module)
        except module.Error as exc:
            raise _translate(self.path, exc) from exc
        try:
            conn.enable_load_extension(True)
            import sqlite_vec

            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except ImportError as exc:
            raise DependencyMissing("The sqlite-vec package is missing.", hint="Run `pip install sqlite-vec`.") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if self.read_only:
                conn.execute("PRAGMA query_only = 1")
            mode = conn.execute("PRAGMA journal_mode" if self.read_only else "PRAGMA journal_mode = WAL").fetchone()
            if not self.read_only and mode and str(mode[0]).lower() not in ("wal", "memory"):
                raise BackendUnavailable(
                    f"Could not switch {self.path} to WAL mode (got {mode[0]}).",
                    hint="Put the store on a local disk that supports shared memory.",
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # SQLite's default 2 MB page cache thrashes once the store holds
            # tens of thousands of records (one open vec0 chunk per tenant,
            # FTS segments): inserts at 100k ran 2.5x slower. The cache grows
            # on demand, so small stores pay nothing.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # Reads through mmap skip a copy per page; vec0 KNN scans whole
            # vector chunks, so this is its largest cost after the maths.
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        except module.Error as exc:
            conn.close()
            raise _translate(self.path, exc) from exc
        with self._all_lock:
            self._all.append(conn)
        return conn

    @property
    def error(self) -> type[Exception]:
        """The driver's base exception class."""
        return driver().Error  # type: ignore[no-any-return]

    def reader(self) -> Any:
        """This thread's read connection."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def write(self) -> Iterator[Any]:
        """A write transaction (BEGIN IMMEDIATE); nested calls use savepoints.

        A full disk, a read-only store or damage found mid-write become
        :class:`StoreFull`, :class:`StoreReadOnly` or :class:`StoreCorrupt`.
        """
        if self.read_only:
            raise read_only_error(self.path)
        if self.refuse_writes is not None:
            raise StoreCorrupt(
                f"Writes to {self.path} are refused: {self.refuse_writes}",
                hint="Run `funes doctor --repair` to salvage what is readable into a new file, and use that one.",
            )
        with self._lock:
            conn = self._writer
            if self._depth:
                name = f"sp{self._depth}"
                conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield conn
                except BaseException:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                    raise
                else:
                    conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._begin(conn)
            self._depth = 1
            try:
                yield conn
            except BaseException as exc:
                with contextlib.suppress(self.error):  # a full disk may have rolled back already
                    conn.execute("ROLLBACK")
                clear = write_error(self.path, exc) if isinstance(exc, self.error) else None
                if clear is not None:
                    raise clear from exc
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except self.error as exc:
                    with contextlib.suppress(self.error):
                        conn.execute("ROLLBACK")
                    clear = write_error(self.path, exc)
                    if clear is not None:
                        raise clear from exc
                    raise
            finally:
                self._depth = 0

    def _begin(self, conn: Any) -> None:
        # busy_timeout covers most waits; a few retries cover the rare case
        # where SQLite returns BUSY at once (a WAL checkpoint racing us).
        deadline = time.monotonic() + self.busy_timeout_ms / 1000 * 4
        delay = 0.01
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except self.error as exc:
                if not is_locked(exc) or time.monotonic() > deadline:
                    if is_locked(exc):
                        raise BackendUnavailable(
                            f"Another process has held the write lock on {self.path} for too long.",
                            hint="Retry; if it persists, find the process holding the store "
                            "open, or raise the busy_timeout_ms setting.",
                        ) from exc
                    raise (write_error(self.path, exc) or _translate(self.path, exc)) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def vacuum(self, *, full: bool = False) -> tuple[int, int]:
        """Reclaim free pages (incremental vacuum if enabled, else VACUUM); (database bytes before, after).

        ``full`` always rewrites the file (VACUUM): forgetting needs the stale copies in free pages
        and free blocks gone, which an incremental vacuum leaves.
        """
        with self._lock:
            if self._depth:
                raise Conflict(
                    "Space cannot be reclaimed inside a transaction.",
                    hint="Reclaim it after the transaction commits.",
                )
            conn = self._writer
            try:
                before = self._size(conn)
                if not full and int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]) == 2:
                    conn.execute("PRAGMA incremental_vacuum").fetchall()
                else:
                    conn.execute("VACUUM")
                # The rewritten pages sit in the WAL until a checkpoint; truncate it so the disk shrinks now.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                after = self._size(conn)
            except self.error as exc:
                if is_locked(exc):
                    raise BackendUnavailable(
                        f"Another process is using {self.path}, so its space could not be reclaimed now.",
                        hint="Nothing is lost: the space is reused by new data, and the next clear reclaims it.",
                    ) from exc
                raise _translate(self.path, exc) from exc
            return before, after

    def retrying(self, run: Callable[[], T]) -> T:
        """``run()``: one writer at a time never deadlocks here (PostgreSQL's store runs it again when it does)."""
        return run()

    @contextlib.contextmanager
    def secure_deletes(self) -> Iterator[None]:
        """Writes inside zero what they delete (``PRAGMA secure_delete``), for forgetting (issue 25)."""
        with self._lock:
            conn = self._writer
            before = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
            conn.execute("PRAGMA secure_delete = ON")
            try:
                yield
            finally:
                conn.execute(f"PRAGMA secure_delete = {before}")

    def checkpoint(self) -> tuple[int, int, int]:
        """Copy the WAL into the file and truncate it: (busy, WAL frames, frames checkpointed)."""
        with self._lock:
            busy, log, done = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return int(busy), int(log), int(done)

    @staticmethod
    def _size(conn: Any) -> int:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        return pages * int(conn.execute("PRAGMA page_size").fetchone()[0])

    def translate(self, exc: Exception) -> Exception:
        """A driver error as a Funes error where one fits."""
        return _translate(self.path, exc)

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._local = threading.local()
