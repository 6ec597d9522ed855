"""PostgreSQL spellings of forgetting (issue 25); the rest of ``sqlite_forget`` is shared SQL.

A deleted row stays in its heap page, and plain VACUUM only marks the space
reusable, so the text would still be on disk. ``VACUUM FULL`` rewrites each
touched table (and its TOAST table and indexes) into new files and unlinks
the old ones. The server's WAL (``pg_wal``) and any base backup or replica
still hold the text until they are recycled; docs/forgetting.md says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .consistency import reading_after, wal_position
from .sqlite_forget import TOUCHED, forget_key
from .words import fold_words


class PostgresForget:
    """Mixed in before :class:`~funes.store.sqlite_forget.ForgetTables` in the PostgreSQL store."""

    db: Any

    @contextlib.contextmanager
    def reading_current(self) -> Iterator[None]:
        """Reads inside see every write committed now: a read replica (``db_read_url``) serves them only once it
        has replayed the primary's position of now, else the primary does (what a forget plans from)."""
        if self.db.replica is None:
            yield
            return
        position = self.db.reader().native("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        with reading_after(wal_position(position)):
            yield

    @contextlib.contextmanager
    def forgets_held(self, tenant: str) -> Iterator[None]:
        """Around a forget's plan and purge: the tenant's forget lock, alone, as a session lock on a connection of
        its own, outside the pool (the plan reads and the purge writes on pooled ones, and a pool of one must not
        wait on itself); a write derived from earlier reads holds the lock shared from its transaction's start
        (``unforgotten_write``), so it commits before the plan reads, or after the purge, when it finds the receipt."""
        import psycopg

        try:
            conn = psycopg.connect(self.db.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise self.db.translate_error(exc) from exc
        with conn:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (forget_key(tenant),))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (forget_key(tenant),))

    def append_messages(self, tenant: str, session_id: str, rows: Sequence[Any]) -> list[int]:
        """SQLite's append, after the tenant's forget lock, shared (sent with the session's update: no round trip
        of its own). A forget deletes the sessions it forgets under that lock (:meth:`forgets_held`), so an append
        that began while it planned waits for its purge and then finds its session gone (NotFound), as on SQLite,
        instead of leaving its message and its record behind in a deleted session."""
        if not rows:
            return []
        with self.db.write() as conn:
            conn.defer(
                "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))", (forget_key(tenant),), tenant=False
            )
            return super().append_messages(tenant, session_id, rows)  # type: ignore[misc]

    def words_in_use(self, words: Sequence[str]) -> set[str]:
        """The words some stored record still holds (the tsvector index, any tenant)."""
        conn = self.db.reader()
        used: set[str] = set()
        for word in dict.fromkeys(words):
            folded = fold_words(word)
            if (
                folded
                and conn.execute(
                    "SELECT 1 FROM memories WHERE fts @@ plainto_tsquery('simple', ?) LIMIT 1", (folded,)
                ).fetchone()
            ):
                used.add(word)
        return used

    def scrub(self, tenants: Sequence[str]) -> dict[str, Any]:
        """``VACUUM FULL`` the touched tables: their files are rewritten without the deleted rows."""
        conn = self.db.reader()
        for table in TOUCHED:
            conn.native(f"VACUUM FULL {table}")
        return {"vacuum_full": list(TOUCHED)}

    def storage_files(self) -> list[Path]:
        """The files of the touched tables (heap, TOAST, indexes) when the data directory is readable here."""
        conn = self.db.reader()
        try:
            root = Path(str(conn.native("SELECT current_setting('data_directory')").fetchone()[0]))
            rows = conn.native(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid IN ("
                "SELECT t.oid FROM pg_class t WHERE t.relname = ANY(%s) "
                "UNION SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(%s) AND t.reltoastrelid != 0 "
                "UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
                "WHERE t.relname = ANY(%s))",
                (list(TOUCHED), list(TOUCHED), list(TOUCHED)),
            ).fetchall()
        except Exception:  # no right to read server settings: nothing on disk is visible from here
            return []
        files: list[Path] = []
        for (rel,) in rows:
            if rel:
                base = root / str(rel)
                files += [p for p in sorted(base.parent.glob(base.name + "*")) if p.is_file()]
        return [p for p in files if _readable(p)]


def _readable(path: Path) -> bool:
    try:
        with path.open("rb"):
            return True
    except OSError:
        return False
