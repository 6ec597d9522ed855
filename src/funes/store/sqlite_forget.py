"""Forgetting in storage (issue 25): find what holds a text, remove it everywhere in one transaction, scrub.

The service (:mod:`funes.curation.forgetting`) decides *what* to forget; this
mixin removes it from every table in ONE write transaction:

* the records (their versions live in the row's ``previous_versions``),
  their vectors and keyword rows (the FTS5 triggers write ``delete``
  entries), the access-log rows that returned them and every logged query
  with the same text, session messages (and whole sessions), document rows
  and job rows;
* the tombstone (``forget_receipts``, migration 012) in the same transaction.

Then :meth:`ForgetTables.scrub` makes the bytes go away: SQLite runs the
transaction with ``PRAGMA secure_delete = ON`` (freed cells and pages are
zeroed), merges the FTS5 segments (``optimize``: a ``delete`` entry alone
leaves the term in an older segment), VACUUMs (earlier page splits and
updates left unzeroed copies in free pages and free blocks: only a rewrite
drops them), and truncates the WAL with ``wal_checkpoint(TRUNCATE)``. The PostgreSQL store overrides it with
``VACUUM FULL`` of the touched tables (postgres_forget.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, ForgetCrossed
from .base import own_transaction
from .sqlite_documents import document_key

_CHUNK = 500
# The store guards (unforgotten_write) each thread has open: (store database, tenant) -> the guard's ``since``.
_GUARDS = threading.local()
_ID = re.compile(r"[a-z]{3}_[0-9a-z]{26}")
#: The tables a forget can touch (PostgreSQL vacuums these).
TOUCHED = (
    "memories",
    "memory_vectors",
    "access_log",
    "messages",
    "sessions",
    "documents",
    "jobs",
    "embedding_cache",
    "memory_store_versions",
)
#: One access-log row (``?`` marks: at, tenant, memory_id, action, query, score, session_id, agent_id, tenant,
#: at, memory_id). A row is written after its read: held back while the store was locked, held by another
#: server process (PostgreSQL), or from a search that ran beside a forget. A read from before the tenant's
#: latest forget keeps no query text, and is not logged at all when its record is gone: otherwise it would
#: write the forgotten words, or a forgotten record's row, back after the scrub.
ACCESS_ROW = (
    "INSERT INTO access_log (at, tenant, memory_id, action, query, score, session_id, agent_id) "
    "SELECT ?, ?, ?, ?, CASE WHEN forgot THEN NULL ELSE ? END, ?, ?, ? FROM (SELECT EXISTS (SELECT 1 FROM "
    "forget_receipts r WHERE r.tenant = ? AND r.at >= ?) AS forgot) WHERE NOT forgot OR EXISTS (SELECT 1 FROM "
    "memories WHERE id = ?)"
)

#: Whether a forget came at or after a time (epoch seconds), in any tenant: the embedding cache is shared.
FORGOT_SINCE = "SELECT 1 FROM forget_receipts WHERE at >= ? LIMIT 1"


def drop_cached_queries(conn: Any, events: Sequence[Any], stamp: float) -> None:
    """Access rows of a read from before a forget, written after it (held back): their query text is not logged
    (``ACCESS_ROW``), and the cache row of the query's vector, written when the search embedded it, goes too.
    The forget found queries in the access log only, so it could not take it (SQLite caches query vectors)."""
    queries = sorted({e.query for e in events if e.query})
    tenants = sorted({e.tenant for e in events})
    marks = ", ".join("?" for _ in tenants)
    if (
        not queries
        or not conn.execute(
            f"SELECT 1 FROM forget_receipts WHERE at >= ? AND tenant IN ({marks}) LIMIT 1", [stamp, *tenants]
        ).fetchone()
    ):
        return
    for chunk, marks in _chunks([hashlib.sha256(q.encode("utf-8")).hexdigest() for q in queries]):
        conn.execute(f"DELETE FROM embedding_cache WHERE text_hash IN ({marks})", chunk)


def forget_key(tenant: str) -> str:
    """The tenant's forget lock: a forget holds it alone, a write derived from reads holds it shared."""
    return f"forget\x1f{tenant}"


def _chunks(values: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    for start in range(0, len(values), _CHUNK):
        chunk = list(values[start : start + _CHUNK])
        yield chunk, ", ".join("?" for _ in chunk)


def like_pattern(text: str) -> str:
    """A case-folded LIKE pattern matching ``text`` anywhere (``\\`` escapes the wildcards)."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class ForgetTables:
    """Storage side of forgetting, mixed into both stores (portable SQL through the connection adapter)."""

    db: Any
    path: str

    row_lock: str

    def _delete(self, conn: Any, memory_ids: Sequence[str]) -> int: ...

    if TYPE_CHECKING:  # provided by the store this class is mixed into

        def lock_identity(self, key: str, *, shared: bool = False) -> None: ...

    # -- finding -------------------------------------------------------------------------
    def reading_current(self) -> contextlib.AbstractContextManager[None]:
        """Reads inside see every write committed now (on SQLite every read does; PostgreSQL overrides it)."""
        return contextlib.nullcontext()

    def ids_matching(self, tenant: str, user: str | None, text: str) -> list[str]:
        """Ids of the tenant's records whose title or content holds ``text`` (case-insensitive)."""
        sql = (
            "SELECT id FROM memories WHERE tenant = ? AND (lower(content) LIKE ? ESCAPE '\\' "
            "OR lower(coalesce(title, '')) LIKE ? ESCAPE '\\')"
        )
        pattern = like_pattern(text)
        params: list[Any] = [tenant, pattern, pattern]
        if user is not None:
            sql += " AND user_id IN ('', ?)"
            params.append(user)
        return [str(r[0]) for r in self.db.reader().execute(sql + " ORDER BY id", params)]

    def ids_of_user(self, tenant: str, user: str) -> list[str]:
        """Ids of every record the user owns in the tenant."""
        rows = self.db.reader().execute(
            "SELECT id FROM memories WHERE tenant = ? AND user_id = ? ORDER BY id", (tenant, user)
        )
        return [str(r[0]) for r in rows]

    def sessions_of_user(self, tenant: str, user: str) -> list[str]:
        """Ids of the user's sessions in the tenant."""
        rows = self.db.reader().execute("SELECT id FROM sessions WHERE tenant = ? AND user_id = ?", (tenant, user))
        return [str(r[0]) for r in rows]

    def documents_of_user(self, tenant: str, user: str) -> list[str]:
        """Ids of the user's managed documents in the tenant."""
        rows = self.db.reader().execute("SELECT id FROM documents WHERE tenant = ? AND user_id = ?", (tenant, user))
        return [str(r[0]) for r in rows]

    def ids_of_sources(self, source_ids: Sequence[str]) -> list[str]:
        """Ids of the records whose source is one of these documents."""
        out: list[str] = []
        conn = self.db.reader()
        for chunk, marks in _chunks(list(source_ids)):
            out += [str(r[0]) for r in conn.execute(f"SELECT id FROM memories WHERE source_id IN ({marks})", chunk)]
        return out

    def messages_to_forget(
        self, tenant: str, *, record_ids: Sequence[str], sessions: Sequence[str], text: str | None
    ) -> list[dict[str, Any]]:
        """The tenant's messages that are indexed as one of ``record_ids``, belong to ``sessions`` or hold ``text``."""
        wanted = set(record_ids)
        whole = set(sessions)
        pattern = like_pattern(text) if text else None
        out = []
        rows = self.db.reader().execute(
            "SELECT id, session_id, record_ids, "
            + ("lower(content) LIKE ? ESCAPE '\\'" if pattern else "0")
            + " FROM messages WHERE tenant = ?",
            ([pattern] if pattern else []) + [tenant],
        )
        for mid, session, rids, hit in rows:
            linked = [str(r) for r in json.loads(rids or "[]")]
            if session in whole or bool(hit) or wanted.intersection(linked):
                out.append({"id": str(mid), "session_id": str(session), "record_ids": linked})
        return out

    def jobs_mentioning(self, tenant: str, needles: Sequence[str]) -> list[str]:
        """Ids of the tenant's jobs whose payload, result or error names one of ``needles`` (case-insensitive)."""
        folded = {n.lower() for n in needles if n}
        if not folded:
            return []
        # Funes ids are looked up as words (thousands of them against every job stay cheap); the rest by substring.
        ids = {n for n in folded if _ID.fullmatch(n)}
        others = [n for n in folded if n not in ids]
        out = []
        rows = self.db.reader().execute(
            "SELECT id, payload, coalesce(result, ''), coalesce(last_error, '') FROM jobs WHERE tenant = ?", (tenant,)
        )
        for job_id, payload, result, error in rows:
            text = f"{payload}\n{result}\n{error}".lower()
            if ids.intersection(_ID.findall(text)) or any(n in text for n in others):
                out.append(str(job_id))
        return out

    def words_in_use(self, words: Sequence[str]) -> set[str]:
        """The words some stored record still holds (keyword index, any tenant): they are not the forgotten text's."""
        conn = self.db.reader()
        used: set[str] = set()
        for word in dict.fromkeys(words):
            quoted = '"' + word.replace('"', '""') + '"'
            if conn.execute("SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1", (quoted,)).fetchone():
                used.add(word)
        return used

    # -- removing ------------------------------------------------------------------------
    @own_transaction
    def purge(
        self,
        tenant: str,
        *,
        record_ids: Sequence[str],
        message_ids: Sequence[str] = (),
        session_ids: Sequence[str] = (),
        document_ids: Sequence[str] = (),
        job_ids: Sequence[str] = (),
        text_hashes: Sequence[str] = (),
        texts: Sequence[str] = (),
        matching: str | None = None,
        receipt: dict[str, Any] | None = None,
    ) -> dict[str, int]:
        """Remove records and everything that holds their text in one transaction; counts per place.

        ``text_hashes`` are the embedding cache's keys of the forgotten texts (the
        logged queries' are added here). A logged query equal to one of ``texts``
        (a restatement logged against another record), holding ``matching``, or
        asked in a forgotten session is blanked too. ``receipt`` (a dict with ``id``,
        ``at_epoch`` and ``actor``) is written as the tombstone in the same
        transaction, with the counts.
        """
        counts: dict[str, int] = {}
        with self.db.secure_deletes(), self.db.write() as conn:
            # Locks in the order every other writer takes them, so none waits on another in a cycle (PostgreSQL):
            # a document's (as replacing, moving or deleting it), then the records' rows in rowid order (as
            # an edit or a delete), and only then the messages, sessions and documents that hold their text.
            for doc_id in sorted(document_ids):
                self.lock_identity(document_key(doc_id))
            for chunk, marks in _chunks(sorted(record_ids) if self.row_lock else []):  # SQLite: one writer already
                conn.execute(f"SELECT rowid FROM memories WHERE id IN ({marks}) ORDER BY rowid{self.row_lock}", chunk)
            versions = vectors = 0
            for chunk, marks in _chunks(list(record_ids)):
                for (history,) in conn.execute(f"SELECT previous_versions FROM memories WHERE id IN ({marks})", chunk):
                    versions += len(json.loads(history or "[]"))
                vectors += int(
                    conn.execute(
                        f"SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
                        f"WHERE m.id IN ({marks})",
                        chunk,
                    ).fetchone()[0]
                )
            counts["versions"] = versions
            counts["vectors"] = vectors
            queries: set[str] = set()
            access_rows = 0
            for chunk, marks in _chunks(list(record_ids)):
                queries.update(
                    str(q)
                    for (q,) in conn.execute(
                        f"SELECT DISTINCT query FROM access_log WHERE memory_id IN ({marks}) AND query IS NOT NULL",
                        chunk,
                    )
                )
                access_rows += conn.execute(f"DELETE FROM access_log WHERE memory_id IN ({marks})", chunk).rowcount
            cleared = 0
            if matching:
                cleared += conn.execute(
                    "UPDATE access_log SET query = NULL WHERE tenant = ? AND lower(query) LIKE ? ESCAPE '\\'",
                    (tenant, like_pattern(matching)),
                ).rowcount
            for chunk, marks in _chunks(list(session_ids)):
                cleared += conn.execute(
                    f"UPDATE access_log SET query = NULL WHERE tenant = ? AND query IS NOT NULL "
                    f"AND session_id IN ({marks})",
                    [tenant, *chunk],
                ).rowcount
            for chunk, marks in _chunks(sorted({*queries, *(t for t in texts if t)})):
                # The same search logged for other records it returned: its text goes too, the rows stay.
                cleared += conn.execute(
                    f"UPDATE access_log SET query = NULL WHERE tenant = ? AND query IN ({marks})", [tenant, *chunk]
                ).rowcount
            hashes = sorted({*text_hashes, *(hashlib.sha256(q.encode("utf-8")).hexdigest() for q in queries)})
            counts["embedding_cache"] = sum(
                conn.execute(f"DELETE FROM embedding_cache WHERE text_hash IN ({marks})", chunk).rowcount
                for chunk, marks in _chunks(hashes)
            )
            counts["access_log_rows"] = access_rows
            counts["access_queries_cleared"] = cleared
            counts["messages"] = sum(
                conn.execute(f"DELETE FROM messages WHERE id IN ({marks})", chunk).rowcount
                for chunk, marks in _chunks(list(message_ids))
            )
            counts["sessions"] = sum(
                conn.execute(f"DELETE FROM sessions WHERE tenant = ? AND id IN ({marks})", [tenant, *chunk]).rowcount
                for chunk, marks in _chunks(list(session_ids))
            )
            counts["documents"] = sum(
                conn.execute(f"DELETE FROM documents WHERE id IN ({marks})", chunk).rowcount
                for chunk, marks in _chunks(list(document_ids))
            )
            counts["jobs"] = sum(
                conn.execute(f"DELETE FROM jobs WHERE id IN ({marks})", chunk).rowcount
                for chunk, marks in _chunks(list(job_ids))
            )
            # A memory store's memory keeps every state as an immutable row (migration 014): its text goes too.
            counts["store_versions"] = sum(
                conn.execute(f"DELETE FROM memory_store_versions WHERE memory_id IN ({marks})", chunk).rowcount
                for chunk, marks in _chunks(list(record_ids))
            )
            counts["records"] = self._delete(conn, list(record_ids))
            if receipt is not None:
                conn.execute(
                    "INSERT INTO forget_receipts (id, tenant, at, actor, receipt) VALUES (?, ?, ?, ?, ?)",
                    (
                        receipt["id"],
                        tenant,
                        float(receipt["at_epoch"]),
                        str(receipt.get("actor") or ""),
                        json.dumps({**receipt, "counts": {**receipt.get("counts", {}), **counts}}),
                    ),
                )
        return counts

    @contextlib.contextmanager
    def forgets_held(self, tenant: str) -> Iterator[None]:
        """Around a forget's plan and purge: a write derived from earlier reads (a job's completion, a learn) commits
        before the plan reads, or after the purge, when it finds the receipt (:meth:`unforgotten_write`), never
        in between. SQLite: the write transaction, taken first (the purge nests in it)."""
        with self.db.write():
            yield

    @contextlib.contextmanager
    def unforgotten_write(self, tenant: str, since: float, what: str) -> Iterator[None]:
        """One write transaction of what was derived from reads made since ``since`` (epoch seconds; the block
        writes, this commits it). It takes the tenant's forget lock first, shared (PostgreSQL: an advisory lock that
        :meth:`forgets_held` holds alone; SQLite: the one writer already excludes a forget), so no forget commits
        between the check below and the COMMIT. Before it commits, a forget of the tenant at or after ``since``
        (what was read may be gone: a learned fact of a forgotten message) raises :class:`ForgetCrossed` naming
        ``what``, and the transaction rolls back: nothing of it is written.

        Inside an open guard of the same tenant whose reads began no later (a file's swap in a folder sync's or a
        job's guard), it is a savepoint only: the outer guard holds the lock and its check covers this one."""
        held: dict[tuple[int, str], float] = _GUARDS.__dict__.setdefault("open", {})
        key = (id(self.db), tenant)
        outer = held.get(key)
        if outer is not None and outer <= since:
            with self.db.write():
                yield
            return
        with self.db.write() as conn:
            self.lock_identity(forget_key(tenant), shared=True)
            held[key] = since
            try:
                yield
            finally:
                if outer is None:
                    del held[key]
                else:
                    held[key] = outer
            crossed = conn.execute(
                "SELECT 1 FROM forget_receipts WHERE tenant = ? AND at >= ? LIMIT 1", (tenant, float(since))
            ).fetchone()
            if crossed is not None:
                raise ForgetCrossed(
                    f"A forget ran while {what}; nothing was written.", hint="Run it again: it reads what remains."
                )

    def save_receipt(self, receipt: dict[str, Any]) -> None:
        """Replace a tombstone's JSON (after the scrub has added what it did)."""
        with self.db.write() as conn:
            conn.execute("UPDATE forget_receipts SET receipt = ? WHERE id = ?", (json.dumps(receipt), receipt["id"]))

    def get_receipt(self, receipt_id: str) -> dict[str, Any] | None:
        """A tombstone by id, or None."""
        row = self.db.reader().execute("SELECT receipt FROM forget_receipts WHERE id = ?", (receipt_id,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def list_receipts(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's tombstones, newest first."""
        rows = self.db.reader().execute(
            "SELECT receipt FROM forget_receipts WHERE tenant = ? ORDER BY at DESC LIMIT ?", (tenant, int(limit))
        )
        return [dict(json.loads(r[0])) for r in rows]

    # -- scrubbing -----------------------------------------------------------------------
    def scrub(self, tenants: Sequence[str]) -> dict[str, Any]:
        """Make deleted text unreadable on disk: merge the keyword indexes, zero freed pages, truncate the WAL.

        ``purge`` ran with ``secure_delete`` on (see :meth:`secure_deletes`), so the
        cells it freed are zeroed already; the FTS5 merge rewrites every segment
        (freeing the ones that still spelled a deleted term, zeroed too), and the
        checkpoint copies the zeroed pages into the file and empties the WAL.
        """
        for tenant in tenants:
            self.ann.drop(tenant)  # type: ignore[attr-defined]
        self.vector_cache.clear()  # type: ignore[attr-defined]
        with self.db.secure_deletes():
            with self.db.write() as conn:
                conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
                conn.execute("INSERT INTO memories_cjk (memories_cjk) VALUES ('optimize')")
            report: dict[str, Any] = {"secure_delete": True, "keyword_index": "optimized"}
            try:
                # Free pages and free blocks still hold copies that earlier writes left behind
                # (a page split, an update moving a row), unzeroed: only rewriting the file drops them.
                before, after = self.db.vacuum(full=True)
                report.update(vacuum=True, bytes_before=before, bytes_after=after)
            except BackendUnavailable as exc:
                report.update(vacuum=False, vacuum_error=exc.message)
        busy, frames, _copied = self.db.checkpoint()
        report["wal_checkpoint"] = {"busy": busy, "frames": frames}
        return report

    def storage_files(self) -> list[Path]:
        """The files that hold this store's data: the database, its WAL and journal, and the ANN index files."""
        if self.path == ":memory:":
            return []
        base = Path(self.path)
        files = [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-journal")) if p.is_file()]
        ann_dir = Path(f"{base}.ann")
        if ann_dir.is_dir():
            files += sorted(p for p in ann_dir.iterdir() if p.is_file() and not p.name.endswith(".lock"))
        return files
