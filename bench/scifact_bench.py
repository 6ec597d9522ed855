"""SciFact (BEIR) benchmark: nDCG@10 and recall@100 of the keyword leg, the vector leg and hybrid search.

Run from the repository root::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/scifact_bench.py --workdir /tmp/funes-scifact
    HF_HUB_OFFLINE=1 .venv/bin/python bench/scifact_bench.py --workdir /tmp/funes-scifact --compare

The data set (``/work/shared/bench/scifact/``, read in place and never
copied) holds 5,183 abstracts of scientific papers and 300 test claims
(``qrels/test.tsv``) whose supporting or refuting abstracts are known. Each
abstract becomes one record (title + text, ``Funes.prepare``), embedded with
the real local model (all-MiniLM-L6-v2) through ``Funes.embed_records`` —
abstracts longer than the model reads are split into parts, and a record's
cosine is its best part's — and written with ``store.put_many``. The store
lives in ``--workdir`` (default: a temporary directory), so a re-run with the
same directory skips the embedding (a few minutes on 2 cores).

Per query it measures, with the record ranking of each method:

* keyword: the store's BM25 leg alone (``query_terms`` + ``keyword_search``);
* vector: the cosine KNN leg alone;
* hybrid: the production ``Funes.search`` (``track=False``, limit 100), with
  whatever fusion the settings choose.

``--compare`` also re-ranks the very candidates production fused (captured by
wrapping ``rank_scored`` where ``funes.memory.search`` calls it) under other fusion settings, which is how
the default was chosen; ``bench/locomo_bench.py --compare`` does the same on
LoCoMo.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from quality_data import DATA as BENCH_DATA  # same directory: run as bench/scifact_bench.py

DATA = BENCH_DATA / "scifact"
TENANT = "scifact"
# Published figures (BEIR paper, Thakur et al. 2021, and the sentence-transformers
# model card tables), printed for context only: they are not measured here.
PUBLISHED = {"BM25 (Anserini, published)": 0.665, "all-MiniLM-L6-v2 (published)": 0.645}


@dataclass
class Captured:
    """What production handed to ``rank`` for one query, to re-rank under other settings."""

    keyword: list[tuple[str, float]]
    vector: list[tuple[str, float]]
    similarities: dict[str, float]
    records: dict[str, Any]
    settings: Any
    now: datetime
    limit: int


def load(data: Path) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus rows, test query texts by id, and relevance judgements by query id."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (data / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels[qid][doc] = int(score)
    queries = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return corpus, queries, dict(qrels)


def record_id(doc_id: str) -> str:
    """The record id of a SciFact document."""
    return f"sf-{doc_id}"


def doc_of(memory_id: str) -> str:
    """The SciFact document id of a record id."""
    return memory_id.removeprefix("sf-")


def ingest(mem: Any, corpus: list[dict[str, Any]], batch: int = 256) -> int:
    """Write the abstracts that are not stored yet; returns how many were written."""
    have = {m for m in mem.store.get_many([record_id(d["_id"]) for d in corpus])}
    todo = [d for d in corpus if record_id(d["_id"]) not in have]
    start = time.perf_counter()
    for pos in range(0, len(todo), batch):
        chunk = todo[pos : pos + batch]
        memories = [
            mem.prepare(d["text"] or d["title"], title=d["title"] or None, tenant=TENANT, id=record_id(d["_id"]))
            for d in chunk
        ]
        vectors = mem.embed_records([mem.core.embedding.embed_text(m) for m in memories])
        mem.store.put_many(zip(memories, vectors, strict=True))
        done = pos + len(chunk)
        rate = done / (time.perf_counter() - start)
        print(f"  embedded {done}/{len(todo)} abstracts ({rate:.1f}/s)", file=sys.stderr)
    return len(todo)


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains (SciFact's are all 1), as in BEIR's pytrec_eval."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    """Share of the relevant documents in the top k."""
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


@contextmanager
def capturing(sink: list[Captured]) -> Iterator[None]:
    """Record every ``rank_scored`` call production makes (its inputs), while still ranking normally."""
    import funes.memory.search as service  # HybridSearch ranks; its module global is what a search calls

    real = service.rank_scored

    def recorder(keyword, vector, similarities, records, settings, now, limit):  # type: ignore[no-untyped-def]
        sink.append(Captured(list(keyword), list(vector), dict(similarities), dict(records), settings, now, limit))
        return real(keyword, vector, similarities, records, settings, now, limit)

    service.rank_scored = recorder
    try:
        yield
    finally:
        service.rank_scored = real


def run(mem: Any, queries: dict[str, str]) -> tuple[dict[str, dict[str, list[str]]], list[Captured]]:
    """Ranked document ids per method and query, and the captured fusion inputs of the hybrid runs."""
    from funes.memory.ranking import query_terms
    from funes.models import utcnow

    filters = mem.core._filters(TENANT, None, None, None, None, None, None, None, None, None, None)
    out: dict[str, dict[str, list[str]]] = {"keyword": {}, "vector": {}, "hybrid": {}, "keyword, stopwords kept": {}}
    captured: list[Captured] = []
    with capturing(captured):
        for qid, text in queries.items():
            hits = mem.search(text, tenant=TENANT, limit=100, track=False)
            out["hybrid"][qid] = [doc_of(h.memory.id) for h in hits]
            now = utcnow()
            keyword = mem.store.keyword_search(
                query_terms(text),
                filters,
                limit=100,
                scan_cap=mem.config.keyword_scan_cap,
                common_ratio=mem.config.keyword_common_ratio,
                now=now,
            )
            vector = mem.store.vector_search(mem.embed_query(text), filters, k=100, now=now)
            out["keyword"][qid] = [doc_of(i) for i, _ in keyword]
            # The query-side question: does dropping stopwords help BM25 here?
            words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))[:16]
            every = mem.store.keyword_search(
                words,
                filters,
                limit=100,
                scan_cap=mem.config.keyword_scan_cap,
                common_ratio=mem.config.keyword_common_ratio,
                now=now,
            )
            out["keyword, stopwords kept"][qid] = [doc_of(i) for i, _ in every]
            out["vector"][qid] = [doc_of(i) for i, _ in vector]
    return out, captured


def score(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    """Mean nDCG@10 and recall@100 over the queries."""
    nd = statistics.mean(ndcg_at(ranked.get(q, []), rel) for q, rel in qrels.items())
    rc = statistics.mean(recall_at(ranked.get(q, []), rel) for q, rel in qrels.items())
    return nd, rc


def variants() -> dict[str, Callable[[Any], Any]]:
    """Fusion settings compared by ``--compare``: name → function of the production settings."""
    out: dict[str, Callable[[Any], Any]] = {
        "rrf k=60 (old default)": lambda s: replace(s, fusion="rrf", rrf_k=60, keyword_weight=1.0, vector_weight=1.0),
        "rrf k=20": lambda s: replace(s, fusion="rrf", rrf_k=20, keyword_weight=1.0, vector_weight=1.0),
        "rrf k=60 keyword 2:1": lambda s: replace(s, fusion="rrf", rrf_k=60, keyword_weight=2.0, vector_weight=1.0),
        "rrf k=60 keyword 3:1": lambda s: replace(s, fusion="rrf", rrf_k=60, keyword_weight=3.0, vector_weight=1.0),
    }
    for w in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"convex vector {w}"] = lambda s, w=w: replace(
            s, fusion="convex", keyword_weight=round(1.0 - w, 2), vector_weight=w
        )
    out["convex 0.5, no boosts"] = lambda s: replace(
        s, fusion="convex", keyword_weight=0.5, vector_weight=0.5, importance_weight=0.0, recency_weight=0.0
    )
    return out


def noisy_importance(records: dict[str, Any]) -> dict[str, Any]:
    """The records with an importance drawn from [0, 1] by a hash of the id (unrelated to relevance)."""
    import hashlib

    def draw(memory_id: str) -> float:
        return int.from_bytes(hashlib.sha256(memory_id.encode()).digest()[:4], "big") / 2**32

    return {i: replace(m, importance=draw(i)) for i, m in records.items()}


def rerank(captured: list[Captured], make: Callable[[Any], Any], noise: bool = False) -> list[list[str]]:
    """Record ids in rank order for each captured query under other settings.

    ``noise`` gives every record a random importance: the quality lost then
    is how far the importance boost can override relevance under a fusion.
    """
    from funes.memory.ranking import rank_scored

    out = []
    for c in captured:
        records = noisy_importance(c.records) if noise else c.records
        scored = rank_scored(c.keyword, c.vector, c.similarities, records, make(c.settings), c.now, c.limit)
        out.append([s.id for s in scored])
    return out


def noise_checks() -> dict[str, Callable[[Any], Any]]:
    """The fusions whose sensitivity to random importance is printed."""
    every = variants()
    return {"rrf k=60 (old default)": every["rrf k=60 (old default)"], "convex vector 0.5": every["convex vector 0.5"]}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="SciFact directory (read only).")
    parser.add_argument("--workdir", type=Path, help="Where the embedded store is kept between runs (default: temp).")
    parser.add_argument("--queries", type=int, default=0, help="Only the first N test queries (0: all 300).")
    parser.add_argument(
        "--scan-cap", type=int, help="keyword_scan_cap for this run (default: the configured one, 2000)."
    )
    parser.add_argument("--compare", action="store_true", help="Also re-rank the candidates under other fusions.")
    parser.add_argument("--json", type=Path, help="Also write the numbers to this JSON file.")
    args = parser.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"No SciFact data at {args.data}; pass --data DIR.", file=sys.stderr)
        return 1
    import funes
    from funes.providers.embed.local import LocalEmbedder

    corpus, queries, qrels = load(args.data)
    if args.queries:
        queries = dict(list(queries.items())[: args.queries])
        qrels = {q: qrels[q] for q in queries}
    with tempfile.TemporaryDirectory(prefix="funes-scifact-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        overrides = {"keyword_scan_cap": args.scan_cap} if args.scan_cap else {}
        with funes.open(str(workdir / "scifact.db"), embedder=LocalEmbedder(), **overrides) as mem:
            start = time.perf_counter()
            written = ingest(mem, corpus)
            print(
                f"# SciFact: {len(corpus)} abstracts ({written} embedded now, "
                f"{time.perf_counter() - start:.0f} s), {len(queries)} test queries",
                file=sys.stderr,
            )
            ranked, captured = run(mem, queries)
            fusion = mem.config.fusion
            fusion += f" ({mem.config.keyword_weight:g} keyword / {mem.config.vector_weight:g} vector"
            fusion += f", rrf_k {mem.config.rrf_k})" if mem.config.fusion == "rrf" else ")"
            fusion += f"; keyword_scan_cap {mem.config.keyword_scan_cap}"
    rows: dict[str, tuple[float, float]] = {m: score(r, qrels) for m, r in ranked.items()}
    print(f"# SciFact (BEIR) test: {len(corpus)} abstracts, {len(qrels)} queries; production fusion: {fusion}")
    print(f"{'method':<32} {'nDCG@10':>8} {'R@100':>7}")
    for method, (nd, rc) in rows.items():
        print(f"{method:<32} {nd:>8.3f} {rc:>7.3f}")
    for name, value in PUBLISHED.items():
        print(f"{name:<32} {value:>8.3f} {'':>7}")
    if args.compare:
        print("\n## Fusion variants on the same candidates")
        qids = list(queries)
        for name, make in variants().items():
            lists = rerank(captured, make)
            got = {q: [doc_of(i) for i in ids] for q, ids in zip(qids, lists, strict=True)}
            nd, rc = score(got, qrels)
            rows[f"hybrid {name}"] = (nd, rc)
            print(f"{'hybrid ' + name:<32} {nd:>8.3f} {rc:>7.3f}")
        print("\n## Random importance on every record (boost robustness: less loss is better)")
        for name, make in noise_checks().items():
            lists = rerank(captured, make, noise=True)
            got = {q: [doc_of(i) for i in ids] for q, ids in zip(qids, lists, strict=True)}
            nd, rc = score(got, qrels)
            rows[f"hybrid {name}, random importance"] = (nd, rc)
            print(f"{name + ', random importance':<32} {nd:>8.3f} {rc:>7.3f}")
    if args.json:
        args.json.write_text(json.dumps({m: {"ndcg@10": v[0], "recall@100": v[1]} for m, v in rows.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
