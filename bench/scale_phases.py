"""store_bench's measurements of a large tenant's approximate index (issue 16).

Kept apart from ``store_bench.py`` (its size): the first query of a fresh
process (measured in subprocesses), inserts with the index maintained, and
the files on disk next to the float32 floor.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[1] / "src")
BENCH = str(Path(__file__).resolve().parent)

# The store only: the tenant cap would make retention evict a fifth of 100k (and
# everything past it at 1M) had a maintenance job run; the bench raises it, the default stays.
RETENTION_OFF = {"max_records_total": 100_000_000, "project_max_records": 100_000_000}

# One fresh process: imports, then open the service and run the first hybrid
# query (store path, query vector precomputed: no model), then more queries,
# then report times and memory. Run several times; the median is reported.
FIRST = """
import json, sys, time
t0 = time.perf_counter()
sys.path[:0] = [{src!r}, {bench!r}]
import numpy as np
from dataclasses import replace
from datetime import UTC, datetime
from funes.models import SearchFilters, SearchQuery
from funes.service import open as open_funes
from store_bench import Corpus
corpus = Corpus(seed={seed}, tenants=[{tenant!r}])  # the bench's data, not the engine: before the clock
text, vec = corpus.query("rare")
filters = SearchFilters(tenant={tenant!r})
now = datetime.now(UTC)
t1 = time.perf_counter()
svc = open_funes({path!r}, worker="off", query_threads=1, **{settings!r})
svc.embedding.embed_query = lambda _q: vec
t2 = time.perf_counter()
plan = lambda text: replace(svc.core.plan(SearchQuery.of(text, tenant={tenant!r}, limit=10)), filters=filters, now=now)
svc.core.hybrid.search(plan(text))
t3 = time.perf_counter()
for _ in range({more}):
    text, vec = corpus.query("rare")
    svc.embedding.embed_query = lambda _q, v=vec: v
    svc.core.hybrid.search(plan(text))
mem = {{}}
with open("/proc/self/status") as fh:
    for line in fh:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            mem[key] = int(value.split()[0]) * 1024
served = svc.store.ann.searches
print(json.dumps({{"imports": t1 - t0, "open": t2 - t1, "first": t3 - t2, "ann": served, **mem}}))
"""


def disk_bytes(path: str) -> tuple[int, int]:
    """(database + WAL, approximate-index files) in bytes."""
    db = sum(Path(path + s).stat().st_size for s in ("", "-wal") if Path(path + s).exists())
    ann = Path(path + ".ann")
    index = sum(f.stat().st_size for f in ann.iterdir() if f.is_file()) if ann.is_dir() else 0
    return db, index


def first_query(bench: Any, layout: str, size: int, path: str, tenant: str) -> None:
    """Median over fresh processes of open + first hybrid query (imports excluded), and their memory."""
    runs = []
    for _ in range(bench.args.first_runs):
        code = FIRST.format(
            src=SRC, bench=BENCH, path=path, tenant=tenant, seed=bench.args.seed + 99, more=50, settings=RETENTION_OFF
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=fresh_env(bench, PYTHONPATH=SRC)
        )
        if done.returncode != 0:
            raise SystemExit(f"first-query process failed: {done.stderr}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def med(key: str) -> float:
        return float(statistics.median(r[key] for r in runs))

    bench.add(
        layout,
        size,
        "fresh process: open + first query (ms)",
        f"{(med('open') + med('first')) * 1000:.1f}",
        f"median of {len(runs)}: open {med('open') * 1000:.1f} + first query {med('first') * 1000:.1f}; "
        f"imports {med('imports') * 1000:.0f} ms not counted; {'index' if runs[0]['ann'] else 'no index'}",
    )
    floor = size * 384 * 4
    bench.add(
        layout,
        size,
        "fresh process RSS after 51 queries (MB)",
        f"{med('VmRSS') / 1e6:,.0f}",
        f"private {med('RssAnon') / 1e6:,.0f} + mapped files {med('RssFile') / 1e6:,.0f} (page cache), "
        f"peak {med('VmHWM') / 1e6:,.0f}; raw float32 vectors {floor / 1e6:,.0f}",
    )
    db, index = disk_bytes(path)
    bench.add(
        layout,
        size,
        "on disk: database + index (MB)",
        f"{(db + index) / 1e6:,.0f}",
        f"database {db / 1e6:,.0f} + index files {index / 1e6:,.0f}; raw float32 {floor / 1e6:,.0f}",
    )


def maintained_inserts(bench: Any, layout: str, size: int, svc: Any, corpus: Any, tenant: str) -> None:
    """Insert more records into an indexed tenant while its index is kept current, as a live worker would.

    After each batch one search runs (which reads the change log and asks
    for a catch-up when the delta is large) and the asked-for index work is
    done at once; all of it is timed. The records stay in the store.
    """
    count = bench.args.maintained
    store = svc.store
    if not count or tenant not in store.ann._tenants:
        return
    written = 0
    write_time = index_time = 0.0
    catchups = store.ann.catchups
    now = bench.now
    while written < count:
        n = min(bench.args.batch, count - written)
        items, _, _ = corpus.records(size + written, n, size + count, lambda _i: tenant, now)
        t0 = time.perf_counter()
        store.put_many(items)
        t1 = time.perf_counter()
        store.vector_search(corpus.query("rare")[1], _filters(tenant), k=50, now=now)
        for wanted in store.index_work():
            store.maintain_index(wanted)
        t2 = time.perf_counter()
        write_time += t1 - t0
        index_time += t2 - t1
        written += n
    entry = store.ann._tenants.get(tenant)
    delta = len(entry.delta) if entry is not None else 0
    bench.add(
        layout,
        size,
        "insert, index maintained (records/s)",
        f"{written / (write_time + index_time):,.0f}",
        f"{written:,} records: writes {written / write_time:,.0f}/s, {store.ann.catchups - catchups} catch-up(s) "
        f"{index_time:.1f} s, delta left {delta:,} (searched exactly)",
    )
    # What the delta left costs when it is folded into the graph (the job would do it
    # once the delta passes its limit): the sustained rate counts it.
    t0 = time.perf_counter()
    store.maintain_index(tenant)
    final = time.perf_counter() - t0
    bench.add(
        layout,
        size,
        "  sustained, with the delta's catch-up (records/s)",
        f"{written / (write_time + index_time + final):,.0f}",
        f"catch-up of the {delta:,} left: {final:.1f} s ({store.ann.build_threads} thread(s))",
    )


def _filters(tenant: str) -> Any:
    from funes.models import SearchFilters

    return SearchFilters(tenant=tenant)


def fresh_env(bench: Any, **extra: str) -> dict[str, str]:
    """The environment of a timed fresh process, with Funes' bytecode compiled as an install would have it.

    A shell with PYTHONDONTWRITEBYTECODE set (or a source edited since the
    last compile) would otherwise make every fresh process compile the
    changed modules again: ~25 ms for ten of them, on the clock.
    """
    compileall.compile_dir(SRC, quiet=1)
    env = dict(os.environ, FUNES_HOME=str(bench.workdir / "home"), HF_HUB_OFFLINE="1", **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env
