"""Do document topics move keyword ranking? SciFact with and without the topic each abstract's document would get.

Run from the repository root (issue 26; the figures are in docs/benchmarks.md)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/topics_bench.py                  # all 300 claims, 5,183 abstracts
    HF_HUB_OFFLINE=1 .venv/bin/python bench/topics_bench.py --limit 100      # the first 100 claims

The topic column is in the keyword index (FTS5 ``bm25`` weight 1.0 on
SQLite, weight C on PostgreSQL), so labelling every document passage changes
what a keyword query matches. Each variant is a store of the same abstracts
(one record each, title + text, as bench/quality.py ingests them), searched
with the same 300 test claims, in ONE run:

* ``none``: no topic (before issue 26's item 5; the baseline);
* ``title``: the topic of an abstract stored as a Markdown note headed by
  its title (``# Title``), as :func:`funes.memory.topics.document_topics`
  labels it at ingest;
* ``text``: the topic of an abstract stored as a text file named by its id
  (no title: the topic comes from the text alone).

Vectors come from bench/quality.py's embedding cache (``--cache``): the topic
is not embedded, so every variant has the same vectors and only the keyword
leg can differ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from quality import search  # same directory: run as bench/topics_bench.py
from quality_data import DATA, SCIFACT_TENANT, CachingEmbedder, load_scifact, require
from quality_lodo import own_metrics
from quality_metrics import recall_at

VARIANTS = ("none", "title", "text")


def topic_for(variant: str, doc: dict[str, Any], text: str) -> str | None:
    """The topic the abstract's document would get at ingest, for one variant."""
    from funes.memory.topics import document_topics
    from funes.models import Memory, SourceRef

    if variant == "none":
        return None
    record = Memory(id="x", content=text, kind="markdown" if variant == "title" else "document_chunk")
    if variant == "title":
        record = record.evolve(source=SourceRef(type="markdown", locator={"header_path": f"# {doc['title']}"}))
        return document_topics([record], name=f"{doc['_id']}.md")[0].topic
    return document_topics([record], name=f"{doc['_id']}.txt")[0].topic


def run(variant: str, path: Path, embedder: CachingEmbedder, data: Path, limit: int | None) -> dict[str, Any]:
    """One store of every abstract under ``variant``'s topics; every test claim searched."""
    import funes

    corpus, queries, qrels = load_scifact(data, limit)
    record_to_doc: dict[str, str] = {}
    topics: list[str] = []
    start = time.perf_counter()
    with funes.open(str(path), embedder=embedder, worker="off") as mem:
        texts = [d["text"] or d["title"] for d in corpus]
        mem.embed_records([f"{d['title']}\n{t}" if d["title"] else t for d, t in zip(corpus, texts, strict=True)])
        for d, text in zip(corpus, texts, strict=True):
            topic = topic_for(variant, d, text)
            topics.append(topic or "")
            memory = mem.remember(text, title=d["title"] or None, topic=topic, tenant=SCIFACT_TENANT, type="fact")
            record_to_doc[memory.id] = d["_id"]
        ingest_s = time.perf_counter() - start
        results = []
        for qid, text in queries.items():
            r = search(mem, text, SCIFACT_TENANT, record_to_doc, 100)
            r.relevant = {doc for doc, g in qrels[qid].items() if g > 0}
            results.append(r)
    row = own_metrics(results)
    row["R@100"] = statistics.mean(recall_at(r.units, r.relevant, 100) for r in results)  # type: ignore[arg-type]
    row["ingest_s"] = ingest_s
    row["labelled"] = sum(1 for t in topics if t)
    row["examples"] = [(d["title"][:60], t) for d, t in list(zip(corpus, topics, strict=True))[:5]]
    row["top10"] = [r.units[:10] for r in results]
    return row


def main(argv: list[str] | None = None) -> int:
    """Run every variant and print one table, the ``none`` row being the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, help="The first N judged claims (the corpus is always whole).")
    parser.add_argument("--data", type=Path, default=DATA, help="Folder holding scifact/ (read only).")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "funes-quality", help="Embedding cache folder."
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help="Comma-separated: none, title, text.")
    args = parser.parse_args(argv)
    require(args.data)
    from funes.providers.embed.local import LocalEmbedder

    embedder = CachingEmbedder(LocalEmbedder(), args.cache)
    rows: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="funes-topics-") as tmp:
            for variant in args.variants.split(","):
                rows[variant] = run(variant, Path(tmp) / f"{variant}.db", embedder, args.data, args.limit)
                embedder.save()
                print(f"{variant}: done in {rows[variant]['ingest_s']:.0f} s ingest", file=sys.stderr, flush=True)
    finally:
        embedder.save()
    base = rows.get("none")
    print(f"\n## SciFact: document topics in the keyword index ({rows[next(iter(rows))]['n']} claims)")
    print(
        f"{'topics':<8} {'labelled':>8} {'R@1':>6} {'R@10':>6} {'R@100':>6} {'MRR':>6} {'NDCG@10':>8} {'ΔNDCG@10':>9}"
    )
    for variant, row in rows.items():
        delta = f"{row['NDCG@10'] - base['NDCG@10']:+9.4f}" if base else ""
        print(
            f"{variant:<8} {row['labelled']:>8} {row['R@1']:>6.3f} {row['R@10']:>6.3f} {row['R@100']:>6.3f} "
            f"{row['MRR']:>6.3f} {row['NDCG@10']:>8.4f} {delta}"
        )
    for variant, row in rows.items():
        if variant != "none":
            print(
                f"\n{variant} topics, first abstracts: "
                + "; ".join(f"{t!r} <- {title!r}" for title, t in row["examples"])
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
