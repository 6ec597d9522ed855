"""Entity records of the SQLite store: one record per (tenant, owner, project, entity type, entity id).

The lookup uses the ``memories_entity`` index (``sql/001_core.sql``). The
core reads it again inside its write transaction before writing, and SQLite
has one writer, so two writers of the same entity never make two records.
"""

from __future__ import annotations

from typing import Any

from ..models import Memory
from .sqlite_rows import COLUMNS, to_memory


class EntityTables:
    """Entity lookups and pending proposals (mixed into both stores; the SQL is dialect-neutral)."""

    db: Any

    def find_entity(
        self, tenant: str, user_id: str | None, project_id: str | None, entity_type: str, entity_id: str
    ) -> Memory | None:
        """The record of this entity in this tenant, owner and project (None: none yet)."""
        row = (
            self.db.reader()
            .execute(
                f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND entity_type = ? AND entity_id = ? "
                "AND user_id = ? AND coalesce(project_id, '') = ? ORDER BY rowid LIMIT 1",
                (tenant, entity_type, entity_id, user_id or "", project_id or ""),
            )
            .fetchone()
        )
        return None if row is None else to_memory(row)

    def lock_identity(self, key: str, *, shared: bool = False) -> None:
        """Nothing to take on SQLite: its one writer already holds the whole store (PostgreSQL overrides this)."""
        del key, shared

    def with_proposals(self, tenant: str, user_id: str | None, limit: int) -> list[Memory]:
        """Records holding a machine's proposal, newest record change first (``memories_proposals`` index)."""
        sql = f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND proposal IS NOT NULL"
        params: list[Any] = [tenant]
        if user_id:
            sql += " AND (user_id = ? OR user_id = '')"
            params.append(user_id)
        rows = self.db.reader().execute(sql + " ORDER BY updated_at DESC, id LIMIT ?", (*params, limit)).fetchall()
        return [to_memory(r) for r in rows]
