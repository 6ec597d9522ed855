"""Foundation benchmark: the SQLite store's insert and search paths, the local model, the CLI.

Run from the repository root (about 4-6 minutes on 2 cores with the defaults)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/store_bench.py
    .venv/bin/python bench/store_bench.py --sizes 10000 --queries 100 --skip-embed --skip-cli

What it measures (see bench/README.md for how to read the table):

* insert throughput through ``SqliteStore.put_many`` with precomputed vectors,
  in batches of ``--batch`` records, from an empty store up to each size;
* hybrid search latency (p50/p95/p99) through ``Funes._search`` with the query
  vector precomputed (store + fusion, no embedding), tenant-scoped, and the
  two legs (FTS5 BM25, sqlite-vec KNN) on their own, for queries of rare
  words and queries made only of very common words;
* vector recall@10 against exact brute force, and that brute force (numpy,
  same vectors, same tenant) timed in the same run as a baseline;
* the database size at each checkpoint;
* the local model's throughput at batch 32 and 128, single-query embedding
  latency by thread count, end-to-end ``Funes.search`` latency with the real
  model, and the cold start of a one-shot ``funes search`` process.

Two layouts are measured: ``multi`` spreads the records over ``--tenants``
tenants and scopes each query to one of them; ``single`` puts every record in
one tenant, the worst case for the per-tenant partitions.

The data is synthetic but shaped like real memories: 384-dim unit vectors
from a two-level Gaussian mixture (topics and subtopics, so neighbours are
close and near-ties exist), text drawn from a Zipf-distributed vocabulary
whose head is common English words (so a query of common words matches a
large share of the store), a mix of scopes, projects, types and expiries,
and creation times spread over a year in insertion order.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The numpy baseline runs on one thread, like sqlite-vec's scan; a threaded
# BLAS on a 2-core machine shared with the model only adds noise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np
import scale_phases

from funes.memory.ranking import STOPWORDS, query_terms
from funes.models import Memory, SearchFilters, SearchQuery, SourceRef, content_hash, new_id
from funes.store.sqlite import SqliteStore
from funes.store.vector_cache import LOAD_ON_SEARCH

DIMS = 384
SCOPES = ("team", "project", "session")
TYPES = ("fact", "preference", "decision", "context", "conversation")

# The head of the vocabulary: frequent content words of workplace notes. With
# a Zipf law over the whole vocabulary, each of the first few appears in a
# large share of all records, which is what makes naive BM25 ranking slow.
COMMON = """
user project team meeting customer data work time need use update plan issue
review report client release deadline budget design feature test support email
call week month product service change new prefer decide sales vendor contract
price account access server database deploy code bug fix document note api
model price order payment invoice delivery schedule office travel hotel flight
policy security backup monitor alert metric goal task priority status risk owner
manager engineer developer marketing finance legal hire onboarding training
""".split()

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["ar", "en", "is", "on", "ul", "ex"]


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """Common words first, then pronounceable invented words for the long tail."""
    words = list(dict.fromkeys(w for w in COMMON if w not in STOPWORDS))
    seen = set(words)
    while len(words) < size:
        n = int(rng.integers(2, 5))
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), n))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length."""
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@dataclass
class Corpus:
    """Synthetic memories: vectors from a Gaussian mixture, text from a Zipf vocabulary."""

    seed: int
    tenants: list[str]
    vocab_size: int = 30000
    topics: int = 48
    subtopics: int = 8
    rng: np.random.Generator = field(init=False)
    words: list[str] = field(init=False)
    probs: np.ndarray = field(init=False)
    centres: np.ndarray = field(init=False)
    topic_words: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.words = vocabulary(self.vocab_size, self.rng)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        p = 1.0 / ranks**1.07
        self.probs = p / p.sum()
        top = unit(self.rng.standard_normal((self.topics, DIMS)))
        noise = self.rng.standard_normal((self.topics, self.subtopics, DIMS)) / np.sqrt(DIMS)
        self.centres = unit(top[:, None, :] + 0.8 * noise).reshape(-1, DIMS)
        # Each subtopic has a few characteristic mid-frequency words, so text
        # and vectors agree roughly as they do for real memories.
        self.topic_words = self.rng.integers(200, 5000, size=(len(self.centres), 6))

    def vectors(self, clusters: np.ndarray) -> np.ndarray:
        """One unit vector near each given subtopic centre."""
        noise = self.rng.standard_normal((len(clusters), DIMS)).astype(np.float32) / np.sqrt(DIMS)
        return unit(self.centres[clusters] + 1.0 * noise)

    def text(self, n_words: int, cluster: int) -> str:
        """A sentence-like string: Zipf words plus a few words of the subtopic."""
        idx = self.rng.choice(len(self.words), size=n_words, p=self.probs)
        k = max(1, n_words // 8)
        idx[self.rng.integers(0, n_words, k)] = self.topic_words[cluster, self.rng.integers(0, 6, k)]
        return " ".join(self.words[i] for i in idx).capitalize() + "."

    def records(
        self, start: int, count: int, total: int, tenant_of: Callable[[int], str], now: datetime
    ) -> tuple[list[tuple[Memory, list[np.ndarray]]], np.ndarray, np.ndarray]:
        """Records ``start .. start+count`` of ``total``, oldest first, with their vectors."""
        clusters = self.rng.integers(0, len(self.centres), count)
        vecs = self.vectors(clusters)
        lengths = np.clip(self.rng.lognormal(3.4, 0.5, count), 6, 200).astype(int)
        begin = now - timedelta(days=365)
        step = timedelta(days=365) / max(total, 1)
        items: list[tuple[Memory, list[np.ndarray]]] = []
        expired = np.zeros(count, dtype=bool)
        for j in range(count):
            i = start + j
            content = self.text(int(lengths[j]), int(clusters[j]))
            scope = SCOPES[int(self.rng.choice(3, p=(0.6, 0.3, 0.1)))]
            project = f"proj{int(self.rng.integers(0, 5))}" if scope == "project" else None
            session = f"sess{int(self.rng.integers(0, 200))}" if scope == "session" else None
            roll = self.rng.random()
            expires = None
            if roll < 0.02:
                expires = now - timedelta(days=1)
                expired[j] = True
            elif roll < 0.05:
                expires = now + timedelta(days=30)
            created = begin + step * i
            mtype = TYPES[int(self.rng.integers(0, len(TYPES)))]
            items.append(
                (
                    Memory(
                        id=new_id(),
                        content=content,
                        tenant=tenant_of(i),
                        scope=scope,
                        project_id=project,
                        session_id=session,
                        memory_type=mtype,
                        title=content.split(" ", 4)[-1][:40] if self.rng.random() < 0.2 else None,
                        topic=self.words[int(self.topic_words[clusters[j], 0])] if self.rng.random() < 0.3 else None,
                        source=SourceRef(type="user"),
                        importance=float(np.round(self.rng.random(), 2)),
                        expires_at=expires,
                        content_hash=content_hash(content),
                        created_at=created,
                        updated_at=created,
                        metadata={"n": i},
                    ),
                    [vecs[j]],
                )
            )
        return items, vecs, expired

    def query(self, kind: str) -> tuple[str, np.ndarray]:
        """A query: text and its (precomputed) vector, near a random subtopic."""
        cluster = int(self.rng.integers(0, len(self.centres)))
        vec = self.vectors(np.array([cluster]))[0]
        if kind == "common":
            # Only words from the head of the vocabulary: the FTS5 trap.
            picks = self.rng.choice(12, size=3, replace=False)
            words = [self.words[int(i)] for i in picks]
        else:
            words = [self.words[int(i)] for i in self.topic_words[cluster, self.rng.choice(6, 2, replace=False)]]
            words.append(self.words[int(self.rng.integers(0, 3000))])
        return " ".join(words), vec


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) in milliseconds of values in seconds."""
    return float(np.percentile(np.asarray(values), q)) * 1000.0


def db_size(path: str) -> int:
    """Bytes of the database file plus its WAL."""
    return sum(Path(path + s).stat().st_size for s in ("", "-wal") if Path(path + s).exists())


@dataclass
class Row:
    """One printed result line."""

    layout: str
    size: int
    metric: str
    value: str
    note: str = ""


class Bench:
    """Runs the measurements and collects the rows of the report."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[Row] = []
        self.workdir = Path(args.workdir or tempfile.mkdtemp(prefix="funes-bench-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.now = datetime.now(UTC)

    def add(self, layout: str, size: int, metric: str, value: str, note: str = "") -> None:
        row = Row(layout, size, metric, value, note)
        self.rows.append(row)
        print(f"  {layout:<7} {size:>7} {metric:<38} {value:>18}  {note}", flush=True)

    # -- store ------------------------------------------------------------------
    def open_service(self, path: str, embedder: Any) -> Any:
        from funes.service import open as open_funes

        svc = open_funes(path, embedder=embedder, query_threads=1, **scale_phases.RETENTION_OFF)
        svc.store.ann.build_threads = self.args.build_threads
        return svc

    def run_layout(self, layout: str, sizes: list[int], embedder: Any) -> None:
        args = self.args
        tenants = [f"t{i:02d}" for i in range(args.tenants)] if layout == "multi" else ["solo"]
        corpus = Corpus(seed=args.seed, tenants=tenants)
        if layout == "multi":
            # Round-robin keeps every tenant's records spread over time.
            def tenant_of(i: int) -> str:
                return tenants[i % len(tenants)]
        else:

            def tenant_of(i: int) -> str:
                return tenants[0]

        path = str(self.workdir / f"{layout}.db")
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
        svc = self.open_service(path, embedder)
        store = svc.store
        total = max(sizes)
        all_vecs = np.zeros((total, DIMS), dtype=np.float32)
        tenant_idx = np.zeros(total, dtype=np.int32)
        expired = np.zeros(total, dtype=bool)
        ids: list[str] = []
        done = 0
        insert_time = 0.0
        print(f"\n== layout {layout}: {len(tenants)} tenant(s), up to {total:,} records", flush=True)
        for size in sizes:
            while done < size:
                n = min(args.batch, size - done)
                items, vecs, exp = corpus.records(done, n, total, tenant_of, self.now)
                all_vecs[done : done + n] = vecs
                expired[done : done + n] = exp
                tenant_idx[done : done + n] = [tenants.index(m.tenant) for m, _ in items]
                ids.extend(m.id for m, _ in items)
                t0 = time.perf_counter()
                store.put_many(items)
                insert_time += time.perf_counter() - t0
                done += n
            self.add(
                layout,
                size,
                "insert throughput (records/s)",
                f"{size / insert_time:,.0f}",
                f"{insert_time:.1f} s from empty, batches of {args.batch}",
            )
            store.db.reader().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            # Large tenants are searched through their usearch index once an `ann-index` job has built it
            # (a long-running worker or `funes jobs run` does); build it here so the timed queries use it.
            counts = np.bincount(tenant_idx[:size], minlength=len(tenants))
            big = [
                t for t, n in zip(tenants, counts, strict=True) if store.ann.min_vectors and n >= store.ann.min_vectors
            ]
            if big:
                t0 = time.perf_counter()
                for t in big:
                    store.maintain_index(t)
                self.add(
                    layout,
                    size,
                    "vector index build/catch-up (s)",
                    f"{time.perf_counter() - t0:.1f}",
                    f"{len(big)} tenant(s)",
                )
            if not args.as_loaded:
                # The load's writes queue maintenance, whose `optimize` job merges the keyword index's segments
                # (a worker or `funes jobs run` does); run it here so the timed queries see a maintained store.
                t0 = time.perf_counter()
                store.optimize(vacuum_free_ratio=1.0)
                self.add(layout, size, "optimize job (s)", f"{time.perf_counter() - t0:.1f}", "keyword segments merged")
            self.add(
                layout,
                size,
                "database size (MB)",
                f"{db_size(path) / 1e6:,.1f}",
                f"{db_size(path) / size / 1024:.2f} KiB/record",
            )
            self.search_phase(
                layout, size, svc, corpus, tenants, all_vecs[:size], tenant_idx[:size], expired[:size], ids
            )
            if not args.skip_first:
                scale_phases.first_query(self, layout, size, path, tenants[0])
            # End to end and the CLI's cold start at every size, so one run fills the whole table
            # (the cold start on the single layout when it runs: one tenant of that size).
            self.e2e_phase(layout, size, svc, corpus, tenants)
            if not args.skip_cli and (layout == "single" or "single" not in args.layouts):
                self.cli_search(size, path, tenants[0])
        scale_phases.maintained_inserts(self, layout, total, svc, corpus, tenants[0])
        svc.close()

    def search_phase(
        self,
        layout: str,
        size: int,
        svc: Any,
        corpus: Corpus,
        tenants: list[str],
        vecs: np.ndarray,
        tenant_idx: np.ndarray,
        expired: np.ndarray,
        ids: list[str],
    ) -> None:
        args = self.args
        store = svc.store
        now = datetime.now(UTC)
        per_tenant = {
            t: (np.ascontiguousarray(vecs[(tenant_idx == n) & ~expired]), np.flatnonzero((tenant_idx == n) & ~expired))
            for n, t in enumerate(tenants)
        }
        stats: dict[str, list[float]] = {
            k: []
            for k in (
                "hybrid",
                "hybrid_common",
                "hybrid_rare",
                "kw_common",
                "kw_rare",
                "vec",
                "numpy",
                "vec_k10",
                "vec_sqlite",
            )
        }
        cache = store.vector_cache
        min_vectors = cache.min_vectors
        cache.clear()
        # The same queries through sqlite-vec alone (no cache, no index): slow on a large
        # tenant (~0.4 s a query at 1M), so only the first --sqlite-vec-queries of them.
        plain = SqliteStore(store.path, vector_cache_min=0, ann_min=0)
        served, scans = store.ann.searches, store.ann.scans
        for _ in range(LOAD_ON_SEARCH):  # the search that loads the tenant into memory
            t0 = time.perf_counter()
            store.vector_search(corpus.query("rare")[1], SearchFilters(tenant=tenants[0]), k=50, now=now)
            load_search = time.perf_counter() - t0
        cached_tenants = len(cache._tenants)
        recalls: list[float] = []
        kw_hits_common: list[int] = []
        queries = [("common" if q % 2 else "rare") for q in range(args.queries)]
        warm = 10
        for n, kind in enumerate(["rare", "common"] * (warm // 2) + queries):
            timed = n >= warm
            tenant = tenants[int(corpus.rng.integers(0, len(tenants)))]
            text, qvec = corpus.query(kind)
            filters = SearchFilters(tenant=tenant)
            svc.embedding.embed_query = lambda _q, v=qvec: v  # the store path only: no model
            plan = replace(svc.core.plan(SearchQuery.of(text, tenant=tenant, limit=10)), filters=filters, now=now)
            t0 = time.perf_counter()
            svc.core.hybrid.search(plan)
            t1 = time.perf_counter()
            kw = store.keyword_search(
                query_terms(text), filters, limit=50, scan_cap=svc.config.keyword_scan_cap, now=now
            )
            t2 = time.perf_counter()
            store.vector_search(qvec, filters, k=50, now=now)
            t3 = time.perf_counter()
            top10 = store.vector_search(qvec, filters, k=10, now=now)
            t4 = time.perf_counter()
            matrix, rows = per_tenant[tenant]
            sims = matrix @ qvec
            best = np.argpartition(-sims, 10)[:10] if len(sims) > 10 else np.arange(len(sims))
            truth = {ids[int(rows[i])] for i in best}
            t5 = time.perf_counter()
            if len(stats["vec_sqlite"]) < args.sqlite_vec_queries:
                plain.vector_search(qvec, filters, k=50, now=now)
            t6 = time.perf_counter()
            if not timed:
                continue
            found = {i for i, _ in top10}
            recalls.append(len(found & truth) / max(1, len(truth)))
            stats["hybrid"].append(t1 - t0)
            stats[f"hybrid_{kind}"].append(t1 - t0)
            stats[f"kw_{kind}"].append(t2 - t1)
            stats["vec"].append(t3 - t2)
            stats["vec_k10"].append(t4 - t3)
            stats["numpy"].append(t5 - t4)
            if len(stats["vec_sqlite"]) < args.sqlite_vec_queries:
                stats["vec_sqlite"].append(t6 - t5)
            if kind == "common":
                kw_hits_common.append(len(kw))
        del svc.embedding.embed_query
        plain.close()
        served, scans = store.ann.searches - served, store.ann.scans - scans
        scoped = f"1 of {len(tenants)} tenants" if len(tenants) > 1 else "one tenant holds all"

        def lat(values: list[float]) -> str:
            return f"{pct(values, 50):.2f}/{pct(values, 95):.2f}/{pct(values, 99):.2f}"

        self.add(
            layout,
            size,
            "hybrid p50/p95/p99 (ms), no embedding",
            lat(stats["hybrid"]),
            f"{len(stats['hybrid'])} queries, {scoped}; load average {os.getloadavg()[0]:.2f}",
        )
        self.add(layout, size, "  hybrid, rare-word queries", lat(stats["hybrid_rare"]))
        self.add(layout, size, "  hybrid, common-word queries", lat(stats["hybrid_common"]))
        self.add(layout, size, "  keyword leg, rare words", lat(stats["kw_rare"]))
        self.add(
            layout,
            size,
            "  keyword leg, common words",
            lat(stats["kw_common"]),
            f"scan cap {svc.config.keyword_scan_cap}",
        )
        self.add(
            layout,
            size,
            "  vector leg k=50",
            lat(stats["vec"]),
            f"usearch index ({served} searches, {scans} by scanning the filter's rows)"
            if served
            else f"in-memory cache ({cached_tenants} tenant(s) cached)"
            if cached_tenants
            else f"sqlite-vec (tenant under vector_cache_min={min_vectors:,})",
        )
        self.add(
            layout,
            size,
            "  vector leg k=50, sqlite-vec only",
            lat(stats["vec_sqlite"]),
            f"{len(stats['vec_sqlite'])} queries",
        )
        if cached_tenants:
            self.add(
                layout,
                size,
                "  vector cache: loading search (s)",
                f"{load_search:.2f}",
                "count + full load of the tenant",
            )
        if cached_tenants or served:
            self.interleaved(layout, size, store, corpus, tenants[0], now)
        self.add(
            layout,
            size,
            "  numpy brute force (same tenant)",
            lat(stats["numpy"]),
            f"{int(np.mean([len(m) for m, _ in per_tenant.values()])):,} vectors/tenant",
        )
        ratio = pct(stats["vec_k10"], 50) / max(pct(stats["numpy"], 50), 1e-9)
        self.add(
            layout,
            size,
            "vector leg k=10 / numpy, p50",
            f"{ratio:.2f}x",
            f"{pct(stats['vec_k10'], 50):.2f} ms vs {pct(stats['numpy'], 50):.2f} ms",
        )
        self.add(layout, size, "vector recall@10 vs brute force", f"{np.mean(recalls):.4f}", f"min {min(recalls):.2f}")

    def interleaved(self, layout: str, size: int, store: Any, corpus: Corpus, tenant: str, now: datetime) -> None:
        """Write one record, then search, repeatedly: the cache applies the change log, it does not reload."""
        loads = store.vector_cache.full_loads
        times: list[float] = []
        written: list[str] = []
        for n in range(40):
            items, _, _ = corpus.records(size + n, 1, size + 40, lambda _i: tenant, now)
            store.put_many(items)
            written.append(items[0][0].id)
            qvec = corpus.query("rare")[1]
            t0 = time.perf_counter()
            store.vector_search(qvec, SearchFilters(tenant=tenant), k=50, now=now)
            times.append(time.perf_counter() - t0)
        store.delete(written)
        self.add(
            layout,
            size,
            "  vector leg k=50 after each write",
            f"{pct(times, 50):.2f}/{pct(times, 95):.2f}/{pct(times, 99):.2f}",
            f"{len(times)} writes, {store.vector_cache.full_loads - loads} full reloads of the cache"
            + (f", index delta {len(store.ann._tenants[tenant].delta)}" if tenant in store.ann._tenants else ""),
        )

    def e2e_phase(self, layout: str, size: int, svc: Any, corpus: Corpus, tenants: list[str]) -> None:
        if self.args.skip_embed:
            return
        seen: set[str] = set()
        times: list[float] = []
        n = 0
        while len(times) < self.args.e2e_queries:
            text, _ = corpus.query("rare" if n % 2 else "common")
            n += 1
            if text in seen:  # a repeat would hit the embedding cache
                continue
            seen.add(text)
            tenant = tenants[n % len(tenants)]
            t0 = time.perf_counter()
            svc.search(text, tenant=tenant, limit=10)
            if n > 3:  # the first calls load the model
                times.append(time.perf_counter() - t0)
        self.add(
            layout,
            size,
            "end-to-end search p50/p95/p99 (ms)",
            f"{pct(times, 50):.1f}/{pct(times, 95):.1f}/{pct(times, 99):.1f}",
            f"real model, query_threads=1, {len(times)} queries",
        )

    # -- model and CLI -------------------------------------------------------
    def embed_phase(self) -> None:
        from funes.providers.embed.local import LocalEmbedder

        corpus = Corpus(seed=self.args.seed + 1, tenants=["x"])
        texts = [corpus.text(int(n), 0) for n in np.clip(corpus.rng.lognormal(3.4, 0.5, 512), 6, 150)]
        for batch in (32, 128):
            emb = LocalEmbedder(batch_size=batch)
            emb.embed_batch(texts[:batch])  # load + warm up
            count = self.args.embed_texts
            t0 = time.perf_counter()
            emb.embed_batch(texts[:count])
            dt = time.perf_counter() - t0
            self.add(
                "model",
                count,
                f"embedding throughput, batch {batch}",
                f"{count / dt:,.1f} texts/s",
                f"{os.cpu_count()} threads, mean {np.mean([len(t.split()) for t in texts[:count]]):.0f} words",
            )
        for threads in (1, 2):
            emb = LocalEmbedder(query_threads=threads)
            emb.embed_batch(["warm up"], query=True)
            times = []
            for q in range(40):
                text, _ = corpus.query("rare")
                t0 = time.perf_counter()
                emb.embed_batch([text + f" {q}"], query=True)
                times.append(time.perf_counter() - t0)
            self.add(
                "model",
                1,
                f"query embedding p50/p95, {threads} thread(s)",
                f"{pct(times, 50):.1f}/{pct(times, 95):.1f} ms",
                "idle machine",
            )

    def cli_search(self, size: int, path: str, tenant: str) -> None:
        """``funes search`` from fresh processes on this store as it is now (its vector index built)."""
        exe = Path(sys.executable).parent / "funes"
        cmd = [str(exe), "--db", path, "--tenant", tenant, "search", "", "--limit", "5"]
        env = scale_phases.fresh_env(self)
        times: list[float] = []
        for run in range(self.args.cli_runs):
            cmd[-3] = f"vendor budget review {run}"
            t0 = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise SystemExit(f"funes search failed: {done.stderr}")
        self.add(
            "cli",
            size,
            "`funes search` cold start (s), median",
            f"{statistics.median(times):.2f}",
            f"min {min(times):.2f}, {len(times)} fresh processes",
        )

    def cli_help(self) -> None:
        """``funes --help`` from fresh processes: the floor under every CLI call."""
        exe = Path(sys.executable).parent / "funes"
        env = scale_phases.fresh_env(self)
        times: list[float] = []
        for _ in range(self.args.cli_runs):
            t0 = time.perf_counter()
            subprocess.run([str(exe), "--help"], env=env, capture_output=True, check=True)
            times.append(time.perf_counter() - t0)
        self.add("cli", 0, "`funes --help` (s), median", f"{statistics.median(times):.2f}")

    def run(self) -> None:
        from funes.providers.embed.local import LocalEmbedder

        embedder = LocalEmbedder(query_threads=1)
        print(f"workdir {self.workdir}; {os.cpu_count()} cores; python {sys.version.split()[0]}", flush=True)
        for layout in self.args.layouts:
            self.run_layout(layout, self.args.sizes, embedder)
        if not self.args.skip_embed and not self.args.skip_model:
            print("\n== local model", flush=True)
            self.embed_phase()
        if not self.args.skip_cli:
            print("\n== CLI", flush=True)
            self.cli_help()
        self.summary()
        if not self.args.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def summary(self) -> None:
        print("\n== summary")
        print(f"{'layout':<7} {'size':>7} {'metric':<38} {'value':>18}  note")
        for r in self.rows:
            print(f"{r.layout:<7} {r.size:>7} {r.metric:<38} {r.value:>18}  {r.note}")


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="Store sizes to measure at, ascending.")
    parser.add_argument("--queries", type=int, default=200, help="Timed queries per size and layout.")
    parser.add_argument("--e2e-queries", type=int, default=60, help="End-to-end queries with the real model.")
    parser.add_argument("--tenants", type=int, default=25, help="Tenants of the multi-tenant layout.")
    parser.add_argument("--layouts", default="multi,single", help="multi, single or both.")
    parser.add_argument("--batch", type=int, default=1000, help="Records per put_many transaction.")
    parser.add_argument("--embed-texts", type=int, default=256, help="Texts per embedding-throughput run.")
    parser.add_argument("--cli-runs", type=int, default=5, help="Fresh `funes search` processes to time.")
    parser.add_argument("--skip-embed", action="store_true", help="Skip everything that loads the model.")
    parser.add_argument("--skip-cli", action="store_true", help="Skip the CLI cold-start runs.")
    parser.add_argument(
        "--sqlite-vec-queries", type=int, default=60, help="Queries also timed through sqlite-vec alone."
    )
    parser.add_argument("--maintained", type=int, default=10000, help="Records inserted with the index maintained.")
    parser.add_argument("--build-threads", type=int, default=1, help="Threads of an index build (the job uses 1).")
    parser.add_argument("--first-runs", type=int, default=5, help="Fresh processes timed for the first query.")
    parser.add_argument("--skip-first", action="store_true", help="Skip the fresh-process first-query runs.")
    parser.add_argument(
        "--as-loaded",
        action="store_true",
        help="Time searches on the store as the load left it, without the optimize job its maintenance queues.",
    )
    parser.add_argument("--skip-model", action="store_true", help="Skip the model throughput runs (not e2e).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="Where the stores go (default: a new temporary directory).")
    parser.add_argument("--keep", action="store_true", help="Keep the stores afterwards.")
    parser.add_argument(
        "--backend", choices=("sqlite", "postgres"), default="sqlite", help="postgres: both stores side by side"
    )
    args = parser.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    args.layouts = [s.strip() for s in args.layouts.split(",") if s.strip()]
    if args.backend == "postgres":
        import store_bench_pg  # the same corpus and queries on SQLite and PostgreSQL (bench/store_bench_pg.py)

        store_bench_pg.run(args)
        return
    Bench(args).run()


if __name__ == "__main__":
    main()
