"""Inverted lists beside an approximate index: a recall guard that does not depend on the graph.

On tightly clustered vectors an HNSW search can stay in the wrong cluster:
at a million vectors of ``store_bench``'s 48 x 8 subtopics, some queries got
none of their true ten (recall@10 0.96, min 0.00), and a wider beam barely
helped. So every index also partitions its rows into ``~sqrt(n)`` lists by
k-means (numpy, trained on a sample of the rows' int8 codes), and each query
scores the rows of its nearest lists from those codes (~4 lists' worth of
rows: ~0.7 ms at 1M) beside the graph search. Rows that could enter the top k
are re-scored with float32 vectors and merged with the graph's candidates
(``ann_index._guarded``), so a query the graph lost is still answered
exactly from its own cluster, and one it answered well costs only the scan.

The arrays live in the index's ``.cols`` file (``ann_columns.py``):

* ``centroids`` (lists x dims, unit float32) and ``trained`` (the row count
  they were trained on);
* ``list`` (each row's list, int32, in key order), ``by_list`` (the rows
  sorted by list) and ``list_start`` (where each list begins in ``by_list``,
  plus the end).

The manifest records a CRC of ``centroids`` and ``list_start``; a mismatch
or lists that do not cover the rows make the index rebuilt, never used
(:func:`check`). A catch-up assigns new rows to the nearest centroid; once
the tenant has grown past twice (or shrunk under half) the rows the
centroids were trained on, they are trained again.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

SAMPLE_PER_LIST = 32  # training rows per list (at most the whole tenant)
ITERATIONS = 8  # k-means rounds over the sample
MAX_LISTS = 4096
PROBE_LISTS = 4  # a query scores about this many average lists' worth of rows (at least one list)
MAX_WIDEN = 4.0  # a filter widens the probe by at most this factor (more selective ones are scanned)
RETRAIN = 2.0  # retrain when the rows grew or shrank by this factor since training
BLOCK = 32768  # rows dequantized at once (a million at once would cost 1.5 GB)
ARRAYS = ("centroids", "trained", "list", "by_list", "list_start")


def list_count(n: int) -> int:
    """Lists for a tenant of n rows: about sqrt(n), at least one when there are rows."""
    return 0 if n <= 0 else max(1, min(MAX_LISTS, round(math.sqrt(n))))


def dequantized(q8: np.ndarray, scale: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows' approximate unit vectors from their int8 codes."""
    return np.take(q8, rows, axis=0).astype(np.float32) * np.take(scale, rows)[:, None]  # type: ignore[no-any-return]


def _nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return np.argmax(vectors @ centroids.T, axis=1).astype(np.int32)  # type: ignore[no-any-return]


def train(q8: np.ndarray, scale: np.ndarray, lists: int, seed: int = 0) -> np.ndarray:
    """Unit centroids of ``lists`` spherical k-means clusters over a sample of the rows' codes."""
    n, dims = q8.shape
    if lists <= 0 or n == 0:
        return np.zeros((0, dims), dtype=np.float32)
    rng = np.random.default_rng(seed)
    size = min(n, SAMPLE_PER_LIST * lists)
    sample = np.sort(rng.choice(n, size, replace=False))
    points = dequantized(q8, scale, sample)
    points /= np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
    centroids = points[rng.choice(size, min(lists, size), replace=False)].copy()
    for _ in range(ITERATIONS):
        labels = (
            np.concatenate([_nearest(points[s : s + BLOCK], centroids) for s in range(0, size, BLOCK)])
            if size
            else np.zeros(0, dtype=np.int32)
        )
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, points)
        counts = np.bincount(labels, minlength=len(centroids))
        empty = np.flatnonzero(counts == 0)
        if len(empty):  # an empty cluster restarts at a random sample row
            sums[empty] = points[rng.choice(size, len(empty), replace=False)]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
    return centroids.astype(np.float32)


def assign(q8: np.ndarray, scale: np.ndarray, centroids: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """The nearest centroid of each row (every row when ``rows`` is None), as int32."""
    rows = np.arange(len(q8)) if rows is None else np.asarray(rows)
    out = np.zeros(len(rows), dtype=np.int32)
    if not len(centroids):
        return out
    for start in range(0, len(rows), BLOCK):
        block = rows[start : start + BLOCK]
        out[start : start + len(block)] = _nearest(dequantized(q8, scale, block), centroids)
    return out


def arrays_of(centroids: np.ndarray, labels: np.ndarray, trained: int) -> dict[str, np.ndarray]:
    """The ``.cols`` arrays of lists: centroids, row labels, rows by list, list offsets."""
    by_list = np.argsort(labels, kind="stable").astype(np.int32)
    starts = np.searchsorted(labels[by_list], np.arange(len(centroids) + 1), side="left").astype(np.int64)
    return {
        "centroids": np.ascontiguousarray(centroids, dtype=np.float32),
        "trained": np.asarray([trained], dtype=np.int64),
        "list": labels.astype(np.int32),
        "by_list": by_list,
        "list_start": starts,
    }


def build_lists(q8: np.ndarray, scale: np.ndarray) -> dict[str, np.ndarray]:
    """Train lists for every row of these codes and assign each row to one."""
    centroids = train(q8, scale, list_count(len(q8)))
    return arrays_of(centroids, assign(q8, scale, centroids), len(q8))


def merged_lists(
    centroids: np.ndarray, trained: int, labels: np.ndarray, q8: np.ndarray, scale: np.ndarray
) -> dict[str, np.ndarray]:
    """Lists after a catch-up: ``labels`` (key order) holds the kept rows' lists and -1 for new rows.

    New rows go to their nearest centroid; when the rows grew or shrank too
    far from what the centroids were trained on, everything is trained again.
    """
    n = len(q8)
    if not len(centroids) or n > RETRAIN * trained or n * RETRAIN < trained:
        return build_lists(q8, scale)
    labels = labels.astype(np.int32, copy=True)
    rows = np.flatnonzero(labels < 0)
    labels[rows] = assign(q8, scale, centroids, rows)
    return arrays_of(centroids, labels, trained)


def crc(arrays: dict[str, np.ndarray]) -> int:
    """The checksum the manifest keeps of the small list arrays (centroids, offsets)."""
    value = zlib.crc32(np.ascontiguousarray(arrays["centroids"]).tobytes())
    return zlib.crc32(np.ascontiguousarray(arrays["list_start"]).tobytes(), value)


def check(arrays: dict[str, np.ndarray], rows: int, dims: int, expected_crc: int) -> None:
    """Raise ValueError unless the list arrays are whole and consistent with ``rows`` rows of ``dims``."""
    centroids, starts, by_list = arrays["centroids"], arrays["list_start"], arrays["by_list"]
    if centroids.ndim != 2 or centroids.shape[1] != dims or len(starts) != len(centroids) + 1:
        raise ValueError("lists do not match the index")
    if len(by_list) != rows or len(arrays["list"]) != rows or int(starts[0]) != 0 or int(starts[-1]) != rows:
        raise ValueError("lists do not cover the rows")
    if crc(arrays) != expected_crc:
        raise ValueError("lists fail their checksum")
    if rows and (bool((np.diff(starts) < 0).any()) or int(by_list.max()) >= rows or int(by_list.min()) < 0):
        raise ValueError("lists point outside the rows")


def probe(
    centroids: np.ndarray, starts: np.ndarray, by_list: np.ndarray, query: np.ndarray, widen: float = 1.0
) -> np.ndarray:
    """Rows of the lists nearest a unit query: about ``PROBE_LISTS`` average lists' worth, nearest first.

    ``widen`` (1 to ``MAX_WIDEN``) scales that budget: a filter passing a
    share r of the rows asks for 1/r, so about as many passing rows are scored.
    """
    lists = len(centroids)
    if not lists:
        return np.zeros(0, dtype=np.int64)
    widen = min(max(widen, 1.0), MAX_WIDEN)
    budget = widen * PROBE_LISTS * len(by_list) / lists
    sims = centroids @ query
    ahead = min(lists, math.ceil(4 * widen * PROBE_LISTS) + 16)
    nearest = np.argpartition(-sims, ahead - 1)[:ahead] if ahead < lists else np.arange(lists)
    nearest = nearest[np.argsort(-sims[nearest], kind="stable")]
    sizes = (starts[nearest + 1] - starts[nearest]).astype(np.int64)
    taken = int(np.searchsorted(np.cumsum(sizes), budget, side="left")) + 1
    chosen = nearest[: max(1, min(taken, len(nearest)))]
    parts = [by_list[int(starts[c]) : int(starts[c + 1])] for c in chosen.tolist()]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
