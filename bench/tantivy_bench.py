"""The keyword leg at scale: a compiled BM25 (``tantivy``) against SQLite FTS5 on the same data (issue 29).

Run from the repository root (needs ``pip install tantivy``; not a dependency of funes)::

    .venv/bin/python bench/tantivy_bench.py --size 1000000
    .venv/bin/python bench/tantivy_bench.py --size 100000 --queries 200

The corpus is store_bench's (``Corpus``: Zipf text whose head is common
English words, a few subtopic words per record, 20% with a title, 30% with a
topic), one tenant. The same records go into

* FTS5 with the store's tokenizer and columns (``porter unicode61
  remove_diacritics 2``; title, content, topic), contentless so its size is
  the index alone, as the store's external-content table's is; queried as
  the store's keyword leg builds its MATCH (the terms quoted and OR-ed) and
  ranked by ``bm25(fts, 2.0, 1.0, 1.0)`` over every match, top 100 -- the
  in-run baseline; and as the store's keyword leg ranks (the newest
  ``--scan-cap`` matches only);
* tantivy with the English stemming tokenizer (``en_stem``) on the same
  three fields, title boosted 2.0, the terms OR-ed, top 100 with their ids
  (a stored u64 field read back per hit).

For the same queries (half of rare subtopic words, half of only common
words: store_bench's two kinds) it reports p50/p95 latency of each, the
overlap of tantivy's top 100 with FTS5's (recall@100 against FTS5), the
index build time and the index size. One thread each, one process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from store_bench import Corpus, pct  # the bench's corpus, not a new one

FTS = (
    "CREATE VIRTUAL TABLE fts USING fts5 (title, content, topic, content = '', "
    "tokenize = 'porter unicode61 remove_diacritics 2')"
)


def documents(corpus: Corpus, size: int) -> list[tuple[int, str, str, str]]:
    """(rowid, title, content, topic) of ``size`` records, as Corpus.records draws them, without vectors."""
    docs = []
    clusters = corpus.rng.integers(0, len(corpus.centres), size)
    lengths = np.clip(corpus.rng.lognormal(3.4, 0.5, size), 6, 200).astype(int)
    titled = corpus.rng.random(size) < 0.2
    topical = corpus.rng.random(size) < 0.3
    for i in range(size):
        content = corpus.text(int(lengths[i]), int(clusters[i]))
        title = content.split(" ", 4)[-1][:40] if titled[i] else ""
        topic = corpus.words[int(corpus.topic_words[clusters[i], 0])] if topical[i] else ""
        docs.append((i + 1, title, content, topic))
    return docs


def dir_bytes(path: Path) -> int:
    """Bytes of every file under path."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build_fts(path: Path, docs: list[tuple[int, str, str, str]], batch: int) -> sqlite3.Connection:
    """The FTS5 index, filled in transactions of ``batch`` rows."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(FTS)
    for start in range(0, len(docs), batch):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO fts (rowid, title, content, topic) VALUES (?, ?, ?, ?)", docs[start : start + batch]
        )
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return conn


def build_tantivy(path: Path, docs: list[tuple[int, str, str, str]], batch: int, heap: int) -> object:
    """The tantivy index, one commit per ``batch`` documents, segments merged at the end."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    for name in ("title", "content", "topic"):
        sb.add_text_field(name, stored=False, tokenizer_name="en_stem", index_option="freq")
    sb.add_unsigned_field("rid", stored=True, indexed=False)
    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(sb.build(), path=str(path))
    writer = index.writer(heap_size=heap, num_threads=1)
    for start in range(0, len(docs), batch):
        for rid, title, content, topic in docs[start : start + batch]:
            doc = tantivy.Document(title=title, content=content, topic=topic)
            doc.add_unsigned("rid", rid)
            writer.add_document(doc)
        writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags and run the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="Documents in both indexes.")
    parser.add_argument("--queries", type=int, default=200, help="Timed queries (half rare, half common words).")
    parser.add_argument("--k", type=int, default=100, help="Hits per query.")
    parser.add_argument("--batch", type=int, default=10_000, help="Documents per transaction / commit.")
    parser.add_argument("--heap", type=int, default=200_000_000, help="tantivy writer heap (bytes).")
    parser.add_argument("--scan-cap", type=int, default=2000, help="The store's keyword scan cap (newest matches).")
    parser.add_argument("--ties", action="store_true", help="Also judge each top k by FTS5's bm25 (slow at 1M).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="Where the indexes go (default: a new temporary directory).")
    args = parser.parse_args(argv)
    import tantivy  # noqa: F401  (missing: say so before generating the corpus)

    work = Path(args.workdir or tempfile.mkdtemp(prefix="funes-tantivy-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(seed=args.seed, tenants=["solo"])
    t0 = time.perf_counter()
    docs = documents(corpus, args.size)
    print(f"{args.size:,} documents generated in {time.perf_counter() - t0:.1f} s", flush=True)
    queries = [corpus.query("common" if q % 2 else "rare")[0] for q in range(args.queries)]

    t0 = time.perf_counter()
    conn = build_fts(work / "fts.db", docs, args.batch)
    fts_build = time.perf_counter() - t0
    fts_size = sum(
        Path(str(work / "fts.db") + s).stat().st_size for s in ("", "-wal") if Path(str(work / "fts.db") + s).exists()
    )
    print(f"FTS5 built in {fts_build:.1f} s, {fts_size / 1e6:.0f} MB; load {os.getloadavg()[0]:.2f}", flush=True)
    t0 = time.perf_counter()
    index = build_tantivy(work / "tantivy", docs, args.batch, args.heap)
    tv_build = time.perf_counter() - t0
    tv_size = dir_bytes(work / "tantivy")
    print(f"tantivy built in {tv_build:.1f} s, {tv_size / 1e6:.0f} MB; load {os.getloadavg()[0]:.2f}", flush=True)
    del docs

    sql = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, 2.0, 1.0, 1.0) LIMIT ?"
    # The store's keyword leg ranks only the newest scan_cap matches (store/sqlite_keyword.py).
    capped = (
        "SELECT rowid FROM (SELECT rowid, bm25(fts, 2.0, 1.0, 1.0) AS s FROM fts WHERE fts MATCH ? "
        "ORDER BY rowid DESC LIMIT ?) ORDER BY s, rowid DESC LIMIT ?"
    )
    searcher = index.searcher()
    boosts = {"title": 2.0}

    def match_of(text: str) -> str:
        return " OR ".join('"' + t + '"' for t in text.split())

    def fts_search(text: str) -> list[int]:
        return [r for (r,) in conn.execute(sql, (match_of(text), args.k))]

    def cap_search(text: str) -> list[int]:
        return [r for (r,) in conn.execute(capped, (match_of(text), args.scan_cap, args.k))]

    def tv_search(text: str) -> list[int]:
        query = index.parse_query(text, ["title", "content", "topic"], field_boosts=boosts)
        hits = searcher.search(query, limit=args.k, count=False).hits
        return [searcher.doc(addr)["rid"][0] for _, addr in hits]

    def fts_scores(text: str, rowids: list[int]) -> dict[int, float]:
        marks = ",".join("?" * len(rowids))
        rows = conn.execute(
            f"SELECT rowid, bm25(fts, 2.0, 1.0, 1.0) FROM fts WHERE fts MATCH ? AND rowid IN ({marks})",
            (match_of(text), *rowids),
        )
        return dict(rows)

    engines = {"fts": fts_search, "cap": cap_search, "tv": tv_search}
    for text in queries[:10]:  # warm the caches
        for run in engines.values():
            run(text)
    times: dict[str, list[float]] = {f"{e}_{k}": [] for e in engines for k in ("rare", "common")}
    overlap: dict[str, list[float]] = {f"{e}_{k}": [] for e in ("cap", "tv") for k in ("rare", "common")}
    as_good: dict[str, list[float]] = {k: [] for k in overlap}
    for n, text in enumerate(queries):  # interleaved, so load changes hit all alike
        kind = "common" if n % 2 else "rare"
        found = {}
        for name, run in engines.items():
            t0 = time.perf_counter()
            found[name] = run(text)
            times[f"{name}_{kind}"].append(time.perf_counter() - t0)
        truth = found["fts"]
        for name in ("cap", "tv"):
            got = found[name]
            overlap[f"{name}_{kind}"].append(len(set(truth) & set(got)) / max(1, len(truth)))
        if args.ties:  # untimed, and slow at 1M (~7 s a common-word query: a rowid list under MATCH)
            floor = max(fts_scores(text, truth).values(), default=0.0)  # FTS5's score of its k-th hit
            for name in ("cap", "tv"):
                got = found[name]
                scored = fts_scores(text, got) if got else {}  # as good by FTS5's own bm25
                as_good[f"{name}_{kind}"].append(sum(scored.get(r, 0.0) <= floor + 1e-9 for r in got) / len(truth))

    def lat(values: list[float]) -> str:
        return f"{pct(values, 50):.2f}/{pct(values, 95):.2f}"

    print(f"\n== {args.size:,} documents, {args.queries} queries, top {args.k}; load {os.getloadavg()[0]:.2f}")
    print(f"{'':<28} {'FTS5 (baseline)':>16} {'FTS5 capped':>12} {'tantivy':>12} {'tantivy/FTS5 p50':>17}")
    for kind in ("rare", "common", "all"):
        kinds = ("rare", "common") if kind == "all" else (kind,)
        f, c, t = ([x for k in kinds for x in times[f"{e}_{k}"]] for e in ("fts", "cap", "tv"))
        ratio = pct(t, 50) / max(pct(f, 50), 1e-9)
        print(f"{kind + ' words p50/p95 (ms)':<28} {lat(f):>16} {lat(c):>12} {lat(t):>12} {ratio:>16.2f}x")
    for name, label in (("cap", f"FTS5 capped at {args.scan_cap}"), ("tv", "tantivy")):
        for kind in ("rare", "common"):
            o, g = np.asarray(overlap[f"{name}_{kind}"]), as_good[f"{name}_{kind}"]
            ties = f"; as good as FTS5's {args.k}th by its bm25: mean {np.mean(g):.3f}" if g else ""
            print(f"recall@{args.k} vs FTS5, {label}, {kind}: mean {o.mean():.3f}, min {o.min():.2f}{ties}")
    print(f"{'build (s)':<28} {fts_build:>16.1f} {tv_build:>12.1f} {tv_build / fts_build:>9.2f}x")
    print(f"{'index size (MB)':<28} {fts_size / 1e6:>16.0f} {tv_size / 1e6:>12.0f} {tv_size / fts_size:>9.2f}x")
    conn.close()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
