"""The columns saved beside an approximate index: filters, record ids and int8 vector codes, memory-mapped.

The HNSW graph (``ann_index.py``) only knows vector ids. Reading the filter
columns of its ~100 candidates from SQLite cost ~2.7 ms a query at 100k (point
lookups), more than the graph search itself, and a new process would have to
load them before its first query. So every index file has a companion
``.cols`` file written in the same save, with one row per indexed vector,
sorted by vector id:

* ``keys`` (the vector ids, for ``searchsorted``), the record ``ids``;
* the vec0 filter columns: each string column as int32 codes into its own
  sorted table of UTF-8 values, ``created`` and ``expires`` (``NO_EXPIRY``
  for none) as float64;
* ``q8``/``scale``: the unit vectors as int8 codes, so a selective filter is
  answered by scanning only the rows that pass it (a quarter of float32's
  bytes; the winners are re-scored with the index's exact vectors);
* ``by_id``: the row order that sorts ``ids``, to find a record's vectors,
  and ``ids_sorted``, the ids in that order (a binary search of it reads one
  place a step; through ``by_id`` it read two far apart: 0.44 -> 0.07 ms for
  a search's 50 keyword hits at 1M). A file written before it has none and
  searches through ``by_id`` until the optimize job adds it
  (``ann_build.add_sorted_ids``);
* the inverted lists of the recall guard (``ann_lists.py``): centroids and
  each row's list.

The file is raw arrays at 64-byte-aligned offsets; the layout (dtype, shape,
offset of each) is in the index manifest, which is only replaced once both
files are complete. Opening maps the file (no parsing, no copy), so the first
query of a process reads only the pages it touches.

The columns describe the vectors as of the index's change-log position; rows
changed since are overridden by the index's delta (``ann_index._Tenant``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..models import SearchFilters
from . import ann_lists
from .vector_cache import STRING_COLUMNS, filter_masks, isin_codes

_ALIGN = 64
SAMPLE = 4096  # rows looked at to estimate how many pass a filter


def quantize(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row scales of unit rows (``row ~= codes * scale``)."""
    peak = np.abs(unit).max(axis=1) if len(unit) else np.zeros(0, dtype=np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(unit / scale[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scale


def _encoded(values: Sequence[str]) -> np.ndarray:
    """UTF-8 bytes of strings as a fixed-width array (at least 1 byte wide)."""
    encoded = [v.encode("utf-8") for v in values]
    width = max((len(b) for b in encoded), default=1) or 1
    return np.array(encoded, dtype=f"S{width}") if encoded else np.zeros(0, dtype="S1")


def table_codes(values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted table of distinct values, int32 code of each value) for one string column."""
    table, codes = np.unique(_encoded(values), return_inverse=True)
    return table, codes.astype(np.int32).reshape(-1)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def columns_of(
    rows: Sequence[Sequence[Any]], vectors: np.ndarray, dims: int, *, lists: bool = True
) -> dict[str, np.ndarray]:
    """The arrays of a ``.cols`` file from rows ``(vector_id, *STRING_COLUMNS, created, expires, memory_id)``.

    ``vectors`` holds the rows' stored vectors (``dims`` wide) in the same order;
    ``lists``: also train and assign the recall guard's lists.
    """
    n = len(rows)
    columns = list(zip(*rows, strict=True)) if n else [() for _ in range(len(STRING_COLUMNS) + 4)]
    keys = np.asarray(columns[0], dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    out: dict[str, np.ndarray] = {"keys": keys[order]}
    for j, name in enumerate(STRING_COLUMNS):
        table, codes = table_codes(columns[1 + j])
        out[f"table:{name}"] = table
        out[f"codes:{name}"] = codes[order]
    out["created"] = np.asarray(columns[-3], dtype=np.float64)[order]
    out["expires"] = np.asarray(columns[-2], dtype=np.float64)[order]
    out["ids"] = _encoded(columns[-1])[order]
    vectors = np.asarray(vectors, dtype=np.float32).reshape(n, dims)
    q8 = np.empty((n, dims), dtype=np.int8)
    scale = np.empty(n, dtype=np.float32)
    for start in range(0, n, 65536):  # in blocks: a million rows at once would triple the peak memory
        block = order[start : start + 65536]
        q8[start : start + len(block)], scale[start : start + len(block)] = quantize(unit_rows(vectors[block]))
    out["q8"], out["scale"] = q8, scale
    out["by_id"] = np.argsort(out["ids"], kind="stable").astype(np.int32)
    out["ids_sorted"] = out["ids"][out["by_id"]]
    if lists:
        out.update(ann_lists.build_lists(q8, scale))
    return out


def write_columns(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Write the arrays to ``path`` (fsynced) and return the layout the manifest records."""
    layout: dict[str, Any] = {}
    offset = 0
    with open(path, "wb") as fh:
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            pad = -offset % _ALIGN
            fh.write(b"\0" * pad)
            offset += pad
            layout[name] = [array.dtype.str, list(array.shape), offset]
            if array.nbytes:  # straight from the array (a mapped one's pages, too): no copy of it in memory
                fh.write(memoryview(array).cast("B"))
            offset += array.nbytes
        fh.flush()
        os.fsync(fh.fileno())
    return layout


class IndexColumns:
    """The memory-mapped columns of one index file (see the module docstring)."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.keys = arrays["keys"]
        self.n = len(self.keys)
        self.tables = {c: arrays[f"table:{c}"] for c in STRING_COLUMNS}
        self.codes = {c: arrays[f"codes:{c}"] for c in STRING_COLUMNS}
        self.created = arrays["created"]
        self.expires = arrays["expires"]
        self.ids = arrays["ids"]
        self.q8 = arrays["q8"]
        self.scale = arrays["scale"]
        self.by_id = arrays["by_id"]
        self.ids_sorted = arrays.get("ids_sorted")  # None in a file written before it
        self.centroids = arrays["centroids"]
        self.trained = int(arrays["trained"][0])
        self.lists = arrays["list"]
        self.by_list = arrays["by_list"]
        self.list_start = arrays["list_start"]
        self.arrays = arrays

    @classmethod
    def open(cls, path: Path, layout: dict[str, Any]) -> IndexColumns:
        """Map a ``.cols`` file (ValueError when it does not match its layout)."""
        # A plain ndarray over the mapping: memmap subclass results cost more per operation.
        empty = path.stat().st_size == 0  # an index of no vectors: nothing to map
        raw = np.zeros(0, dtype=np.uint8) if empty else np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, shape, offset) in layout.items():
            dt = np.dtype(dtype)
            count = int(np.prod(shape)) if shape else 1
            end = offset + count * dt.itemsize
            if end > len(raw):
                raise ValueError(f"{path.name}: column {name} runs past the end of the file")
            arrays[name] = raw[offset:end].view(dt).reshape(shape)
        return cls(arrays)

    @property
    def nbytes(self) -> int:
        """Bytes of the mapped arrays (what the page cache may hold of them)."""
        return int(sum(a.nbytes for a in self.arrays.values()))

    def probe(self, query: np.ndarray, widen: float = 1.0) -> np.ndarray:
        """Rows of the inverted lists nearest a unit query (the recall guard's candidates; see ``ann_lists.probe``)."""
        return ann_lists.probe(self.centroids, self.list_start, self.by_list, query, widen)

    def positions(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of each key, whether the key has a row)."""
        if not self.n:
            return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        pos = np.searchsorted(self.keys, keys).clip(0, self.n - 1)
        return pos, self.keys[pos] == keys

    def rows_of_ids(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Rows (vectors) of each record id found here."""
        out: dict[str, np.ndarray] = {}
        if not self.n or not memory_ids:
            return out
        wanted = np.array([m.encode("utf-8") for m in memory_ids])
        if wanted.dtype.itemsize > self.ids.dtype.itemsize:
            keep = np.char.str_len(wanted) <= self.ids.dtype.itemsize  # longer ids cannot be here
            memory_ids, wanted = [m for m, k in zip(memory_ids, keep, strict=True) if k], wanted[keep]
        wanted = wanted.astype(self.ids.dtype)
        # One search per id: its first row; a long record's other parts are the rows after it with the
        # same id, looked for only where the next row holds it (most records are one part).
        ordered: Any
        if self.ids_sorted is not None:
            ordered = self.ids_sorted
            left = np.searchsorted(ordered, wanted, side="left")
        else:
            ordered = _Sorted(self.ids, self.by_id)
            left = np.searchsorted(self.ids, wanted, side="left", sorter=self.by_id)
        at = left.clip(0, self.n - 1)
        found = (left < self.n) & (ordered[at] == wanted)
        more = found & (left + 1 < self.n) & (ordered[(left + 1).clip(0, self.n - 1)] == wanted)
        first = self.by_id[at]
        for i in np.flatnonzero(found).tolist():
            if not more[i]:
                out[memory_ids[i]] = first[i : i + 1]
                continue
            lo = hi = int(left[i])
            while hi < self.n and ordered[hi] == wanted[i]:
                hi += 1
            out[memory_ids[i]] = np.sort(self.by_id[lo:hi])
        return out

    def _codes_of(self, column: str, values: Sequence[str]) -> list[int]:
        table = self.tables[column]
        if not len(table):
            return []
        wanted = [v.encode("utf-8") for v in values]
        found = np.searchsorted(table, np.array(wanted, dtype=table.dtype)).clip(0, len(table) - 1)
        return [int(i) for i, w in zip(found.tolist(), wanted, strict=True) if table[i] == w]

    def masks(
        self,
        filters: SearchFilters,
        now: datetime | None,
        clauses: Sequence[Any],
        rows: np.ndarray | slice | None = None,
    ) -> list[np.ndarray]:
        """One boolean mask per visibility alternative, over ``rows`` (every row when None; a slice reads views)."""

        def isin(column: str, values: Sequence[str]) -> np.ndarray:
            codes = self.codes[column] if rows is None else self.codes[column][rows]
            return isin_codes(codes, self._codes_of(column, values))

        created = self.created if rows is None else self.created[rows]
        expires = self.expires if rows is None else self.expires[rows]
        return filter_masks(filters, now, clauses, isin, created, expires)

    def pass_rates(self, filters: SearchFilters, now: datetime | None, clauses: Sequence[Any]) -> list[float]:
        """Share of rows passing each alternative, from an evenly spaced sample (a plan choice only)."""
        if not self.n:
            return [0.0 for _ in clauses]
        # Every step-th row: a strided view of each column, where gathering the same rows by index copied them.
        sample = slice(0, self.n, max(1, self.n // SAMPLE))
        return [float(m.mean()) for m in self.masks(filters, now, clauses, sample)]

    def approx_sims(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Approximate cosine of the rows to a unit query, from the int8 codes (in blocks: cache-sized).

        The rows are gathered with ``np.take``: fancy indexing of the mapped
        2-D array took 3x as long for the same rows (the recall guard's ~5,000
        probed rows a query at 1M: 1.26 -> 0.57 ms, the same bits).
        """
        out = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), 4096):
            block = rows[start : start + 4096]
            codes = np.take(self.q8, block, axis=0).astype(np.float32)
            out[start : start + len(block)] = (codes @ query) * np.take(self.scale, block)
        return out


def merged_columns(
    old: IndexColumns, drop: np.ndarray, rows: Sequence[Sequence[Any]], vectors: np.ndarray, dims: int
) -> dict[str, np.ndarray]:
    """The arrays after a catch-up: ``old`` without the rows of the ``drop`` keys, plus ``rows`` (current)."""
    keep = ~np.isin(old.keys, drop) if len(drop) else np.ones(old.n, dtype=bool)
    fresh = columns_of(rows, vectors, dims, lists=False)
    keys = np.concatenate([old.keys[keep], fresh["keys"]])
    order = np.argsort(keys, kind="stable")
    out: dict[str, np.ndarray] = {"keys": keys[order]}
    for name in STRING_COLUMNS:
        a_table, b_table = old.tables[name], fresh[f"table:{name}"]
        width = max(a_table.dtype.itemsize, b_table.dtype.itemsize)
        table = np.unique(np.concatenate([a_table.astype(f"S{width}"), b_table.astype(f"S{width}")]))
        a_codes = np.searchsorted(table, a_table.astype(f"S{width}")).astype(np.int32)
        b_codes = np.searchsorted(table, b_table.astype(f"S{width}")).astype(np.int32)
        codes = np.concatenate([a_codes[old.codes[name][keep]], b_codes[fresh[f"codes:{name}"]]])
        out[f"table:{name}"], out[f"codes:{name}"] = table, codes[order]
    out["created"] = np.concatenate([old.created[keep], fresh["created"]])[order]
    out["expires"] = np.concatenate([old.expires[keep], fresh["expires"]])[order]
    width = max(old.ids.dtype.itemsize, fresh["ids"].dtype.itemsize)
    out["ids"] = np.concatenate([old.ids[keep].astype(f"S{width}"), fresh["ids"].astype(f"S{width}")])[order]
    out["q8"] = np.concatenate([old.q8[keep], fresh["q8"]])[order]
    out["scale"] = np.concatenate([old.scale[keep], fresh["scale"]])[order]
    out["by_id"] = np.argsort(out["ids"], kind="stable").astype(np.int32)
    out["ids_sorted"] = out["ids"][out["by_id"]]
    labels = np.concatenate([old.lists[keep], np.full(len(fresh["keys"]), -1, dtype=np.int32)])[order]
    out.update(ann_lists.merged_lists(old.centroids, old.trained, labels, out["q8"], out["scale"]))
    return out


class _Sorted:
    """``ids`` in ``by_id`` order, read through the permutation (a file written before ``ids_sorted``)."""

    def __init__(self, ids: np.ndarray, by_id: np.ndarray) -> None:
        self._ids, self._by_id = ids, by_id

    def __getitem__(self, at: Any) -> Any:
        return self._ids[self._by_id[at]]
