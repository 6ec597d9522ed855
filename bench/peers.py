"""Funes beside the libraries a user would pick instead: Chroma, LanceDB and sqlite-vec (issue 16).

Run from the repository root, in an environment with the bench extra
(``pip install 'funes-memory[bench]'``)::

    python bench/peers.py --size 100000 --tenants 4 --queries 200 --json peers.json
    python bench/peers.py --size 10000 --queries 100          # quick

Every system gets the same records (``store_bench``'s synthetic memories:
384-dim vectors from a Gaussian mixture, Zipf text), spread round-robin over
``--tenants`` tenants in ONE collection/table/store, and answers the same
queries, each scoped to one tenant, on the same machine in the same process:

* Funes: ``SqliteStore.vector_search(k=10)`` as the store serves it with its
  default settings (sqlite-vec, the in-memory copy of large tenants or their
  HNSW index, whichever applies; the line says which), the same call with
  every tenant's HNSW index forced (``ann_min=1``), and the hybrid store path
  (``Funes._search``: keyword leg, vector leg, fusion, record fetch; the query
  vector precomputed) as ``store_bench.py`` measures it;
* Chroma (``PersistentClient``, HNSW cosine, M=16, ef_construction=128,
  ef_search=128, ``where={"tenant": T}``);
* LanceDB (``lancedb.connect``, a bitmap index on ``tenant`` and
  ``where("tenant = 'T'", prefilter=True)``): exact (no vector index), then
  IVF_PQ (refine_factor 10) and IVF_HNSW_SQ (M=16, ef_construction=128, ef=128);
* sqlite-vec alone: ``vec0(tenant text partition key, embedding float[384]
  distance_metric=cosine, +id text, +content text)``, exact;
* numpy brute force over the tenant's vectors: the reference for recall@10
  and a latency baseline.

Printed: insert throughput (same batches), index build time, size on disk,
p50/p95 of one query, recall@10, and each line's p50 and p95 over Funes'
vector p50 and p95 (``x`` > 1 means slower than Funes).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the numpy baseline scans on one thread, as Funes does
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma: no network, ever
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from store_bench import DIMS, Corpus, pct

from funes.models import Memory, SearchFilters

PEERS = {"chroma": "chromadb", "lancedb": "lancedb", "sqlite-vec": "sqlite_vec"}
INSTALL = "pip install 'funes-memory[bench]'"
WARM = 3  # untimed searches per tenant first (loads caches, maps files)
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF = 16, 128, 128  # Funes' own index settings (store/ann_index.py)


@dataclass
class Data:
    """The records and queries every system gets."""

    ids: list[str]
    tenants: list[str]
    tenant_of: list[str]
    texts: list[str]
    vectors: np.ndarray
    batches: list[list[tuple[Memory, list[np.ndarray]]]]
    queries: list[tuple[str, str, np.ndarray]]  # (tenant, text, vector)
    truth: list[set[int]]  # record indices of the exact top-10 in the query's tenant


@dataclass
class Line:
    """One line of the report."""

    system: str
    config: str
    insert: float | None = None  # records/s
    build: float | None = None  # s
    disk: float | None = None  # bytes
    p50: float = 0.0  # ms
    p95: float = 0.0
    recall: float | None = None
    note: str = ""


@dataclass
class Timed:
    """Latencies (s) and recall of one query loop."""

    times: list[float]
    recall: float


def require(names: Sequence[str]) -> None:
    """Fail at once, before any long work, when a peer's library is missing."""
    missing = []
    for name in names:
        try:
            importlib.import_module(PEERS[name])
        except ImportError:
            missing.append(f"{name} ({PEERS[name]})")
    if missing:
        raise SystemExit(f"Not installed: {', '.join(missing)}. Run: {INSTALL} (or leave them out with --peers).")


def make_data(args: argparse.Namespace) -> Data:
    """Records through ``store_bench.Corpus`` (no expiries: every system holds the same live set) and queries."""
    tenants = [f"t{i:02d}" for i in range(args.tenants)]
    corpus = Corpus(seed=args.seed, tenants=tenants)
    now = datetime.now(UTC)
    batches, chunks = [], []
    for start in range(0, args.size, args.batch):
        items, vecs, _ = corpus.records(
            start, min(args.batch, args.size - start), args.size, lambda i: tenants[i % len(tenants)], now
        )
        batches.append([(dataclasses.replace(m, expires_at=None), v) for m, v in items])
        chunks.append(vecs)
    flat = [m for batch in batches for m, _ in batch]
    vectors = np.ascontiguousarray(np.concatenate(chunks))
    tenant_of = [m.tenant for m in flat]
    queries = []
    for _ in range(args.queries):
        text, vec = corpus.query("rare" if len(queries) % 2 else "common")
        queries.append((tenants[int(corpus.rng.integers(0, len(tenants)))], text, vec))
    owner = np.array([tenants.index(t) for t in tenant_of])
    rows = {t: np.flatnonzero(owner == n) for n, t in enumerate(tenants)}
    truth = []
    for tenant, _, vec in queries:
        sims = vectors[rows[tenant]] @ vec
        truth.append({int(i) for i in rows[tenant][np.argsort(-sims)[:10]]})
    return Data([m.id for m in flat], tenants, tenant_of, [m.content for m in flat], vectors, batches, queries, truth)


def run_queries(data: Data, search: Callable[[str, str, np.ndarray], list[int]]) -> Timed:
    """Warm every tenant up, then time each query; ``search`` returns record indices."""
    for tenant in data.tenants:
        for _, _, vec in data.queries[:WARM]:
            search(tenant, "", vec)
    times, shares = [], []
    for (tenant, text, vec), truth in zip(data.queries, data.truth, strict=True):
        t0 = time.perf_counter()
        found = search(tenant, text, vec)
        times.append(time.perf_counter() - t0)
        shares.append(len(set(found[:10]) & truth) / len(truth))
    return Timed(times, float(np.mean(shares)))


def line(system: str, config: str, timed: Timed, **kw: Any) -> Line:
    """A report line from a query loop."""
    return Line(system, config, p50=pct(timed.times, 50), p95=pct(timed.times, 95), recall=timed.recall, **kw)


def du(*paths: Path) -> int:
    """Bytes of the files at or under the given paths."""
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return total


# -- the systems ------------------------------------------------------------------


def bench_numpy(data: Data) -> list[Line]:
    """Exact cosine over the tenant's vectors in memory (the recall reference)."""
    index = {t: np.flatnonzero(np.array(data.tenant_of) == t) for t in data.tenants}
    matrices = {t: np.ascontiguousarray(data.vectors[rows]) for t, rows in index.items()}

    def search(tenant: str, _text: str, vec: np.ndarray) -> list[int]:
        sims = matrices[tenant] @ vec
        best = np.argpartition(-sims, 10)[:10]
        return [int(index[tenant][i]) for i in best[np.argsort(-sims[best])]]

    return [line("numpy brute force", "exact, 1 BLAS thread, in memory", run_queries(data, search))]


def bench_funes(data: Data, work: Path, hybrid: bool) -> list[Line]:
    """Funes' store as configured, then with every tenant's HNSW index, then the hybrid store path."""
    from funes.providers.embed import HashEmbedder
    from funes.service import open as open_funes
    from funes.store.sqlite import SqliteStore

    path = work / "funes.db"
    svc = open_funes(str(path), embedder=HashEmbedder(DIMS), worker="off", query_threads=1)
    store = svc.store
    position = {mid: i for i, mid in enumerate(data.ids)}
    insert = 0.0
    for batch in data.batches:
        t0 = time.perf_counter()
        store.put_many(batch)
        insert += time.perf_counter() - t0
    store.db.reader().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    # Tenants over ann_min get their index from the `ann-index` job; run it as a worker would.
    per_tenant = len(data.ids) // len(data.tenants)
    t0 = time.perf_counter()
    built = [t for t in data.tenants if store.maintain_index(t) == "built"]
    build = time.perf_counter() - t0 if built else None
    disk = du(path, Path(f"{path}-wal"), Path(f"{path}.ann"))
    now = datetime.now(UTC)

    def vector(on: SqliteStore) -> Callable[[str, str, np.ndarray], list[int]]:
        def search(tenant: str, _text: str, vec: np.ndarray) -> list[int]:
            return [position[i] for i, _ in on.vector_search(vec, SearchFilters(tenant=tenant), k=10, now=now)]

        return search

    timed = run_queries(data, vector(store))
    served = (
        "HNSW index"
        if store.ann._tenants
        else "in-memory exact copy"
        if store.vector_cache._tenants
        else "sqlite-vec exact scan"
    )
    lines = [
        line(
            "Funes",
            f"vector_search k=10, default settings: {served}",
            timed,
            insert=len(data.ids) / insert,
            build=build,
            disk=disk,
            note=f"{per_tenant:,}/tenant; vector_cache_min {store.vector_cache.min_vectors:,}, "
            f"ann_min {store.ann.min_vectors:,}",
        )
    ]
    if hybrid:

        def hybrid_search(tenant: str, text: str, vec: np.ndarray) -> list[int]:
            svc.embedding.embed_query = lambda _q: vec  # the store path only: no model
            found = svc.core.hybrid.search(text or "memory", SearchFilters(tenant=tenant), now, 10, None, None)
            return [position[h.memory.id] for h in found]

        timed = run_queries(data, hybrid_search)
        del svc.embedding.embed_query
        lines.append(
            Line(
                "Funes",
                "hybrid store path (Funes._search: BM25 + vector + fusion + fetch)",
                p50=pct(timed.times, 50),
                p95=pct(timed.times, 95),
                note=f"fused ranking: {timed.recall:.2f} of its top 10 are in the vector top 10",
            )
        )
    if not store.ann._tenants:
        # The same store with every tenant answered from its HNSW index (one-thread build, as the job does).
        forced = SqliteStore(str(path), vector_cache_min=0, ann_min=1)
        t0 = time.perf_counter()
        for tenant in data.tenants:
            forced.maintain_index(tenant)
        build = time.perf_counter() - t0
        timed = run_queries(data, vector(forced))
        lines.append(
            line(
                "Funes",
                "vector_search k=10, HNSW index forced (ann_min=1)",
                timed,
                build=build,
                disk=du(path, Path(f"{path}-wal"), Path(f"{path}.ann")),
                note=f"usearch M={HNSW_M}, build 1 thread",
            )
        )
        forced.close()
    svc.close()
    return lines


def bench_chroma(data: Data, work: Path) -> list[Line]:
    """Chroma's persistent local client: one collection, the tenant as metadata, HNSW cosine."""
    import chromadb
    from chromadb.config import Settings

    folder = work / "chroma"
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    collection = client.create_collection(
        "memories",
        embedding_function=None,
        configuration={
            "hnsw": {
                "space": "cosine",
                "max_neighbors": HNSW_M,
                "ef_construction": HNSW_EF_CONSTRUCTION,
                "ef_search": HNSW_EF,
            }
        },
    )
    position = {mid: i for i, mid in enumerate(data.ids)}
    step = min(client.get_max_batch_size(), max(len(b) for b in data.batches))
    insert = 0.0
    for start in range(0, len(data.ids), step):
        end = min(start + step, len(data.ids))
        t0 = time.perf_counter()
        collection.add(
            ids=data.ids[start:end],
            embeddings=data.vectors[start:end],
            metadatas=[{"tenant": t} for t in data.tenant_of[start:end]],
            documents=data.texts[start:end],
        )
        insert += time.perf_counter() - t0

    def search(tenant: str, _text: str, vec: np.ndarray) -> list[int]:
        found = collection.query(query_embeddings=[vec], n_results=10, where={"tenant": tenant}, include=[])
        return [position[i] for i in found["ids"][0]]

    timed = run_queries(data, search)
    result = line(
        "Chroma",
        f"HNSW cosine M={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION}, ef_search={HNSW_EF}, where tenant",
        timed,
        insert=len(data.ids) / insert,
        disk=du(folder),
        note=f"chromadb {chromadb.__version__}; insert includes its HNSW and FTS upkeep",
    )
    return [result]


def compact(table: Any) -> None:
    """Merge small fragments and drop old versions (nothing else uses the table, so its warning does not apply)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)", category=UserWarning)
        table.optimize(cleanup_older_than=timedelta(0))


def bench_lancedb(data: Data, work: Path, indexes: Sequence[str]) -> list[Line]:
    """LanceDB: one table, a bitmap index on tenant, exact search, then each vector index in turn."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import Bitmap, HnswSq, IvfPq

    folder = work / "lancedb"
    db = lancedb.connect(str(folder))
    schema = pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("tenant", pa.string()),
            pa.field("content", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), DIMS)),
        ]
    )
    table = db.create_table("memories", schema=schema)
    position = {mid: i for i, mid in enumerate(data.ids)}
    insert = 0.0
    start = 0
    for batch in data.batches:
        end = start + len(batch)
        frame = pa.table(
            {
                "id": data.ids[start:end],
                "tenant": data.tenant_of[start:end],
                "content": data.texts[start:end],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(data.vectors[start:end].ravel()), DIMS),
            },
            schema=schema,
        )
        t0 = time.perf_counter()
        table.add(frame)
        insert += time.perf_counter() - t0
        start = end
    # What a user does after bulk appends: compact the fragments, drop old versions, index the filter column.
    t0 = time.perf_counter()
    compact(table)
    table.create_index("tenant", config=Bitmap())
    prepare = time.perf_counter() - t0

    def searcher(**tuning: Any) -> Callable[[str, str, np.ndarray], list[int]]:
        def search(tenant: str, _text: str, vec: np.ndarray) -> list[int]:
            query = table.search(vec).distance_type("cosine").where(f"tenant = '{tenant}'", prefilter=True)
            for name, value in tuning.items():
                query = getattr(query, name)(value)
            found = query.limit(10).select(["id", "_distance"]).to_arrow()
            return [position[i] for i in found["id"].to_pylist()]

        return search

    version = lancedb.__version__
    lines = [
        line(
            "LanceDB",
            "exact (no vector index), bitmap index on tenant, prefilter",
            run_queries(data, searcher()),
            insert=len(data.ids) / insert,
            build=prepare,
            disk=du(folder),
            note=f"lancedb {version}; build = optimize + bitmap index",
        )
    ]
    configs = {
        "IVF_PQ": (IvfPq(distance_type="cosine"), {"refine_factor": 10}, "IVF_PQ defaults, refine_factor 10"),
        "IVF_HNSW_SQ": (
            HnswSq(distance_type="cosine", m=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION),
            {"ef": HNSW_EF},
            f"IVF_HNSW_SQ M={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION}, ef={HNSW_EF}",
        ),
    }
    for name in indexes:
        config, tuning, label = configs[name]
        t0 = time.perf_counter()
        table.create_index("vector", config=config, replace=True)
        compact(table)
        build = time.perf_counter() - t0
        lines.append(
            line(
                "LanceDB",
                f"{label}, prefilter",
                run_queries(data, searcher(**tuning)),
                build=build,
                disk=du(folder),
            )
        )
    return lines


def bench_sqlite_vec(data: Data, work: Path) -> list[Line]:
    """sqlite-vec on its own: one vec0 table with the tenant as its partition key (exact KNN per partition)."""
    import sqlite_vec

    from funes.store.connection import driver

    path = work / "sqlite-vec.db"
    conn = driver().connect(str(path), isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        f"CREATE VIRTUAL TABLE memories USING vec0(tenant text partition key, "
        f"embedding float[{DIMS}] distance_metric=cosine, +id text, +content text)"
    )
    position = {mid: i for i, mid in enumerate(data.ids)}
    insert = 0.0
    start = 0
    for batch in data.batches:
        end = start + len(batch)
        rows = [(data.tenant_of[i], data.vectors[i].tobytes(), data.ids[i], data.texts[i]) for i in range(start, end)]
        t0 = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO memories(tenant, embedding, id, content) VALUES (?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        insert += time.perf_counter() - t0
        start = end
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def search(tenant: str, _text: str, vec: np.ndarray) -> list[int]:
        found = conn.execute(
            "SELECT id FROM memories WHERE embedding MATCH ? AND k = 10 AND tenant = ?", (vec.tobytes(), tenant)
        ).fetchall()
        return [position[i] for (i,) in found]

    timed = run_queries(data, search)
    version = conn.execute("SELECT vec_version()").fetchone()[0]
    conn.close()
    return [
        line(
            "sqlite-vec",
            "vec0 float[384] cosine, tenant partition key, exact",
            timed,
            insert=len(data.ids) / insert,
            disk=du(path, Path(f"{path}-wal")),
            note=f"sqlite-vec {version}",
        )
    ]


# -- report -----------------------------------------------------------------------


def table(lines: list[Line], base: Line) -> str:
    """The markdown table, with each line's latency over Funes' vector leg."""
    out = [
        "| system | configuration | insert (rec/s) | index build (s) | on disk (MB) | p50 (ms) | p95 (ms) "
        "| recall@10 | p50 / Funes | p95 / Funes | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ln in lines:
        cells = [
            ln.system,
            ln.config,
            f"{ln.insert:,.0f}" if ln.insert else "",
            f"{ln.build:.1f}" if ln.build is not None else "",
            f"{ln.disk / 1e6:,.1f}" if ln.disk else "",
            f"{ln.p50:.2f}",
            f"{ln.p95:.2f}",
            f"{ln.recall:.4f}" if ln.recall is not None else "",
            f"{ln.p50 / base.p50:.2f}x",
            f"{ln.p95 / base.p95:.2f}x",
            ln.note,
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags, run every system on the same data, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="Records in the one store of each system.")
    parser.add_argument("--tenants", type=int, default=4, help="Tenants the records are spread over (round-robin).")
    parser.add_argument("--queries", type=int, default=200, help="Timed queries, each scoped to one tenant.")
    parser.add_argument("--batch", type=int, default=1000, help="Records per insert call / transaction.")
    parser.add_argument("--peers", default="chroma,lancedb,sqlite-vec", help="Which peers to run.")
    parser.add_argument(
        "--lance-indexes", default="IVF_PQ,IVF_HNSW_SQ", help="LanceDB vector indexes to measure ('' for none)."
    )
    parser.add_argument("--skip-hybrid", action="store_true", help="Leave out Funes' hybrid store path.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="Also write the lines to this JSON file.")
    parser.add_argument("--workdir", help="Where the stores go (default: a new temporary directory).")
    parser.add_argument("--keep", action="store_true", help="Keep the stores afterwards.")
    args = parser.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    indexes = [i.strip().upper() for i in args.lance_indexes.split(",") if i.strip()]
    if any(i not in ("IVF_PQ", "IVF_HNSW_SQ") for i in indexes):
        parser.error("--lance-indexes takes IVF_PQ and/or IVF_HNSW_SQ")
    if args.size < 20 * args.tenants:
        parser.error("--size must give every tenant at least 20 records")
    require(peers)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="funes-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(
        f"{args.size:,} records, {args.tenants} tenants, {args.queries} queries; {os.cpu_count()} cores; "
        f"workdir {work}",
        flush=True,
    )
    data = make_data(args)
    lines: list[Line] = []
    steps: list[tuple[str, Callable[[], list[Line]]]] = [
        ("funes", lambda: bench_funes(data, work, not args.skip_hybrid)),
        ("numpy", lambda: bench_numpy(data)),
        ("chroma", lambda: bench_chroma(data, work)),
        ("lancedb", lambda: bench_lancedb(data, work, indexes)),
        ("sqlite-vec", lambda: bench_sqlite_vec(data, work)),
    ]
    for name, step in steps:
        if name in PEERS and name not in peers:
            continue
        t0 = time.perf_counter()
        got = step()
        lines += got
        for ln in got:
            print(f"  {ln.system:<10} {ln.config[:60]:<60} p50 {ln.p50:7.2f} ms  p95 {ln.p95:7.2f} ms", flush=True)
        print(f"  ({name}: {time.perf_counter() - t0:.0f} s)", flush=True)
    base = lines[0]
    print()
    print(table(lines, base))
    print(f"\nratios: over Funes' vector_search p50 {base.p50:.2f} ms / p95 {base.p95:.2f} ms ({base.config})")
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        report = {
            "size": args.size,
            "tenants": args.tenants,
            "queries": args.queries,
            "batch": args.batch,
            "cores": os.cpu_count(),
            "lines": [
                dict(dataclasses.asdict(ln), p50_ratio=ln.p50 / base.p50, p95_ratio=ln.p95 / base.p95) for ln in lines
            ],
        }
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
