"""The approximate vector index against the exact path, one tenant, the store's own vector leg.

Run from the repository root (a few minutes at 100k on 2 cores)::

    .venv/bin/python bench/ann_bench.py --size 100000 --queries 300
    .venv/bin/python bench/ann_bench.py --libraries --size 100000 --queries 200   # the library choice

It fills one tenant with ``store_bench``'s synthetic memories, builds the
index (timed), then reports vector-leg latency (p50/p95) for the exact path
(in-memory copy) and the index, unfiltered and with a scope filter, recall@10
of the index against the exact path on the same queries (mean and worst
query), the same recall of the HNSW graph alone (the recall guard's inverted
lists switched off in this process: what the index answered before them),
and the first search of a fresh process (open + first query, no embedding).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from store_bench import Corpus, pct

from funes.models import EmbedderIdentity, SearchFilters
from funes.store import ann_index, ann_lists
from funes.store.ann_columns import IndexColumns
from funes.store.sqlite import SqliteStore

FIRST = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {src!r})
import numpy as np
from funes.models import SearchFilters
from funes.store.sqlite import SqliteStore
store = SqliteStore({path!r}, ann_min=1)
store.ann._searches[{tenant!r}] = 5  # opening is what is measured; nothing to build
t1 = time.perf_counter()
hits = store.vector_search(np.ones(384, dtype=np.float32), SearchFilters(tenant={tenant!r}), k=10)
t2 = time.perf_counter()
assert hits and store.ann.builds == 0
print(f"{{(t1 - t0) * 1000:.1f}} {{(t2 - t1) * 1000:.1f}}")
"""


def main() -> None:
    """Fill, build, measure, print."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument(
        "--libraries",
        nargs="?",
        const="usearch,hnswlib,faiss,sqlite-vec",
        help="Compare the ANN libraries themselves on the same vectors (see ann_libraries.py) instead of the store.",
    )
    ap.add_argument("--store", help="an ann.db left by an earlier run (its index files beside it): skip fill and build")
    ap.add_argument("--build-threads", type=int, default=1, help="threads of the index build (the job uses 1)")
    ap.add_argument(
        "--probe-lists", type=float, help=f"the guard's probe, in average lists (default {ann_lists.PROBE_LISTS})"
    )
    ap.add_argument("--tenant", default="t", help="the tenant searched (store_bench's single layout uses 'solo')")
    ap.add_argument("--k", type=int, default=10, help="neighbours asked for (hybrid search asks for 50)")
    ap.add_argument(
        "--expansion", type=int, help=f"the graph's least search beam (default {ann_index.EXPANSION_SEARCH})"
    )
    args = ap.parse_args()
    if args.probe_lists is not None:
        ann_lists.PROBE_LISTS = args.probe_lists
    if args.expansion is not None:
        ann_index.EXPANSION_SEARCH = args.expansion
    if args.libraries:
        from ann_libraries import run

        run(args.size, args.queries, libraries=args.libraries)
        return
    now = datetime.now(UTC)
    tenant, k = args.tenant, args.k
    corpus = Corpus(seed=7, tenants=[tenant])
    if args.store:
        path, tmp = args.store, str(Path(args.store).parent)
        exact = SqliteStore(path, vector_cache_min=1, ann_min=0)
    else:
        tmp = tempfile.mkdtemp(prefix="funes-ann-")
        path = os.path.join(tmp, "ann.db")
        exact = SqliteStore(path, vector_cache_min=1, ann_min=0)
        exact.set_identity(EmbedderIdentity("bench", 384))
        start = time.perf_counter()
        for begin in range(0, args.size, 5000):
            items, _, _ = corpus.records(begin, min(5000, args.size - begin), args.size, lambda i: tenant, now)
            exact.put_many(items)
        print(f"insert {args.size}: {args.size / (time.perf_counter() - start):.0f}/s")
    print(f"store: {path}")
    ann = SqliteStore(path, vector_cache_min=0, ann_min=1)
    ann.ann.build_threads = args.build_threads
    start = time.perf_counter()
    entry = ann.ann._open(ann.db.reader(), tenant) if args.store else None
    if entry is None:
        entry = ann.ann.build(ann.db.reader(), tenant)
        print(f"index build: {time.perf_counter() - start:.1f} s ({args.build_threads} threads)")
    cols = entry.columns
    start = time.perf_counter()
    lists = ann_lists.build_lists(cols.q8, cols.scale)
    extra = sum(cols.arrays[name].nbytes for name in ann_lists.ARRAYS)
    print(
        f"of which the guard's lists (trained again to time them): {time.perf_counter() - start:.1f} s,"
        f" {len(lists['centroids'])} lists, {extra / 2**20:.1f} MiB in the .cols file"
    )
    del lists, entry, cols
    ann.ann._searches[tenant] = 5
    queries = [corpus.query("rare")[1] for _ in range(args.queries)]
    cases = {
        "unfiltered": SearchFilters(tenant=tenant),
        "scope=project,proj1": SearchFilters(tenant=tenant, scopes=("project",), project_id="proj1"),
        "type=decision": SearchFilters(tenant=tenant, memory_types=("decision",)),
    }
    for name, filters in cases.items():
        for store in (exact, ann):
            store.vector_search(queries[0], filters, k=k, now=now)  # loads / opens
        times: dict[str, list[float]] = {"exact": [], "ann": [], "graph": []}  # seconds, as pct expects
        shares, graph_shares = [], []
        rescues = ann.ann.rescues
        for q in queries:
            t = time.perf_counter()
            truth = exact.vector_search(q, filters, k=k, now=now)
            times["exact"].append(time.perf_counter() - t)
            t = time.perf_counter()
            got = ann.vector_search(q, filters, k=k, now=now)
            times["ann"].append(time.perf_counter() - t)
            if truth:
                shares.append(len({i for i, _ in got} & {i for i, _ in truth}) / len(truth))
        probe = IndexColumns.probe
        IndexColumns.probe = lambda self, query, widen=1.0: np.zeros(0, dtype=np.int64)  # type: ignore[method-assign]
        try:  # the graph alone, as before the guard: a second pass, each query after an exact one as above
            for q in queries:
                truth = exact.vector_search(q, filters, k=k, now=now)
                t = time.perf_counter()
                alone = ann.vector_search(q, filters, k=k, now=now)
                times["graph"].append(time.perf_counter() - t)
                if truth:
                    graph_shares.append(len({i for i, _ in alone} & {i for i, _ in truth}) / len(truth))
        finally:
            IndexColumns.probe = probe  # type: ignore[method-assign]
        for label, values in times.items():
            print(f"{name:18} {label:5} p50 {pct(values, 50):6.2f} ms  p95 {pct(values, 95):6.2f} ms")
        print(
            f"{name:18} recall@{k} {np.mean(shares):.4f} (min {np.min(shares):.2f});"
            f" graph alone {np.mean(graph_shares):.4f} (min {np.min(graph_shares):.2f});"
            f" rescued {ann.ann.rescues - rescues}; scans {ann.ann.scans}"
        )
    ann.close()
    exact.close()
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                FIRST.format(src=str(Path(__file__).resolve().parents[1] / "src"), path=path, tenant=tenant),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        runs.append((float(out[0]), float(out[1])))
    opened, first = (float(np.median([r[i] for r in runs])) for i in (0, 1))
    print(f"fresh process: imports+open median {opened:.1f} ms, first vector search median {first:.1f} ms")
    sizes = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
    print(f"on disk (db + index): {sizes / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
