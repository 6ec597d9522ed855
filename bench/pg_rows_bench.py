"""How many rows PostgreSQL's iterative HNSW scan asks for: recall against exact and time, per setting (issue 29).

Run from the repository root, with a PostgreSQL URL (pgvector >= 0.8)::

    .venv/bin/python bench/pg_rows_bench.py --db postgresql://USER@127.0.0.1:5432/funes --records 100000

What it does:

1. fills one tenant with ``--records`` of store_bench's clustered synthetic records (skipped when the tenant
   already holds records), each with 1 to 4 vectors (parts near one another: 60/20/10/10%, 1.7 a record), as long
   records chunked into parts are; the store builds its HNSW index after the load;
2. answers ``--queries`` queries near the corpus's subtopics with the store's exact plan (the truth), then with
   its iterative HNSW statement for each setting: rows asked (``4k`` is the fixed rule before this bench; ``rN``
   is ``pg_plan.iterative_rows``'s rule with N rows per record per vector, ``ROWS_PER_PART``) and ``ef_search``;
3. prints recall@10 and @50 of records (a hit counts when its similarity reaches the truth's 10th / 50th: ties are
   not misses), the queries left short of k, and the statement's p50/p95 wall time, with the ``4k`` baseline
   measured in the same run (the first setting).

k is 50, the search's candidates. Numbers: docs/postgres.md (the HNSW plan's paragraph).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from datetime import UTC, datetime

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from store_bench import Corpus, unit

K = 50
TENANT = "solo"


def fill(service: object, records: int, seed: int) -> None:
    """The tenant's records with 1-4 parts each, then the HNSW index (the store builds it after a load)."""
    store = service.store  # type: ignore[attr-defined]
    have = int(store.db.reader().execute("SELECT count(*) FROM memories WHERE tenant = ?", (TENANT,)).fetchone()[0])
    if have:
        return  # filled by an earlier run
    corpus = Corpus(seed=seed, tenants=[TENANT])
    rng = np.random.default_rng(seed + 1)
    started = time.perf_counter()
    for start in range(0, records, 1000):
        items, _, _ = corpus.records(start, min(1000, records - start), records, lambda i: TENANT, datetime.now(UTC))
        out = []
        for memory, vectors in items:
            parts = int(rng.choice([1, 2, 3, 4], p=[0.6, 0.2, 0.1, 0.1]))
            noise = rng.standard_normal((parts - 1, vectors[0].shape[0])).astype(np.float32)
            out.append((memory, [vectors[0], *unit(vectors[0] + 0.6 * noise / math.sqrt(len(vectors[0])))]))
        store.put_many(out)
    store.load_quiet = 0.0
    for tenant in store.index_work():
        store.maintain_index(tenant)
    print(f"filled {records:,} records and built the index in {time.perf_counter() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="postgresql:// URL of a database for the bench's tenant.")
    parser.add_argument("--records", type=int, default=100_000, help="Records in the tenant (default 100000).")
    parser.add_argument("--queries", type=int, default=300, help="Queries (default 300).")
    parser.add_argument(
        "--settings",
        default="4k:100,r1.5:100,r1.25:100,r1.1:100,r1.5:64",
        help="rows:ef_search pairs; rows is 4k (the old fixed rule), rN (N rows per record per vector) or a number.",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    import funes
    from funes.models import SearchFilters
    from funes.store import pg_plan

    service = funes.open(args.db, embedder="hash:384", worker="off", auto_work=False)
    store = service.store
    fill(service, args.records, args.seed)
    corpus = Corpus(seed=args.seed, tenants=[TENANT])  # the same subtopic centres as the records'
    queries = [np.asarray(corpus.query("common" if i % 2 else "rare")[1], np.float32) for i in range(args.queries)]
    filters = SearchFilters(tenant=TENANT)
    per_record = pg_plan.vectors_per_record(store, TENANT)
    print(f"{args.records:,} records, {per_record:.3f} vectors a record, k {K}; load {os.getloadavg()[0]:.1f}")
    truth = [store._exact_knn(q, filters, K, None)[0] for q in queries]
    rule = pg_plan.iterative_rows
    try:
        for setting in args.settings.split(","):
            rows_spec, ef = setting.split(":")
            if rows_spec == "4k":
                rows = rule(K)
            elif rows_spec.startswith("r"):
                rows = min(20_000, max(40, math.ceil(float(rows_spec[1:]) * K * max(1.0, per_record))))
            else:
                rows = int(rows_spec)
            pg_plan.iterative_rows = lambda k, per_record=None, rows=rows: rows  # type: ignore[misc]
            at10, at50, times, short = [], [], [], 0
            for query, true in zip(queries, truth, strict=True):
                started = time.perf_counter()
                got = store._hnsw_knn(query, filters, K, None, iterative=True, ef=int(ef))[0]
                times.append((time.perf_counter() - started) * 1000)
                short += len(got) < K
                at10.append(sum(s >= true[9][1] - 1e-6 for _, s in got[:10]) / 10)
                at50.append(sum(s >= true[-1][1] - 1e-6 for _, s in got[:K]) / len(true))
            times.sort()
            print(
                f"rows {rows:>5} ({rows_spec:>5}) ef_search {int(ef):>4}: recall@10 {np.mean(at10):.4f} "
                f"(worst query {min(at10):.1f}) recall@50 {np.mean(at50):.4f} short {short} "
                f"p50 {times[len(times) // 2]:.2f} ms p95 {times[int(len(times) * 0.95)]:.2f} ms",
                flush=True,
            )
    finally:
        pg_plan.iterative_rows = rule  # type: ignore[misc]
    print(f"load {os.getloadavg()[0]:.1f}")
    service.close()


if __name__ == "__main__":
    main()
