"""Team server benchmark: a load generator on loopback against a real ``funes serve`` process.

Run from the repository root::

    .venv/bin/python bench/server_bench.py --memories 10000 --requests 3000 --duration 60
    .venv/bin/python bench/server_bench.py --db postgresql://USER@127.0.0.1:5432/funes --memories 10000

What it does:

1. pre-fills the store with ``--memories`` synthetic memories in one team
   (``remember_many`` in batches, with the deterministic ``hash:384``
   embedder, so no model time is spent and none is measured), then builds the
   vector index and runs the maintenance the load queued, on both backends;
2. creates an admin key and starts ``funes serve`` on a free 127.0.0.1 port
   (the server runs its job worker, as in production);
3. runs ``--concurrency`` client threads for at most ``--requests`` requests
   or ``--duration`` seconds, whichever ends first: a mix of searches
   (``GET .../memories/search``) and creates (``POST .../memories``) in the
   ratio ``--write-share``;
4. prints req/s and p50/p95/p99 latency per operation, the number of 5xx
   answers, and **lost writes**: creates answered 201 whose record is not in
   the store afterwards (counted through the library after the server stops).

Latencies are client-side wall-clock over HTTP on loopback and include
everything but embedding model time (the hash embedder is ~free). Targets
(issue 13): search p95 <= 50 ms at 100k on SQLite with 2 cores; zero 5xx and
zero lost writes under sustained mixed load. The baseline printed alongside
is the same search through the library in-process (no HTTP, access tracking
on as in the server, the same hash embedder), which bounds what the server can
reach: one call at a time unless ``--baseline-concurrency`` says more (the
REST load's ``--concurrency`` compares like with like: two callers of one
process wait for each other on the GIL, over HTTP or not), with its CPU per
search. The CPU line adds what the bench's own client threads took per
request: they run on the same cores as the server. ``--db`` reuses a store
filled before (only the missing records are added).
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WORDS = (
    "deploy invoice budget roadmap incident customer schema backup latency pricing contract onboarding "
    "release sprint audit vendor forecast migration dashboard alert quota region cluster policy review"
).split()


def _text(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return f"Record {i}: {words} ({rng.randrange(10**9)})"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _cpu_seconds(pid: int, children: bool = False) -> float | None:
    """CPU seconds a process has used (with its reaped children's), from /proc (None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def _database_cpu_seconds(pgdata: str | None) -> float | None:
    """CPU seconds of a local PostgreSQL: its postmaster, the backends it reaped and those alive."""
    if not pgdata:
        return None
    try:
        postmaster = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    total = _cpu_seconds(postmaster, children=True) or 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == postmaster:
                total += _cpu_seconds(int(entry.name)) or 0.0
    return total


def _pg_buffers(store: object) -> tuple[str, str]:
    """PostgreSQL's shared_buffers, and the size of what a vector search reads (the HNSW index, the vectors)."""
    conn = store.db.reader()  # type: ignore[attr-defined]
    size = "pg_size_pretty(coalesce(pg_relation_size(to_regclass('memory_vectors_hnsw')), 0) + pg_relation_size('memory_vectors'))"
    row = conn.native(f"SELECT current_setting('shared_buffers'), {size}").fetchone()
    return str(row[0]), str(row[1])


def prefill(
    db: str, count: int, team: str, cold_index: bool = False, concurrency: int = 1
) -> tuple[str, list[float], float]:
    """Fill the store, create a key; return it, in-process search latencies (the baseline) and their CPU per search.

    ``concurrency``: callers searching the service at once in the baseline (the REST load's clients, without HTTP).

    The vector index a large team's searches ask for is built here, before the
    server starts, unless ``cold_index``: then the server's job worker builds it
    under the load. No detached worker is left behind (``auto_work`` off): it
    would compete with the server for the cores while it is measured.
    """
    import funes

    rng = random.Random(13)
    options = {**RETENTION_OFF, "auto_work": False}
    with funes.open(db, embedder="hash:384", worker="off", **options) as service:
        have = service.stats(tenant=team).get("records", 0) if count else 0
        have = int(have) if isinstance(have, int) else 0
        started = time.perf_counter()
        batch = 5000
        for start in range(have, count, batch):
            items = [_text(rng, i) for i in range(start, min(count, start + batch))]
            service.remember_many(items, tenant=team, scope="team")
        fill = time.perf_counter() - started
        print(f"prefill: {count - have} memories in {fill:.1f} s", file=sys.stderr)
        key = service.keys.create(team, "admin", name="bench")[0]
        # Jobs due now (maintenance), but never a queued index build when the server is to build it.
        service.run_jobs(
            max_seconds=300, kinds=[k for k in service.jobs.kinds if not (cold_index and k == "ann-index")]
        )
        if not cold_index:
            for _ in range(3):  # a large team's searches ask for its vector index: build it, so the server starts warm
                service.search(" ".join(rng.sample(WORDS, 3)), tenant=team, limit=10, track=False)
            # PostgreSQL builds the index only once the load has been quiet (store/pg_load.py): a build run
            # too early queues its successor for then, so wait for it rather than measure without an index.
            deadline = time.monotonic() + 900
            service.run_jobs(max_seconds=600)
            while service.jobs.list(kind="ann-index", status="queued") and time.monotonic() < deadline:
                time.sleep(1.0)
                service.run_jobs(max_seconds=600)
            # Maintenance deferred while the index was away (PostgreSQL: it defers a minute) is due once it is
            # built: run it here, as SQLite's ran above, so the load measures serving and not the first dedupe
            # after the load (5,000 records' neighbour searches) on one backend alone.
            while service.jobs.list(kind="maintain", status="queued") and time.monotonic() < deadline:
                time.sleep(1.0)
                service.run_jobs(max_seconds=600, kinds=["maintain", "optimize"])
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(200)]
        baseline: list[float] = []

        def searches(mine: list[str]) -> None:
            for query in mine:
                t0 = time.perf_counter()
                # As the server searches: access tracking on (one small write transaction per search).
                service.search(query, tenant=team, limit=10)
                baseline.append((time.perf_counter() - t0) * 1000)

        cpu = time.process_time()
        callers = [threading.Thread(target=searches, args=(queries[i::concurrency],)) for i in range(concurrency)]
        for t in callers:
            t.start()
        for t in callers:
            t.join()
        cpu = (time.process_time() - cpu) * 1000 / len(baseline)  # all the process's threads, as the server's figure
    return key, baseline, cpu


def start_server(db: str, home: str | None, src: str | None = None) -> tuple[subprocess.Popen[bytes], str, float]:
    """``funes serve`` on ``db`` at a free loopback port, hash embedder; (process, base URL, seconds to first answer).

    ``src``: the checkout's ``src`` the server runs (``PYTHONPATH``), for an A/B of two checkouts.
    """
    import httpx

    port = _free_port()
    env = {
        **os.environ,
        "FUNES_EMBEDDER": "hash:384",
        "FUNES_HOME": home or os.environ.get("FUNES_HOME", ""),
        **{f"FUNES_{k.upper()}": str(v) for k, v in RETENTION_OFF.items()},
    }
    if not env["FUNES_HOME"]:
        env.pop("FUNES_HOME")
    if src:
        env["PYTHONPATH"] = src
    code = "from funes.interfaces.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--db", db, "--port", str(port)], env=env, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    launched = time.monotonic()
    deadline = launched + 300
    while True:
        try:
            if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("funes serve did not start: " + (proc.stderr.read().decode() if proc.stderr else ""))
        time.sleep(0.2)
    return proc, base, time.monotonic() - launched  # a server busy holding the GIL (an index build) is late


class Load:
    """The mixed load: client threads sending searches and creates (share ``write_share``) to one server."""

    def __init__(self, base: str, headers: dict[str, str], team: str, write_share: float) -> None:
        self.base, self.headers, self.team, self.write_share = base, headers, team, write_share
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {"search": [], "create": []}
        self.errors = {"5xx": 0, "other": 0, "timeout": 0}
        self.written: list[str] = []
        self.sent = 0
        self.runs = 0

    def run(self, concurrency: int, requests: int, duration: float) -> float:
        """``concurrency`` clients until ``requests`` more are sent or ``duration`` seconds pass; the wall time."""
        stop_at, limit = time.monotonic() + duration, self.sent + requests
        self.runs += 1
        seeds = [(self.runs - 1) * 1000 + i for i in range(concurrency)]  # the first run: 0, 1, ... as before
        started = time.perf_counter()
        threads = [threading.Thread(target=self._client, args=(seed, stop_at, limit)) for seed in seeds]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - started

    def _client(self, seed: int, stop_at: float, limit: int) -> None:
        import httpx

        rng = random.Random(seed)
        with httpx.Client(base_url=self.base, headers=self.headers, timeout=60) as http:
            while True:
                with self.lock:
                    if self.sent >= limit or time.monotonic() > stop_at:
                        return
                    self.sent += 1
                    n = self.sent
                t0 = time.perf_counter()
                try:
                    if rng.random() < self.write_share:
                        op = "create"
                        content = f"bench-write-{seed}-{n}: " + " ".join(rng.choice(WORDS) for _ in range(8))
                        reply = http.post(f"/v1/teams/{self.team}/memories", json={"content": content})
                    else:
                        op = "search"
                        query = " ".join(rng.sample(WORDS, 3))
                        reply = http.get(f"/v1/teams/{self.team}/memories/search", params={"q": query})
                except httpx.TimeoutException:
                    with self.lock:
                        self.errors["timeout"] += 1
                    continue
                elapsed = (time.perf_counter() - t0) * 1000
                with self.lock:
                    self.latencies[op].append(elapsed)
                    if reply.status_code >= 500:
                        self.errors["5xx"] += 1
                    elif reply.status_code >= 400:
                        self.errors["other"] += 1
                    elif op == "create":
                        self.written.append(reply.json()["id"])


# The bench's one team holds up to 100k memories plus what the run creates: over the default tenant cap
# (max_records_total, 100,000), whose 80% trigger would evict a fifth of it mid-run. The bench measures
# serving, not retention, so the cap is raised; maintenance itself stays on, as in production.
RETENTION_OFF = {"max_records_total": 10_000_000, "project_max_records": 10_000_000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="SQLite path or postgresql:// URL (default: a temporary SQLite file).")
    parser.add_argument("--memories", type=int, default=10000, help="Memories to pre-fill (default 10000).")
    parser.add_argument("--requests", type=int, default=3000, help="Most requests to send (default 3000).")
    parser.add_argument("--duration", type=float, default=60.0, help="Most seconds of load (default 60).")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads (default 8).")
    parser.add_argument("--write-share", type=float, default=0.2, help="Share of creates in the mix (default 0.2).")
    parser.add_argument(
        "--pgdata",
        help="The local PostgreSQL's data directory (pgserver's): also print the database's CPU per request.",
    )
    parser.add_argument(
        "--cold-index",
        action="store_true",
        help="Start the server without the team's vector index: its job worker builds it under the load.",
    )
    callers = (
        "Threads searching in-process at once for the baseline (default 1; --concurrency compares like with like)."
    )
    parser.add_argument("--baseline-concurrency", type=int, default=1, help=callers)
    args = parser.parse_args()

    tmp = None
    db = args.db
    if db is None:
        tmp = tempfile.mkdtemp(prefix="funes-server-bench-")
        db = str(Path(tmp) / "bench.db")
    team = "bench"
    key, baseline, baseline_cpu = prefill(db, args.memories, team, args.cold_index, args.baseline_concurrency)
    proc, base, ready = start_server(db, tmp)
    headers = {"Authorization": f"Bearer {key}"}
    load = Load(base, headers, team, args.write_share)
    client_cpu = time.process_time()  # the load generator's own threads: CPU taken from the server's 2 cores
    cpu_before = _cpu_seconds(proc.pid), _database_cpu_seconds(args.pgdata)
    wall = load.run(args.concurrency, args.requests, args.duration)
    latencies, errors, written = load.latencies, load.errors, load.written
    cpu_after = _cpu_seconds(proc.pid), _database_cpu_seconds(args.pgdata)
    client_cpu = (time.process_time() - client_cpu) * 1000
    proc.terminate()
    proc.communicate(timeout=60)

    import funes

    with funes.open(db, embedder="hash:384", worker="off", **RETENTION_OFF, auto_work=False) as service:
        found = service.store.get_many(written)
        index_jobs = [f"{j.status} ({j.result or j.last_error})" for j in service.jobs.list(kind="ann-index")]
        buffers = _pg_buffers(service.store) if "://" in db else None
    lost = len(written) - len(found)
    backend = "postgres" if "://" in db else "sqlite"
    total = sum(len(v) for v in latencies.values())
    print(f"\nfunes serve on {backend}, {args.memories:,} memories, {args.concurrency} clients, {os.cpu_count()} cores")
    print(f"{total} requests in {wall:.1f} s = {total / wall:.0f} req/s; 5xx: {errors['5xx']}; 4xx: {errors['other']}")
    print(f"server answered its first health check {ready:.1f} s after launch")
    print(f"timeouts (no answer in 60 s): {errors['timeout']}")
    print(f"{'operation':<10} {'count':>6} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for op, values in latencies.items():
        print(
            f"{op:<10} {len(values):>6} {len(values) / wall:>7.0f} {_pct(values, 50):>8.1f} "
            f"{_pct(values, 95):>8.1f} {_pct(values, 99):>8.1f} {max(values, default=float('nan')):>8.1f}"
        )
    print(
        f"baseline: library search in-process, {args.baseline_concurrency} at a time, "
        f"p50 {statistics.median(baseline):.1f} ms, "
        f"p95 {_pct(baseline, 95):.1f} ms, CPU {baseline_cpu:.1f} ms per search"
    )
    cpu = [
        (a - b) * 1000 / max(total, 1) if a is not None and b is not None else None
        for a, b in zip(cpu_after, cpu_before, strict=True)
    ]
    if cpu[0] is not None:  # CPU the load cost, per request: what bounds req/s on a busy machine
        print(
            f"CPU per request: server process {cpu[0]:.1f} ms"
            + (f", PostgreSQL (all its processes) {cpu[1]:.1f} ms" if cpu[1] is not None else "")
            + f", the bench's client {client_cpu / max(total, 1):.1f} ms"
        )
    print(f"writes acknowledged: {len(written)}; lost writes: {lost}")
    if buffers:  # what the database's CPU per request depends on most (docs/postgres.md, its server's settings)
        print(f"PostgreSQL shared_buffers {buffers[0]}; the vector index and the vectors' table take {buffers[1]}")
    print(f"vector index jobs: {', '.join(index_jobs) or 'none'}")
    if tmp:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
