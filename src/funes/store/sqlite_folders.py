"""SQLite table of registered memory folders (see sql/010_folders.sql).

A folder row holds no records: its files are managed documents whose uri
lies under the folder's path. Rows are plain dicts; :mod:`funes.knowledge.folders`
turns them into values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

FOLDER_COLUMNS: tuple[str, ...] = (
    "id",
    "tenant",
    "path",
    "scope",
    "project_id",
    "created_at",
    "last_sync_at",
    "last_sync",
)
_SELECT = ", ".join(FOLDER_COLUMNS)


def _row(row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(FOLDER_COLUMNS, row, strict=True))
    out["last_sync"] = json.loads(out["last_sync"] or "{}")
    return out


class FolderTables:
    """Memory-folder storage, mixed into :class:`funes.store.sqlite.SqliteStore`."""

    db: Any

    def list_folders(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's folders, ordered by path."""
        rows = self.db.reader().execute(f"SELECT {_SELECT} FROM folders WHERE tenant = ? ORDER BY path", (tenant,))
        return [_row(r) for r in rows]

    def get_folder(self, tenant: str, path: str) -> dict[str, Any] | None:
        """The folder registered at a path, if any."""
        row = (
            self.db.reader()
            .execute(f"SELECT {_SELECT} FROM folders WHERE tenant = ? AND path = ?", (tenant, path))
            .fetchone()
        )
        return None if row is None else _row(row)

    def save_folder(self, folder: dict[str, Any]) -> None:
        """Insert a folder, or update the one with the same id."""
        values = [json.dumps(folder.get(c) or {}) if c == "last_sync" else folder.get(c) for c in FOLDER_COLUMNS]
        updates = ", ".join(f"{c} = excluded.{c}" for c in FOLDER_COLUMNS if c != "id")
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO folders ({_SELECT}) VALUES ({', '.join('?' for _ in FOLDER_COLUMNS)}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                values,
            )

    def delete_folder(self, folder_id: str) -> bool:
        """Forget a folder (its documents stay until removed); whether it existed."""
        with self.db.write() as conn:
            return conn.execute("DELETE FROM folders WHERE id = ?", (folder_id,)).rowcount > 0
