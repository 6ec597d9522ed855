"""SQLite tables of the team server: API keys and project settings (sql/006 and sql/007)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..models import from_epoch, to_epoch

_KEY_COLUMNS = "id, team, user_id, role, name, prefix, created_at, last_used_at, revoked_at"


def _key(row: Sequence[Any], *, with_hash: str | None = None) -> dict[str, Any]:
    ident, team, user_id, role, name, prefix, created, used, revoked = row[:9]
    out = {
        "id": ident,
        "team": team,
        "user_id": user_id,
        "role": role,
        "name": name,
        "prefix": prefix,
        "created_at": from_epoch(created),
        "last_used_at": from_epoch(used),
        "revoked_at": from_epoch(revoked),
    }
    if with_hash is not None:
        out["key_hash"] = with_hash
    return out


class ServerTables:
    """API keys and project settings of the SQLite store (mixed into :class:`SqliteStore`)."""

    db: Any

    # -- API keys --------------------------------------------------------------------
    def save_api_key(self, row: dict[str, Any]) -> None:
        """Insert a key row (``key_hash`` is the SHA-256 of the key; the key itself is never stored)."""
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}, key_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row["id"],
                    row["team"],
                    row.get("user_id"),
                    row["role"],
                    row.get("name"),
                    row["prefix"],
                    to_epoch(row["created_at"]),
                    to_epoch(row.get("last_used_at")),
                    to_epoch(row.get("revoked_at")),
                    row["key_hash"],
                ),
            )

    def find_api_key(self, key_hash: str) -> dict[str, Any] | None:
        """The key with this hash, revoked or not (the caller checks ``revoked_at``)."""
        row = (
            self.db.reader().execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        )
        return None if row is None else _key(row, with_hash=key_hash)

    def list_api_keys(self, team: str | None) -> list[dict[str, Any]]:
        """Keys newest first (of one team, or all), never with their hash."""
        sql = f"SELECT {_KEY_COLUMNS} FROM api_keys"
        params: tuple[Any, ...] = ()
        if team is not None:
            sql, params = sql + " WHERE team = ?", (team,)
        rows = self.db.reader().execute(sql + " ORDER BY created_at DESC, id DESC", params).fetchall()
        return [_key(r) for r in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        """Revoke a key; False when there is no such live key."""
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (to_epoch(at), key_id)
            )
            return bool(cur.rowcount)

    def touch_api_key(self, key_id: str, at: datetime) -> None:
        """Record a key's last use."""
        with self.db.write() as conn:
            conn.execute("UPDATE api_keys SET last_used_at = ? WHERE id = ?", (to_epoch(at), key_id))
