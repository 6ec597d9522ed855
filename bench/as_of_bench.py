"""The cost of reading memory as of a past time, against the current-state search, in the same run (issue 25).

Run from the repository root::

    HF_HUB_OFFLINE=1 python bench/as_of_bench.py                 # 100k records
    HF_HUB_OFFLINE=1 python bench/as_of_bench.py --size 20000    # quicker, under load

The store is store_bench's synthetic corpus (Zipf text, Gaussian-mixture
vectors, creation times over a year), spread over ``--tenants`` tenants. A
share of the records (``--changed``, 30% by default) went through 1 to 3
earlier versions during the year, with their validity times, as ``update``
and ``learn`` leave them.

Each timed query runs the whole ``Funes.search`` path (hybrid search, ranking,
relevance, grouping; the query vector precomputed, so no model) three ways,
interleaved query by query so load on the machine hits all three alike:

* ``current``: the current state (the baseline);
* ``as_of``: each record as it was at a time inside the year (the version
  valid then; records created later left out);
* ``as_of + include_superseded``: that, plus every earlier state of each hit;
* ``until`` (a second baseline): the same cut-off on creation time that
  ``as_of`` applies inside the search legs, without reading any version.

It prints p50/p95 latencies, the ratios to the baseline (target for
``as_of``: at most 1.3x), and the time ``as_of`` spends choosing each hit's
version (``funes.memory.timeline.at_time``), so the cost of the version read
is told apart from the cost of the creation-time filter.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import scale_phases
from store_bench import DIMS, Corpus, pct

from funes.models import Memory, PreviousVersion, content_hash
from funes.providers.embed import HashEmbedder


def with_history(memory: Memory, rng: np.random.Generator, now: datetime, corpus: Corpus) -> Memory:
    """The record after 1 to 3 rewrites between its creation and now, each version with its validity."""
    count = int(rng.integers(1, 4))
    span = (now - memory.created_at).total_seconds()
    cuts = sorted(memory.created_at + timedelta(seconds=float(s)) for s in rng.uniform(0, span, count))
    starts = [memory.created_at, *cuts]
    versions = []
    for n, (begin, end) in enumerate(itertools.pairwise(starts), start=1):
        text = corpus.text(12, int(rng.integers(0, len(corpus.centres))))
        versions.append(
            PreviousVersion(n, text, content_hash(text), memory.importance, begin, begin, end, author="user")
        )
    return memory.evolve(previous_versions=tuple(versions), version=count + 1, valid_from=cuts[-1], updated_at=cuts[-1])


def build(path: str, args: argparse.Namespace, now: datetime) -> tuple[object, Corpus, list[str]]:
    from funes.service import open as open_funes

    tenants = [f"t{i:02d}" for i in range(args.tenants)]
    svc = open_funes(path, embedder=HashEmbedder(DIMS), query_threads=1, worker="off", **scale_phases.RETENTION_OFF)
    corpus = Corpus(seed=args.seed, tenants=tenants)
    rng = np.random.default_rng(args.seed + 1)
    done, t0 = 0, time.perf_counter()
    while done < args.size:
        n = min(args.batch, args.size - done)
        items, _vecs, _exp = corpus.records(done, n, args.size, lambda i: tenants[i % len(tenants)], now)
        items = [(with_history(m, rng, now, corpus) if rng.random() < args.changed else m, v) for m, v in items]
        svc.store.put_many(items)
        done += n
    print(f"built {args.size:,} records in {time.perf_counter() - t0:.0f} s ({args.tenants} tenants)", flush=True)
    return svc, corpus, tenants


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="Records in the store.")
    parser.add_argument("--tenants", type=int, default=10, help="Tenants (records are spread round-robin).")
    parser.add_argument("--changed", type=float, default=0.3, help="Share of records with earlier versions.")
    parser.add_argument("--queries", type=int, default=150, help="Timed queries (each run three ways).")
    parser.add_argument("--batch", type=int, default=2000, help="Records per put_many transaction.")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    now = datetime.now(UTC)
    workdir = tempfile.mkdtemp(prefix="funes-asof-")
    svc, corpus, tenants = build(str(Path(workdir) / "asof.db"), args, now)
    try:
        import funes.memory.core as core_module

        spent: list[float] = []
        real_at_time = core_module.at_time

        def timed_at_time(*a: object, **k: object) -> object:
            t0 = time.perf_counter()
            out = real_at_time(*a, **k)  # type: ignore[arg-type]
            spent.append(time.perf_counter() - t0)
            return out

        core_module.at_time = timed_at_time  # type: ignore[assignment]
        ways = {"current": {}, "as_of": {}, "as_of + include_superseded": {}, "until (filter only)": {}}
        times: dict[str, list[float]] = {name: [] for name in ways}
        hits: dict[str, list[int]] = {name: [] for name in ways}
        version_reads: list[float] = []
        rng = np.random.default_rng(args.seed + 2)
        for q in range(args.queries + 10):
            text, vec = corpus.query("rare" if q % 2 else "common")
            svc.embedding.embed_query = lambda _q, v=vec: v  # the search path only: no model
            tenant = tenants[q % len(tenants)]
            when = (now - timedelta(days=float(rng.uniform(30, 330)))).isoformat()
            options = {
                "current": {},
                "as_of": {"as_of": when},
                "as_of + include_superseded": {"as_of": when, "include_superseded": True},
                "until (filter only)": {"until": when},
            }
            order = list(ways)
            rng.shuffle(order)
            for name in order:
                spent.clear()
                t0 = time.perf_counter()
                found = svc.search(text, tenant=tenant, min_relevance=0, track=False, limit=10, **options[name])
                took = time.perf_counter() - t0
                if q >= 10:  # the first queries warm the caches
                    times[name].append(took)
                    hits[name].append(len(found))
                    if name == "as_of":
                        version_reads.append(sum(spent))
        base = statistics.median(times["current"])
        print(f"\n{args.queries} queries, {args.size:,} records, load average {os.getloadavg()[0]:.2f}")
        print(f"{'search':<28} {'p50 ms':>8} {'p95 ms':>8} {'ratio p50':>10} {'hits':>6}")
        for name in ways:
            p50 = statistics.median(times[name])
            print(
                f"{name:<28} {pct(times[name], 50):>8.2f} {pct(times[name], 95):>8.2f} "
                f"{p50 / base:>9.2f}x {statistics.mean(hits[name]):>6.1f}"
            )
        print(
            f"as_of's version read (timeline.at_time): p50 {pct(version_reads, 50):.3f} ms, "
            f"p95 {pct(version_reads, 95):.3f} ms per query"
        )
    finally:
        svc.close()


if __name__ == "__main__":
    main()
