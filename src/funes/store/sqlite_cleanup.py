"""Clearing a session, a project or a whole tenant, and giving the space back (see ``Core.clear``).

A clear removes records (with their vectors and keyword entries), sessions
(with their messages and usage), documents and their access-log rows in ONE
transaction, and writes a ``cleanup_log`` row in that same transaction, so a
crash never leaves half a project or an unlogged removal. Space is reclaimed
afterwards (VACUUM cannot run inside a transaction).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import to_epoch

if TYPE_CHECKING:
    from .connection import Database

_CHUNK = 500  # ids per IN (...) list, under SQLite's variable limit


def _chunks(ids: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        yield chunk, ", ".join("?" for _ in chunk)


class CleanupTables:
    """Clearing and space reclaim, mixed into :class:`funes.store.sqlite.SqliteStore`."""

    db: Database

    if TYPE_CHECKING:  # the record helpers live on SqliteStore

        def _delete(self, conn: Any, memory_ids: Sequence[str]) -> int: ...

    def clear(
        self,
        tenant: str,
        *,
        session_id: str | None = None,
        project_id: str | None = None,
        user_id: str | None = None,
        at: datetime,
        reason: str,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Remove a session's, a project's or (neither given) the tenant's data in one transaction, and log it.

        A project's data is its project-scope records and documents and its
        sessions with their session-scope records; team records stay. With
        ``user_id``, only records, sessions and documents shared in the tenant
        or owned by that user are touched. Returns the counts (and the log
        row's id as ``log_id``); ``dry_run`` counts without removing.
        """
        owner = " AND user_id IN ('', ?)" if user_id else ""
        base: list[Any] = [tenant, *([user_id] if user_id else [])]
        if session_id is not None:
            scope = "session"
            sessions_sql, sessions_params = f"tenant = ? AND id = ?{owner}", [tenant, session_id, *base[1:]]
            records_sql = f"tenant = ?{owner} AND scope = 'session' AND session_id = ?"
            records_params = [*base, session_id]
            docs_sql, docs_params = f"tenant = ?{owner} AND scope = 'session' AND session_id = ?", [*base, session_id]
        elif project_id is not None:
            scope = "project"
            sessions_sql, sessions_params = f"tenant = ? AND project_id = ?{owner}", [tenant, project_id, *base[1:]]
            # Team records keep their place even if written while working on the project.
            records_sql = (
                f"tenant = ?{owner} AND ((scope = 'project' AND project_id = ?) OR (scope = 'session' AND "
                f"(project_id = ? OR session_id IN (SELECT id FROM sessions WHERE {sessions_sql}))))"
            )
            records_params = [*base, project_id, project_id, *sessions_params]
            docs_sql = f"tenant = ?{owner} AND scope IN ('project', 'session') AND project_id = ?"
            docs_params = [*base, project_id]
        else:
            scope = "all"
            sessions_sql, sessions_params = f"tenant = ?{owner}", list(base)
            records_sql, records_params = f"tenant = ?{owner}", list(base)
            docs_sql, docs_params = f"tenant = ?{owner}", list(base)
        with self.db.write() as conn:
            sessions = [r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {sessions_sql}", sessions_params)]
            documents = [r[0] for r in conn.execute(f"SELECT id FROM documents WHERE {docs_sql}", docs_params)]
            ids = [r[0] for r in conn.execute(f"SELECT id FROM memories WHERE {records_sql}", records_params)]
            known = set(ids)
            for chunk, marks in _chunks(documents):
                # A document's chunks share its scope; this only catches strays.
                rows = conn.execute(f"SELECT id FROM memories WHERE source_id IN ({marks})", chunk)
                ids += [r[0] for r in rows if r[0] not in known]
            vectors = 0
            for chunk, marks in _chunks(ids):
                vectors += conn.execute(
                    f"SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
                    f"WHERE m.id IN ({marks})",
                    chunk,
                ).fetchone()[0]
            messages = 0
            for chunk, marks in _chunks(sessions):
                messages += conn.execute(
                    f"SELECT COUNT(*) FROM messages WHERE tenant = ? AND session_id IN ({marks})", [tenant, *chunk]
                ).fetchone()[0]
            report: dict[str, Any] = {
                "scope": scope,
                "tenant": tenant,
                "session_id": session_id,
                "project_id": project_id,
                "records": len(ids),
                "vectors": int(vectors),
                "messages": int(messages),
                "sessions": len(sessions),
                "documents": len(documents),
                "dry_run": dry_run,
            }
            if dry_run or (scope != "all" and not (ids or sessions or documents)):
                return report  # nothing written, nothing logged: the caller reports the empty target
            self._delete(conn, ids)
            for chunk, marks in _chunks(ids):
                conn.execute(f"DELETE FROM access_log WHERE memory_id IN ({marks})", chunk)
            for chunk, marks in _chunks(sessions):
                for table in ("messages", "usage", "sessions"):
                    column = "id" if table == "sessions" else "session_id"
                    conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND {column} IN ({marks})", [tenant, *chunk])
            for chunk, marks in _chunks(documents):
                conn.execute(f"DELETE FROM documents WHERE id IN ({marks})", chunk)
            summary = f"{reason}: {len(documents)} documents, {len(sessions)} sessions, {vectors} vectors" + (
                f" (user {user_id})" if user_id else ""
            )
            cur = conn.execute(
                "INSERT INTO cleanup_log (at, tenant, reason, scope, session_id, project_id, records_deleted, "
                "messages_deleted, records_kept, bytes_reclaimed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
                (to_epoch(at), tenant, summary, scope, session_id, project_id, len(ids), messages),
            )
            report["log_id"] = int(cur.lastrowid)
        return report

    def reclaim_space(self) -> tuple[int, int]:
        """Give free pages back to the file system; (database bytes before, after).

        ``PRAGMA incremental_vacuum`` when the file was created with
        ``auto_vacuum = INCREMENTAL``, else a full VACUUM (rewrites the file).
        """
        return self.db.vacuum()

    def record_reclaimed(self, log_id: int, reclaimed: int) -> None:
        """Set the bytes a cleanup freed on its log row (measured after the vacuum that follows it)."""
        with self.db.write() as conn:
            conn.execute("UPDATE cleanup_log SET bytes_reclaimed = ? WHERE id = ?", (int(reclaimed), int(log_id)))
