"""Save-to-searchable latency of ``funes watch`` (issue 11: a hand edit is searchable within 2 s).

A real watchdog watcher and the job worker run on a temporary memory folder
with the real model. Each round saves a Markdown file with a new word and
polls search until the word is found; the time from the save to the first
hit is the latency. The baseline, in the same run, is the same save
followed by an explicit ``sync()`` (what the watcher adds is the debounce
and the job hand-off). Printed: median, p95 and max of both, and the target.

    .venv/bin/python bench/watch_bench.py [--rounds 20] [--debounce 1.0] [--embedder local|hash] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import funes

TARGET_SECONDS = 2.0
WORDS = "aardvark bilby capybara dugong echidna fossa gharial hoatzin ibex jerboa kakapo loris".split()


def _note(n: int) -> tuple[str, str]:
    word = f"{WORDS[n % len(WORDS)]}{n}"
    return word, f"# Note {n}\n\nToday the {word} was seen near the river; it ate berries and slept.\n"


def _until_found(mem: funes.Funes, word: str, deadline: float) -> float | None:
    while time.monotonic() < deadline:
        if any(word in h.memory.content for h in mem.search(word, limit=5)):
            return time.monotonic()
        time.sleep(0.01)
    return None


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 3),
        "max": round(ordered[-1], 3),
    }


def run(rounds: int, debounce: float, embedder: str) -> dict[str, Any]:
    """Measure the baseline (save + explicit sync) and the watcher (save, then poll search)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        mem = funes.open(str(Path(tmp) / "bench.db"), embedder=embedder)
        try:
            mem.add_folder(root)
            mem.search("warm up the model")  # load the model outside the timings
            baseline: list[float] = []
            for n in range(rounds):
                word, text = _note(n)
                started = time.monotonic()
                (root / f"base{n}.md").write_text(text)
                mem.sync(root)
                found = _until_found(mem, word, started + 30)
                assert found is not None, f"{word} not found after sync"
                baseline.append(found - started)
            stop = threading.Event()
            watcher = threading.Thread(target=mem.watch, kwargs={"stop": stop, "debounce": debounce}, daemon=True)
            watcher.start()
            time.sleep(debounce + 1.0)  # let the start-up reconcile finish
            watched: list[float] = []
            missed = 0
            for n in range(rounds, 2 * rounds):
                word, text = _note(n)
                started = time.monotonic()
                (root / f"edit{n}.md").write_text(text)
                found = _until_found(mem, word, started + 30)
                if found is None:
                    missed += 1
                else:
                    watched.append(found - started)
            stop.set()
            watcher.join(10)
        finally:
            mem.close()
    return {
        "rounds": rounds,
        "debounce_seconds": debounce,
        "embedder": embedder,
        "baseline_save_and_sync": _summary(baseline),
        "watch_save_to_searchable": _summary(watched) if watched else None,
        "missed": missed,
        "target_seconds": TARGET_SECONDS,
        "meets_target": bool(watched) and missed == 0 and max(watched) <= TARGET_SECONDS,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--debounce", type=float, default=1.0)
    parser.add_argument("--embedder", default="local", choices=["local", "hash"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.rounds, args.debounce, args.embedder)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if result["meets_target"] else 1
    base, watch = result["baseline_save_and_sync"], result["watch_save_to_searchable"]
    print(f"watch_bench: {args.rounds} saves, debounce {args.debounce:g} s, embedder {args.embedder}")
    print(
        f"  baseline (save + sync()):      median {base['median']:.3f} s  p95 {base['p95']:.3f} s  max {base['max']:.3f} s"
    )
    if watch:
        print(
            f"  funes watch (save -> search):  median {watch['median']:.3f} s  p95 {watch['p95']:.3f} s  "
            f"max {watch['max']:.3f} s  missed {result['missed']}"
        )
    print(
        f"  target: every save searchable within {TARGET_SECONDS:g} s -> {'met' if result['meets_target'] else 'NOT met'}"
    )
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
