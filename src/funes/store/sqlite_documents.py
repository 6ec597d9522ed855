"""SQLite tables of managed document sources (see sql/002_documents.sql).

A document row and its chunk records change together: :meth:`replace_document`
deletes the old chunks, writes the new ones with their vectors and updates
the row in ONE transaction, so a search (on its own read connection, in WAL
mode) sees either the old version or the new one, never both or half.
Rows are plain dicts here; :mod:`funes.knowledge.documents` turns them into values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..models import Memory
from .base import own_transaction

DOCUMENT_COLUMNS: tuple[str, ...] = (
    "id",
    "tenant",
    "user_id",
    "scope",
    "project_id",
    "session_id",
    "vis",
    "uri",
    "name",
    "kind",
    "content_hash",
    "size_bytes",
    "version",
    "status",
    "error",
    "chunk_count",
    "pages",
    "pipeline",
    "metadata",
    "warnings",
    "created_at",
    "updated_at",
    "indexed_at",
)
_JSON_COLUMNS = ("metadata", "warnings")
_SELECT = ", ".join(DOCUMENT_COLUMNS)


def _row_to_doc(row: Sequence[Any]) -> dict[str, Any]:
    doc = dict(zip(DOCUMENT_COLUMNS, row, strict=True))
    for key in _JSON_COLUMNS:
        doc[key] = json.loads(doc[key] or ("{}" if key == "metadata" else "[]"))
    return doc


def _doc_values(doc: dict[str, Any]) -> tuple[Any, ...]:
    values = []
    for key in DOCUMENT_COLUMNS:
        value = doc.get(key)
        if key in _JSON_COLUMNS:
            value = json.dumps(value or ({} if key == "metadata" else []), sort_keys=True, ensure_ascii=False)
        elif key == "user_id":
            value = value or ""
        values.append(value)
    return tuple(values)


def document_key(doc_id: str) -> str:
    """What writers of one document take turns on (PostgreSQL: an advisory lock), so that replacing, moving
    and deleting it lock its row and its chunks in one order and never deadlock each other."""
    return f"document\x1f{doc_id}"


class DocumentTables:
    """Source (document) storage, mixed into :class:`funes.store.sqlite.SqliteStore`."""

    db: Any

    if TYPE_CHECKING:  # provided by SqliteStore, which this class is mixed into

        def put_many(self, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]) -> int: ...

        def _delete(self, conn: Any, memory_ids: Sequence[str]) -> int: ...

        def lock_identity(self, key: str, *, shared: bool = False) -> None: ...

    # -- reads -------------------------------------------------------------
    def get_document(self, doc_id: str) -> dict[str, Any] | None:
        """A document row by id."""
        row = self.db.reader().execute(f"SELECT {_SELECT} FROM documents WHERE id = ?", (doc_id,)).fetchone()
        return None if row is None else _row_to_doc(row)

    def find_document(self, tenant: str, user_id: str | None, vis: str, uri: str) -> dict[str, Any] | None:
        """The document of a uri in this tenant, user space and visibility."""
        row = (
            self.db.reader()
            .execute(
                f"SELECT {_SELECT} FROM documents WHERE tenant = ? AND user_id = ? AND vis = ? AND uri = ?",
                (tenant, user_id or "", vis, uri),
            )
            .fetchone()
        )
        return None if row is None else _row_to_doc(row)

    def find_documents_by_uri(self, tenant: str, uri: str) -> list[dict[str, Any]]:
        """Every document of a uri in a tenant (any user space or visibility)."""
        rows = self.db.reader().execute(
            f"SELECT {_SELECT} FROM documents WHERE tenant = ? AND uri = ? ORDER BY id", (tenant, uri)
        )
        return [_row_to_doc(r) for r in rows]

    def list_documents(
        self, tenant: str | None, *, user_id: str | None = None, status: str | None = None, kind: str | None = None
    ) -> list[dict[str, Any]]:
        """Document rows ordered by uri (a user sees tenant-wide rows and their own)."""
        where: list[str] = []
        params: list[Any] = []
        if tenant is not None:
            where.append("tenant = ?")
            params.append(tenant)
        if user_id:
            where.append("user_id IN ('', ?)")
            params.append(user_id)
        if status:
            where.append("status = ?")
            params.append(status)
        if kind:
            where.append("kind = ?")
            params.append(kind)
        sql = f"SELECT {_SELECT} FROM documents"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self.db.reader().execute(sql + " ORDER BY uri, id", params)
        return [_row_to_doc(r) for r in rows]

    def iter_documents(self, tenant: str | None = None) -> Iterator[dict[str, Any]]:
        """Every document row, oldest first."""
        sql = f"SELECT {_SELECT} FROM documents"
        params: list[Any] = []
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params.append(tenant)
        for row in self.db.reader().execute(sql + " ORDER BY rowid", params).fetchall():
            yield _row_to_doc(row)

    def document_chunk_ids(self, doc_id: str) -> list[str]:
        """Ids of the records a document owns, in insertion order."""
        rows = self.db.reader().execute("SELECT id FROM memories WHERE source_id = ? ORDER BY rowid", (doc_id,))
        return [r[0] for r in rows]

    def count_document_chunks(self, doc_id: str) -> int:
        """How many records a document owns right now."""
        return int(
            self.db.reader().execute("SELECT COUNT(*) FROM memories WHERE source_id = ?", (doc_id,)).fetchone()[0]
        )

    # -- writes ------------------------------------------------------------
    def _upsert_document(self, conn: Any, doc: dict[str, Any]) -> None:
        marks = ", ".join("?" for _ in DOCUMENT_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in DOCUMENT_COLUMNS if c != "id")
        conn.execute(
            f"INSERT INTO documents ({_SELECT}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}",
            _doc_values(doc),
        )

    def save_document(self, doc: dict[str, Any]) -> None:
        """Insert or update a document row without touching its chunks (e.g. to record a failure)."""
        with self.db.write() as conn:
            self._upsert_document(conn, doc)

    @own_transaction
    def replace_document(
        self, doc: dict[str, Any], items: Sequence[tuple[Memory, Sequence[np.ndarray] | None]]
    ) -> None:
        """Swap a document's chunks for new ones and update its row, in one transaction."""
        with self.db.write() as conn:
            self.lock_identity(document_key(doc["id"]))
            old = [r[0] for r in conn.execute("SELECT id FROM memories WHERE source_id = ?", (doc["id"],))]
            self._delete(conn, old)
            self.put_many(items)  # in batches on PostgreSQL (issue 29)
            self._upsert_document(conn, doc)

    @own_transaction
    def move_document(self, doc_id: str, uri: str, name: str, updated_at: float) -> int:
        """Point a document and its chunks at a new uri (a renamed file); returns the chunks moved.

        Only the row and the records' source change: ids, text and vectors
        stay, so a rename costs no embedding.
        """
        with self.db.write() as conn:
            self.lock_identity(document_key(doc_id))
            conn.execute(
                "UPDATE documents SET uri = ?, name = ?, updated_at = ? WHERE id = ?", (uri, name, updated_at, doc_id)
            )
            moved = conn.execute(
                "UPDATE memories SET source_uri = ?, locator = json_set(locator, '$.display_name', ?) "
                "WHERE source_id = ?",
                (uri, name, doc_id),
            ).rowcount
        return int(moved)

    @own_transaction
    def delete_document(self, doc_id: str) -> int:
        """Delete a document row with its chunks and their vectors; returns the chunks removed."""
        with self.db.write() as conn:
            self.lock_identity(document_key(doc_id))
            old = [r[0] for r in conn.execute("SELECT id FROM memories WHERE source_id = ?", (doc_id,))]
            removed = self._delete(conn, old)
            conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return removed

    def import_documents(
        self,
        docs: Sequence[dict[str, Any]],
        items: Sequence[tuple[Memory, Sequence[np.ndarray] | None]],
    ) -> int:
        """Write imported document rows and records in one transaction; returns documents replaced.

        An imported document takes the place of a local one with the same uri
        and visibility (a restore): the local one's chunks are removed first.
        """
        replaced = 0
        with self.db.write() as conn:
            for doc in docs:
                clash = conn.execute(
                    "SELECT id FROM documents WHERE tenant = ? AND user_id = ? AND vis = ? AND uri = ? AND id != ?",
                    (doc["tenant"], doc.get("user_id") or "", doc["vis"], doc["uri"], doc["id"]),
                ).fetchone()
                if clash is not None:
                    old = [r[0] for r in conn.execute("SELECT id FROM memories WHERE source_id = ?", (clash[0],))]
                    self._delete(conn, old)
                    conn.execute("DELETE FROM documents WHERE id = ?", (clash[0],))
                    replaced += 1
                self._upsert_document(conn, doc)
            self.put_many(items)
        return replaced
