"""Health of a SQLite store: integrity checks, damage flags, read-only state, backup and salvage.

Damage found by :meth:`HealthChecks.check` is recorded in a marker file next
to the store (``funes.db.corrupt``); while it exists, writes are refused in
every process (issue 9: writes were accepted on a store doctor flagged as
corrupt). A check that finds the store healthy removes it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .connection import Database

_NO_VECTOR = "NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_rowid = m.rowid)"
# Ids of records a live `vectors` job will embed (see Core.defer_vectors).
_AWAITED = (
    "SELECT j.value FROM jobs, json_each(jobs.payload, '$.ids') AS j "
    "WHERE jobs.kind = 'vectors' AND jobs.status IN ('queued', 'running')"
)


class HealthChecks:
    """Mixin for the SQLite store: needs ``self.db``, ``self.path`` and ``self._dims``."""

    db: Database
    path: str
    _dims: int | None

    @property
    def read_only(self) -> bool:
        """Whether the store could only be opened for reading (writes raise StoreReadOnly)."""
        return self.db.read_only

    def backup(self, dest: str | Path) -> dict[str, Any]:
        """A consistent copy of the store at ``dest`` through SQLite's online backup API, while writers run.

        The copy is written next to ``dest`` and renamed into place, so a crash
        never leaves a half-written backup under the real name.
        """
        from .maintenance import backup_file

        return backup_file(self, Path(dest).expanduser())

    def salvage(self, dest: str | Path) -> dict[str, Any]:
        """Copy every readable row of a damaged store into a new store at ``dest``; counts of what was saved and lost."""
        from .maintenance import salvage_file

        return salvage_file(self, Path(dest).expanduser())

    @property
    def corrupt_marker(self) -> Path | None:
        """The file next to the store that records damage found by :meth:`check` (writes are refused while it exists)."""
        return None if self.path == ":memory:" else Path(self.path + ".corrupt")

    def check(self) -> list[str]:
        """Integrity problems: SQLite's own check, and rows, FTS entries and vectors agreeing."""
        problems: list[str] = []
        conn = self.db.reader()
        try:
            result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        except self.db.error as exc:
            self._flag_corrupt(f"`funes doctor` could not check it ({exc}).")
            return [f"SQLite integrity check failed: {exc}"]
        marker = self.corrupt_marker
        if result == ["ok"] and marker is not None and marker.exists() and not self.db.read_only:
            # Healthy again (repaired by hand, or the damage was a false alarm): writes are allowed again.
            with contextlib.suppress(OSError):
                marker.unlink()
            self.db.refuse_writes = None
        if result != ["ok"]:
            problems += [f"SQLite: {r}" for r in result[:20]]
            self._flag_corrupt(f"`funes doctor` found damage ({result[0]}).")
        try:
            if not self.db.read_only and result == ["ok"]:
                # FTS5's own check is a write statement: a read-only store skips it rather than
                # blaming the keyword index (issue 9: an immutable file was told to run reindex).
                try:
                    with self.db.write() as w:
                        w.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
                except self.db.error as exc:
                    problems.append(f"Keyword index disagrees with the records ({exc}); run `funes reindex`.")
            rows = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            fts_rows = conn.execute("SELECT COUNT(*) FROM memories_fts_docsize").fetchone()[0]
            if rows != fts_rows:
                problems.append(f"{rows} records but {fts_rows} keyword entries; run `funes reindex`.")
            without = conn.execute(
                f"SELECT COUNT(*) FROM memories m WHERE {_NO_VECTOR} AND m.id NOT IN ({_AWAITED})"
            ).fetchone()[0]
            if without:
                problems.append(f"{without} records have no vector and no job to make one; run `funes reindex`.")
            orphans = conn.execute(
                "SELECT COUNT(*) FROM memory_vectors v WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.rowid = v.memory_rowid)"
            ).fetchone()[0]
            if orphans:
                problems.append(f"{orphans} vectors belong to no record; run `funes reindex`.")
            if self._dims is not None:
                bad = self._bad_vectors(conn)
                if bad:
                    problems.append(
                        f"{bad} vectors are zero or have NaN/infinite values (they break similarity search); "
                        "run `funes reindex` to re-embed them from their text."
                    )
                vec_rows = conn.execute("SELECT COUNT(*) FROM vec_memories").fetchone()[0]
                mapped = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0]
                if vec_rows != mapped:
                    problems.append(f"{vec_rows} vectors in the index but {mapped} mapped; run `funes reindex`.")
        except self.db.error as exc:
            # A damaged page the integrity check did not reach (a vector blob): reported, never a crash.
            self._flag_corrupt(f"`funes doctor` could not read every row ({exc}).")
            problems.append(f"SQLite: a row cannot be read ({exc}); run `funes doctor --repair`.")
        return problems

    def _flag_corrupt(self, reason: str) -> None:
        """Refuse writes from now on, in this process and (through the marker file) in later ones."""
        self.db.refuse_writes = reason
        marker = self.corrupt_marker
        if marker is not None and not self.db.read_only:
            with contextlib.suppress(OSError):
                marker.write_text(reason + "\n", encoding="utf-8")

    def _bad_vectors(self, conn: Any) -> int:
        """How many stored vectors are zero or non-finite (read in batches, so memory stays flat)."""
        bad = 0
        cursor = conn.execute("SELECT embedding FROM vec_memories")
        while rows := cursor.fetchmany(2048):
            matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            finite = np.all(np.isfinite(matrix), axis=1)
            bad += int(np.count_nonzero(~finite | ~np.any(matrix, axis=1)))
        return bad
