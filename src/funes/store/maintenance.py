"""Backup and salvage of a SQLite store.

* :func:`backup_file` copies a live store with SQLite's online backup API: the
  copy is one consistent snapshot even while other processes write, written
  to a temporary name and renamed into place.
* :func:`salvage_file` copies what can still be read from a damaged store into
  a new one, table by table and row range by row range, skipping what fails.
  Keyword entries are rebuilt from the saved records; vectors are copied where
  they read back whole and finite, and the rest are re-made by ``funes reindex``.

About the WAL: ``funes.db-wal`` holds committed transactions that are not yet
copied into ``funes.db``. Deleting it while no process has the store open
loses exactly those transactions (the newest writes); deleting it while a
process has the store open can corrupt the store. Never delete it; a backup
or a clean close (which checkpoints it) is the safe way to get one file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FunesError, InvalidInput
from .base import vector_problem
from .connection import driver

# Stores are typed Any here: naming SqliteStore would make sqlite -> maintenance -> sqlite a cycle.
SqliteStore = Any
#: Plain tables copied by salvage, parents first (FTS and vectors are rebuilt separately).
SALVAGE_TABLES = (
    "meta",
    "memories",
    "documents",
    "sessions",
    "messages",
    "usage",
    "cleanup_log",
    "jobs",
    "embedding_cache",
    "access_log",
)
_STEP = 500


def _refuse_existing(dest: Path) -> None:
    if dest.exists():
        raise InvalidInput(
            f"{dest} already exists; Funes never overwrites a file with a backup or a salvaged copy.",
            hint="Name a new file, or move the old one away first.",
        )
    if not dest.parent.exists():
        raise InvalidInput(f"The directory {dest.parent} does not exist.", hint="Create it, or name another path.")


def backup_file(store: SqliteStore, dest: Path) -> dict[str, Any]:
    """Copy the store to ``dest`` in one consistent snapshot (SQLite's online backup API)."""
    _refuse_existing(dest)
    tmp = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    module = driver()
    try:
        target = module.connect(str(tmp))
        try:
            # pages=-1: one step under one read transaction, so concurrent writers never
            # make the copy restart or mix two states.
            store.db.reader().backup(target, pages=-1)
            target.execute("PRAGMA journal_mode = DELETE")  # the copy is one self-contained file
        finally:
            target.close()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except module.Error as exc:
        raise store.db.translate(exc) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return {"file": str(dest), "bytes": dest.stat().st_size, "records": _count(dest)}


def _count(path: Path) -> int:
    conn = driver().connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def _has_rowid(conn: Any, table: str) -> bool:
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return not (sql and "WITHOUT ROWID" in str(sql[0]).upper())


def _rows(conn: Any, table: str, columns: list[str], error: type[Exception]) -> tuple[list[tuple[Any, ...]], int]:
    """Every readable row of a table (rowid first), and how many rows could not be read."""
    cols = ", ".join(["rowid", *columns])
    try:
        top = conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0
    except error:
        # The table's b-tree is damaged near its end: probe as far as the file has room for rows.
        top = int(conn.execute("PRAGMA page_count").fetchone()[0]) * 8
    out: list[tuple[Any, ...]] = []
    lost = 0
    start = 0
    while start < top:
        try:
            out += conn.execute(
                f"SELECT {cols} FROM {table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid", (start, start + _STEP)
            ).fetchall()
        except error:
            for rowid in range(start + 1, start + _STEP + 1):  # row by row through the damaged range
                try:
                    out += conn.execute(f"SELECT {cols} FROM {table} WHERE rowid = ?", (rowid,)).fetchall()
                except error:
                    lost += 1
        start += _STEP
    return out, lost


def salvage_file(store: SqliteStore, dest: Path) -> dict[str, Any]:
    """Copy every readable row of ``store`` into a new store at ``dest``; what was saved and what was lost."""
    _refuse_existing(dest)
    source = store.db.reader()
    error = store.db.error
    new = type(store)(dest)
    report: dict[str, Any] = {"file": str(dest), "tables": {}, "unreadable_rows": 0}
    try:
        target_conn = new.db.reader()
        for table in SALVAGE_TABLES:
            columns = [r[1] for r in target_conn.execute(f"PRAGMA table_info({table})")]
            rowid = _has_rowid(target_conn, table)
            try:
                if rowid:
                    rows, lost = _rows(source, table, columns, error)
                else:  # a WITHOUT ROWID table (a cache): all or nothing
                    rows, lost = source.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(), 0
            except error:
                rows, lost = [], 1
            names = ", ".join((["rowid"] if rowid else []) + columns)
            marks = ", ".join("?" for _ in range(len(columns) + (1 if rowid else 0)))
            with new.db.write() as conn:
                if table == "meta":
                    conn.execute("DELETE FROM meta")
                conn.executemany(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})", rows)
            report["tables"][table] = len(rows)
            report["unreadable_rows"] += lost
        new.rebuild_keyword_index()
        report["vectors"], report["records_without_vectors"] = _salvage_vectors(store, new)
    except FunesError:
        new.close()
        raise
    new.close()
    report["records"] = report["tables"].get("memories", 0)
    return report


def _salvage_vectors(store: SqliteStore, new: SqliteStore) -> tuple[int, int]:
    """Copy the vectors that read back whole and finite; (copied, records left without one)."""
    ident = None
    with contextlib.suppress(Exception):
        ident = store.identity()
    if ident is None:
        return 0, 0
    new.set_identity(ident, reset=True)
    error = store.db.error
    source = store.db.reader()
    copied = 0
    try:
        pairs = source.execute(
            "SELECT m.id, v.part, e.embedding FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
            "JOIN vec_memories e ON e.vector_id = v.vector_id ORDER BY m.id, v.part"
        ).fetchall()
    except error:
        pairs = []
    by_id: dict[str, list[np.ndarray]] = {}
    for memory_id, _part, blob in pairs:
        vector = np.frombuffer(blob, dtype=np.float32) if blob else np.zeros(0, dtype=np.float32)
        if len(vector) == ident.dimensions and vector_problem(vector) is None:
            by_id.setdefault(memory_id, []).append(vector)
    records = new.get_many(list(by_id))
    with new.db.write():
        for memory_id, vectors in by_id.items():
            memory = records.get(memory_id)
            if memory is not None:
                new.put(memory, vectors)
                copied += len(vectors)
    total = int(new.db.reader().execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    return copied, total - len(records)
