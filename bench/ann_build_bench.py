"""Searches while the approximate index is built: in this process (the GIL held) against in a child process.

Run from the repository root::

    .venv/bin/python bench/ann_build_bench.py --size 100000

Fills one tenant with ``--size`` records (store_bench's synthetic corpus,
384-dim vectors, precomputed), then builds its vector index twice, each time
while ``--threads`` threads search it as fast as they can (the exact path
answers until the index is swapped in, as in a server):

* **in-process**: the build runs in a thread of this process
  (``isolate_min`` above the tenant: before issue 29, every build);
* **child**: the build runs in a child process (the default for a tenant
  of ``ann_build.ISOLATE_MIN`` vectors or more).

It prints, per mode, the build's wall time, the searches answered during it,
their p50/p95 and the longest one. usearch holds the GIL while it adds
vectors, so in-process the longest search is about the build's whole length.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np
from store_bench import Corpus

from funes.models import EmbedderIdentity, SearchFilters
from funes.store.sqlite import SqliteStore


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def run(path: str, tenant: str, queries: list[np.ndarray], threads: int, in_child: bool) -> dict[str, float]:
    """One build of the tenant's index beside searching threads; the figures of the searches during it."""
    for old in Path(path + ".ann").glob("*"):
        old.unlink()
    store = SqliteStore(path, vector_cache_min=1000, ann_min=1000)
    store.ann.isolate_min = 1 if in_child else 10**12
    filters = SearchFilters(tenant=tenant)
    now = datetime.now(UTC)
    for q in queries[:4]:  # load the exact copy and ask for the index, as a server's first searches do
        store.vector_search(q, filters, k=50, now=now)
    assert store.index_work() == [tenant]
    done = threading.Event()
    latencies: list[float] = []
    lock = threading.Lock()

    def search(seed: int) -> None:
        n = seed
        while not done.is_set():
            t0 = time.perf_counter()
            store.vector_search(queries[n % len(queries)], filters, k=50, now=now)
            with lock:
                latencies.append((time.perf_counter() - t0) * 1000)
            n += threads

    workers = [threading.Thread(target=search, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    t0 = time.perf_counter()
    outcome = store.maintain_index(tenant)
    build = time.perf_counter() - t0
    done.set()
    for w in workers:
        w.join()
    assert outcome == "built", outcome
    store.close()
    return {
        "build s": build,
        "searches": len(latencies),
        "per s": len(latencies) / build,
        "p50 ms": statistics.median(latencies) if latencies else float("nan"),
        "p95 ms": _pct(latencies, 95),
        "max ms": max(latencies, default=float("nan")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="Records in the tenant (default 100000).")
    parser.add_argument("--threads", type=int, default=4, help="Searching threads (default 4).")
    parser.add_argument("--db", help="A store left by an earlier run (its tenant 'solo' filled): skip the fill.")
    args = parser.parse_args()
    tenant = "solo"
    corpus = Corpus(seed=7, tenants=[tenant])
    path = args.db or os.path.join(tempfile.mkdtemp(prefix="funes-ann-build-"), "a.db")
    if not args.db:
        store = SqliteStore(path, vector_cache_min=0, ann_min=0)
        store.set_identity(EmbedderIdentity("bench", 384))
        now = datetime.now(UTC)
        t0 = time.perf_counter()
        for begin in range(0, args.size, 5000):
            items, _, _ = corpus.records(begin, min(5000, args.size - begin), args.size, lambda i: tenant, now)
            store.put_many(items)
        store.close()
        print(f"fill: {args.size:,} records in {time.perf_counter() - t0:.1f} s ({path})")
    queries = [corpus.query("rare")[1] for _ in range(200)]
    rows = {mode: run(path, tenant, queries, args.threads, mode == "child") for mode in ("in-process", "child")}
    print(
        f"\nvector index build of {args.size:,} vectors with {args.threads} threads searching; {os.cpu_count()} cores"
    )
    columns = ["build s", "searches", "per s", "p50 ms", "p95 ms", "max ms"]
    print(f"{'build':<11}" + "".join(f"{c:>10}" for c in columns))
    for mode, row in rows.items():
        print(f"{mode:<11}" + "".join(f"{row[c]:>10.1f}" for c in columns))
    base, child = rows["in-process"], rows["child"]
    print(
        f"child / in-process: searches per second {child['per s'] / base['per s']:.2f}x, "
        f"longest search {child['max ms'] / base['max ms']:.3f}x; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
