"""An approximate (HNSW, usearch) vector index per large tenant, persisted beside the database.

Exact search costs O(tenant) per query (12 ms at 100k, ~60 ms at 1M on 2
cores) and a new process first loads the tenant (1.8 s at 100k). A tenant
with at least ``ann_min`` vectors is therefore answered from an HNSW graph
saved in ``<db>.ann/`` and memory-mapped on open, so a fresh process answers
without loading or rebuilding anything.

The index is never trusted for content, only for *which* vectors to look at:

* Candidates are re-read from SQLite (current vector, current filter
  columns) and ranked exactly with :class:`TenantVectors`, so a deleted
  record, a changed scope or an expired record is never returned.
* Every vector changed since the index's change-log position (``seq`` in its
  manifest; see migration 004) is added to the candidates, so a stale index
  still finds new records. When that delta grows, the index is caught up
  (added, removed, saved) and the manifest moved forward.
* Filters must not cut recall: the candidate pool grows by 4x until every
  visibility alternative has ``k`` passing rows; a filter too selective for
  that falls back to the exact path (returns None).
* A manifest that points at a missing, truncated or unreadable file, of other
  dimensions, or at a position older than the change log's floor (trimmed,
  or a reindex with another model) makes the index rebuilt, never used.

Building and catching up cost seconds (a build is ~20 s at 100k), so a
search never does either: it answers exactly and asks for the work
(:meth:`AnnIndexes.take_wanted`); the service queues it as an ``ann-index``
job on the durable runner, whose worker calls :meth:`AnnIndexes.maintain`.

Crash safety: a new index file is written under a fresh name, fsynced and
renamed; only then is the manifest replaced (write, fsync, rename), so a
writer killed at any point leaves the old manifest and its complete file,
and the next open catches up from the old position. Catch-ups and builds are
serialised across processes with an exclusive ``flock``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..models import SearchFilters
from .sqlite_rows import knn_visibility
from .vector_cache import _META, TenantVectors, _log_bounds, _snapshot, changed_ids, rows_of

FORMAT = 1
CONNECTIVITY = 16  # HNSW M; see bench/README.md for the measured choice
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
MAX_POOL = 1024  # candidates beyond this: the filter is selective, the exact path is cheaper (measured at 100k)
DELTA_MIN = 2000  # changed vectors tolerated before the index file is caught up
BUILD_ON_SEARCH = 2  # like the vector cache: a one-shot process never asks for a build


def _usearch() -> Any:
    try:
        from usearch.index import Index
    except ImportError as exc:  # pragma: no cover - usearch is a runtime dependency
        raise RuntimeError(
            "the approximate vector index needs usearch: pip install usearch (or set ann_min = 0)"
        ) from exc
    return Index


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class _Tenant:
    """One tenant's opened index and what it reflects."""

    index: Any
    seq: int  # change-log position the index file (or this process's copy) reflects
    dims: int
    view: bool  # memory-mapped read-only; copied into memory before a catch-up
    delta: list[int] = field(default_factory=list)  # vector ids changed after seq
    vectors: dict[int, bytes] = field(default_factory=dict)  # the delta's current vectors in the tenant
    delta_seq: int = -1  # change-log position the delta was read up to
    lock: threading.Lock = field(default_factory=threading.Lock)


class AnnIndexes:
    """The per-tenant HNSW indexes of one database file."""

    def __init__(self, db_path: str, min_vectors: int) -> None:
        self.min_vectors = min_vectors
        self.dir = Path(db_path + ".ann") if db_path != ":memory:" and min_vectors > 0 else None
        self._tenants: dict[str, _Tenant] = {}
        self._searches: dict[str, int] = {}
        self._checked: dict[str, float] = {}
        self._wanted: set[str] = set()  # tenants whose index needs a build or a catch-up (a job does it)
        self._lock = threading.Lock()
        self.delta_min = DELTA_MIN
        self.builds = 0  # counters, for tests and the bench
        self.catchups = 0
        self.fallbacks = 0

    @property
    def enabled(self) -> bool:
        """Whether this store uses approximate indexes at all."""
        return self.dir is not None

    def clear(self) -> None:
        """Forget the opened indexes (the files stay)."""
        with self._lock:
            self._tenants.clear()
            self._searches.clear()
            self._checked.clear()
            self._wanted.clear()

    def take_wanted(self) -> list[str]:
        """Tenants whose index searches asked to build or catch up since the last call (each once)."""
        with self._lock:
            wanted, self._wanted = sorted(self._wanted), set()
        return wanted

    # -- paths -----------------------------------------------------------------
    def _stem(self, tenant: str) -> str:
        return "t" + hashlib.sha1(tenant.encode("utf-8")).hexdigest()[:16]

    def manifest_path(self, tenant: str) -> Path:
        """Where the tenant's manifest (position, file, size) lives."""
        assert self.dir is not None
        return self.dir / f"{self._stem(tenant)}.json"

    def _locked(self, tenant: str) -> Any:
        assert self.dir is not None
        self.dir.mkdir(parents=True, exist_ok=True)
        return _FileLock(self.dir / f"{self._stem(tenant)}.lock")

    # -- search ----------------------------------------------------------------
    def search(
        self, conn: Any, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None
    ) -> list[tuple[str, float]] | None:
        """Hits like ``SqliteStore.vector_search``, or None when the exact path must answer."""
        if self.dir is None:
            return None
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if norm == 0.0 or not np.isfinite(norm):
            return None
        entry = self._entry(conn, filters.tenant, len(query))
        if entry is None or entry.dims != len(query):
            return None
        with entry.lock:
            if not self._refresh(conn, filters.tenant, entry):
                return None
            result = _ranked(conn, entry, query / norm, filters, k, now)
        if result is None:
            self.fallbacks += 1
        return result

    def _entry(self, conn: Any, tenant: str, dims: int) -> _Tenant | None:
        """The opened index of a tenant from disk; None (and a build asked for) when there is none yet."""
        with self._lock:
            entry = self._tenants.get(tenant)
            if entry is not None:
                return entry
            self._searches[tenant] = self._searches.get(tenant, 0) + 1
            searches = self._searches[tenant]
        entry = self._open(conn, tenant)
        if entry is None:
            clock = time.monotonic()
            # Only a process that searches again asks for a build, and a small
            # tenant's size is looked at once a minute at most.
            if searches < BUILD_ON_SEARCH or clock - self._checked.get(tenant, -1e9) < 60.0:
                return None
            self._checked[tenant] = clock
            if _tenant_vectors(conn, tenant) >= self.min_vectors:
                with self._lock:
                    self._wanted.add(tenant)
            return None
        with self._lock:
            return self._tenants.setdefault(tenant, entry)

    def _open(self, conn: Any, tenant: str) -> _Tenant | None:
        """The saved index when its manifest and file check out and the log still reaches it, else None."""
        try:
            manifest = json.loads(self.manifest_path(tenant).read_text(encoding="utf-8"))
            assert self.dir is not None
            path = self.dir / manifest["file"]
            if manifest.get("format") != FORMAT or path.stat().st_size != manifest["bytes"]:
                return None
            floor, _ = _log_bounds(conn)
            if int(manifest["seq"]) < floor:
                return None  # the changes since were trimmed (or a reindex): rebuild
            index = _usearch().restore(str(path), view=True)
            if index is None or index.ndim != manifest["dims"] or len(index) != manifest["count"]:
                return None
        except (OSError, ValueError, KeyError, TypeError, RuntimeError, json.JSONDecodeError):
            return None
        return _Tenant(index, int(manifest["seq"]), int(manifest["dims"]), view=True)

    def _refresh(self, conn: Any, tenant: str, entry: _Tenant) -> bool:
        """Read the vectors changed since the index (False: the index is too old to use; a rebuild is asked for).

        When the changes are many, a catch-up is asked for; until it runs
        they are ranked exactly beside the index's candidates.
        """
        floor, top = _log_bounds(conn)
        if entry.delta_seq == top and floor <= entry.seq:
            return True
        start = max(entry.seq, entry.delta_seq)
        if entry.seq < floor:
            with self._lock:
                self._tenants.pop(tenant, None)
                self._wanted.add(tenant)
            return False
        new = changed_ids(conn, tenant, start, top)
        with _snapshot(conn):
            current = dict(_current_vectors(conn, tenant, new))
        for vector_id in new:
            entry.vectors.pop(vector_id, None)
            if vector_id in current:
                entry.vectors[vector_id] = current[vector_id]
        entry.delta = list(dict.fromkeys([*entry.delta, *new]))
        entry.delta_seq = top
        if len(entry.delta) > max(self.delta_min, len(entry.index) // 100):
            with self._lock:
                self._wanted.add(tenant)
        return True

    def maintain(self, conn: Any, tenant: str) -> str:
        """Bring a tenant's saved index up to date: build it, catch it up, or nothing (returns which).

        The background half of :meth:`search` (run by the ``ann-index`` job):
        safe to run in any process, at any time, any number of times.
        """
        if self.dir is None or _tenant_vectors(conn, tenant) < self.min_vectors:
            return "none"
        with self._lock:
            entry = self._tenants.get(tenant)
        if entry is None:
            entry = self._open(conn, tenant)
        if entry is None:
            fresh = self.build(conn, tenant)
            with self._lock:
                self._tenants[tenant] = fresh
            return "built"
        with entry.lock:
            if not self._refresh(conn, tenant, entry):
                fresh = self.build(conn, tenant)
                with self._lock:
                    self._tenants[tenant] = fresh
                    self._wanted.discard(tenant)
                return "built"
            with self._lock:
                self._wanted.discard(tenant)
                self._tenants.setdefault(tenant, entry)
            if not entry.delta:
                return "current"
            self.catch_up(conn, tenant, entry)
        return "caught up"

    # -- maintenance -------------------------------------------------------------
    def build(self, conn: Any, tenant: str) -> _Tenant:
        """Build the tenant's index from the store and save it (replacing any other)."""
        with self._locked(tenant), _snapshot(conn):
            _, top = _log_bounds(conn)
            ids: list[int] = []
            blobs: list[bytes] = []
            for vector_id, blob in conn.execute(
                "SELECT vector_id, embedding FROM vec_memories WHERE tenant = ?", (tenant,)
            ):
                ids.append(vector_id)
                blobs.append(blob)
            dims = len(blobs[0]) // 4 if blobs else 0
            index = _new_index(max(dims, 1))
            if ids:
                matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dims)
                # One thread: the build runs as a background job beside searches, and a one-threaded
                # build is deterministic (the same graph, so the same recall, every time).
                index.add(np.asarray(ids, dtype=np.uint64), matrix, threads=1)
            self._save(tenant, index, top, dims)
        self.builds += 1
        return _Tenant(index, top, dims, view=False, delta_seq=top)

    def catch_up(self, conn: Any, tenant: str, entry: _Tenant) -> None:
        """Apply the delta to the index, save it, and move its position forward."""
        with self._locked(tenant), _snapshot(conn):
            _, top = _log_bounds(conn)
            ids = list(dict.fromkeys([*entry.delta, *changed_ids(conn, tenant, entry.delta_seq, top)]))
            if entry.view:
                entry.index = entry.index.copy()  # a view is read-only
                entry.view = False
            index = entry.index
            present = dict(_current_vectors(conn, tenant, ids))
            stale = [v for v in ids if index.contains(v)]
            if stale:
                index.remove(np.asarray(stale, dtype=np.uint64))
            if present:
                keys = np.asarray(list(present), dtype=np.uint64)
                index.add(
                    keys, np.frombuffer(b"".join(present.values()), dtype=np.float32).reshape(len(keys), -1), threads=1
                )
            self._save(tenant, index, top, entry.dims)
            entry.seq = entry.delta_seq = top
            entry.delta, entry.vectors = [], {}
        self.catchups += 1

    def _save(self, tenant: str, index: Any, seq: int, dims: int) -> None:
        """Write the index under a new name, then point the manifest at it (both atomic)."""
        assert self.dir is not None
        stem = self._stem(tenant)
        name = f"{stem}-{seq}-{os.getpid()}.usearch"
        tmp = self.dir / (name + ".tmp")
        index.save(str(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.dir / name)
        manifest = {
            "format": FORMAT,
            "tenant": tenant,
            "seq": seq,
            "file": name,
            "bytes": (self.dir / name).stat().st_size,
            "dims": dims,
            "count": len(index),
        }
        mtmp = self.dir / f"{stem}.json.{os.getpid()}.tmp"
        with open(mtmp, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(mtmp, self.manifest_path(tenant))
        _fsync_dir(self.dir)
        # Older files of this tenant are garbage now (an open mapping keeps its inode alive).
        for old in self.dir.glob(f"{stem}-*.usearch*"):
            if old.name != name:
                old.unlink(missing_ok=True)

    def drop(self, tenant: str) -> None:
        """Delete a tenant's index files (the next large search rebuilds)."""
        if self.dir is None:
            return
        with self._lock:
            self._tenants.pop(tenant, None)
        stem = self._stem(tenant)
        for path in self.dir.glob(f"{stem}*"):
            if not path.name.endswith(".lock"):
                path.unlink(missing_ok=True)


# The filter columns of indexed vectors; the PRIMARY KEY lookup by vector_id
# keeps this a point query per candidate.
_META_SQL = f"SELECT v.vector_id, {_META} FROM memory_vectors v CROSS JOIN memories m ON m.rowid = v.memory_rowid"


def _new_index(dims: int) -> Any:
    return _usearch()(
        ndim=dims,
        metric="cos",
        dtype="f32",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _as_f32(vectors: Any, dims: int) -> np.ndarray:
    """Vectors read back from the index as float32 rows."""
    return np.asarray(vectors, dtype=np.float32).reshape(-1, dims)


def _tenant_vectors(conn: Any, tenant: str) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM vec_memories WHERE tenant = ?", (tenant,)).fetchone()[0])


def _current_vectors(conn: Any, tenant: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
    """(vector_id, embedding) of those ids that exist in the tenant now."""
    # One point lookup per id: vec0 answers `vector_id = ?` from its rowid
    # index, while `vector_id IN (...)` scans the whole table (1.4 s at 100k).
    out: list[tuple[int, bytes]] = []
    for vector_id in ids:
        row = conn.execute("SELECT embedding, tenant FROM vec_memories WHERE vector_id = ?", (vector_id,)).fetchone()
        if row is not None and row[1] == tenant:
            out.append((vector_id, row[0]))
    return out


def _ranked(
    conn: Any, entry: _Tenant, query: np.ndarray, filters: SearchFilters, k: int, now: datetime | None
) -> list[tuple[str, float]] | None:
    """Exact ranking of the ANN candidates plus the delta, growing the pool until every clause has k rows."""
    size = len(entry.index)
    clauses = knn_visibility(filters)
    pool = max(4 * k, 100)  # with a beam of 400: recall@10 >= 0.99 on near-duplicate clusters
    while True:
        # The beam is 4x the pool: near-duplicate clusters (a chat's many
        # similar messages) defeat a narrow beam (0.96 recall@10 at 2x).
        entry.index.expansion_search = max(EXPANSION_SEARCH, min(4 * pool, 2 * MAX_POOL))
        found = entry.index.search(query, min(pool, max(size, 1)), threads=1) if size else None
        pooled_ids = [v for v in (found.keys.tolist() if found is not None else []) if v not in entry.vectors]
        ids = [*pooled_ids, *entry.vectors]
        stored = _as_f32(entry.index.get(np.asarray(pooled_ids, dtype=np.uint64)), entry.dims) if pooled_ids else []
        blobs = dict(zip(pooled_ids, (r.tobytes() for r in stored), strict=True))
        blobs.update(entry.vectors)  # changed since the index: the store's vector, not the index's
        with _snapshot(conn):
            meta = rows_of(conn, ids, filters.tenant, _META_SQL)
        rows = [(r[0], blobs[r[0]], *r[1:]) for r in meta if r[0] in blobs]
        candidates = TenantVectors(entry.dims, capacity=0)
        candidates.load(rows)
        exhausted = pool >= size
        if candidates.n and not exhausted:
            # Only the index's own pool counts: the delta's rows are exact but
            # say nothing of the indexed rows ranked just below the pool.
            pooled = np.zeros(candidates.n, dtype=bool)
            pooled[[candidates.pos[v] for v in pooled_ids if v in candidates.pos]] = True
            masks = candidates.clause_masks(filters, now, clauses)
            passing = min(int((m & pooled).sum()) for m in masks)
            exhausted = passing >= k
        else:
            passing = 0
        if exhausted:
            return candidates.search(query, filters, k, now) if candidates.n else []
        # Adaptive over-fetch: the pool the observed pass rate needs, twice
        # over; a filter too selective for MAX_POOL goes to the exact path now
        # rather than after several growing searches.
        pool = max(4 * pool, int(2 * pool * k / max(passing, 0.5)))
        if pool > MAX_POOL:
            return None


class _FileLock:
    """An exclusive flock held for a build or catch-up, across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
