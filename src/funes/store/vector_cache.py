"""An exact, in-process vector index for large tenants of the SQLite store.

sqlite-vec's exact KNN costs ~6x a numpy scan of the same vectors (40 ms vs
5 ms for one tenant of 100k on 2 cores), so a tenant with at least
``vector_cache_min`` vectors is searched here instead: a dense float32
matrix of its unit vectors plus the vec0 filter columns as numpy arrays.
The filters become boolean masks applied before top-k selection, and the
visibility alternatives are scanned one by one like the vec0 path does, so
both paths return the same hits.

Freshness: every vector insert, delete and filter-metadata change is logged
in ``vector_changes`` by triggers, in the writer's transaction (migration
004). Before each search the cache reads, in one read snapshot, the rows of
its tenant logged since the last seq it saw and re-reads those vectors'
current state, so nothing another process committed is missed and nothing
deleted is returned. When the log was trimmed past that seq (or a reindex
reset it) the tenant is reloaded in full.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..models import NO_EXPIRY, SearchFilters, to_epoch
from .sqlite_rows import knn_visibility

STRING_COLUMNS = ("scope", "vis", "user_id", "kind", "memory_type", "source_type", "source_id")
# The filter columns come from `memories`, of which vec0's metadata columns
# are copies (SqliteStore._vector_metadata): scanning vec0's metadata is 2x
# slower than its vectors alone, and its point lookups slower still.
_META = (
    "m.scope, m.vis, m.user_id, m.kind, m.memory_type, m.source_type, m.source_id, m.created_at, "
    f"CASE WHEN m.expires_at IS NULL OR m.expires_at = 0 THEN {NO_EXPIRY!r} ELSE m.expires_at END, m.id"
)
_ROW_SQL = (
    f"SELECT v.vector_id, e.embedding, {_META} FROM memory_vectors v "
    "CROSS JOIN vec_memories e ON e.vector_id = v.vector_id JOIN memories m ON m.rowid = v.memory_rowid"
)
_TENANT_SQL = (
    f"SELECT v.vector_id, {_META} FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid WHERE m.tenant = ?"
)
_GROW = 1.5  # capacity growth factor: amortised O(1) appends
# Loading 100k vectors takes ~1.5 s, 40 sqlite-vec searches' worth: a tenant
# is loaded on its second search in a process, so a one-shot `funes search`
# never pays for it while a server or a session pays once.
LOAD_ON_SEARCH = 2
_blas_limiter: Any = None


def _single_thread_blas() -> Any:
    """A context that runs BLAS on one thread (None when threadpoolctl is missing).

    The scan is memory-bound: on 2 cores two BLAS threads measured no faster
    (7.6 vs 8.0 ms at 100k x 384) and much slower when the other core is busy.
    """
    global _blas_limiter
    if _blas_limiter is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _blas_limiter = False
        else:
            _blas_limiter = ThreadpoolController()
    if _blas_limiter is False:
        return None
    return _blas_limiter.limit(limits=1, user_api="blas")


class TenantVectors:
    """One tenant's vectors and filter columns as dense arrays; deletes swap the last row in."""

    def __init__(self, dims: int, capacity: int = 1024) -> None:
        self.lock = threading.Lock()
        self.seq = -1  # newest change-log seq applied; -1 forces a full load
        self.reset(dims, capacity)

    def reset(self, dims: int, capacity: int) -> None:
        """Empty the index, for ``dims``-dimensional vectors."""
        self.dims = dims
        self.n = 0
        self.matrix = np.zeros((capacity, dims), dtype=np.float32)
        self.vector_ids = np.zeros(capacity, dtype=np.int64)
        self.codes = {c: np.zeros(capacity, dtype=np.int32) for c in STRING_COLUMNS}
        self.created = np.zeros(capacity, dtype=np.float64)
        self.expires = np.zeros(capacity, dtype=np.float64)
        self.memory_ids: list[str] = []
        self.pos: dict[int, int] = {}
        self.strings: dict[str, int] = {}

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays, in bytes."""
        columns = (self.vector_ids, self.created, self.expires, *self.codes.values())
        return int(self.matrix.nbytes + sum(a.nbytes for a in columns))

    def _code(self, text: str) -> int:
        code = self.strings.get(text)
        if code is None:
            code = self.strings[text] = len(self.strings)
        return code

    def _reserve(self, needed: int) -> None:
        capacity = len(self.vector_ids)
        if needed <= capacity:
            return
        size = max(needed, int(capacity * _GROW) + 1)
        matrix = np.zeros((size, self.dims), dtype=np.float32)
        matrix[: self.n] = self.matrix[: self.n]
        self.matrix = matrix
        self.vector_ids = np.resize(self.vector_ids, size)
        self.created = np.resize(self.created, size)
        self.expires = np.resize(self.expires, size)
        self.codes = {c: np.resize(a, size) for c, a in self.codes.items()}

    def load(self, rows: Sequence[Sequence[Any]]) -> None:
        """Replace the contents with rows shaped like ``_ROW_SQL`` (vectorised: a tenant of 100k at once)."""
        n = len(rows)
        self.reset(len(rows[0][1]) // 4 if rows else self.dims, int(n * 1.1) + 64)
        if not n:
            return
        columns = list(zip(*rows, strict=True))
        matrix = np.frombuffer(b"".join(columns[1]), dtype=np.float32).reshape(n, self.dims)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        np.divide(matrix, norms, out=self.matrix[:n])
        self.vector_ids[:n] = columns[0]
        for j, column in enumerate(STRING_COLUMNS):
            for text in set(columns[2 + j]):
                self._code(text)
            self.codes[column][:n] = np.fromiter(map(self.strings.__getitem__, columns[2 + j]), np.int32, n)
        self.created[:n] = columns[9]
        self.expires[:n] = columns[10]
        self.memory_ids = list(columns[11])
        self.pos = {int(v): i for i, v in enumerate(columns[0])}
        self.n = n

    def upsert(self, rows: Sequence[Sequence[Any]]) -> None:
        """Insert or overwrite vectors from rows shaped like ``_ROW_SQL``."""
        self._reserve(self.n + len(rows))
        for vector_id, blob, *strings, created, expires, memory_id in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if len(vector) != self.dims:
                raise ValueError("vector dimensions changed")
            i = self.pos.get(vector_id)
            if i is None:
                i = self.n
                self.n += 1
                self.pos[vector_id] = i
                self.memory_ids.append(memory_id)
            else:
                self.memory_ids[i] = memory_id
            norm = float(np.linalg.norm(vector))
            # vec0's cosine divides by both norms; storing unit rows does it once.
            self.matrix[i] = vector / norm if norm > 0 else vector
            self.vector_ids[i] = vector_id
            for column, text in zip(STRING_COLUMNS, strings, strict=True):
                self.codes[column][i] = self._code(text)
            self.created[i] = created
            self.expires[i] = expires

    def remove(self, vector_ids: Iterable[int]) -> None:
        """Drop vectors (unknown ids are ignored)."""
        for vector_id in vector_ids:
            i = self.pos.pop(vector_id, None)
            if i is None:
                continue
            last = self.n - 1
            if i != last:
                moved = int(self.vector_ids[last])
                self.matrix[i] = self.matrix[last]
                self.vector_ids[i] = moved
                self.created[i] = self.created[last]
                self.expires[i] = self.expires[last]
                for array in self.codes.values():
                    array[i] = array[last]
                self.memory_ids[i] = self.memory_ids[last]
                self.pos[moved] = i
            self.memory_ids.pop()
            self.n = last

    def _isin(self, column: str, values: Sequence[str]) -> np.ndarray:
        codes = [self.strings[v] for v in values if v in self.strings]
        return isin_codes(self.codes[column][: self.n], codes)

    def clause_masks(
        self, filters: SearchFilters, now: datetime | None, clauses: Sequence[Any] | None = None
    ) -> list[np.ndarray]:
        """One boolean row mask per visibility alternative of ``filters`` (see ``knn_visibility``)."""
        n = self.n
        return filter_masks(filters, now, clauses, self._isin, self.created[:n], self.expires[:n])

    def search(
        self, query: np.ndarray, filters: SearchFilters, k: int, now: datetime | None
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k per visibility alternative, best vector per record, best first."""
        n = self.n
        masks = self.clause_masks(filters, now)
        limiter = _single_thread_blas()
        if limiter is None:
            sims = self.matrix[:n] @ query
        else:
            with limiter:
                sims = self.matrix[:n] @ query
        best: dict[str, float] = {}
        for mask in masks:
            rows = np.flatnonzero(mask)
            if len(rows) > k:
                rows = rows[np.argpartition(-sims[rows], k - 1)[:k]]
            for i in rows.tolist():
                memory_id, sim = self.memory_ids[i], float(sims[i])
                if sim > best.get(memory_id, -2.0):
                    best[memory_id] = sim
        return sorted(best.items(), key=lambda kv: kv[1], reverse=True)


def isin_codes(array: np.ndarray, codes: Sequence[int]) -> np.ndarray:
    """Rows of ``array`` holding one of ``codes`` (one comparison when there is one code)."""
    if len(codes) == 1:
        return array == codes[0]  # type: ignore[no-any-return]
    return np.isin(array, codes)


def filter_masks(
    filters: SearchFilters,
    now: datetime | None,
    clauses: Sequence[Any] | None,
    isin: Callable[[str, Sequence[str]], np.ndarray],
    created: np.ndarray,
    expires: np.ndarray,
) -> list[np.ndarray]:
    """One boolean row mask per visibility alternative, over rows whose columns ``isin`` and the arrays give.

    Shared by the in-memory copy (:class:`TenantVectors`) and the columns
    saved beside an approximate index (``ann_columns``), so both filter alike.
    """
    mask = expires > (to_epoch(now) if now else 0.0)
    if filters.user_id:
        mask &= isin("user_id", ("", filters.user_id))
    for column, values in (
        ("kind", filters.kinds),
        ("memory_type", filters.memory_types),
        ("source_type", filters.source_types),
        ("source_id", filters.source_ids),
    ):
        if values:
            mask &= isin(column, values)
    if filters.created_after is not None:
        mask &= created >= to_epoch(filters.created_after)
    if filters.created_before is not None:
        mask &= created <= to_epoch(filters.created_before)
    if clauses is None:
        clauses = knn_visibility(filters)
    return [mask if clause is None else mask & isin(*clause) for clause in clauses]


@dataclass
class _Tally:
    """What a process knows of a tenant it does not cache."""

    count: int = 0  # vectors, or an upper bound of them
    seq: int = -1  # the change-log seq the count is valid at
    searches: int = 0
    checked: float = 0.0  # time.monotonic() of the last look


class VectorCache:
    """Per-tenant :class:`TenantVectors` for tenants of at least ``min_vectors``, kept fresh from the change log."""

    def __init__(self, min_vectors: int, max_bytes: int) -> None:
        self.min_vectors = min_vectors
        self.max_bytes = max_bytes
        self._tenants: OrderedDict[str, TenantVectors] = OrderedDict()
        self._sizes: dict[str, _Tally] = {}  # tenants not cached
        self.recheck_seconds = 1.0  # how often a small tenant's size is looked at again
        self._lock = threading.Lock()
        self.full_loads = 0  # counters, for tests and `stats`
        self.delta_loads = 0

    @property
    def enabled(self) -> bool:
        """Whether any tenant may be cached."""
        return self.min_vectors > 0 and self.max_bytes > 0

    def clear(self) -> None:
        """Forget every cached tenant."""
        with self._lock:
            self._tenants.clear()
            self._sizes.clear()

    def search(
        self, conn: Any, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None
    ) -> list[tuple[str, float]] | None:
        """Hits like ``SqliteStore.vector_search``, or None when this tenant is not served from memory."""
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if not self.enabled or norm == 0.0 or not np.isfinite(norm):
            return None
        tenant = filters.tenant
        with self._lock:
            entry = self._tenants.get(tenant)
            if entry is not None:
                self._tenants.move_to_end(tenant)
        if entry is None:
            entry = self._admit(conn, tenant, len(query))
            if entry is None:
                return None
        with entry.lock:
            self._refresh(conn, tenant, entry)
            if entry.dims != len(query):
                return None
            return entry.search(query / norm, filters, k, now)

    # -- admission and freshness ---------------------------------------------
    def _admit(self, conn: Any, tenant: str, dims: int) -> TenantVectors | None:
        """A new (empty, to be loaded) entry when the tenant is large enough, else None."""
        clock = time.monotonic()
        with self._lock:
            tally = self._sizes.setdefault(tenant, _Tally())
            tally.searches += 1
            if tally.searches < LOAD_ON_SEARCH:
                return None  # not even counted: a one-shot process pays nothing
            if tally.seq >= 0 and clock - tally.checked < self.recheck_seconds:
                return None  # the sqlite-vec path is fresh anyway: only admission waits
            count, seq = tally.count, tally.seq
        count_sql = (
            "SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid WHERE m.tenant = ?"
        )
        with _snapshot(conn):
            floor, top = _log_bounds(conn)
            if seq < floor:
                count = int(conn.execute(count_sql, (tenant,)).fetchone()[0])
            else:
                # Only inserts add vectors, so this bounds the count from above
                # without counting the tenant again.
                count += int(
                    conn.execute(
                        "SELECT COUNT(*) FROM vector_changes WHERE tenant = ? AND seq > ? AND seq <= ? AND op = 'put'",
                        (tenant, seq, top),
                    ).fetchone()[0]
                )
                if count >= self.min_vectors:
                    count = int(conn.execute(count_sql, (tenant,)).fetchone()[0])
        with self._lock:
            tally.count, tally.seq, tally.checked = count, top, clock
            if count < self.min_vectors or count * dims * 4 > self.max_bytes:
                return None
            entry = self._tenants.get(tenant)
            if entry is None:
                entry = TenantVectors(dims, capacity=0)
                self._tenants[tenant] = entry
                self._sizes.pop(tenant, None)
            self._evict(keep=tenant)
            return entry

    def _evict(self, keep: str) -> None:
        """Drop least recently used tenants until the cache fits its budget."""
        total = sum(e.nbytes for e in self._tenants.values())
        for tenant in list(self._tenants):
            if total <= self.max_bytes:
                break
            if tenant == keep:
                continue
            total -= self._tenants.pop(tenant).nbytes

    def _refresh(self, conn: Any, tenant: str, entry: TenantVectors) -> None:
        """Bring the entry up to the newest committed state of its tenant."""
        floor, top = _log_bounds(conn)
        if floor <= entry.seq == top:
            return  # nothing committed anywhere since: no transaction needed
        with _snapshot(conn):
            floor, top = _log_bounds(conn)
            if entry.seq < floor:
                self._full_load(conn, tenant, entry, top)
                return
            ids = changed_ids(conn, tenant, entry.seq, top)
            present = rows_of(conn, ids, tenant)
            try:
                entry.upsert(present)
            except ValueError:  # another process reindexed with another model
                self._full_load(conn, tenant, entry, top)
                return
            found = {row[0] for row in present}
            entry.remove(v for v in ids if v not in found)
            # The newest seq, not this tenant's: other tenants' churn must not
            # push the floor past an entry that had nothing to apply.
            entry.seq = top
            if ids:
                self.delta_loads += 1

    def _full_load(self, conn: Any, tenant: str, entry: TenantVectors, top: int) -> None:
        entry.seq = -1  # should the load fail half way, the next search starts over
        blobs = dict(conn.execute("SELECT vector_id, embedding FROM vec_memories WHERE tenant = ?", (tenant,)))
        rows = [(r[0], blobs[r[0]], *r[1:]) for r in conn.execute(_TENANT_SQL, (tenant,)) if r[0] in blobs]
        entry.load(rows)
        entry.seq = top
        self.full_loads += 1


def changed_ids(conn: Any, tenant: str, after: int, top: int) -> list[int]:
    """Vector ids of the tenant logged in ``(after, top]``, each once, oldest first."""
    sql = "SELECT vector_id FROM vector_changes WHERE tenant = ? AND seq > ? AND seq <= ?"
    return list(dict.fromkeys(r[0] for r in conn.execute(sql, (tenant, after, top))))


def rows_of(conn: Any, ids: Sequence[int], tenant: str) -> list[Any]:
    """Rows of ``_ROW_SQL`` for those vector ids that belong to the tenant now, 500 ids a statement."""
    out: list[Any] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        # `+m.tenant`: never the tenant index. A planner starting from it walks the
        # whole tenant with a vec0 lookup per row (32 s for 3,000 ids at 100k).
        out += conn.execute(f"{_ROW_SQL} WHERE v.vector_id IN ({marks}) AND +m.tenant = ?", [*chunk, tenant]).fetchall()
    return out


def _log_bounds(conn: Any) -> tuple[int, int]:
    """(floor, top): changes up to floor may be gone; top is the newest seq (one statement, one snapshot)."""
    floor, top = conn.execute(
        "SELECT (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_changes_floor'), "
        "(SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes')"
    ).fetchone()
    low = int(floor or 0)
    return low, max(low, int(top or 0))


class _snapshot:
    """One read transaction on a reader connection, so the log and the vectors agree."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.began = False

    def __enter__(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN")
            self.began = True

    def __exit__(self, *exc: object) -> None:
        if self.began:
            self.conn.execute("COMMIT")
