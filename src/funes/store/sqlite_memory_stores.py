"""Tables of Anthropic-style memory stores and their immutable versions (sql/014, pg_sql/011).

Rows are plain dicts; :mod:`funes.agents.memory_stores` turns them into the
API's objects. The memories themselves are ordinary records. A version row is
written once and changed only by :meth:`MemoryStoreTables.redact_memory_version`,
which erases its content and path and keeps its time, hash and author.
Shared as is by the PostgreSQL store (``?`` placeholders through its adapter).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

STORE_COLUMNS: tuple[str, ...] = (
    "id",
    "tenant",
    "name",
    "description",
    "metadata",
    "created_at",
    "updated_at",
    "archived_at",
)
VERSION_COLUMNS: tuple[str, ...] = (
    "id",
    "tenant",
    "store_id",
    "memory_id",
    "operation",
    "path",
    "content",
    "content_sha256",
    "content_size_bytes",
    "record_version",
    "created_at",
    "created_by",
    "redacted_at",
    "redacted_by",
)
_JSON = ("metadata", "created_by", "redacted_by")
# The id field of each kind of author (``created_by``), kept in ``created_by_id`` for the list filters.
ACTOR_IDS = {
    "api_actor": "api_key_id",
    "session_actor": "session_id",
    "service_account_actor": "service_account_id",
    "user_actor": "user_id",
}


def _row(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(columns, row, strict=True))
    for name in _JSON:
        if name in out:
            out[name] = json.loads(out[name]) if out[name] else None
    return out


def _values(columns: Sequence[str], row: dict[str, Any]) -> list[Any]:
    return [json.dumps(row.get(c)) if c in _JSON and row.get(c) is not None else row.get(c) for c in columns]


def _version_values(version: dict[str, Any]) -> tuple[Any, ...]:
    """A version row's values, then its author's type and id (the columns the list filters read)."""
    author = version.get("created_by") or {}
    kind = str(author.get("type") or "")
    return (*_values(VERSION_COLUMNS, version), kind, str(author.get(ACTOR_IDS.get(kind, ""), "") or ""))


class MemoryStoreTables:
    """Memory-store storage, mixed into the SQLite and PostgreSQL stores."""

    db: Any
    row_lock: str
    # The collation that orders text by code point: SQLite's BINARY default; ' COLLATE "C"' on PostgreSQL.
    path_order: str = ""

    # -- stores -------------------------------------------------------------------------
    def save_memory_store(self, store: dict[str, Any]) -> None:
        """Insert a memory store, or update the one with the same id."""
        names = ", ".join(STORE_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in STORE_COLUMNS if c != "id")
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO memory_stores ({names}) VALUES ({', '.join('?' for _ in STORE_COLUMNS)}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                _values(STORE_COLUMNS, store),
            )

    def get_memory_store(self, tenant: str, store_id: str, *, lock: bool = False) -> dict[str, Any] | None:
        """A tenant's memory store; ``lock=True`` (inside a transaction) holds its row until the commit."""
        sql = f"SELECT {', '.join(STORE_COLUMNS)} FROM memory_stores WHERE tenant = ? AND id = ?"
        if lock:
            # Every write to a store locks its row first, so writers of one store take turns.
            with self.db.write() as conn:
                row = conn.execute(sql + self.row_lock, (tenant, store_id)).fetchone()
        else:
            row = self.db.reader().execute(sql, (tenant, store_id)).fetchone()
        return None if row is None else _row(STORE_COLUMNS, row)

    def list_memory_stores(
        self,
        tenant: str,
        *,
        after: int = 0,
        limit: int = 20,
        include_archived: bool = False,
        created_from: float | None = None,
        created_to: float | None = None,
    ) -> list[dict[str, Any]]:
        """A tenant's memory stores, oldest first, after the store numbered ``after`` (``_seq`` of each row).

        ``created_from``/``created_to`` (epoch seconds, inclusive) keep the stores created in that span.
        """
        where, args = ["tenant = ?", "rowid > ?"], [tenant, after]
        if not include_archived:
            where.append("archived_at IS NULL")
        if created_from is not None:
            where.append("created_at >= ?")
            args.append(created_from)
        if created_to is not None:
            where.append("created_at <= ?")
            args.append(created_to)
        rows = self.db.reader().execute(
            f"SELECT rowid, {', '.join(STORE_COLUMNS)} FROM memory_stores WHERE {' AND '.join(where)} "
            "ORDER BY rowid LIMIT ?",
            (*args, limit),
        )
        return [{"_seq": r[0], **_row(STORE_COLUMNS, r[1:])} for r in rows]

    def delete_memory_store(self, store_id: str) -> None:
        """Delete a store's row and every version row of it (the caller deletes its records)."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM memory_store_versions WHERE store_id = ?", (store_id,))
            conn.execute("DELETE FROM memory_stores WHERE id = ?", (store_id,))

    def memory_store_paths(self, tenant: str, store_id: str) -> list[tuple[str, str]]:
        """The (path, record id) of every memory of a store, unordered (the caller sorts by code point)."""
        rows = self.db.reader().execute(
            "SELECT entity_id, id FROM memories WHERE tenant = ? AND entity_type = ? AND project_id = ? "
            "AND user_id = ''",
            (tenant, "memory_store", store_id),
        )
        return [(r[0], r[1]) for r in rows]

    def memory_store_path_page(
        self,
        tenant: str,
        store_id: str,
        *,
        low: str,
        high: str,
        low_inclusive: bool = True,
        descending: bool = False,
        limit: int = 20,
    ) -> list[tuple[str, str]]:
        """(path, record id) of a store's memories with ``low <= path < high``, in code-point order, one page.

        With ``low_inclusive=False`` the path must be above ``low``. Served by
        the ``memories_store_paths`` index, so a page costs the same in a store
        of any size.
        """
        col = "entity_id" + self.path_order
        rows = self.db.reader().execute(
            "SELECT entity_id, id FROM memories WHERE tenant = ? AND project_id = ? "
            f"AND entity_type = 'memory_store' AND user_id = '' AND {col} {'>=' if low_inclusive else '>'} ? "
            f"AND {col} < ? ORDER BY {col} {'DESC' if descending else 'ASC'} LIMIT ?",
            (tenant, store_id, low, high, limit),
        )
        return [(r[0], r[1]) for r in rows]

    # -- versions -------------------------------------------------------------------------
    def add_memory_version(self, version: dict[str, Any]) -> None:
        """Append one version row (its author's type and id also in their own columns, for the filters)."""
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO memory_store_versions ({', '.join(VERSION_COLUMNS)}, created_by_type, created_by_id) "
                f"VALUES ({', '.join('?' for _ in VERSION_COLUMNS)}, ?, ?)",
                _version_values(version),
            )

    def get_memory_version(self, store_id: str, version_id: str) -> dict[str, Any] | None:
        """One version row of a store."""
        row = (
            self.db.reader()
            .execute(
                f"SELECT {', '.join(VERSION_COLUMNS)} FROM memory_store_versions WHERE store_id = ? AND id = ?",
                (store_id, version_id),
            )
            .fetchone()
        )
        return None if row is None else _row(VERSION_COLUMNS, row)

    def list_memory_versions(
        self,
        store_id: str,
        *,
        memory_id: str | None = None,
        operation: str | None = None,
        author: tuple[str, str] | None = None,
        created_from: float | None = None,
        created_to: float | None = None,
        before: int | None = None,
        limit: int = 20,
    ) -> list[dict[str, Any]]:
        """A store's versions newest first, before the row numbered ``before`` (``_seq`` of each row).

        Filters: one memory, one operation, one author ``(type, id)`` such as
        ``("api_actor", key_id)``, and a span of creation times (epoch seconds, inclusive).
        """
        where, args = ["store_id = ?"], [store_id]
        for clause, value in (
            ("memory_id = ?", memory_id),
            ("operation = ?", operation),
            ("created_at >= ?", created_from),
            ("created_at <= ?", created_to),
            ("rowid < ?", before),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        if author is not None:
            where.append("created_by_type = ? AND created_by_id = ?")
            args.extend(author)
        rows = self.db.reader().execute(
            f"SELECT rowid, {', '.join(VERSION_COLUMNS)} FROM memory_store_versions WHERE {' AND '.join(where)} "
            "ORDER BY rowid DESC LIMIT ?",
            (*args, limit),
        )
        return [{"_seq": r[0], **_row(VERSION_COLUMNS, r[1:])} for r in rows]

    def redact_memory_version(self, version_id: str, redacted_at: float, redacted_by: dict[str, Any]) -> None:
        """Erase a version's content and path; its time, hash, size and author stay."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE memory_store_versions SET content = NULL, path = NULL, redacted_at = ?, redacted_by = ? "
                "WHERE id = ?",
                (redacted_at, json.dumps(redacted_by), version_id),
            )

    # -- export and import ------------------------------------------------------------------
    def iter_memory_store_rows(self, tenant: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every memory store, then every version, oldest first (of one tenant, or all): for `funes export`."""
        where, args = ("WHERE tenant = ? ", (tenant,)) if tenant is not None else ("", ())
        for kind, table, columns in (
            ("memory_store", "memory_stores", STORE_COLUMNS),
            ("memory_store_version", "memory_store_versions", VERSION_COLUMNS),
        ):
            rows = self.db.reader().execute(f"SELECT {', '.join(columns)} FROM {table} {where}ORDER BY rowid", args)
            for row in rows:
                yield kind, _row(columns, row)

    def memory_store_tenant_ids(self) -> list[str]:
        """Every tenant that has a memory store."""
        return [r[0] for r in self.db.reader().execute("SELECT DISTINCT tenant FROM memory_stores ORDER BY tenant")]

    def memory_store_tenants(self, store_ids: Sequence[str]) -> dict[str, str]:
        """The tenant of each of these memory stores that exists (any tenant's)."""
        out: dict[str, str] = {}
        ids = list(store_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.reader().execute(
                f"SELECT id, tenant FROM memory_stores WHERE id IN ({', '.join('?' for _ in chunk)})", chunk
            )
            out.update({r[0]: r[1] for r in rows})
        return out

    def import_memory_store_rows(self, stores: Sequence[dict[str, Any]], versions: Sequence[dict[str, Any]]) -> None:
        """Write exported stores (replacing the same ids) and versions, in the caller's transaction.

        A version is immutable: one already here is kept as it is, except
        that a redaction in the file is applied to it. A version redacted
        here stays redacted, so an older export never brings its text back.
        """
        for store in stores:
            self.save_memory_store(store)
        names = ", ".join(VERSION_COLUMNS)
        with self.db.write() as conn:
            for version in versions:
                conn.execute(
                    f"INSERT INTO memory_store_versions ({names}, created_by_type, created_by_id) "
                    f"VALUES ({', '.join('?' for _ in VERSION_COLUMNS)}, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET content = NULL, path = NULL, redacted_at = excluded.redacted_at, "
                    "redacted_by = excluded.redacted_by "
                    "WHERE memory_store_versions.redacted_at IS NULL AND excluded.redacted_at IS NOT NULL",
                    _version_values(version),
                )
