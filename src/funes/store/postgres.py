"""The PostgreSQL store: pgvector HNSW, tsvector/GIN, row-level security, a psycopg 3 pool.

Layout (see ``pg_sql/``): the same tables and columns as the SQLite store
(times as epoch seconds, JSON as text), so the row mapping
(:mod:`funes.store.sqlite_rows`) and the portable parts of the SQLite
mixins (documents, sessions, cleanup, folders, entities, jobs) are shared
through the connection adapter of :mod:`funes.store.pg_connection`.
What differs is here and in the ``postgres_*`` modules:

* ``memories.fts`` is a generated ``tsvector`` ('simple' configuration) with
  a GIN index; queries are built from terms with ``plainto_tsquery``, so user
  text is never parsed as query syntax (postgres_search.py).
* ``memory_vectors.embedding`` is a typed ``vector(N)`` column, created with
  its HNSW (``vector_cosine_ops``) index when the embedder's dimension is
  known (:meth:`PostgresStore.set_identity`). The KNN plan is chosen per
  pgvector version and tenant size (postgres_search.py).
* Every tenant table has a row-level-security policy reading
  ``funes.tenant`` (006_rls.sql), set from :mod:`funes.store.tenancy` on every
  statement.
* Jobs are claimed with ``FOR UPDATE SKIP LOCKED``; a record's dedup check
  takes a transaction-scoped advisory lock, so two processes remembering the
  same text store it once.

Migrations are the numbered files in ``pg_sql/``, recorded in ``migrations``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..models import EmbedderIdentity, Memory
from .base import own_transaction, refuse_other_embedder, refuse_other_tenant
from .pg_connection import PgDatabase, redact
from .postgres_bulk import HNSW_INDEX, PostgresBulk, refold_keywords
from .postgres_extras import PostgresExtras
from .postgres_forget import PostgresForget
from .postgres_search import PostgresSearch
from .postgres_upkeep import PostgresUpkeep
from .sqlite import SqliteStore
from .sqlite_cleanup import CleanupTables
from .sqlite_documents import DocumentTables
from .sqlite_entities import EntityTables
from .sqlite_folders import FolderTables
from .sqlite_forget import ForgetTables
from .sqlite_jobs import JobTables
from .sqlite_memory_stores import MemoryStoreTables
from .sqlite_rows import COLUMNS, PLACEHOLDERS, row_values
from .sqlite_sessions import SessionTables
from .sqlite_upkeep import UpkeepTables
from .tenancy import acting_for
from .words import fold_words

log = logging.getLogger("funes.store.postgres")
_PORTER_MIGRATION = 13  # pg_sql/013: keyword vectors of Porter stems, backfilled in Python
_IDENTITY_TTL = 5.0  # seconds the recorded embedder identity is trusted without a read
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"  # a transaction-scoped lock on a key
_LOCK_SHARED = "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))"


class PostgresStore(
    PostgresBulk,
    PostgresSearch,
    PostgresExtras,
    PostgresUpkeep,
    PostgresForget,
    DocumentTables,
    SessionTables,
    JobTables,
    CleanupTables,
    EntityTables,
    FolderTables,
    MemoryStoreTables,
    ForgetTables,
    UpkeepTables,
):
    """Funes storage in a PostgreSQL database with pgvector."""

    # The dialect-neutral parts of the SQLite store, shared as they are (they
    # only run `?`-placeholder SQL through ``self.db``, which the adapter
    # translates): reads by id, listing, access counters, the embedding cache.
    get_for_update = SqliteStore.get_for_update
    row_lock = " FOR UPDATE"  # other processes' writers wait on the row, not on one lock
    path_order = ' COLLATE "C"'  # code-point order of memory-store paths, as on SQLite
    rank_fields = SqliteStore.rank_fields
    find_by_hash = SqliteStore.find_by_hash
    _find_by_hash = SqliteStore._find_by_hash
    list = SqliteStore.list
    reference_counts = SqliteStore.reference_counts
    ref_rows = ("LATERAL jsonb_array_elements(m.refs::jsonb) r", "r ->> 'type'", "r ->> 'id'")
    put = SqliteStore.put
    transaction = SqliteStore.transaction
    delete = SqliteStore.delete
    _delete = SqliteStore._delete
    record_access = SqliteStore.record_access
    cache_get = SqliteStore.cache_get
    iter_records = SqliteStore.iter_records
    _identity = SqliteStore.identity
    _planning_stat = SqliteStore._planning_stat

    def __init__(
        self,
        url: str,
        *,
        pool_min: int = 1,
        pool_max: int = 10,
        exact_max: int = 4000,
        read_url: str = "",
        **_ignored: Any,
    ) -> None:
        self.url = url
        self.path = redact(url)
        self.read_only = False
        #: Tenants with at most this many vectors are searched exactly (tenant btree, then a distance sort).
        self.exact_max = exact_max
        self._fts_stats: dict[str, tuple[int, float]] = {}
        self._dims: int | None = None
        self._identity_read: tuple[EmbedderIdentity | None, float] | None = None
        self._access_lock = threading.Lock()
        self._access_pending: dict[str, list[Any]] = {}
        self._settings_read: dict[str, Any] = {}  # project settings read with a search (postgres_upkeep)
        self._settings_written: dict[str, float] = {}
        self._access_since: dict[str, float] = {}
        self.db = PgDatabase(url, min_size=pool_min, max_size=pool_max)
        try:
            if read_url:  # reads outside transactions go to the replica (docs/postgres.md, "Read replicas")
                from .pg_replica import ReadReplica

                # Before migrating: the replica serves no read before it has replayed the migrations.
                self.db.replica = ReadReplica(self.db, read_url, min_size=pool_min, max_size=pool_max)
            self._migrate()
            self._warn_if_rls_bypassed()
            ident = self.identity()
        except BaseException:
            self.db.close()
            raise
        if ident is not None:
            self._dims = ident.dimensions
        self.pgvector_version = self._pgvector_version()

    #: A network store: query vectors are cached in the process, not in the store (a round trip each).
    remote = True

    def identity(self) -> EmbedderIdentity | None:
        """The embedder identity recorded in the store (read again after a few seconds: another process may reindex)."""
        cached = self._identity_read
        if cached is not None and time.monotonic() - cached[1] < _IDENTITY_TTL:
            return cached[0]
        ident = self._identity()
        self._identity_read = (ident, time.monotonic())
        return ident

    # -- schema ------------------------------------------------------------
    def _migrate(self) -> None:
        files = sorted(
            (p for p in resources.files("funes.store").joinpath("pg_sql").iterdir() if p.name.endswith(".sql")),
            key=lambda p: p.name,
        )
        with self.db.write() as conn:
            # One migrator at a time across processes (two first opens of an empty database).
            conn.native("SELECT pg_advisory_xact_lock(hashtext('funes.migrations'))")
            conn.native(
                "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            done = {row[0] for row in conn.native("SELECT version FROM migrations").fetchall()}
            for file in files:
                match = re.match(r"(\d+)_", file.name)
                if not match or int(match.group(1)) in done:
                    continue
                try:
                    conn.native(file.read_text(encoding="utf-8"))
                except self.db.error as exc:
                    raise _migration_error(file.name, exc) from exc
                conn.native("INSERT INTO migrations (version, name) VALUES (%s, %s)", (int(match.group(1)), file.name))
                if int(match.group(1)) == _PORTER_MIGRATION:  # its backfill: the stems are computed in Python
                    refold_keywords(conn)
        self.db.vector_ready()

    def _warn_if_rls_bypassed(self) -> None:
        row = (
            self.db.reader()
            .native("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user")
            .fetchone()
        )
        if row is not None and row[0]:
            log.warning(
                "Funes connects to PostgreSQL as a superuser or a BYPASSRLS role, so row-level security "
                "cannot protect one tenant's rows from another's; connect as an ordinary role (docs/postgres.md)."
            )

    def _pgvector_version(self) -> tuple[int, ...]:
        row = self.db.reader().native("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return tuple(int(p) for p in re.findall(r"\d+", str(row[0]))[:3]) if row else (0,)

    def migrations(self) -> list[tuple[int, str]]:
        """Applied migrations, in order."""
        rows = self.db.reader().native("SELECT version, name FROM migrations ORDER BY version").fetchall()
        return [(int(v), str(n)) for v, n in rows]

    def set_identity(self, identity: EmbedderIdentity, *, reset: bool = False) -> None:
        """Record the embedder identity, creating (or with ``reset``, recreating) the typed vector column and its HNSW index."""
        refuse_other_embedder(self.identity(), identity, reset)
        dims = int(identity.dimensions)
        if not 0 < dims <= 2000:
            raise InvalidInput(
                f"pgvector's HNSW index takes at most 2,000 dimensions, not {dims}.",
                hint="Use an embedding model of at most 2,000 dimensions with a PostgreSQL store.",
            )
        with self.db.write() as conn:
            if reset:
                conn.native("DELETE FROM memory_vectors")
                conn.native("ALTER TABLE memory_vectors DROP COLUMN IF EXISTS embedding")
            conn.native(f"ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS embedding vector({dims}) NOT NULL")
            conn.native(HNSW_INDEX.format(how=""))
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('embedder_model', ?), ('embedder_dimensions', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (identity.model_id, str(dims)),
            )
        self._dims = dims
        self._identity_read = None

    # -- writes ------------------------------------------------------------
    def lock_identity(self, key: str, *, shared: bool = False) -> None:
        """Inside a write transaction: a transaction-scoped advisory lock on ``key`` (threads and processes alike).

        On the transaction's own connection, without a savepoint: a lock statement has nothing to roll back.
        """
        with contextlib.nullcontext(self.db.reader()) if self.db.in_transaction() else self.db.write() as conn:
            conn.native(_LOCK_SHARED if shared else _LOCK, (key,))

    def find_entity(
        self, tenant: str, user_id: str | None, project_id: str | None, entity_type: str, entity_id: str
    ) -> Memory | None:
        """The record of this entity; inside a write, its identity is locked first, so the read-then-write is one step."""
        if self.db.in_transaction():
            # With the read, in its round trip: PostgreSQL runs the read once the lock is held.
            key = "\x1f".join(("entity", tenant, user_id or "", project_id or "", entity_type, entity_id))
            self.db.reader().defer(_LOCK, (key,), tenant=False)
        return super().find_entity(tenant, user_id, project_id, entity_type, entity_id)

    def put_unique(self, memory: Memory, vectors: Sequence[np.ndarray] | None) -> Memory:
        """Write the record unless a live one with the same content, scope, kind and owner exists.

        An advisory lock on the content's identity, held to the end of the
        transaction, makes the check and the write one step across processes.
        """
        return self.put_unique_many([(memory, vectors)])[0]

    @own_transaction
    def put_many(self, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]) -> int:
        """Insert or replace many records in one transaction (a large batch refreshes the planner's statistics)."""
        return self._write_many(items)

    def _put(self, conn: Any, m: Memory, vectors: Sequence[np.ndarray] | None) -> None:
        with acting_for(None):  # ids are the store's: row-level security would hide another tenant's record
            rows = conn.execute("SELECT rowid, tenant FROM memories WHERE id = ?", (m.id,)).fetchall()
        row = next((r for r in rows if r[1] == m.tenant), None)
        if row is None and rows:
            refuse_other_tenant(m, rows[0][1])
        values = row_values(m)
        updated = False
        if row is not None:
            sets = ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(","))
            rowid = row[0]
            # Zero rows when another transaction deleted the record after the read above (it holds no lock
            # on the row until now): the write then stands as the later one and inserts the record anew.
            updated = conn.execute(f"UPDATE memories SET {sets} WHERE rowid = ?", (*values, rowid)).rowcount > 0
        if not updated:
            rowid = conn.execute(
                f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS}) RETURNING rowid", values
            ).fetchone()[0]
        conn.execute(
            "UPDATE memories SET fts = setweight(to_tsvector('simple', ?), 'A') || to_tsvector('simple', ?) "
            "|| setweight(to_tsvector('simple', ?), 'C') WHERE rowid = ?",
            (fold_words(m.title), fold_words(m.content), fold_words(m.topic), rowid),
        )
        if vectors is None:
            # The tenant is copied onto the vectors (the exact KNN's btree): keep it in step.
            conn.execute(
                "UPDATE memory_vectors SET tenant = ? WHERE memory_rowid = ? AND tenant != ?",
                (m.tenant, rowid, m.tenant),
            )
            return
        conn.execute("DELETE FROM memory_vectors WHERE memory_rowid = ?", (rowid,))
        checked = self._checked(m, vectors)
        if checked:
            rows = [(rowid, part, m.tenant, vector) for part, vector in enumerate(checked)]
            conn.executemany(
                "INSERT INTO memory_vectors (memory_rowid, part, tenant, embedding) VALUES (?, ?, ?, ?)", rows
            )

    def _delete_vectors(self, conn: Any, rowids: Sequence[int]) -> None:
        # Vectors go with their record (ON DELETE CASCADE); this serves callers that keep the row.
        for start in range(0, len(rowids), 500):
            chunk = list(rowids[start : start + 500])
            conn.execute(f"DELETE FROM memory_vectors WHERE memory_rowid IN ({', '.join('?' for _ in chunk)})", chunk)

    def replace_index(
        self, identity: EmbedderIdentity, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]
    ) -> int:
        """Swap in a new embedder identity, every record's vectors and keyword vector, in one transaction."""
        dims = self._dims
        try:
            with self.db.write():
                self.set_identity(identity, reset=True)
                count = self.put_many(items)  # each put rewrites the record's keyword vector too
        except BaseException:
            self._dims = dims
            raise
        finally:
            self._identity_read = None
        return count

    def rebuild_keyword_index(self) -> None:
        """Recompute every record's keyword vector (``funes reindex`` after a change of folding)."""
        with self.db.write() as conn:
            refold_keywords(conn)

    def close(self) -> None:
        """Write the held access rows, then close every connection and the pool."""
        try:
            self.flush_accesses()
        except Exception as exc:  # a store going away must still close
            log.warning("access rows lost at close: %s", exc)
        self.db.close()

    # -- file-only operations ------------------------------------------------
    def reclaim_space(self) -> tuple[int, int]:
        """VACUUM the store's tables so PostgreSQL reuses the freed space; (database bytes before, after)."""
        conn = self.db.reader()
        before = int(conn.native("SELECT pg_database_size(current_database())").fetchone()[0])
        for table in ("memories", "memory_vectors", "messages", "documents", "access_log"):
            conn.native(f"VACUUM {table}")
        after = int(conn.native("SELECT pg_database_size(current_database())").fetchone()[0])
        return before, after

    def backup(self, dest: Any) -> dict[str, Any]:
        """File backups are a SQLite feature; PostgreSQL has its own tools."""
        raise InvalidInput(
            "`funes backup` copies a SQLite file; this store is a PostgreSQL database.",
            hint=f"Use `pg_dump` (e.g. `pg_dump -Fc -f funes.dump '{self.path}'`), or `funes export FILE`.",
        )

    def salvage(self, dest: Any) -> dict[str, Any]:
        """Salvage reads a damaged SQLite file; PostgreSQL repairs itself from its WAL."""
        raise InvalidInput(
            "`funes doctor --repair` salvages a SQLite file; this store is a PostgreSQL database.",
            hint="Restore from `pg_dump` or a replica, or `funes export FILE` what is readable.",
        )

    @property
    def corrupt_marker(self) -> None:
        """PostgreSQL stores keep no damage marker file."""
        return None


def _migration_error(name: str, exc: Exception) -> Exception:
    text = str(exc)
    if "vector" in text and ("extension" in text or "permission" in text):
        return InvalidInput(
            f"The pgvector extension is missing or cannot be created ({text.strip()}).",
            hint="As a superuser run `CREATE EXTENSION vector;` in this database (pgvector 0.5 or newer), "
            "then open the store again; see docs/postgres.md.",
        )
    return InvalidInput(
        f"Migration {name} failed: {text.strip()}",
        hint="Check that the role owns the database schema (CREATE privilege); see docs/postgres.md.",
    )
