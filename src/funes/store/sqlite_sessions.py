"""SQLite tables of sessions, messages, usage and the cleanup log (see sql/003_sessions.sql).

A message row and the ``message`` records that index it are written in one
transaction by the service: ``with store.transaction():`` around
:meth:`SessionTables.append_message`, ``put`` and :meth:`SessionTables.add_usage`
(each opens a nested write, which becomes a savepoint). Session ids are
unique within a tenant, like every other visibility key.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import NotFound
from ..models import Memory, Turn, format_time, from_epoch, to_epoch
from ..models.messages import Message, ToolCall
from .base import own_transaction

if TYPE_CHECKING:
    from .connection import Database

_SESSION_COLS = "tenant, id, user_id, project_id, title, created_at, last_activity, message_count, metadata"
_MESSAGE_COLS = "id, session_id, seq, role, content, tool_calls, tool_call_id, created_at, record_ids"
DOCUMENT_SOURCE_TYPES = ("pdf", "sheet", "markdown", "text")


def _session(row: Sequence[Any]) -> dict[str, Any]:
    tenant, id_, user_id, project_id, title, created, last, count, metadata = row
    return {
        "tenant": tenant,
        "id": id_,
        "user_id": user_id or None,
        "project_id": project_id,
        "title": title,
        "created_at": from_epoch(created),
        "last_activity": from_epoch(last),
        "message_count": int(count),
        "metadata": json.loads(metadata),
    }


def _message(row: Sequence[Any]) -> Message:
    id_, session_id, seq, role, content, tool_calls, tool_call_id, created, record_ids = row
    return Message(
        role=role,
        content=content,
        id=id_,
        session_id=session_id,
        seq=int(seq),
        tool_calls=tuple(ToolCall(t["id"], t["name"], t.get("arguments") or {}) for t in json.loads(tool_calls)),
        tool_call_id=tool_call_id,
        created_at=from_epoch(created),
        record_ids=tuple(json.loads(record_ids)),
    )


class SessionTables:
    """Session storage, mixed into :class:`funes.store.sqlite.SqliteStore`."""

    db: Database

    if TYPE_CHECKING:  # the record helpers live on SqliteStore

        def _put(self, conn: Any, m: Memory, vectors: Any) -> None: ...

        def _delete(self, conn: Any, memory_ids: Sequence[str]) -> int: ...

    # -- export and import --------------------------------------------------
    # Conversation tables travel in exports as raw rows (epoch timestamps and
    # JSON text exactly as stored), so export -> import -> export is identical.
    _TRANSFER: ClassVar[dict[str, tuple[str, tuple[str, ...], str]]] = {
        "session": (
            "sessions",
            (
                "tenant",
                "id",
                "user_id",
                "project_id",
                "title",
                "created_at",
                "last_activity",
                "message_count",
                "metadata",
            ),
            "created_at, tenant, id",
        ),
        "message": (
            "messages",
            (
                "id",
                "tenant",
                "session_id",
                "seq",
                "role",
                "content",
                "tool_calls",
                "tool_call_id",
                "created_at",
                "record_ids",
            ),
            "rowid",
        ),
        "usage": (
            "usage",
            (
                "tenant",
                "session_id",
                "message_id",
                "at",
                "model",
                "prompt_tokens",
                "completion_tokens",
                "context_window",
            ),
            "id",
        ),
    }

    def iter_conversation_rows(self, tenant: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(kind, row) for every session, then message, then usage row, in a stable order."""
        conn = self.db.reader()
        for kind, (table, columns, order) in self._TRANSFER.items():
            sql = f"SELECT {', '.join(columns)} FROM {table}"
            params: list[Any] = []
            if tenant is not None:
                sql += " WHERE tenant = ?"
                params.append(tenant)
            for row in conn.execute(f"{sql} ORDER BY {order}", params).fetchall():
                yield kind, dict(zip(columns, row, strict=True))

    def import_conversation_rows(self, rows: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Write exported session, message and usage rows (inside the caller's transaction if any)."""
        written = 0
        message_sql, message_rows = "", []
        with self.db.write() as conn:
            for kind, row in sorted(rows, key=lambda r: list(self._TRANSFER).index(r[0])):
                _, columns, _ = self._TRANSFER[kind]
                values = [row.get(c) for c in columns]
                marks = ", ".join("?" for _ in columns)
                if kind == "session":
                    # An upsert, not REPLACE: replacing would cascade-delete the session's messages.
                    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("tenant", "id"))
                    conn.execute(
                        f"INSERT INTO sessions ({', '.join(columns)}) VALUES ({marks}) "
                        f"ON CONFLICT (tenant, id) DO UPDATE SET {updates}",
                        values,
                    )
                elif kind == "message":  # written in one batch below, after their sessions
                    message_sql = f"INSERT OR REPLACE INTO messages ({', '.join(columns)}) VALUES ({marks})"
                    message_rows.append(values)
                else:
                    # Usage rows have no natural id: skip one that is already there (a repeated import).
                    same = " AND ".join(f"{c} IS ?" for c in columns)
                    if conn.execute(f"SELECT 1 FROM usage WHERE {same}", values).fetchone():
                        continue
                    conn.execute(f"INSERT INTO usage ({', '.join(columns)}) VALUES ({marks})", values)
                written += 1
            if message_rows:
                conn.executemany(message_sql, message_rows)
        return written

    # -- sessions ------------------------------------------------------------
    def get_session(self, tenant: str, session_id: str) -> dict[str, Any] | None:
        """A session's row as a dict, or None."""
        row = (
            self.db.reader()
            .execute(f"SELECT {_SESSION_COLS} FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id))
            .fetchone()
        )
        return None if row is None else _session(row)

    def create_session(
        self, tenant: str, session_id: str, user_id: str | None, project_id: str | None, title: str | None, at: datetime
    ) -> dict[str, Any]:
        """Insert a session (a concurrent creator of the same id wins quietly) and return it."""
        with self.db.write() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO sessions ({_SESSION_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '{{}}')",
                (tenant, session_id, user_id or "", project_id, title, to_epoch(at), to_epoch(at)),
            )
        found = self.get_session(tenant, session_id)
        assert found is not None
        return found

    def list_sessions(
        self, tenant: str, *, user_id: str | None = None, project_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Sessions by most recent activity."""
        sql = f"SELECT {_SESSION_COLS} FROM sessions WHERE tenant = ?"
        params: list[Any] = [tenant]
        if user_id:
            sql += " AND user_id IN ('', ?)"
            params.append(user_id)
        if project_id:
            sql += " AND project_id = ?"
            params.append(project_id)
        sql += " ORDER BY last_activity DESC LIMIT ?"
        params.append(limit)
        return [_session(r) for r in self.db.reader().execute(sql, params)]

    # -- messages ------------------------------------------------------------------
    def append_message(
        self,
        tenant: str,
        session_id: str,
        message_id: str,
        role: str,
        content: str,
        tool_calls: Sequence[ToolCall],
        tool_call_id: str | None,
        at: datetime,
        record_ids: Sequence[str],
    ) -> int:
        """Append a message to a session (in the caller's transaction if any); returns its sequence number."""
        row = (message_id, role, content, tool_calls, tool_call_id, at, record_ids)
        return self.append_messages(tenant, session_id, [row])[0]

    def append_messages(
        self,
        tenant: str,
        session_id: str,
        rows: Sequence[tuple[str, str, str, Sequence[ToolCall], str | None, datetime, Sequence[str]]],
    ) -> list[int]:
        """Append messages to a session in three statements (in the caller's transaction if any); their seqs.

        Each row is (message id, role, content, tool calls, tool call id, time, record ids).
        """
        if not rows:
            return []
        with self.db.write() as conn:
            # The session's row first: on PostgreSQL its row lock makes concurrent appends to one
            # session take turns, and the MAX(seq) below then sees the other's messages (issue 29).
            touched = conn.execute(
                # Retention counts from when Funes stored the message, never from its own date:
                # an imported 2023 conversation dated by its messages was pruned at once (issue 9).
                "UPDATE sessions SET last_activity = MAX(last_activity, ?), message_count = message_count + ? "
                "WHERE tenant = ? AND id = ?",
                (time.time(), len(rows), tenant, session_id),
            ).rowcount
            if not touched:  # deleted (forgotten, pruned) since the caller found it
                raise NotFound(
                    f"No session {session_id!r}: it was deleted; the messages were not added.",
                    hint="Create the session again (funes.session(id)) and add them to it.",
                )
            last = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE tenant = ? AND session_id = ?",
                (tenant, session_id),
            ).fetchone()[0]
            seqs = [int(last) + n for n in range(1, len(rows) + 1)]
            conn.executemany(
                f"INSERT INTO messages (tenant, {_MESSAGE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        tenant,
                        message_id,
                        session_id,
                        seq,
                        role,
                        content,
                        json.dumps([t.to_dict() for t in tool_calls], ensure_ascii=False),
                        tool_call_id,
                        to_epoch(at),
                        json.dumps(list(record_ids)),
                    )
                    for seq, (message_id, role, content, tool_calls, tool_call_id, at, record_ids) in zip(
                        seqs, rows, strict=True
                    )
                ],
            )
        return seqs

    def add_usage(
        self,
        tenant: str,
        session_id: str,
        message_id: str | None,
        at: datetime,
        model: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        context_window: int | None,
    ) -> None:
        """Record one model call's token usage (in the caller's transaction if any)."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO usage (tenant, session_id, message_id, at, model, prompt_tokens, completion_tokens, "
                "context_window) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (tenant, session_id, message_id, to_epoch(at), model, prompt_tokens, completion_tokens, context_window),
            )
            conn.execute(
                "UPDATE sessions SET last_activity = MAX(last_activity, ?) WHERE tenant = ? AND id = ?",
                (max(time.time(), to_epoch(at) or 0.0), tenant, session_id),
            )

    def messages(
        self, tenant: str, session_id: str, *, limit: int | None = None, before_seq: int | None = None
    ) -> list[Message]:
        """The session's messages oldest first; with ``limit``, the newest ``limit`` of them."""
        sql = f"SELECT {_MESSAGE_COLS} FROM messages WHERE tenant = ? AND session_id = ?"
        params: list[Any] = [tenant, session_id]
        if before_seq is not None:
            sql += " AND seq < ?"
            params.append(before_seq)
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self.db.reader().execute(sql, params).fetchall()
        return [_message(r) for r in reversed(rows)]

    def turns_near(self, tenant: str, anchors: Sequence[tuple[str, int]], width: int) -> list[Turn]:
        """The messages within ``width`` places of each (session id, seq) anchor (anchors too), oldest first."""
        if width <= 0 or not anchors:
            return []
        wanted: dict[str, set[int]] = {}
        for session_id, seq in anchors:
            wanted.setdefault(session_id, set()).update(range(seq - width, seq + width + 1))
        out: list[Turn] = []
        conn = self.db.reader()
        for session_id, seqs in wanted.items():
            ordered = sorted(seqs)
            marks = ", ".join("?" for _ in ordered)
            rows = conn.execute(
                "SELECT id, session_id, seq, role, content, created_at, record_ids FROM messages "
                f"WHERE tenant = ? AND session_id = ? AND seq IN ({marks}) ORDER BY seq",
                [tenant, session_id, *ordered],
            ).fetchall()
            out += [
                Turn(str(i), str(sid), int(seq), str(role), str(content), from_epoch(at), tuple(json.loads(rec)))
                for i, sid, seq, role, content, at, rec in rows
                if str(content).strip()
            ]
        return out

    def usage_summary(self, tenant: str, session_id: str) -> dict[str, Any]:
        """Totals over every recorded call, and the last call's row."""
        conn = self.db.reader()
        calls, prompt, completion = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) FROM usage "
            "WHERE tenant = ? AND session_id = ?",
            (tenant, session_id),
        ).fetchone()
        last = conn.execute(
            "SELECT at, model, prompt_tokens, completion_tokens, context_window, message_id FROM usage "
            "WHERE tenant = ? AND session_id = ? ORDER BY id DESC LIMIT 1",
            (tenant, session_id),
        ).fetchone()
        out: dict[str, Any] = {"calls": int(calls), "prompt_tokens": int(prompt), "completion_tokens": int(completion)}
        out["last"] = (
            None
            if last is None
            else {
                "at": format_time(from_epoch(last[0])),
                "model": last[1],
                "prompt_tokens": int(last[2]),
                "completion_tokens": int(last[3]),
                "context_window": last[4],
                "message_id": last[5],
            }
        )
        return out

    # -- retention ---------------------------------------------------------------------
    def stale_sessions(self, cutoff: datetime, tenant: str | None = None) -> list[tuple[str, str]]:
        """(tenant, session id) of sessions whose last activity is before ``cutoff``.

        Activity is the latest of the session row's last message or usage and
        its records' updates and accesses; session-scope records whose session
        has no row count too, so nothing escapes the policy.
        """
        stamp = to_epoch(cutoff)
        cond, params = ("AND tenant = ?", [tenant]) if tenant is not None else ("", [])
        sql = f"""
            SELECT tenant, sid, MAX(activity) AS last FROM (
                SELECT tenant, id AS sid, last_activity AS activity FROM sessions WHERE 1 = 1 {cond}
                UNION ALL
                SELECT tenant, session_id AS sid, MAX(updated_at, COALESCE(last_accessed, 0)) AS activity
                FROM memories WHERE scope = 'session' AND session_id IS NOT NULL AND pinned = 0 {cond}
            ) GROUP BY tenant, sid HAVING last < ? ORDER BY last"""
        rows = self.db.reader().execute(sql, [*params, *params, stamp]).fetchall()
        return [(str(t), str(s)) for t, s, _ in rows]

    def delete_last_message(self, tenant: str, session_id: str) -> Message | None:
        """Delete a session's newest message with its records and usage (in the caller's transaction if any)."""
        with self.db.write() as conn:
            row = conn.execute(
                f"SELECT {_MESSAGE_COLS} FROM messages WHERE tenant = ? AND session_id = ? ORDER BY seq DESC LIMIT 1",
                (tenant, session_id),
            ).fetchone()
            if row is None:
                return None
            message = _message(row)
            if message.record_ids:
                self._delete(conn, list(message.record_ids))
            conn.execute("DELETE FROM usage WHERE tenant = ? AND message_id = ?", (tenant, message.id))
            conn.execute(
                "DELETE FROM messages WHERE tenant = ? AND session_id = ? AND id = ?", (tenant, session_id, message.id)
            )
            conn.execute(
                "UPDATE sessions SET message_count = CASE WHEN message_count > 0 THEN message_count - 1 ELSE 0 END "
                "WHERE tenant = ? AND id = ?",
                (tenant, session_id),
            )
        return message

    @own_transaction
    def clear_session(self, tenant: str, session_id: str, at: datetime, reason: str) -> dict[str, Any]:
        """Remove a session's unpinned records, messages, usage and row, and log it (in the caller's transaction if any)."""
        with self.db.write() as conn:
            return self._clear_session(conn, tenant, session_id, at, reason)

    def _clear_session(self, conn: Any, tenant: str, session_id: str, at: datetime, reason: str) -> dict[str, Any]:
        """Remove a session's unpinned session-scope records, its messages, usage and row; log it."""
        rows = conn.execute(
            "SELECT id, pinned, LENGTH(CAST(content AS BLOB)), project_id FROM memories "
            "WHERE tenant = ? AND scope = 'session' AND session_id = ?",
            (tenant, session_id),
        ).fetchall()
        doomed = [r[0] for r in rows if not r[1]]
        kept = len(rows) - len(doomed)
        vectors = 0
        if doomed:
            marks = ", ".join("?" for _ in doomed)
            vectors = conn.execute(
                f"SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid WHERE m.id IN ({marks})",
                doomed,
            ).fetchone()[0]
        dims = getattr(self, "_dims", None) or 0
        reclaimed = sum(int(r[2] or 0) for r in rows if not r[1]) + vectors * dims * 4
        project = next((r[3] for r in rows if r[3]), None)
        session = conn.execute(
            "SELECT project_id FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id)
        ).fetchone()
        if session is not None and session[0]:
            project = session[0]
        deleted = self._delete(conn, doomed) if doomed else 0
        messages = conn.execute(
            "DELETE FROM messages WHERE tenant = ? AND session_id = ?", (tenant, session_id)
        ).rowcount
        conn.execute("DELETE FROM usage WHERE tenant = ? AND session_id = ?", (tenant, session_id))
        conn.execute("DELETE FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id))
        conn.execute(
            "INSERT INTO cleanup_log (at, tenant, reason, scope, session_id, project_id, records_deleted, "
            "messages_deleted, records_kept, bytes_reclaimed) VALUES (?, ?, ?, 'session', ?, ?, ?, ?, ?, ?)",
            (to_epoch(at), tenant, reason, session_id, project, deleted, messages, kept, reclaimed),
        )
        return {
            "tenant": tenant,
            "session_id": session_id,
            "records_deleted": deleted,
            "messages_deleted": messages,
            "records_kept": kept,
            "bytes_reclaimed": reclaimed,
        }

    def cleanup_log(self, tenant: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest cleanup-log rows."""
        keys = (
            "at",
            "tenant",
            "reason",
            "scope",
            "session_id",
            "project_id",
            "records_deleted",
            "messages_deleted",
            "records_kept",
            "bytes_reclaimed",
        )
        sql = f"SELECT {', '.join(keys)} FROM cleanup_log"
        params: list[Any] = []
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params.append(tenant)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(limit)
        out = []
        for row in self.db.reader().execute(sql, params):
            item = dict(zip(keys, row, strict=True))
            item["at"] = format_time(from_epoch(item["at"]))
            out.append(item)
        return out

    # -- selections for the context builder and promotion ---------------------------------
    def important_records(
        self,
        tenant: str,
        vis_keys: Sequence[str] | None,
        *,
        scope: str | None = None,
        user_id: str | None,
        min_importance: float,
        min_access: int | None = None,
        exclude_kinds: Sequence[str] = (),
        now: datetime | None = None,
        limit: int = 50,
    ) -> list[Memory]:
        """Records in these visibilities (or this scope) that are pinned, important or often accessed.

        Pinned first, then by importance, then newest; expired records are left out.
        """
        from .sqlite_rows import COLUMNS, to_memory

        params: list[Any] = [tenant]
        where = ["tenant = ?"]
        if vis_keys is not None:
            if not vis_keys:
                return []
            where.append(f"vis IN ({', '.join('?' for _ in vis_keys)})")
            params.extend(vis_keys)
        if scope is not None:
            where.append("scope = ?")
            params.append(scope)
        rule = "pinned = 1 OR importance >= ?"
        params.append(min_importance)
        if min_access is not None:
            rule += " OR access_count >= ?"
            params.append(min_access)
        where.append(f"({rule})")
        if user_id:
            where.append("user_id IN ('', ?)")
            params.append(user_id)
        if exclude_kinds:
            where.append(f"kind NOT IN ({', '.join('?' for _ in exclude_kinds)})")
            params.extend(exclude_kinds)
        if now is not None:
            where.append("(expires_at IS NULL OR expires_at > ?)")
            params.append(to_epoch(now))
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} "
            "ORDER BY pinned DESC, importance DESC, updated_at DESC LIMIT ?"
        )
        params.append(limit)
        return [to_memory(r) for r in self.db.reader().execute(sql, params)]

    def document_sources(self, tenant: str) -> list[tuple[str, str, str]]:
        """(source type, uri, source id) of every document that has records in the tenant."""
        marks = ", ".join("?" for _ in DOCUMENT_SOURCE_TYPES)
        rows = self.db.reader().execute(
            f"SELECT DISTINCT source_type, source_uri, source_id FROM memories WHERE tenant = ? "
            f"AND source_type IN ({marks}) AND source_uri IS NOT NULL",
            (tenant, *DOCUMENT_SOURCE_TYPES),
        )
        return [(str(t), str(u), str(s or "")) for t, u, s in rows]
