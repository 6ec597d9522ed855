"""Building and catching up a tenant's approximate index files, away from the requests of a serving process.

usearch holds the GIL for the whole of an ``add``: a thread sleeping 1 ms
beside a 20k-vector build did not wake for the build's 23 s. A build in a
serving process (``funes serve``'s job worker) therefore stopped every request
thread for as long as it took, and at 100k with 8 clients requests timed out
after 60 s (issue 29). So work on a tenant of at least ``isolate_min``
vectors (:data:`ISOLATE_MIN`) runs in a child process,
``python -m funes.store.ann_build``, which shares no lock with the requests:

1. on its own connection, in one read transaction, it reads the change-log
   position and the tenant's vectors and rows (the snapshot);
2. it builds the graph and its columns, or, for a catch-up, loads the saved
   files and applies the changes logged since their position;
3. it saves them under new names and then replaces the manifest, all
   atomically, under the tenant's exclusive ``flock`` (see :func:`save`).

The serving process waits for the child without the GIL, then maps the saved
files, reads the changes committed since the snapshot into the new entry's
delta and swaps the entry in (``AnnIndexes.maintain``). Until then its
searches are answered by the previous entry (a catch-up) or the exact path
(a first build or a rebuild). Smaller work runs in the calling thread, where
starting a process (~0.4 s) would cost more than the pause it avoids.

Crash safety is the files': a process killed at any point leaves the previous
manifest and its complete files (or none), so the store stays consistent; the
``ann-index`` job fails and the durable runner runs it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import ann_lists
from .ann_columns import IndexColumns, columns_of, merged_columns, write_columns
from .vector_cache import _TENANT_SQL, _log_bounds, _snapshot, changed_ids, rows_of

FORMAT = 3  # 2: with the .cols file; 3: with the recall guard's lists in it
CONNECTIVITY = 16  # HNSW M; see bench/README.md for the measured choice
EXPANSION_ADD = 128
ISOLATE_MIN = 5000  # a tenant with this many vectors is built and caught up in a child process (~1 s of GIL idle)


RETRY_HINT = (
    "Searches go on, on the previous index or exactly, and the ann-index job is retried; `funes doctor` checks the store, "
    "and ann_min = 0 (FUNES_ANN_MIN=0) turns the index off"
)


def usearch() -> Any:
    """usearch's ``Index`` class (imported on first use: ~50 ms)."""
    try:
        from usearch.index import Index
    except ImportError as exc:  # pragma: no cover - usearch is a runtime dependency
        raise RuntimeError(
            "the approximate vector index needs usearch: pip install usearch (or set ann_min = 0)"
        ) from exc
    return Index


def stem(tenant: str) -> str:
    """The file-name stem of a tenant's index files."""
    return "t" + hashlib.sha1(tenant.encode("utf-8")).hexdigest()[:16]


def manifest_path(directory: Path, tenant: str) -> Path:
    """Where the tenant's manifest (position, files, sizes) lives."""
    return directory / f"{stem(tenant)}.json"


def saved_seq(directory: Path, tenant: str) -> int | None:
    """The change-log position of the tenant's saved index (None: no readable manifest)."""
    try:
        return int(json.loads(manifest_path(directory, tenant).read_text(encoding="utf-8"))["seq"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def saved_columns(directory: Path, tenant: str) -> str | None:
    """The name of the columns file the tenant's manifest points at (None: no readable manifest)."""
    try:
        return str(json.loads(manifest_path(directory, tenant).read_text(encoding="utf-8"))["columns"]["file"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Saved:
    """A tenant's index and columns as saved (or just built), at change-log position ``seq``."""

    index: Any
    columns: IndexColumns
    seq: int
    dims: int
    file: Path | None = None  # the index file, when ``index`` maps or was read from it


def open_saved(conn: Any, directory: Path, tenant: str, *, view: bool) -> Saved | None:
    """The saved index when its manifest and files check out and the log still reaches it, else None.

    ``view``: map the file read-only without key lookups (building them is most
    of a view's opening time, ~1 ms per 10k vectors, and a search needs none);
    else read it into memory, to be changed.
    """
    try:
        manifest = json.loads(manifest_path(directory, tenant).read_text(encoding="utf-8"))
        path = directory / manifest["file"]
        cols = manifest["columns"]
        cols_path = directory / cols["file"]
        if manifest.get("format") != FORMAT or path.stat().st_size != manifest["bytes"]:
            return None
        if cols_path.stat().st_size != cols["bytes"]:
            return None
        floor, _ = _log_bounds(conn)
        if int(manifest["seq"]) < floor:
            return None  # the changes since were trimmed (or a reindex): rebuild
        if view:
            index = usearch().restore(str(path), view=True, enable_key_lookups=False)
        else:
            index = usearch().restore(str(path), view=False)
        if index is None or index.ndim != manifest["dims"] or len(index) != manifest["count"]:
            return None
        columns = IndexColumns.open(cols_path, cols["layout"])
        if columns.n != cols["rows"] or columns.q8.shape[1:] != (manifest["dims"],):
            return None
        ann_lists.check(columns.arrays, columns.n, int(manifest["dims"]), int(cols["lists_crc"]))
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, json.JSONDecodeError):
        return None
    return Saved(index, columns, int(manifest["seq"]), int(manifest["dims"]), path)


def work(conn: Any, directory: Path, tenant: str, mode: str, *, threads: int, seen: int | None) -> tuple[str, Saved]:
    """Build (``mode`` "build") or catch up ("catch-up") the tenant's saved index; returns (what was done, it).

    Runs under the tenant's flock. ``seen`` is the saved position the caller
    looked at: when another process saved a different index meanwhile, that one
    is returned ("current") instead of doing the work again.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with FileLock(directory / f"{stem(tenant)}.lock"):
        if saved_seq(directory, tenant) != seen:
            done = open_saved(conn, directory, tenant, view=True)
            if done is not None:
                return "current", done
        if mode == "catch-up":
            saved = open_saved(conn, directory, tenant, view=False)
            if saved is not None:
                return "caught up", _catch_up(conn, directory, tenant, saved, threads)
        return "built", _build(conn, directory, tenant, threads)


def _build(conn: Any, directory: Path, tenant: str, threads: int) -> Saved:
    """Build the tenant's index and its columns from one snapshot of the store and save them."""
    with _snapshot(conn):
        _, top = _log_bounds(conn)
        keys, matrix = _tenant_matrix(conn, tenant)
        rows = conn.execute(_TENANT_SQL + " ORDER BY v.vector_id", (tenant,)).fetchall()
    row_keys = np.fromiter((r[0] for r in rows), dtype=np.uint64, count=len(rows))
    if not np.array_equal(row_keys, keys):
        # Vectors and records disagree (not expected inside one snapshot): index what both have.
        both = np.intersect1d(keys, row_keys)
        keep = np.isin(keys, both)
        keys, matrix = keys[keep], matrix[keep]
        rows = [r for r, ok in zip(rows, np.isin(row_keys, both).tolist(), strict=True) if ok]
    dims = matrix.shape[1]
    index = _new_index(dims)
    if len(keys):
        index.add(keys, matrix, threads=threads)
    arrays = columns_of(rows, matrix, dims)
    del matrix
    return Saved(index, save(directory, tenant, index, arrays, top, dims), top, dims)


def _catch_up(conn: Any, directory: Path, tenant: str, saved: Saved, threads: int) -> Saved:
    """Apply the changes logged since the saved position to the loaded index and columns, and save them."""
    with _snapshot(conn):
        _, top = _log_bounds(conn)
        ids = changed_ids(conn, tenant, saved.seq, top)
        present = rows_of(conn, ids, tenant)
    index = saved.index
    changed = np.asarray(ids, dtype=np.uint64)
    stale = changed[np.asarray(index.contains(changed), dtype=bool)] if len(changed) else changed
    if len(stale):
        index.remove(stale)
    vectors = np.zeros((len(present), saved.dims), dtype=np.float32)
    for i, row in enumerate(present):
        vectors[i] = np.frombuffer(row[1], dtype=np.float32)
    if present:
        index.add(np.asarray([r[0] for r in present], dtype=np.uint64), vectors, threads=threads)
    meta = [(r[0], *r[2:]) for r in present]
    arrays = merged_columns(saved.columns, changed, meta, vectors, saved.dims)
    return Saved(index, save(directory, tenant, index, arrays, top, saved.dims), top, saved.dims)


def save(directory: Path, tenant: str, index: Any, arrays: dict[str, np.ndarray], seq: int, dims: int) -> IndexColumns:
    """Write the index and its columns under new names, then point the manifest at them (all atomic)."""
    name_stem = stem(tenant)
    name = f"{name_stem}-{seq}-{os.getpid()}.usearch"
    cols_name = f"{name_stem}-{seq}-{os.getpid()}.cols"
    tmp = directory / (cols_name + ".tmp")
    layout = write_columns(tmp, arrays)
    os.replace(tmp, directory / cols_name)
    tmp = directory / (name + ".tmp")
    index.save(str(tmp))
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, directory / name)
    manifest = {
        "format": FORMAT,
        "tenant": tenant,
        "seq": seq,
        "file": name,
        "bytes": (directory / name).stat().st_size,
        "dims": dims,
        "count": len(index),
        "columns": {
            "file": cols_name,
            "bytes": (directory / cols_name).stat().st_size,
            "rows": len(arrays["keys"]),
            "layout": layout,
            "lists_crc": ann_lists.crc(arrays),
        },
    }
    _write_manifest(directory, tenant, manifest)
    # Older files of this tenant are garbage now (an open mapping keeps its inode alive).
    for old in directory.glob(f"{name_stem}-*"):
        if old.name not in (name, cols_name):
            old.unlink(missing_ok=True)
    return IndexColumns.open(directory / cols_name, layout)


def add_sorted_ids(directory: Path, tenant: str) -> tuple[int, IndexColumns] | None:
    """Give a saved columns file written before ``ids_sorted`` that array (the optimize job's upgrade).

    Writes a new ``.cols`` file of the same arrays plus the record ids in
    ``by_id`` order, then points the manifest at it, under the tenant's lock
    and atomically as :func:`save` does; the index file stays. A file without
    the array finds a search's keyword hits through ``by_id`` (0.3 against
    0.1 ms for 50 ids at 1M, warm), and gained it before only at its next
    catch-up or build. Returns the index's position and the new columns, or
    None when there is nothing to do (no readable manifest, or the array is
    there).
    """
    with FileLock(directory / f"{stem(tenant)}.lock"):
        try:
            manifest = json.loads(manifest_path(directory, tenant).read_text(encoding="utf-8"))
            cols = manifest["columns"]
            old = directory / cols["file"]
            if "ids_sorted" in cols["layout"] or old.stat().st_size != cols["bytes"]:
                return None
            columns = IndexColumns.open(old, cols["layout"])
        except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError):
            return None
        arrays = {**columns.arrays, "ids_sorted": columns.ids[columns.by_id]}
        name = f"{stem(tenant)}-{manifest['seq']}-{os.getpid()}-sorted.cols"
        tmp = directory / (name + ".tmp")
        try:
            layout = write_columns(tmp, arrays)
            os.replace(tmp, directory / name)
            manifest["columns"] = {**cols, "file": name, "bytes": (directory / name).stat().st_size, "layout": layout}
            _write_manifest(directory, tenant, manifest)
        except OSError:  # a full disk, a read-only directory: the old file stays in use
            tmp.unlink(missing_ok=True)
            if saved_columns(directory, tenant) != name:
                (directory / name).unlink(missing_ok=True)
            return None
        old.unlink(missing_ok=True)  # a process mapping it keeps it until it lets go
        return int(manifest["seq"]), IndexColumns.open(directory / name, layout)


def _write_manifest(directory: Path, tenant: str, manifest: dict[str, Any]) -> None:
    """Replace the tenant's manifest atomically (write, fsync, rename, fsync the directory)."""
    tmp = directory / f"{stem(tenant)}.json.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, manifest_path(directory, tenant))
    _fsync_dir(directory)


def in_child(db_path: str, tenant: str, mode: str, *, threads: int, seen: int | None) -> str:
    """:func:`work` in a child process (its GIL, not this one's); returns what it did."""
    package_root = str(Path(__file__).resolve().parents[2])  # where this funes is imported from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    request = json.dumps({"db": db_path, "tenant": tenant, "mode": mode, "threads": threads, "seen": seen})
    done = subprocess.run(
        [sys.executable, "-m", "funes.store.ann_build"], input=request, capture_output=True, text=True, env=env
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise RuntimeError(f"the vector index build process failed: {tail[0]}. {RETRY_HINT}")
    return str(json.loads(lines[-1])["done"])


def _main() -> None:
    """The child: read the request from stdin, do the work on its own connection, print what it did."""
    from .connection import Database

    request = json.loads(sys.stdin.read())
    db = Database(request["db"])
    try:
        directory = Path(request["db"] + ".ann")
        seen = request["seen"]
        done, _ = work(
            db.reader(),
            directory,
            str(request["tenant"]),
            str(request["mode"]),
            threads=int(request["threads"]),
            seen=None if seen is None else int(seen),
        )
    finally:
        db.close()
    print(json.dumps({"done": done}), flush=True)


def _new_index(dims: int) -> Any:
    return usearch()(ndim=dims, metric="cos", dtype="f32", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD)


def _tenant_vectors(conn: Any, tenant: str) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM vec_memories WHERE tenant = ?", (tenant,)).fetchone()[0])


def _tenant_matrix(conn: Any, tenant: str) -> tuple[np.ndarray, np.ndarray]:
    """(vector ids ascending, their vectors) of the tenant, filled in place (no list of a million blobs)."""
    count = _tenant_vectors(conn, tenant)
    keys = np.zeros(count, dtype=np.uint64)
    matrix: np.ndarray | None = None
    n = 0
    for vector_id, blob in conn.execute("SELECT vector_id, embedding FROM vec_memories WHERE tenant = ?", (tenant,)):
        vector = np.frombuffer(blob, dtype=np.float32)
        if matrix is None:
            matrix = np.zeros((count, len(vector)), dtype=np.float32)
        if n == count:
            break  # inside one snapshot the count holds; a guard all the same
        keys[n], matrix[n] = vector_id, vector
        n += 1
    if matrix is None:
        return keys[:0], np.zeros((0, 1), dtype=np.float32)
    keys, matrix = keys[:n], matrix[:n]
    if n > 1 and bool((np.diff(keys.astype(np.int64)) < 0).any()):
        order = np.argsort(keys, kind="stable")
        keys, matrix = keys[order], matrix[order]
    return keys, matrix


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileLock:
    """An exclusive flock held for a build, a catch-up or a drop, across processes (and threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


if __name__ == "__main__":
    _main()
