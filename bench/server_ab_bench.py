"""Two checkouts' ``funes serve`` on one kept store, the REST load alternated between them in short blocks.

Run from the repository root, on a store ``server_bench.py --db`` pre-filled (it reuses the records it finds)::

    .venv/bin/python bench/server_ab_bench.py --db STORE --before /tmp/before/src --blocks 12 --block-seconds 5
    .venv/bin/python bench/server_ab_bench.py --db postgresql://... --before /tmp/before/src --pgdata DIR

Both servers run at once (hash embedder, as in server_bench), each from its own ``src`` (``PYTHONPATH``:
``--before`` and this checkout's); the load of ``server_bench.py`` (``--concurrency`` clients,
``--write-share`` creates) goes to one of them at a time, in blocks that alternate (before, after, after,
before, ...), so a change in the machine's load falls on both sides alike. It prints each side's req/s,
p50/p95/p99 per operation and the ratio after / before, with the load average at the start and end.

Then both answer the same 40 searches (the load stopped, ``as_of`` pinned so recency is measured from one
instant): the hits, their order and every number must be the same; access counters, which each search
bumps, are left out of the comparison.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _without_access(answer: Any) -> Any:
    if isinstance(answer, dict):
        return {k: _without_access(v) for k, v in answer.items() if k not in ("access_count", "last_accessed")}
    if isinstance(answer, list):
        return [_without_access(v) for v in answer]
    return answer


def _difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two answers first differ (a JSON path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            found = _difference(a.get(k), b.get(k), f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next(
            (d for i, (x, y) in enumerate(zip(a, b, strict=True)) if (d := _difference(x, y, f"{where}[{i}]"))), None
        )
    return None if a == b else f"{where}: {str(a)[:80]} / {str(b)[:80]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="A pre-filled store: SQLite path or postgresql:// URL.")
    parser.add_argument("--before", required=True, help="The other checkout's src directory.")
    parser.add_argument("--blocks", type=int, default=12, help="Load blocks, alternated (default 12).")
    parser.add_argument("--block-seconds", type=float, default=5.0, help="Seconds of one block (default 5).")
    parser.add_argument("--concurrency", type=int, default=2, help="Client threads (default 2).")
    parser.add_argument("--write-share", type=float, default=0.2, help="Share of creates (default 0.2).")
    parser.add_argument("--team", default="bench", help="The pre-filled team (default: server_bench's).")
    args = parser.parse_args()

    sys.path.insert(0, str(BENCH))
    import httpx
    from server_bench import RETENTION_OFF, WORDS, Load, _pct, start_server

    import funes

    with funes.open(args.db, embedder="hash:384", worker="off", **RETENTION_OFF, auto_work=False) as service:
        key = service.keys.create(args.team, "admin", name="ab")[0]
    headers = {"Authorization": f"Bearer {key}"}
    sources = {"before": os.path.abspath(args.before), "after": str(BENCH.parent / "src")}
    servers = {side: start_server(args.db, None, src) for side, src in sources.items()}
    loads = {side: Load(base, headers, args.team, args.write_share) for side, (_, base, _) in servers.items()}
    walls = dict.fromkeys(servers, 0.0)
    for _, base, _ in servers.values():  # warm-up, not counted: each server's first searches load its caches
        Load(base, headers, args.team, args.write_share).run(args.concurrency, 10**9, 2.0)
    print(f"load average at the start: {_loadavg()}")
    try:
        for block in range(args.blocks):
            side = ("before", "after")[(block + block // 2) % 2]  # before, after, after, before, before, ...
            walls[side] += loads[side].run(args.concurrency, 10**9, args.block_seconds)
        print(f"load average at the end: {_loadavg()}")
        rng = random.Random(29)
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(40)]
        as_of = datetime.now(UTC).isoformat()
        answers = {}
        for side, (_, base, _) in servers.items():
            with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
                path = f"/v1/teams/{args.team}/memories/search"
                answers[side] = [
                    _without_access(http.get(path, params={"q": q, "as_of": as_of}).json()) for q in queries
                ]
    finally:
        for proc, _, _ in servers.values():
            proc.terminate()
            proc.communicate(timeout=60)
    same = sum(a == b for a, b in zip(answers["before"], answers["after"], strict=True))
    print(f"\n{len(servers)} servers on {args.db.split('?')[0]}, {args.blocks} blocks of {args.block_seconds:g} s")
    print(f"{'side':<7} {'operation':<9} {'count':>6} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    figures: dict[tuple[str, str], tuple[float, float, float]] = {}
    for side, load in loads.items():
        total = sum(len(v) for v in load.latencies.values())
        print(f"{side:<7} {'all':<9} {total:>6} {total / max(walls[side], 1e-9):>7.1f}")
        for op, values in load.latencies.items():
            figures[side, op] = (_pct(values, 50), _pct(values, 95), _pct(values, 99))
            p50, p95, p99 = figures[side, op]
            print(
                f"{side:<7} {op:<9} {len(values):>6} {len(values) / max(walls[side], 1e-9):>7.1f} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f}"
            )
        print(f"{side:<7} 5xx {load.errors['5xx']}, 4xx {load.errors['other']}, timeouts {load.errors['timeout']}")
    for op in ("search", "create"):
        ratios = [a / b for a, b in zip(figures["after", op], figures["before", op], strict=True)]
        print(f"after / before, {op}: p50 {ratios[0]:.2f}x, p95 {ratios[1]:.2f}x, p99 {ratios[2]:.2f}x")
    print(f"the same answer (hits, order, every number) on both: {same}/{len(queries)}")
    for q, a, b in zip(queries, answers["before"], answers["after"], strict=True):
        if a != b:
            print(f"  {q!r} first differs at {_difference(a, b)}")


if __name__ == "__main__":
    main()
