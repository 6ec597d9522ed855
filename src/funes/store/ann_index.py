"""An approximate (HNSW, usearch) vector index per large tenant, persisted beside the database.

Exact search costs O(tenant) per query (12 ms at 100k, ~60 ms at 1M on 2
cores) and a new process first loads the tenant (1.8 s at 100k). A tenant
with at least ``ann_min`` vectors is therefore answered from an HNSW graph
saved in ``<db>.ann/`` and memory-mapped on open, so a fresh process answers
without loading or rebuilding anything.

Each index file has a companion ``.cols`` file (``ann_columns.py``): the
filter columns, record ids and int8 codes of exactly the vectors in the
graph, memory-mapped, so candidates are filtered and named without a SQLite
lookup (those lookups cost more than the graph search itself).

What the files say is only trusted as of their change-log position:

* Every vector changed since the index's position (``seq`` in its manifest;
  see migration 004) is re-read from SQLite into a small exact copy (the
  delta), searched exactly beside the graph, and masked out of the graph's
  candidates, so a stale index still finds new records and never returns a
  deleted one, a changed scope or an expired record. When that delta grows,
  the index is caught up (added, removed, saved) and the manifest moved on.
* Similarities are the graph's own float32 cosines (exact for the vectors it
  holds), so hits rank exactly like the exact path's. Where the recall guard
  (below) runs, every candidate is re-scored with numpy from the index's
  float32 vectors instead, so a row's similarity is the same whether the
  graph or the guard found it (the two cosines can differ in the last bit).
* A graph search can stay in the wrong cluster of tightly clustered vectors
  (at 1M, some queries found none of their true ten). So each query also
  scores, from their int8 codes, the rows of the inverted lists nearest it
  (k-means over the tenant, saved in the ``.cols`` file; ``ann_lists.py``),
  and the rows that could enter the top k are re-scored exactly and merged
  with the graph's candidates (``_guarded``). The guard lets such a graph be
  searched with a narrower beam (``GUARDED_SEARCH``).
* Filters must not cut recall. The share of rows passing each visibility
  alternative is estimated from a sample of the columns; the graph is asked
  for the pool that share needs, and asked again with a larger one until
  every alternative has ``k`` passing rows. A filter too selective for that
  (or passing so few rows that scanning them is cheaper) is answered by an
  exact scan of the passing rows: int8 codes, then the best re-scored with
  the index's float32 vectors.
* A manifest that points at a missing, truncated or unreadable file, of other
  dimensions, or at a position older than the change log's floor (trimmed,
  or a reindex with another model) makes the index rebuilt, never used.

Building and catching up cost seconds (a build is ~20 s at 100k), so a
search never does either: it answers exactly and asks for the work
(:meth:`AnnIndexes.take_wanted`); the service queues it as an ``ann-index``
job on the durable runner, whose worker calls :meth:`AnnIndexes.maintain`.
That work holds no lock a search takes, and on a large tenant it runs in a
child process, since usearch holds the GIL while it adds (``ann_build.py``):
searches meanwhile use the previous index or the exact path, and the new
index is swapped in with the changes made since its snapshot.

Crash safety: a new index file and its columns are written under fresh
names, fsynced and renamed; only then is the manifest replaced (write, fsync, rename), so a
writer killed at any point leaves the old manifest and its complete file,
and the next open catches up from the old position. Catch-ups, builds and
drops are serialised across processes with an exclusive ``flock``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..models import SearchFilters
from . import ann_build
from .ann_build import FileLock, Saved, manifest_path, open_saved, saved_seq, stem
from .ann_build import usearch as _usearch
from .ann_columns import IndexColumns
from .sqlite_rows import knn_visibility
from .vector_cache import TenantVectors, _log_bounds, _snapshot, changed_ids, rows_of

EXPANSION_SEARCH = 256  # the least search beam: 128 gave recall@10 0.97 on the tests' tight clusters
MAX_POOL = 4096  # a filter needing more graph candidates than this is answered by scanning its rows
SCAN_FACTOR = 8  # ... and so is one passing fewer rows than this many times the pool it needs
BEAM = 2  # the graph search beam, in candidates asked for
# The beam where the recall guard backs the graph (graphs of GUARD_MIN_ROWS+): at 1M, recall@10 and @50 against
# exact stayed 1.0000 with 128 (or 96) instead of the beam above, and the vector leg cost 0.4-0.7 ms less.
GUARDED_SEARCH = 128
RESCORE = 2  # the scan re-scores this many times k rows per alternative with float32 vectors
GUARD_MARGIN = 0.01  # int8 cosines are within ~0.002 of float32: a probed row this far below the k-th is out
SCORE_MARGIN = 1e-4  # usearch's and numpy's float32 cosines differ by ~1e-7: a graph row this far below is out
# Graphs smaller than this are searched without the recall guard: it rescued no query of 600 at 100k
# and cost ~4 ms p50 there, while at 300k the graph alone lost 2 queries of 200 (bench/README.md).
GUARD_MIN_ROWS = 200_000
DELTA_MIN = 2000  # changed vectors tolerated before the index file is caught up
BUILD_ON_SEARCH = 2  # like the vector cache: a one-shot process never asks for a build
LOOKUPS_ON_SEARCH = 2  # a view gains key lookups on its second search (a one-shot process never pays)


@dataclass
class _Tenant:
    """One tenant's opened index, its columns, and what changed since they were saved."""

    index: Any
    columns: IndexColumns
    seq: int  # change-log position the index file (or this process's copy) reflects
    dims: int
    view: bool  # memory-mapped read-only; loaded into memory before a catch-up
    file: Path | None = None  # the index file a view maps
    lookups: bool = True  # whether the index can find a key's vector (a view opens without: see _open)
    searches: int = 0
    delta: list[int] = field(default_factory=list)  # vector ids changed after seq, each once
    changed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))  # the same, sorted
    live: TenantVectors | None = None  # the delta's current rows (exact; deleted ones absent)
    delta_seq: int = -1  # change-log position the delta was read up to
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.live is None:
            self.live = TenantVectors(self.dims, capacity=0)


class AnnIndexes:
    """The per-tenant HNSW indexes of one database file."""

    def __init__(self, db_path: str, min_vectors: int) -> None:
        self.min_vectors = min_vectors
        self.db_path = db_path
        self.dir = Path(db_path + ".ann") if db_path != ":memory:" and min_vectors > 0 else None
        self._tenants: dict[str, _Tenant] = {}
        self._searches: dict[str, int] = {}
        self._checked: dict[str, float] = {}
        self._wanted: set[str] = set()  # tenants whose index needs a build or a catch-up (a job does it)
        self._lock = threading.Lock()
        self.delta_min = DELTA_MIN
        self.build_threads = 1  # of builds and catch-ups: one, as a job beside searches (and a deterministic graph)
        self.isolate_min = ann_build.ISOLATE_MIN  # tenants this large are built in a child process
        self.builds = 0  # counters, for tests and the bench
        self.catchups = 0
        self.searches = 0  # queries answered from an index (by its graph or a scan of its columns)
        self.scans = 0  # of which answered by scanning the rows a filter passes instead of the graph
        self.rescues = 0  # of which the recall guard (inverted lists) put a row the graph missed into the top k
        if self.dir is not None and self.dir.is_dir() and any(self.dir.glob("*.json")):
            _usearch()  # a large tenant will be searched: import usearch (~50 ms) now, not in the first query

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

    def manifest_path(self, tenant: str) -> Path:
        """Where the tenant's manifest (position, files, sizes) lives."""
        assert self.dir is not None
        return manifest_path(self.dir, tenant)

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
            hits, scanned, rescued = _search_entry(conn, entry, query / norm, filters, k, now)
            entry.searches += 1
            if not entry.lookups and entry.searches >= LOOKUPS_ON_SEARCH and entry.file is not None:
                # Map the file again with key lookups (~1 ms per 10k vectors, once): the vectors
                # of keyword hits and of a scan's winners then come from the index, not from SQLite.
                try:
                    index = _usearch().restore(str(entry.file), view=True)
                    if index is None or len(index) != len(entry.index):
                        raise ValueError("not the same index")
                    entry.index, entry.lookups = index, True
                except (OSError, RuntimeError, ValueError):
                    entry.file = None  # replaced by another process's save: stay without lookups
        self.searches += 1
        if scanned:
            self.scans += 1
        if rescued:
            self.rescues += 1
        return hits

    def vectors_for(self, conn: Any, memory_ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        """Stored vectors of those records the opened indexes hold unchanged (the rest: ask SQLite)."""
        out: dict[str, list[np.ndarray]] = {}
        with self._lock:
            entries = list(self._tenants.items())
        for tenant, entry in entries:
            wanted = [m for m in memory_ids if m not in out]
            if not wanted:
                break
            with entry.lock:
                if not entry.lookups or not self._refresh(conn, tenant, entry):
                    continue  # a view opened without key lookups: SQLite answers
                rows = entry.columns.rows_of_ids(wanted)
                if not rows:
                    continue
                names = list(rows)
                counts = np.fromiter((len(r) for r in rows.values()), dtype=np.int64, count=len(names))
                keys = entry.columns.keys[np.concatenate(list(rows.values()))]
                if len(entry.changed):
                    # A record with any vector changed since the save is read from SQLite.
                    stale = np.add.reduceat(_isin_sorted(keys, entry.changed), np.cumsum(counts) - counts) > 0
                    if stale.any():
                        keys = keys[np.repeat(~stale, counts)]
                        names = [m for m, s in zip(names, stale.tolist(), strict=True) if not s]
                        counts = counts[~stale]
                if not names:
                    continue
                vectors = _get(entry.index, keys, entry.dims)
            at = 0
            for memory_id, n in zip(names, counts.tolist(), strict=True):
                out[memory_id] = list(vectors[at : at + n])
                at += n
        return out

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
            if _has_vectors(conn, tenant, self.min_vectors):
                with self._lock:
                    self._wanted.add(tenant)
            return None
        with self._lock:
            return self._tenants.setdefault(tenant, entry)

    def _open(self, conn: Any, tenant: str) -> _Tenant | None:
        """The saved index, mapped, when its manifest and files check out and the log still reaches it, else None."""
        assert self.dir is not None
        saved = open_saved(conn, self.dir, tenant, view=True)
        if saved is None:
            return None
        return _Tenant(saved.index, saved.columns, saved.seq, saved.dims, view=True, file=saved.file, lookups=False)

    def _refresh(self, conn: Any, tenant: str, entry: _Tenant) -> bool:
        """Read the vectors changed since the index (False: the index is too old to use; a rebuild is asked for).

        When the changes are many, a catch-up is asked for; until it runs
        they are searched exactly beside the index.
        """
        floor, top = _log_bounds(conn)
        if entry.delta_seq == top and floor <= entry.seq:
            return True  # nothing committed anywhere since: no transaction needed
        with _snapshot(conn):
            floor, top = _log_bounds(conn)
            if entry.seq < floor:
                with self._lock:
                    self._tenants.pop(tenant, None)
                    self._wanted.add(tenant)
                return False
            new = changed_ids(conn, tenant, max(entry.seq, entry.delta_seq), top)
            present = rows_of(conn, new, tenant)
        live = entry.live
        assert live is not None
        try:
            live.upsert(present)
        except ValueError:  # another process reindexed with another model: rebuild
            with self._lock:
                self._tenants.pop(tenant, None)
                self._wanted.add(tenant)
            return False
        found = {row[0] for row in present}
        live.remove(v for v in new if v not in found)
        if new:
            entry.delta = list(dict.fromkeys([*entry.delta, *new]))
            entry.changed = np.sort(np.asarray(entry.delta, dtype=np.uint64))
        entry.delta_seq = top
        if len(entry.delta) > max(self.delta_min, len(entry.index) // 100):
            with self._lock:
                self._wanted.add(tenant)
        return True

    def maintain(self, conn: Any, tenant: str) -> str:
        """Bring a tenant's saved index up to date: build it, catch it up, or nothing (returns which).

        The background half of :meth:`search` (run by the ``ann-index`` job):
        safe to run in any process, at any time, any number of times. The work
        holds no lock a search takes (a large tenant's runs in a child process,
        see ``ann_build.py``); the new index is swapped in once it is saved.
        """
        if self.dir is None:
            return "none"
        with self._lock:
            entry = self._tenants.get(tenant)
        seen = saved_seq(self.dir, tenant)
        if entry is not None and entry.view and seen != entry.seq:
            with self._lock:  # another process saved a newer index: map that one instead
                self._tenants.pop(tenant, None)
            entry = None
        if entry is None:
            entry = self._open(conn, tenant)
        if entry is None:
            if not _has_vectors(conn, tenant, self.min_vectors):
                return "none"
            return self._work(conn, tenant, "build", seen)
        with entry.lock:
            fresh = self._refresh(conn, tenant, entry)
        if not fresh:
            if not _has_vectors(conn, tenant, self.min_vectors):
                self.drop(tenant)  # too old to catch up, and too small to index again: the exact path answers
                return "none"
            return self._work(conn, tenant, "build", seen)
        with self._lock:
            self._wanted.discard(tenant)
            self._tenants.setdefault(tenant, entry)
        if not entry.delta:
            return "current"
        return self._work(conn, tenant, "catch-up", seen)

    def _work(self, conn: Any, tenant: str, mode: str, seen: int | None) -> str:
        """Build or catch up the saved files (in a child process for a large tenant), then swap the new index in.

        Searches meanwhile use the entry there is (or the exact path); the new
        one is swapped in with the changes made since its snapshot read.
        """
        assert self.dir is not None
        if self.isolate_min <= 0 or _has_vectors(conn, tenant, self.isolate_min):
            done = ann_build.in_child(self.db_path, tenant, mode, threads=self.build_threads, seen=seen)
            fresh = self._open(conn, tenant)
            if fresh is None:
                raise RuntimeError(
                    f"the vector index the build process saved ({done}) cannot be opened. {ann_build.RETRY_HINT}"
                )
        else:
            done, saved = ann_build.work(conn, self.dir, tenant, mode, threads=self.build_threads, seen=seen)
            fresh = self._entry_of(saved, view=done == "current")
        with fresh.lock:
            current = self._refresh(conn, tenant, fresh)  # the changes committed since the snapshot the work read
        if current:  # (else the log was trimmed past it meanwhile: a rebuild is asked for)
            with self._lock:
                self._tenants[tenant] = fresh
                self._wanted.discard(tenant)
        if done == "built":
            self.builds += 1
        elif done == "caught up":
            self.catchups += 1
        return done

    @staticmethod
    def _entry_of(saved: Saved, *, view: bool) -> _Tenant:
        if view:
            return _Tenant(saved.index, saved.columns, saved.seq, saved.dims, view=True, file=saved.file, lookups=False)
        return _Tenant(saved.index, saved.columns, saved.seq, saved.dims, view=False, delta_seq=saved.seq)

    # -- maintenance -------------------------------------------------------------
    def add_sorted_ids(self) -> int:
        """Give each saved index written before ``ids_sorted`` that array (``ann_build.add_sorted_ids``).

        Run by the optimize job. An opened entry of the same position swaps in
        the new columns (the same rows, plus the array). Returns how many
        indexes gained it.
        """
        if self.dir is None or not self.dir.is_dir():
            return 0
        done = 0
        for path in sorted(self.dir.glob("*.json")):
            try:
                tenant = str(json.loads(path.read_text(encoding="utf-8"))["tenant"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            found = ann_build.add_sorted_ids(self.dir, tenant)
            if found is None:
                continue
            done += 1
            seq, columns = found
            with self._lock:
                entry = self._tenants.get(tenant)
            if entry is not None:
                with entry.lock:
                    if entry.seq == seq and np.array_equal(entry.columns.keys, columns.keys):
                        entry.columns = columns
        return done

    def build(self, conn: Any, tenant: str) -> _Tenant:
        """Build the tenant's index and its columns from the store and save them, in this thread."""
        assert self.dir is not None
        _, saved = ann_build.work(
            conn, self.dir, tenant, "build", threads=self.build_threads, seen=saved_seq(self.dir, tenant)
        )
        self.builds += 1
        return self._entry_of(saved, view=False)

    def drop(self, tenant: str) -> None:
        """Delete a tenant's index files (the next large search rebuilds); waits for a build under way."""
        if self.dir is None:
            return
        with self._lock:
            self._tenants.pop(tenant, None)
        if not self.dir.is_dir():
            return
        name = stem(tenant)
        with FileLock(self.dir / f"{name}.lock"):
            for path in self.dir.glob(f"{name}*"):
                if not path.name.endswith(".lock"):
                    path.unlink(missing_ok=True)


def _has_vectors(conn: Any, tenant: str, at_least: int) -> bool:
    """Whether the tenant has ``at_least`` vectors: counted through the records, stopping there.

    A full count walks vec0's whole partition (2.4 s at a million vectors).
    """
    sql = (
        "SELECT count(*) FROM (SELECT 1 FROM memories m CROSS JOIN memory_vectors v ON v.memory_rowid = m.rowid "
        "WHERE m.tenant = ? LIMIT ?)"
    )
    return int(conn.execute(sql, (tenant, max(0, at_least))).fetchone()[0]) >= at_least


def _isin_sorted(values: np.ndarray, sorted_array: np.ndarray) -> np.ndarray:
    """Which values are in a sorted array."""
    if not len(sorted_array):
        return np.zeros(len(values), dtype=bool)
    pos = np.searchsorted(sorted_array, values).clip(0, len(sorted_array) - 1)
    return sorted_array[pos] == values  # type: ignore[no-any-return]


def _get(index: Any, keys: np.ndarray, dims: int) -> np.ndarray:
    """The index's float32 vectors of keys it holds, as rows."""
    if not len(keys):
        return np.zeros((0, dims), dtype=np.float32)
    got = index.get(np.asarray(keys, dtype=np.uint64))
    # One vector a key: usearch answers a matrix already (stacking its rows again cost ~20 us for 50 keys).
    rows = got if isinstance(got, np.ndarray) else np.vstack(got)
    return rows.astype(np.float32, copy=False).reshape(-1, dims)  # type: ignore[no-any-return]


def _stored(conn: Any, keys: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The store's vectors of keys as rows, and which keys it still has."""
    out = np.zeros((len(keys), dims), dtype=np.float32)
    found = np.zeros(len(keys), dtype=bool)
    # One point lookup per id: vec0 answers `vector_id = ?` from its rowid
    # index, while `vector_id IN (...)` scans the whole table (1.4 s at 100k).
    for i, key in enumerate(keys.tolist()):
        row = conn.execute("SELECT embedding FROM vec_memories WHERE vector_id = ?", (key,)).fetchone()
        if row is not None:
            out[i], found[i] = np.frombuffer(row[0], dtype=np.float32), True
    return out, found


def _pool_for(k: int, rate: float) -> float:
    """Graph candidates expected to hold k rows passing a filter with this pass rate, with a margin."""
    return math.inf if rate <= 0 else math.ceil(1.5 * k / rate) + 16


def _search_entry(
    conn: Any, entry: _Tenant, query: np.ndarray, filters: SearchFilters, k: int, now: datetime | None
) -> tuple[list[tuple[str, float]], bool, bool]:
    """(hits, whether the passing rows were scanned, whether the guard added a winner).

    The graph's (or the scan's) rows merged with the delta; the graph's rows
    first merged with the recall guard's (``ann_lists.py``).
    """
    cols = entry.columns
    clauses = knn_visibility(filters)
    rates = cols.pass_rates(filters, now, clauses)
    need = max(_pool_for(k, r) for r in rates)
    found = None
    guarded = cols.n >= GUARD_MIN_ROWS
    if cols.n and need <= MAX_POOL and sum(rates) * cols.n > SCAN_FACTOR * need:
        found = _graph(entry, query, filters, now, clauses, k, int(need), guarded=guarded)
    scanned, rescued = found is None, False
    if found is None:
        found = _scan(conn, entry, query, filters, now, clauses, k)
    elif guarded:
        widen = 1.0 / max(min(rates), 1e-9)  # as many passing rows probed as an unfiltered query's
        found, rescued = _guarded(conn, entry, query, filters, now, clauses, k, widen, *found)
    return _merged(entry, query, filters, now, clauses, k, *found), scanned, rescued


def _guarded(
    conn: Any,
    entry: _Tenant,
    query: np.ndarray,
    filters: SearchFilters,
    now: datetime | None,
    clauses: Sequence[Any],
    k: int,
    widen: float,
    rows: np.ndarray,
    sims: np.ndarray,
    masks: list[np.ndarray],
) -> tuple[tuple[np.ndarray, np.ndarray, list[np.ndarray]], bool]:
    """The graph's candidates plus the rows of the nearest inverted lists that could enter the top k.

    The probed rows are scored from their int8 codes; those within
    ``GUARD_MARGIN`` of an alternative's k-th graph similarity (or any, while
    the graph has fewer than k) are added. Then every candidate that can
    still make the top k, the graph's (``SCORE_MARGIN`` below its k-th at
    most) and the added ones, is re-scored with float32 vectors, as the scan
    does: a row's similarity is the same computation whichever of the two
    found it (usearch's cosine and numpy's can differ in the last bit), so a
    narrower beam that leaves a row to the guard changes no score. Returns
    the merged candidates and whether any added row made an alternative's top k.
    """
    cols = entry.columns
    probed = cols.probe(query, widen)
    drop = _isin_sorted(probed, np.sort(rows))  # the graph's own rows are candidates already
    if len(entry.changed):
        drop |= _isin_sorted(cols.keys[probed], entry.changed)  # the delta has their truth
    probed = probed[~drop]
    probed_masks = cols.masks(filters, now, clauses, probed)
    approx = cols.approx_sims(probed, query)
    keep = RESCORE * k + 16
    chosen: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    needed = np.zeros(len(rows), dtype=bool)
    for mask, probed_mask in zip(masks, probed_masks, strict=True):
        passing = sims[mask]
        # The graph's own similarities only bound which rows are worth re-scoring: its k-th passing one stays
        # in the top k, so a graph row far enough below it cannot enter, and a probed row GUARD_MARGIN below.
        floor = -np.inf if len(passing) < k else float(np.partition(passing, len(passing) - k)[len(passing) - k])
        needed |= mask & (sims >= floor - SCORE_MARGIN)
        chosen.append(_best(np.flatnonzero(probed_mask & (approx >= floor - GUARD_MARGIN)), approx, keep))
    picked = np.unique(np.concatenate(chosen))
    candidates = np.concatenate([rows[needed], probed[picked]])
    present, all_sims = _rescored(conn, entry, candidates, query)
    added = (np.arange(len(candidates)) >= int(needed.sum()))[present]
    all_masks = [np.concatenate([m[needed], pm[picked]])[present] for m, pm in zip(masks, probed_masks, strict=True)]
    rescued = False
    if added.any():
        for mask in all_masks:
            at = np.flatnonzero(mask)
            top = at[np.argsort(-all_sims[at], kind="stable")[:k]]
            rescued = rescued or bool(added[top].any())
    return (candidates[present], all_sims, all_masks), rescued


def _graph(
    entry: _Tenant,
    query: np.ndarray,
    filters: SearchFilters,
    now: datetime | None,
    clauses: Sequence[Any],
    k: int,
    pool: int,
    *,
    guarded: bool = False,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """(rows, similarities, masks) of the graph's candidates once every alternative has k passing; None: scan.

    ``guarded``: the recall guard searches beside the graph (``_guarded``), which then needs a narrower beam.
    """
    cols, index = entry.columns, entry.index
    size = len(index)
    while True:
        count = min(pool, size)
        # A beam of twice the pool: near-duplicate clusters (a chat's many
        # similar messages) defeat a beam barely wider than the pool.
        index.expansion_search = max(GUARDED_SEARCH, count) if guarded else max(EXPANSION_SEARCH, BEAM * count)
        matches = index.search(query, count, threads=1)
        keys = np.asarray(matches.keys, dtype=np.uint64)
        rows, ok = cols.positions(keys)
        if len(entry.changed):
            ok &= ~_isin_sorted(keys, entry.changed)  # changed since the save: the delta has the truth
        rows, sims = rows[ok], 1.0 - np.asarray(matches.distances, dtype=np.float32)[ok]
        masks = cols.masks(filters, now, clauses, rows)
        passing = min(int(m.sum()) for m in masks)
        if passing >= k or count >= size:
            return rows, sims, masks
        pool = int(max(2 * pool, _pool_for(k, passing / max(count, 1))))
        if pool > MAX_POOL:
            return None


def _scan(
    conn: Any,
    entry: _Tenant,
    query: np.ndarray,
    filters: SearchFilters,
    now: datetime | None,
    clauses: Sequence[Any],
    k: int,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(rows, similarities, masks) of the best passing rows by their int8 codes, re-scored exactly."""
    cols = entry.columns
    masks = cols.masks(filters, now, clauses)
    if len(entry.changed):
        rows, ok = cols.positions(entry.changed)
        for mask in masks:
            mask[rows[ok]] = False
    union = masks[0] if len(masks) == 1 else np.logical_or.reduce(masks)
    rows = np.flatnonzero(union)
    if not len(rows):
        return rows, np.zeros(0, dtype=np.float32), [m[rows] for m in masks]
    approx = cols.approx_sims(rows, query)
    keep = RESCORE * k + 16
    picked = np.unique(np.concatenate([rows[_best(np.flatnonzero(m[rows]), approx, keep)] for m in masks]))
    present, sims = _rescored(conn, entry, picked, query)
    picked = picked[present]
    return picked, sims, [m[picked] for m in masks]


def _best(local: np.ndarray, approx: np.ndarray, keep: int) -> np.ndarray:
    """The ``keep`` of ``local`` with the highest approximate similarity (all of them when fewer)."""
    return local if len(local) <= keep else local[np.argpartition(-approx[local], keep - 1)[:keep]]


def _rescored(conn: Any, entry: _Tenant, rows: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of the rows still exist, and their exact float32 cosines to the query (of those that do), each
    the same to the last bit whatever other rows it is scored with.

    The vectors come from the index when it has key lookups, else from the
    store: rows changed since the save are never asked for (the delta has
    their truth), so the store holds the same vectors; one deleted since the
    last look at the change log is left out.
    """
    keys = entry.columns.keys[rows]
    if entry.lookups:
        vectors, present = _get(entry.index, keys, entry.dims), np.ones(len(rows), dtype=bool)
    else:
        vectors, present = _stored(conn, keys, entry.dims)
        vectors = vectors[present]
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    # Each row's own products summed along it, not a matrix product: BLAS's last bit depends on where the row
    # sits in the batch, and the same row is re-scored in batches of other sizes (guard, scan, a narrower beam).
    return present, (np.multiply(vectors, query).sum(axis=1) / norms).astype(np.float32)


def _merged(
    entry: _Tenant,
    query: np.ndarray,
    filters: SearchFilters,
    now: datetime | None,
    clauses: Sequence[Any],
    k: int,
    rows: np.ndarray,
    sims: np.ndarray,
    masks: list[np.ndarray],
) -> list[tuple[str, float]]:
    """Top k per alternative over the indexed candidates and the delta, best vector per record, best first."""
    live = entry.live
    assert live is not None
    if live.n:
        live_sims = live.matrix[: live.n] @ query
        live_masks = live.clause_masks(filters, now, clauses)
    best: dict[str, float] = {}
    for c, mask in enumerate(masks):
        at = np.flatnonzero(mask)
        values = sims[at]
        extra = np.flatnonzero(live_masks[c]) if live.n else np.zeros(0, dtype=np.int64)
        if len(extra):
            values = np.concatenate([values, live_sims[extra]])
        top = np.argsort(-values, kind="stable")[:k] if len(values) > k else np.arange(len(values))
        for j in top.tolist():
            if j < len(at):
                memory_id = entry.columns.ids[rows[at[j]]].decode("utf-8")
            else:
                memory_id = live.memory_ids[int(extra[j - len(at)])]
            sim = float(values[j])
            if sim > best.get(memory_id, -2.0):
                best[memory_id] = sim
    return sorted(best.items(), key=lambda kv: kv[1], reverse=True)
