"""Funes beside the libraries a user would pick instead: Chroma, LanceDB and sqlite-vec, one run, same data.

Run from the repository root, with the peers installed (they are a bench
extra, never a runtime dependency)::

    pip install -e ".[bench]"
    .venv/bin/python bench/peers.py --size 100000 --tenants 10 --queries 300     # ~10 min on 2 cores
    .venv/bin/python bench/peers.py --size 10000 --queries 50                    # quick

Every system gets the same thing: ``store_bench``'s synthetic memories (384-dim
unit vectors from a topic mixture), spread round-robin over ``--tenants``
tenants in ONE collection / table, and the same query vectors, each scoped to
the first tenant (the tenant filter every multi-user app needs). Reported per
system: insert throughput, files on disk, vector top-10 p50/p95 with the
tenant filter, recall@10 against an exact numpy scan of that tenant, and the
ratio of its p50 to Funes'. Nothing expires in this data, so every system
answers the same question. Insert throughput is not like for like: Funes
also writes the text, its keyword index, metadata and change log, while the
peers here store a vector and a tenant.

* **Funes**: ``SqliteStore.vector_search`` (sqlite-vec partitioned by tenant;
  a tenant of ``ann_min`` vectors or more answers from its HNSW index, built
  here as the worker's ``ann-index`` job would) and the hybrid store path
  (keyword + vector + fusion + record fetch, ``Core._search`` as
  ``store_bench`` measures it) for reference.
* **Chroma** (PersistentClient, HNSW, cosine): ``where={"tenant": T}``.
* **LanceDB**: exact (prefiltered flat scan) and with an IVF_HNSW_SQ index.
* **sqlite-vec**: a ``vec0`` table with ``tenant text partition key``, exact.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma: never phone home
os.environ.setdefault("RUST_LOG", "error")  # LanceDB: no per-query deprecation warnings
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from store_bench import Corpus, pct

from funes.models import EmbedderIdentity, SearchFilters
from funes.store.sqlite import SqliteStore

DIMS = 384
K = 10


@dataclass
class Result:
    """One system's figures."""

    name: str
    insert_per_s: float
    disk_mb: float
    p50_ms: float
    p95_ms: float
    recall: float
    note: str = ""


def need(module: str) -> Any:
    """Import a peer, or stop with what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        sys.exit(f"bench/peers.py needs {module}: pip install -e '.[bench]' (chromadb, lancedb, sqlite-vec).")


def disk_mb(path: str) -> float:
    """Bytes under a file or folder, in MB."""
    p = Path(path)
    files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files) / 1e6


def timed(queries: np.ndarray, search: Callable[[np.ndarray], list[str]]) -> tuple[list[list[str]], list[float]]:
    """Run every query once after two warm-ups; the answers and the seconds each took."""
    for q in queries[:2]:
        search(q)
    answers, seconds = [], []
    for q in queries:
        start = time.perf_counter()
        answers.append(search(q))
        seconds.append(time.perf_counter() - start)
    return answers, seconds


def recall(answers: Sequence[Sequence[str]], truth: Sequence[Sequence[str]]) -> float:
    """Mean share of the exact top 10 found."""
    return float(np.mean([len(set(a[:K]) & set(t)) / len(t) for a, t in zip(answers, truth, strict=True) if t]))


def result(name: str, inserted: int, insert_s: float, path: str, answers: Any, seconds: Any, truth: Any) -> Result:
    return Result(name, inserted / insert_s, disk_mb(path), pct(seconds, 50), pct(seconds, 95), recall(answers, truth))


# -- the systems -------------------------------------------------------------------------------
def run_funes(work: str, batches: list[Any], queries: np.ndarray, tenant: str, truth: Any) -> list[Result]:
    path = os.path.join(work, "funes.db")
    store = SqliteStore(path)
    store.set_identity(EmbedderIdentity("bench", DIMS))
    start = time.perf_counter()
    count = 0
    for items in batches:
        store.put_many(items)
        count += len(items)
    insert_s = time.perf_counter() - start
    built = store.maintain_index(tenant)  # what the ann-index job does for a large tenant
    filters = SearchFilters(tenant=tenant)
    answers, seconds = timed(queries, lambda q: [i for i, _ in store.vector_search(q, filters, k=K)])
    out = [result("funes (vector leg)", count, insert_s, path, answers, seconds, truth)]
    out[0].note = f"index: {built}"
    store.close()
    return out


def run_chroma(
    work: str, rows: list[tuple[str, str, np.ndarray]], queries: np.ndarray, tenant: str, truth: Any
) -> Result:
    chromadb = need("chromadb")
    from chromadb.config import Settings

    path = os.path.join(work, "chroma")
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("memories", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    step = min(5000, client.get_max_batch_size())
    start = time.perf_counter()
    for i in range(0, len(rows), step):
        part = rows[i : i + step]
        col.add(
            ids=[r[0] for r in part],
            embeddings=np.stack([r[2] for r in part]),
            metadatas=[{"tenant": r[1]} for r in part],
        )
    insert_s = time.perf_counter() - start

    def search(q: np.ndarray) -> list[str]:
        return list(col.query(query_embeddings=[q], n_results=K, where={"tenant": tenant}, include=[])["ids"][0])

    answers, seconds = timed(queries, search)
    return result("chroma (HNSW, where=tenant)", len(rows), insert_s, path, answers, seconds, truth)


def run_lancedb(
    work: str, rows: list[tuple[str, str, np.ndarray]], queries: np.ndarray, tenant: str, truth: Any
) -> list[Result]:
    lancedb = need("lancedb")
    import pyarrow as pa

    path = os.path.join(work, "lance")
    db = lancedb.connect(path)
    schema = pa.schema(
        [pa.field("id", pa.string()), pa.field("tenant", pa.string()), pa.field("vector", pa.list_(pa.float32(), DIMS))]
    )
    table = db.create_table("memories", schema=schema)
    step = 10_000
    start = time.perf_counter()
    for i in range(0, len(rows), step):
        part = rows[i : i + step]
        vectors = np.stack([r[2] for r in part]).astype(np.float32)
        table.add(
            pa.table(
                {
                    "id": [r[0] for r in part],
                    "tenant": [r[1] for r in part],
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMS),
                },
                schema=schema,
            )
        )
    insert_s = time.perf_counter() - start
    where = f"tenant = '{tenant}'"

    def exact(q: np.ndarray) -> list[str]:
        query = table.search(q).distance_type("cosine").where(where, prefilter=True).limit(K).select(["id"])
        return list(query.to_arrow()["id"].to_pylist())

    answers, seconds = timed(queries, exact)
    out = [result("lancedb (exact, prefilter)", len(rows), insert_s, path, answers, seconds, truth)]
    start = time.perf_counter()
    table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    build_s = time.perf_counter() - start

    def indexed(q: np.ndarray) -> list[str]:
        query = table.search(q).distance_type("cosine").where(where, prefilter=True).limit(K).select(["id"])
        return list(query.to_arrow()["id"].to_pylist())

    answers, seconds = timed(queries, indexed)
    ann = result("lancedb (IVF_HNSW_SQ, prefilter)", len(rows), insert_s, path, answers, seconds, truth)
    ann.note = f"index build {build_s:.1f} s"
    out.append(ann)
    return out


def run_sqlite_vec(
    work: str, rows: list[tuple[str, str, np.ndarray]], queries: np.ndarray, tenant: str, truth: Any
) -> Result:
    import sqlite_vec

    from funes.store.connection import driver

    path = os.path.join(work, "vec.db")
    conn = driver().connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(
        f"CREATE VIRTUAL TABLE v USING vec0(tenant text partition key, embedding float[{DIMS}] distance_metric=cosine)"
    )
    ids = [r[0] for r in rows]
    start = time.perf_counter()
    conn.execute("BEGIN")
    for n, (_, t, vec) in enumerate(rows, start=1):
        conn.execute(
            "INSERT INTO v(rowid, tenant, embedding) VALUES (?, ?, ?)", (n, t, vec.astype(np.float32).tobytes())
        )
    conn.execute("COMMIT")
    insert_s = time.perf_counter() - start

    def search(q: np.ndarray) -> list[str]:
        got = conn.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? AND tenant = ?",
            (q.astype(np.float32).tobytes(), K, tenant),
        ).fetchall()
        return [ids[int(r[0]) - 1] for r in got]

    answers, seconds = timed(queries, search)
    out = result("sqlite-vec (vec0, partition key)", len(rows), insert_s, path, answers, seconds, truth)
    conn.close()
    return out


# -- the run -----------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000, help="Records in all (spread over the tenants).")
    ap.add_argument("--tenants", type=int, default=10, help="Tenants in the one collection; queries use the first.")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--skip", default="", help="Comma-separated systems to leave out: chroma,lancedb,sqlite-vec.")
    ap.add_argument("--json", type=Path, help="Also write the figures here.")
    ap.add_argument("--workdir", help="Keep the stores here (default: a temporary folder, removed).")
    args = ap.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    tenants = [f"t{i}" for i in range(args.tenants)]
    corpus = Corpus(seed=11, tenants=tenants)
    now = datetime.now(UTC)
    batches = []
    for begin in range(0, args.size, 5000):
        items, _, _ = corpus.records(
            begin, min(5000, args.size - begin), args.size, lambda i: tenants[i % len(tenants)], now
        )
        # Nothing expires here, so every system is asked the same question.
        batches.append([(replace(m, expires_at=None), v) for m, v in items])
    rows = [(m.id, m.tenant, v[0]) for items in batches for m, v in items]
    target = tenants[0]
    mine = [(i, v) for i, t, v in rows if t == target]
    matrix = np.stack([v for _, v in mine])
    queries = np.stack([corpus.query("rare")[1] for _ in range(args.queries)])
    truth = []
    for q in queries:
        best = np.argpartition(-(matrix @ q), K)[:K]
        truth.append([mine[int(i)][0] for i in best])
    work = args.workdir or tempfile.mkdtemp(prefix="funes-peers-")
    os.makedirs(work, exist_ok=True)
    print(f"{args.size:,} records over {args.tenants} tenants; queries scoped to {target} ({len(mine):,} records)")
    results: list[Result] = []
    try:
        results += run_funes(work, batches, queries, target, truth)
        if "chroma" not in skip:
            results.append(run_chroma(work, rows, queries, target, truth))
        if "lancedb" not in skip:
            results += run_lancedb(work, rows, queries, target, truth)
        if "sqlite-vec" not in skip:
            results.append(run_sqlite_vec(work, rows, queries, target, truth))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    base = results[0].p50_ms
    print("\n| system | insert (records/s) | disk (MB) | top-10 p50 (ms) | p95 (ms) | recall@10 | p50 / Funes | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r.name} | {r.insert_per_s:,.0f} | {r.disk_mb:.0f} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | "
            f"{r.recall:.4f} | {r.p50_ms / base:.1f}x | {r.note} |"
        )
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
