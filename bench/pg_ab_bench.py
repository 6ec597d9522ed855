"""Library search of two checkouts (and SQLite) on stores store_bench's multi layout filled, in alternating blocks.

Run from the repository root, on stores filled with store_bench's corpus (``--seed 7``, 25 tenants)::

    git worktree add /tmp/before main
    .venv/bin/python bench/pg_ab_bench.py --queries 300 \\
        --side sqlite=src=/path/multi.db \\
        --side main=/tmp/before/src=postgresql://... --side branch=src=postgresql://...

Each side is a process of its own (``PYTHONPATH`` = its ``src``) that opens its store with the hash
embedder and answers the same ``Funes.search`` queries (store_bench's rare-word and common-word
queries over random tenants, query vectors precomputed: no model), in blocks that alternate between
the sides, so every side sees the same machine load. The first side is the baseline: prints
p50/p95/p99, the ratios to it, the process CPU per search, and how many queries returned the same
hits (ids, in order) on each pair of sides (meaningful when two sides search the same store).
``--pg-data DIR`` (the PostgreSQL server's data directory, on this machine) adds the server's CPU per
search of each side: the CPU time of the postmaster's child processes over that side's blocks, a figure
the machine's load moves far less than a latency.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent


def child(target: str, total: int, seed: int, tenants: int) -> None:
    """One side: answer blocks of queries ("lo hi" lines on stdin), one JSON line each."""
    # This side's checkout (PYTHONPATH) first: store_bench puts its own checkout's src first on sys.path, so
    # importing it before funes made every side run the code of the checkout this script is in.
    import funes

    src = os.environ["PYTHONPATH"]
    if not Path(funes.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"side {target}: funes comes from {funes.__file__}, not from {src}")
    sys.path.insert(0, str(BENCH))
    import scale_phases
    from store_bench import DIMS, Corpus

    from funes.service import open as open_funes

    svc = open_funes(target, embedder=f"hash:{DIMS}", worker="off", query_threads=1, **scale_phases.RETENTION_OFF)
    names = [f"t{i:02d}" for i in range(tenants)]
    corpus = Corpus(seed=seed, tenants=names)
    queries = []
    for q in range(total):
        tenant = names[int(corpus.rng.integers(0, len(names)))]
        text, vector = corpus.query("common" if q % 2 else "rare")
        queries.append((tenant, text, vector))
    print("ready", flush=True)
    for line in sys.stdin:
        lo, hi = map(int, line.split())
        times, hits = [], []
        cpu = time.process_time()
        for tenant, text, vector in queries[lo:hi]:
            svc.embedding.embed_query = lambda _q, v=vector: v  # type: ignore[method-assign]
            start = time.perf_counter()
            found = svc.search(text, tenant=tenant, limit=10)
            times.append(time.perf_counter() - start)
            hits.append([h.memory.id for h in found])
        print(json.dumps({"t": times, "ids": hits, "cpu": time.process_time() - cpu}), flush=True)
    svc.close()


def server_cpu(data: str | None) -> float:
    """Seconds of CPU the PostgreSQL server's processes (the postmaster's children) have used, or 0 without ``data``."""
    if not data:
        return 0.0
    postmaster = Path(data, "postmaster.pid").read_text().split()[0]
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if fields[1] == postmaster:  # ppid
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / tick


def main() -> None:
    """Start one process per side, feed them the same blocks in turn, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", action="append", default=[], help="name=SRC=STORE (a path or postgresql:// URL)")
    parser.add_argument("--queries", type=int, default=300, help="Timed queries (each side runs all of them).")
    parser.add_argument("--block", type=int, default=10, help="Queries per block; blocks alternate sides.")
    parser.add_argument("--warm", type=int, default=10, help="Untimed queries each side runs first.")
    parser.add_argument("--seed", type=int, default=7, help="store_bench's --seed the stores were filled with.")
    parser.add_argument("--tenants", type=int, default=25, help="store_bench's --tenants.")
    parser.add_argument("--pg-data", help="The PostgreSQL data directory: also print the server's CPU per search.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--total", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.total, args.seed, args.tenants)
        return
    total = args.warm + args.queries
    procs: dict[str, Any] = {}
    for spec in args.side:
        name, src, target = spec.split("=", 2)
        env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()), HF_HUB_OFFLINE="1", OPENBLAS_NUM_THREADS="1")
        command = [sys.executable, __file__, "--child", target, "--total", str(total), "--seed", str(args.seed)]
        command += ["--tenants", str(args.tenants)]
        procs[name] = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
    for name, proc in procs.items():
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"side {name} did not start (run it alone with --child to see why)")
    results: dict[str, dict[str, Any]] = {n: {"t": [], "ids": [], "cpu": 0.0, "server": 0.0} for n in procs}
    loads = []
    for b, lo in enumerate(range(0, total, args.block)):
        hi = min(lo + args.block, total)
        for name in list(procs) if b % 2 == 0 else list(procs)[::-1]:
            before = server_cpu(args.pg_data)
            procs[name].stdin.write(f"{lo} {hi}\n")
            procs[name].stdin.flush()
            answer = json.loads(procs[name].stdout.readline())
            if lo >= args.warm:
                for key in ("t", "ids"):
                    results[name][key] += answer[key]
                results[name]["cpu"] += answer["cpu"]
                results[name]["server"] += server_cpu(args.pg_data) - before
        loads.append(os.getloadavg()[0])
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    print(f"load average during the run: {min(loads):.1f}-{max(loads):.1f}; {args.queries} queries per side")
    names = list(procs)
    base = np.array(results[names[0]]["t"]) * 1000
    for name in names:
        t = np.array(results[name]["t"]) * 1000
        p50, p95, p99 = np.percentile(t, [50, 95, 99])
        ratio = "" if name == names[0] else f"  /{names[0]}: p50 {p50 / np.percentile(base, 50):.2f}"
        ratio += "" if name == names[0] else f" p95 {p95 / np.percentile(base, 95):.2f}"
        cpu = results[name]["cpu"] / args.queries * 1000
        server = f"  server cpu/search {results[name]['server'] / args.queries * 1000:6.2f} ms" if args.pg_data else ""
        print(f"{name:<10} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f} ms  cpu/search {cpu:6.2f} ms{server}{ratio}")
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            same = sum(x == y for x, y in zip(results[a]["ids"], results[b]["ids"], strict=True))
            print(f"same hits {a} / {b}: {same} of {args.queries}")


if __name__ == "__main__":
    main()
