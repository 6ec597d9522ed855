"""What one library search costs in process on SQLite: partial records for every candidate against whole ones.

Run from the repository root::

    .venv/bin/python bench/search_cost_bench.py --memories 100000

Fills one team with server_bench's synthetic memories (``hash:384``
embedder: no model time), lets its vector index be built, then runs the same
queries, interleaved, through ``Funes.search`` two ways:

* **whole**: every candidate read as a whole record before it is judged
  (the path before issue 29, and PostgreSQL's);
* **partial**: every candidate judged and ordered from a partial record
  (text, kind, chat place: ``judge_records``), whole records read for the
  hits returned only (SQLite's path now).

Prints p50/p95 of each and their ratio, and checks both return the same hits.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_bench import RETENTION_OFF, WORDS, _pct, _text

import funes
from funes.models import utcnow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000, help="Memories in the team (default 100000).")
    parser.add_argument("--queries", type=int, default=300, help="Timed queries per path (default 300).")
    parser.add_argument("--db", help="A store to reuse (filled up to --memories); default: a temporary file.")
    args = parser.parse_args()
    db = args.db or os.path.join(tempfile.mkdtemp(prefix="funes-search-cost-"), "s.db")
    team, rng = "bench", random.Random(13)
    with funes.open(db, embedder="hash:384", worker="off", auto_work=False, **RETENTION_OFF) as mem:
        have = mem.stats(tenant=team).get("records", 0)
        have = int(have) if isinstance(have, int) else 0
        t0 = time.perf_counter()
        for start in range(have, args.memories, 5000):
            items = [_text(rng, i) for i in range(start, min(args.memories, start + 5000))]
            mem.remember_many(items, tenant=team, scope="team")
        print(f"fill: {args.memories - have:,} memories in {time.perf_counter() - t0:.1f} s ({db})")
        for _ in range(3):  # a large team's searches ask for its vector index: build it as a server would have
            mem.search("deploy invoice", tenant=team, track=False)
        mem.run_jobs(max_seconds=1800)
        at = utcnow()
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
        judge_records = mem.store.judge_records  # type: ignore[attr-defined]
        times: dict[str, list[float]] = {"whole": [], "partial": []}
        same = 0
        for n, query in enumerate(queries):
            answers = {}
            for path in ("whole", "partial") if n % 2 else ("partial", "whole"):
                mem.store.judge_records = judge_records if path == "partial" else None  # type: ignore[attr-defined]
                t0 = time.perf_counter()
                hits = mem.search(query, tenant=team, limit=10, as_of=at, min_relevance=0, track=False)
                times[path].append((time.perf_counter() - t0) * 1000)
                answers[path] = [(h.memory, h.relevance, h.explanation.to_dict()) for h in hits]
            same += answers["whole"] == answers["partial"]
        mem.store.judge_records = judge_records  # type: ignore[attr-defined]
        served = mem.store.ann.searches
    print(f"\nlibrary search, {args.memories:,} memories in one team, limit 10, {args.queries} queries a path")
    print(f"{'path':<9} {'p50 ms':>8} {'p95 ms':>8}")
    for path, values in times.items():
        print(f"{path:<9} {statistics.median(values):>8.2f} {_pct(values, 95):>8.2f}")
    whole, partial = times["whole"], times["partial"]
    print(
        f"partial / whole: p50 {statistics.median(partial) / statistics.median(whole):.2f}x, "
        f"p95 {_pct(partial, 95) / _pct(whole, 95):.2f}x; identical answers {same}/{len(queries)}; "
        f"vector index searches {served}; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
