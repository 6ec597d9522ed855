"""The local model without torch: numpy against torch in one run, and cold CLI calls (issue 30).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/embed_bench.py                # ~3 min on 2 cores
    .venv/bin/python bench/embed_bench.py --skip-cli --rounds 3

Needs torch (``pip install torch==2.13.0``) for the torch side. What it measures:

* batch throughput (texts/s) of ``LocalEmbedder`` with ``backend="numpy"``
  and ``backend="torch"`` on the same texts, ``--threads`` BLAS/torch
  threads, rounds interleaved (numpy, torch, numpy, ...) so both see the
  same machine; the median of each and numpy / torch;
* single-query latency (ms), one thread, numpy against torch, interleaved;
* fresh processes: ``funes --help`` (the floor), the first ``funes add`` of
  a new store and the first ``funes search`` of it, with
  ``FUNES_EMBED_RUNTIME=numpy`` (the default ``auto`` does the same for one
  text) against ``FUNES_EMBED_RUNTIME=torch`` (what main did for
  ``funes add``), interleaved.

Texts are seeded synthetic sentences of 6-150 words (lognormal, median ~30,
the shape of store_bench.py's records). The BLAS kernel numpy runs is printed
(OPENBLAS_CORETYPE, when set, forces an older and slower one).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np
from bulk_bench import WORDS, timed  # the same vocabulary and clock as the bulk-write bench

from funes.providers.embed.local import LocalEmbedder


def texts(count: int, seed: int) -> list[str]:
    """Seeded sentences, 6-150 words, lognormal lengths (median ~30 words)."""
    rng = random.Random(seed)
    lengths = np.clip(np.random.default_rng(seed).lognormal(3.4, 0.5, count), 6, 150).astype(int)
    return [" ".join(rng.choice(WORDS) for _ in range(int(n))).capitalize() + "." for n in lengths]


def interleaved(runs: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each callable once per round, in turn; the seconds each took."""
    out: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            out[name].append(run())
    return out


def blas_kernel() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    return ", ".join(f"{i['internal_api']} {i.get('architecture', '?')}" for i in threadpool_info())


def model_phase(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    rows = []
    batch_texts = texts(args.texts, args.seed)
    embedders = {b: LocalEmbedder(backend=b, batch_threads=args.threads, query_threads=1) for b in ("numpy", "torch")}
    reference = {}
    for name, emb in embedders.items():
        reference[name] = emb.embed_batch(batch_texts[:64])  # load, warm up
    diff = float(np.abs(reference["numpy"] - reference["torch"]).max())
    got = interleaved(
        {name: (lambda e=emb: timed(lambda: e.embed_batch(batch_texts))) for name, emb in embedders.items()},
        args.rounds,
    )
    rate = {name: len(batch_texts) / statistics.median(times) for name, times in got.items()}
    words = statistics.mean(len(t.split()) for t in batch_texts)
    for name in embedders:
        rows.append((f"batch throughput, {name}", f"{rate[name]:,.1f} texts/s", f"{args.threads} threads"))
    rows.append(
        (
            "batch throughput, numpy / torch",
            f"{rate['numpy'] / rate['torch']:.2f}x",
            f"{len(batch_texts)} texts of mean {words:.0f} words, median of {args.rounds} rounds; "
            f"max |numpy - torch| {diff:.1e}",
        )
    )
    queries = texts(args.queries, args.seed + 1)
    for emb in embedders.values():
        emb.embed_batch(["warm up"], query=True)
    lat: dict[str, list[float]] = {name: [] for name in embedders}
    for q in queries:
        for name, emb in embedders.items():
            lat[name].append(timed(lambda e=emb, q=q: e.embed_batch([q], query=True)))
    for name in embedders:
        rows.append((f"query latency p50, {name}", f"{statistics.median(lat[name]) * 1000:.1f} ms", "1 thread"))
    rows.append(
        (
            "query latency, numpy / torch",
            f"{statistics.median(lat['numpy']) / statistics.median(lat['torch']):.2f}x",
            f"{len(queries)} queries",
        )
    )
    return rows


def cli_phase(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    exe = str(Path(sys.executable).parent / "funes")
    work = Path(tempfile.mkdtemp(prefix="funes-embed-bench-"))
    base = dict(os.environ, FUNES_HOME=str(work / "home"), HF_HUB_OFFLINE="1")
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    results: dict[str, list[float]] = {}
    for run in range(args.cli_runs):
        for runtime in ("numpy", "torch"):
            env = dict(base, FUNES_EMBED_RUNTIME=runtime)
            db = str(work / f"{runtime}-{run}.db")
            steps = {
                "help": [exe, "--help"],
                "add": [exe, "--db", db, "add", f"The staging database lives in Frankfurt ({run})."],
                "search": [exe, "--db", db, "search", "where is the staging database?", "--limit", "3"],
            }
            for step, cmd in steps.items():
                t0 = time.perf_counter()
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                results.setdefault(f"{step}/{runtime}", []).append(time.perf_counter() - t0)
                if done.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr}")
    rows = [("`funes --help` (floor)", f"{statistics.median(results['help/numpy']):.2f} s", "")]
    for step in ("add", "search"):
        numpy_s = statistics.median(results[f"{step}/numpy"])
        torch_s = statistics.median(results[f"{step}/torch"])
        rows.append((f"first `funes {step}`, numpy", f"{numpy_s:.2f} s", f"median of {args.cli_runs} processes"))
        rows.append((f"first `funes {step}`, torch", f"{torch_s:.2f} s", "FUNES_EMBED_RUNTIME=torch"))
        rows.append((f"first `funes {step}`, numpy / torch", f"{numpy_s / torch_s:.2f}x", ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=512, help="Texts per throughput round.")
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved throughput rounds per backend.")
    parser.add_argument("--queries", type=int, default=60, help="Single queries per backend.")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="Threads for batches.")
    parser.add_argument("--cli-runs", type=int, default=5, help="Fresh processes per CLI step and runtime.")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}; numpy {np.__version__}; BLAS {blas_kernel()}")
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = model_phase(args)
    if not args.skip_cli:
        rows += cli_phase(args)
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    width = max(len(r[0]) for r in rows)
    for metric, value, note in rows:
        print(f"{metric:<{width}}  {value:>16}  {note}")


if __name__ == "__main__":
    main()
