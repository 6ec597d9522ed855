"""Bulk writes against their loops, with the real local model, in one run.

Run from the repository root (about a minute on 2 cores with the defaults)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bulk_bench.py
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
embedding-cache hits) and both share one loaded all-MiniLM-L6-v2, warmed up
before the first timing. The texts are distinct sentences of 12 to 40 words
from a fixed vocabulary, seeded, so every run measures the same work.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import funes
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


def main() -> None:
    """Run both comparisons and print the rates and ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=300, help="texts remembered each way")
    parser.add_argument("--messages", type=int, default=200, help="messages in the conversation")
    parser.add_argument("--seed", type=int, default=7)
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

    embedder = LocalEmbedder()
    embedder.embed_batch(sentences(64, seed=999))  # load the weights and warm the kernels before timing
    texts = sentences(args.memories, args.seed)
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(sentences(args.messages, args.seed + 1))
    ]
    with tempfile.TemporaryDirectory(prefix="funes-bulk-bench-") as tmp:

        def store(name: str) -> funes.Funes:
            return funes.open(str(Path(tmp) / f"{name}.db"), embedder=embedder, worker="off")

        with store("loop") as mem:
            loop = timed(lambda: [mem.remember(t) for t in texts])
            assert len(mem.list(limit=1000).items) == min(len(texts), 1000)
        with store("bulk") as mem:
            results: list[Any] = []
            bulk = timed(lambda: results.extend(mem.remember_many(texts)))
            assert all(r.status == "created" for r in results)
        with store("messages-loop") as mem:
            session = mem.session("loop")
            message_loop = timed(lambda: [session.add_message(m["role"], m["content"]) for m in turns], "loop")
        with store("messages-bulk") as mem:
            session = mem.session("bulk")
            message_bulk = timed(lambda: session.add_messages(turns), "bulk")
            assert len(session.history()) == len(turns)

    print(
        f"bulk_bench: {len(texts)} memories, {len(turns)} messages, all-MiniLM-L6-v2, {os.cpu_count()} cores, "
        f"{args.load} busy processes beside it"
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
    print(
        f"  CPU seconds, add_message loop {CPU['loop']:.2f} s, add_messages {CPU['bulk']:.2f} s: "
        f"bulk/loop {CPU['bulk'] / CPU['loop']:.2f}  (target <= 1.00: the bulk path never costs more)"
    )


if __name__ == "__main__":
    main()
