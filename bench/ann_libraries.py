"""The ANN library choice, measured: usearch, hnswlib, faiss-cpu and sqlite-vec's own options (issue 16).

Run through ``bench/ann_bench.py --libraries`` (the bench extra installs the
libraries: ``pip install 'funes-memory[bench]'``)::

    python bench/ann_bench.py --libraries --size 100000 --queries 200

Every library indexes the same ``--size`` vectors of ``store_bench``'s
Gaussian mixture (384 dims, unit length) and answers the same queries, one at
a time on one thread; recall@10 is against numpy's exact top 10.

* HNSW libraries (usearch f32, hnswlib, faiss ``IndexHNSWFlat`` with inner
  product): M=16, ef_construction=128, built on 2 threads; searched at ef 64
  and 128.
* sqlite-vec 0.1.9 has no ANN index. Its options are the exact ``float[384]``
  scan, and ``int8[384]`` / ``bit[384]`` columns (``vec_quantize_int8``,
  ``vec_quantize_binary``) whose top ``pool`` candidates are rescored exactly
  from the float vectors kept in an ordinary table; ``pool`` plays the part of
  ef (64 and 128, and 512 to show what the quantized scans need).

For each index saved to disk, a new object opens it the way the library
offers (usearch ``restore(view=True)``, hnswlib ``load_index``, faiss
``read_index(IO_FLAG_MMAP_IFC)``, a new SQLite connection) and answers one
query: the open time, and how much of the process's memory that took as
private (anonymous) memory versus file-backed pages, say whether the library
memory-maps the saved index or reads it in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from store_bench import DIMS, Corpus, pct

M, EF_CONSTRUCTION = 16, 128
EFS = (64, 128)
POOLS = (64, 128, 512)
BUILD_THREADS = 2


@dataclass
class Result:
    """One line of the comparison."""

    library: str
    build_s: float
    ef: int
    p50: float
    p95: float
    recall: float
    disk_mb: float
    open_ms: float
    anon_mb: float
    file_mb: float
    mmap: str


def _memory() -> tuple[float, float]:
    """(anonymous, file-backed) resident MB of this process."""
    fields = {}
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(("RssAnon:", "RssFile:")):
            name, value = row.split(":")
            fields[name] = int(value.split()[0]) / 1024
    return fields.get("RssAnon", 0.0), fields.get("RssFile", 0.0)


def _data(size: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[set[int]]]:
    corpus = Corpus(seed=seed, tenants=["t"])
    chunks = [
        corpus.vectors(corpus.rng.integers(0, len(corpus.centres), min(10_000, size - start)))
        for start in range(0, size, 10_000)
    ]
    vectors = np.ascontiguousarray(np.concatenate(chunks))
    qs = np.stack([corpus.query("rare")[1] for _ in range(queries)])
    truth = [set(np.argsort(-(vectors @ q))[:10].tolist()) for q in qs]
    return vectors, qs, truth


def _measure(search: Callable[[np.ndarray], Any], qs: np.ndarray, truth: list[set[int]]) -> tuple[float, float, float]:
    for q in qs[:10]:
        search(q)
    times, shares = [], []
    for q, best in zip(qs, truth, strict=True):
        t0 = time.perf_counter()
        found = search(q)
        times.append(time.perf_counter() - t0)
        shares.append(len({int(i) for i in found} & best) / 10)
    return pct(times, 50), pct(times, 95), float(np.mean(shares))


PROBE = """
import json, sys, time
sys.path.insert(0, {src!r})
import numpy as np
{imports}

def memory():
    fields = dict(row.split(":", 1) for row in open("/proc/self/status").read().splitlines() if ":" in row)
    return int(fields["RssAnon"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024

q = np.full({dims}, {dims} ** -0.5, dtype=np.float32)
anon, filed = memory()
t0 = time.perf_counter()
{open}
{query}
ms = (time.perf_counter() - t0) * 1000
print(json.dumps([ms, memory()[0] - anon, memory()[1] - filed]))
"""


def _probe(imports: str, open_code: str, query: str, runs: int = 3) -> tuple[float, float, float]:
    """A fresh process opens the saved index and answers one query: (median ms, private MB, file-backed MB).

    Imports are done before the clock starts; the memory is what opening and one query added to the process.
    """
    src = str(Path(__file__).resolve().parents[1] / "src")
    code = PROBE.format(src=src, imports=imports, dims=DIMS, open=open_code, query=query)
    got = [
        json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(runs)
    ]
    return float(np.median([g[0] for g in got])), got[-1][1], got[-1][2]


def _sweep(
    name: str,
    build: float,
    path: Path,
    probe: tuple[float, float, float],
    mmap: str,
    at: Callable[[int], Callable[[np.ndarray], Any]],
    qs: np.ndarray,
    truth: list[set[int]],
    settings: Sequence[int] = EFS,
) -> list[Result]:
    """One line per search setting (beam, or rescoring pool): ``at(s)`` applies it and gives the top-10 query."""
    size = path.stat().st_size / 1e6
    out = []
    for setting in settings:
        p50, p95, recall = _measure(at(setting), qs, truth)
        out.append(Result(name, build, setting, p50, p95, recall, size, *probe, mmap))
    return out


def _usearch(vectors: np.ndarray, qs: np.ndarray, truth: list[set[int]], work: Path) -> list[Result]:
    import usearch
    from usearch.index import Index

    index = Index(ndim=DIMS, metric="cos", dtype="f32", connectivity=M, expansion_add=EF_CONSTRUCTION)
    t0 = time.perf_counter()
    index.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=BUILD_THREADS)
    build = time.perf_counter() - t0
    path = work / "usearch.idx"
    index.save(str(path))
    del index
    ms, anon, filed = _probe(
        "from usearch.index import Index",
        f"index = Index.restore({str(path)!r}, view=True)",
        "index.search(q, 10, threads=1)",
    )
    view = Index.restore(str(path), view=True)

    def at(ef: int) -> Callable[[np.ndarray], Any]:
        view.expansion_search = ef
        return lambda q: view.search(q, 10, threads=1).keys

    name = f"usearch {usearch.__version__} (f32)"
    return _sweep(name, build, path, (ms, anon, filed), "yes: Index.restore(view=True)", at, qs, truth)


def _hnswlib(vectors: np.ndarray, qs: np.ndarray, truth: list[set[int]], work: Path) -> list[Result]:
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=DIMS)
    index.init_index(max_elements=len(vectors), ef_construction=EF_CONSTRUCTION, M=M)
    t0 = time.perf_counter()
    index.add_items(vectors, np.arange(len(vectors)), num_threads=BUILD_THREADS)
    build = time.perf_counter() - t0
    path = work / "hnswlib.idx"
    index.save_index(str(path))
    del index

    def load() -> Any:
        loaded = hnswlib.Index(space="cosine", dim=DIMS)
        loaded.load_index(str(path))
        return loaded

    ms, anon, filed = _probe(
        "import hnswlib",
        f"index = hnswlib.Index(space='cosine', dim={DIMS}); index.load_index({str(path)!r})",
        "index.knn_query(q, k=10, num_threads=1)",
    )
    loaded = load()

    def at(ef: int) -> Callable[[np.ndarray], Any]:
        loaded.set_ef(ef)
        return lambda q: loaded.knn_query(q, k=10, num_threads=1)[0][0]

    name = f"hnswlib {getattr(hnswlib, '__version__', '0.8')}"
    return _sweep(name, build, path, (ms, anon, filed), "no: load_index reads the whole file", at, qs, truth)


def _faiss(vectors: np.ndarray, qs: np.ndarray, truth: list[set[int]], work: Path) -> list[Result]:
    import faiss

    index = faiss.IndexHNSWFlat(DIMS, M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    faiss.omp_set_num_threads(BUILD_THREADS)
    t0 = time.perf_counter()
    index.add(vectors)
    build = time.perf_counter() - t0
    faiss.omp_set_num_threads(1)
    path = work / "faiss.idx"
    faiss.write_index(index, str(path))
    del index
    ms, anon, filed = _probe(
        "import faiss; faiss.omp_set_num_threads(1)",
        f"index = faiss.read_index({str(path)!r}, faiss.IO_FLAG_MMAP_IFC)",
        "index.search(q[None, :], 10)",
    )
    mapped = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)

    def at(ef: int) -> Callable[[np.ndarray], Any]:
        mapped.hnsw.efSearch = ef
        return lambda q: mapped.search(q[None, :], 10)[1][0]

    name = f"faiss-cpu {faiss.__version__} IndexHNSWFlat (IP)"
    return _sweep(name, build, path, (ms, anon, filed), "yes: read_index(IO_FLAG_MMAP_IFC)", at, qs, truth)


def _sqlite_vec(vectors: np.ndarray, qs: np.ndarray, truth: list[set[int]], work: Path) -> list[Result]:
    import sqlite_vec

    from funes.store.connection import driver

    columns = {
        "float": (f"float[{DIMS}] distance_metric=cosine", "?"),
        "int8": (f"int8[{DIMS}] distance_metric=cosine", "vec_quantize_int8(?, 'unit')"),
        "bit": (f"bit[{DIMS}]", "vec_quantize_binary(?)"),
    }

    def connect(path: Path) -> Any:
        conn = driver().connect(str(path), isolation_level=None, check_same_thread=False)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        return conn

    def search(conn: Any, q: np.ndarray, name: str, pool: int) -> list[int]:
        """Exact float KNN, or a quantized scan's top ``pool`` rescored with the float vectors."""
        wrap = columns[name][1]
        sql = f"SELECT rowid FROM v WHERE embedding MATCH {wrap} AND k = ?"
        ids = [r for (r,) in conn.execute(sql, (q.tobytes(), pool or 10))]
        if not pool:
            return [r - 1 for r in ids]
        marks = ",".join("?" * len(ids))
        got = conn.execute(f"SELECT rowid, v FROM floats WHERE rowid IN ({marks})", ids).fetchall()
        matrix = np.frombuffer(b"".join(v for _, v in got), dtype=np.float32).reshape(len(got), DIMS)
        return [got[int(i)][0] - 1 for i in np.argsort(-(matrix @ q))[:10]]

    out = []
    for name, (column, wrap) in columns.items():
        # One database per option, holding what that option needs: the vec0 table, and for the
        # quantized ones the float vectors to rescore from.
        path = work / f"sqlite-vec-{name}.db"
        conn = connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding {column})")
        if name != "float":
            conn.execute("CREATE TABLE floats(rowid INTEGER PRIMARY KEY, v BLOB)")
        t0 = time.perf_counter()
        for start in range(0, len(vectors), 5000):
            rows = [(i + 1, vectors[i].tobytes()) for i in range(start, min(start + 5000, len(vectors)))]
            conn.execute("BEGIN")
            conn.executemany(f"INSERT INTO v(rowid, embedding) VALUES (?, {wrap})", rows)
            if name != "float":
                conn.executemany("INSERT INTO floats VALUES (?, ?)", rows)
            conn.execute("COMMIT")
        build = time.perf_counter() - t0
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        pool = 0 if name == "float" else POOLS[0]
        rescore = (
            ""
            if name == "float"
            else "; marks = ','.join('?' * len(ids)); "
            "rows = conn.execute(f'SELECT v FROM floats WHERE rowid IN ({marks})', ids).fetchall()"
        )
        ms, anon, filed = _probe(
            "import sqlite_vec; from funes.store.connection import driver",
            f"conn = driver().connect({str(path)!r}); conn.enable_load_extension(True); sqlite_vec.load(conn)",
            f'ids = [r for (r,) in conn.execute("SELECT rowid FROM v WHERE embedding MATCH {wrap} AND k = ?", '
            f"(q.tobytes(), {pool or 10}))]{rescore}",
        )
        conn = connect(path)
        version = f"sqlite-vec {conn.execute('SELECT vec_version()').fetchone()[0]}"
        label = f"{version} float[384], exact scan" if name == "float" else f"{version} {name}[384] + float rescoring"
        out += _sweep(
            label,
            build,
            path,
            (ms, anon, filed),
            "yes: SQLite pages, read on demand",
            lambda pool, n=name, c=conn: lambda q: search(c, q, n, pool),
            qs,
            truth,
            settings=(0,) if name == "float" else POOLS,
        )
        conn.close()
    return out


LIBRARIES = {"usearch": _usearch, "hnswlib": _hnswlib, "faiss": _faiss, "sqlite-vec": _sqlite_vec}


def run(size: int, queries: int, seed: int = 7, libraries: str = "usearch,hnswlib,faiss,sqlite-vec") -> None:
    """Measure every library on the same vectors and print a markdown table."""
    names = [n.strip() for n in libraries.split(",") if n.strip()]
    unknown = [n for n in names if n not in LIBRARIES]
    if unknown:
        raise SystemExit(f"unknown librar(ies) {', '.join(unknown)}; choose from {', '.join(LIBRARIES)}")
    for name in names:
        module = {"faiss": "faiss", "sqlite-vec": "sqlite_vec"}.get(name, name)
        try:
            __import__(module)
        except ImportError:
            raise SystemExit(f"{name} is not installed. Run: pip install 'funes-memory[bench]'") from None
    vectors, qs, truth = _data(size, queries, seed)
    print(f"{size:,} vectors x {DIMS}, {queries} queries, {os.cpu_count()} cores", flush=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="funes-ann-libs-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            got = LIBRARIES[name](vectors, qs, truth, Path(tmp))
            for r in got:
                print(
                    f"  {r.library:<48} ef/pool {r.ef:>4}  p50 {r.p50:7.3f} ms  p95 {r.p95:7.3f} ms  "
                    f"recall@10 {r.recall:.4f}",
                    flush=True,
                )
            print(f"  ({name}: {time.perf_counter() - t0:.0f} s)", flush=True)
            results += got
    print()
    print(
        f"| library | build ({BUILD_THREADS} threads; sqlite-vec: inserts) | ef / pool | p50 | p95 | recall@10 "
        "| on disk | open saved + 1st query | private / file-backed memory after open | memory-maps a saved index |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.library} | {r.build_s:.1f} s | {r.ef or 'exact'} | {r.p50:.2f} ms | {r.p95:.2f} ms "
            f"| {r.recall:.4f} | {r.disk_mb:.0f} MB | {r.open_ms:.1f} ms | {r.anon_mb:+.0f} / {r.file_mb:+.0f} MB "
            f"| {r.mmap} |"
        )
