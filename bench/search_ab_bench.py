"""Two checkouts' hybrid search on one store, interleaved: the store path's cost before and after a change.

Run from the repository root on a store ``store_bench.py --keep`` left
(its ``single.db``: one tenant ``solo``)::

    git worktree add /tmp/before main        # the code to compare against
    .venv/bin/python bench/search_ab_bench.py --store /path/to/single.db --before /tmp/before/src

Each side is a process of its own (``PYTHONPATH`` = its ``src``), both open
the same store. The same ``store_bench`` queries (the corpus's vocabulary,
rare-word and common-word queries alternating, query vectors precomputed:
no model) go through ``core.hybrid.search`` in blocks that alternate between
the sides, so both see the same machine load. A numpy brute-force scan of
the tenant's vectors, timed in a third process in the same blocks, is a
second baseline, as in store_bench. Prints p50/p95/p99 of each side, their ratios, the
process CPU time per search (both threads; less sensitive to other load), and
whether every query returned the same hits with the same scores, relevance
and signals on both sides (and, where they differ, whether the hits and their
order are the same, with the largest score or relevance difference). ``--serial`` runs each side's keyword leg in the
calling thread: the CPU time per search is then the sum of both legs' work,
not blurred by the two threads' contention on a busy machine.
``--end-to-end`` times ``Funes.search`` instead, the real model embedding
each query (distinct texts), as store_bench's end-to-end figure does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"


def child(args: argparse.Namespace) -> None:
    """One side: answer blocks of queries read from stdin, one JSON line each."""
    sys.path.insert(0, str(BENCH))
    from dataclasses import replace
    from datetime import UTC, datetime

    import numpy as np
    import scale_phases

    from funes.models import SearchFilters, SearchQuery
    from funes.providers.embed.local import LocalEmbedder
    from funes.service import open as open_funes

    data = np.load(args.queries_file)
    texts, vectors = [str(t) for t in data["texts"]], data["vectors"]
    svc = open_funes(args.store, embedder=LocalEmbedder(query_threads=1), query_threads=1, **scale_phases.RETENTION_OFF)
    if args.serial:
        from concurrent.futures import Future

        class Inline:
            """The keyword leg's worker, run in the calling thread."""

            def submit(self, fn: Any, *fn_args: Any) -> Future[Any]:
                done: Future[Any] = Future()
                done.set_result(fn(*fn_args))
                return done

        svc.core.hybrid._worker = Inline
    now = datetime.fromisoformat(str(data["now"])).astimezone(UTC)
    model_query = svc.embedding.embed_query
    if args.end_to_end:
        svc.search("load the model", tenant=args.tenant, limit=10)
    filters = SearchFilters(tenant=args.tenant)
    matrix = None
    if args.numpy:
        rows = svc.store.db.reader().execute("SELECT embedding FROM vec_memories WHERE tenant = ?", (args.tenant,))
        matrix = np.vstack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        start, end = json.loads(line)
        out: dict[str, Any] = {"times": [], "cpu": [], "answers": []}
        for n in range(start, end):
            vector = vectors[n]
            svc.embedding.embed_query = lambda _q, v=vector: v  # the store path only: no model
            plan = replace(
                svc.core.plan(SearchQuery.of(texts[n], tenant=args.tenant, limit=10)), filters=filters, now=now
            )
            if matrix is not None:  # the baseline's process: brute force only
                t0 = time.perf_counter()
                np.argpartition(-(matrix @ vector), 10)[:10]
                out["times"].append(time.perf_counter() - t0)
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            if args.end_to_end:  # as a library user searches: the real model embeds the query, Core adds the rest
                svc.embedding.embed_query = model_query
                hits = svc.search(texts[n], tenant=args.tenant, limit=10)
            else:
                hits = svc.core.hybrid.search(plan)
            out["times"].append(time.perf_counter() - t0)
            out["cpu"].append(time.process_time() - c0)
            # End to end, each side searches at its own "now" (recency moves the scores): the ids are compared.
            out["answers"].append(
                [
                    h.memory.id
                    if args.end_to_end
                    else [h.memory.id, h.score, h.explanation.relevance, h.explanation.signals]
                    for h in hits
                ]
            )
        print(json.dumps(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="A store_bench store (single.db).")
    parser.add_argument("--before", help="The src directory of the code to compare against.")
    parser.add_argument("--after", default=str(SRC), help="The src directory of the new code (default: this one).")
    parser.add_argument("--tenant", default="solo")
    parser.add_argument("--seed", type=int, default=7, help="store_bench's --seed the store was filled with.")
    parser.add_argument("--queries", type=int, default=300, help="Timed queries (each side runs all of them).")
    parser.add_argument("--block", type=int, default=20, help="Queries per block; blocks alternate sides.")
    parser.add_argument("--warm", type=int, default=20, help="Untimed queries each side runs first.")
    parser.add_argument("--serial", action="store_true", help="Run the keyword leg in the calling thread.")
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="Time Funes.search with the real model embedding each query (distinct texts: no cached vector).",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", help=argparse.SUPPRESS)
    parser.add_argument("--numpy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if not args.before:
        parser.error("--before: the src directory of the code to compare against is required")
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(SRC))
    from datetime import UTC, datetime

    import numpy as np
    from store_bench import Corpus, pct

    corpus = Corpus(seed=args.seed, tenants=["solo"])  # the store's vocabulary and topics
    corpus.rng = np.random.default_rng(args.seed + 1000)  # queries of their own
    total = args.warm + args.queries
    drawn = [corpus.query("common" if n % 2 else "rare") for n in range(total)]
    if args.end_to_end:  # a repeated text would be answered from the query-vector cache
        unique = {t: (t, v) for t, v in drawn}
        while len(unique) < total:
            text, vector = corpus.query("common" if len(unique) % 2 else "rare")
            unique.setdefault(text, (text, vector))
        drawn = list(unique.values())[:total]
    queries = os.path.join(tempfile.mkdtemp(prefix="funes-ab-"), "queries.npz")
    np.savez(
        queries,
        texts=np.array([t for t, _ in drawn]),
        vectors=np.vstack([v for _, v in drawn]),
        now=np.array(datetime.now(UTC).isoformat()),
    )
    sides = {}
    for name, src in (("before", args.before), ("after", args.after), ("numpy", args.after)):
        cmd = [sys.executable, __file__, "--child", src, "--store", args.store, "--tenant", args.tenant]
        cmd += ["--queries-file", queries] + (["--numpy"] if name == "numpy" else [])
        cmd += ["--serial"] if args.serial else []
        cmd += ["--end-to-end"] if args.end_to_end else []
        env = {**os.environ, "PYTHONPATH": src}
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())
        sides[name] = proc

    def run(name: str, start: int, end: int) -> dict[str, Any]:
        proc = sides[name]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps([start, end]) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]

    for name in sides:
        run(name, 0, args.warm)
    times: dict[str, list[float]] = {"before": [], "after": [], "numpy": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    answers: dict[str, list[Any]] = {"before": [], "after": [], "numpy": []}
    loads = []
    for n, start in enumerate(range(args.warm, total, args.block)):
        end = min(total, start + args.block)
        for name in ("before", "after", "numpy") if n % 2 == 0 else ("after", "before", "numpy"):
            got = run(name, start, end)
            times[name] += got["times"]
            answers[name] += got["answers"]
            cpu.setdefault(name, []).extend(got["cpu"])
        loads.append(os.getloadavg()[0])
    for proc in sides.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    same = sum(a == b for a, b in zip(answers["before"], answers["after"], strict=True))
    pairs = list(zip(answers["before"], answers["after"], strict=True))
    if not args.end_to_end:  # where answers differ: the same hits in the same order, and by how much the numbers moved
        same_ids = sum([h[0] for h in a] == [h[0] for h in b] for a, b in pairs)
        moved = [
            abs(x - y)
            for a, b in pairs
            if [h[0] for h in a] == [h[0] for h in b]
            for ha, hb in zip(a, b, strict=True)
            for x, y in ((ha[1], hb[1]), (ha[2], hb[2]))
        ]
    what = "Funes.search with the real model" if args.end_to_end else "hybrid search (store path, no embedding)"
    print(f"\n{what}, {args.queries} queries a side, blocks of {args.block}")
    print(f"{'side':<8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, values in times.items():
        print(f"{name:<8} {pct(values, 50):>8.2f} {pct(values, 95):>8.2f} {pct(values, 99):>8.2f}")
    before, after = times["before"], times["after"]
    print(
        f"after / before: p50 {pct(after, 50) / pct(before, 50):.2f}x, p95 {pct(after, 95) / pct(before, 95):.2f}x; "
        f"after / numpy p50 {pct(after, 50) / pct(times['numpy'], 50):.2f}x, "
        f"before / numpy p50 {pct(before, 50) / pct(times['numpy'], 50):.2f}x"
    )
    print(
        f"CPU time of the process (both threads) per search, p50: before {pct(cpu['before'], 50):.2f} ms, "
        f"after {pct(cpu['after'], 50):.2f} ms ({pct(cpu['after'], 50) / pct(cpu['before'], 50):.2f}x)"
    )
    print(
        f"identical answers ({'ids' if args.end_to_end else 'ids, scores, relevance, signals'}) {same}/{args.queries}; "
        f"load average {min(loads):.2f}-{max(loads):.2f}"
    )
    if not args.end_to_end:
        print(
            f"the same hits in the same order {same_ids}/{args.queries}; "
            f"largest score or relevance difference among those {max(moved, default=0.0):.3g}"
        )


if __name__ == "__main__":
    main()
