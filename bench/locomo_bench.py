"""LoCoMo benchmark: recall of evidence turns, and the auto-retrieval threshold's precision/recall.

Run from the repository root (about 1-2 minutes per conversation on 2 cores)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/locomo_bench.py                 # conversations 1-3
    HF_HUB_OFFLINE=1 .venv/bin/python bench/locomo_bench.py --conversations 10
    HF_HUB_OFFLINE=1 .venv/bin/python bench/locomo_bench.py --compare --skip 3   # held out: conversations 4-6

``--compare`` re-ranks the candidates each hybrid search fused under other
fusion settings (see ``bench/scifact_bench.py``), and with a random
importance on every record, to show how far that boost can override
relevance.

The data set (``shared/bench/locomo/locomo10.json`` beside the checkout, read in place and
never copied) holds 10 long two-person conversations of about 600 turns in
19-35 dated sessions, and questions whose answers are in given turns
("evidence"). Each conversation goes into its own tenant of a fresh store;
each of its sessions becomes a Funes session and each turn a message
(``Speaker: text``, with image captions appended), written through
``Session.add_message`` with the turn's date, so every turn is indexed as a
``message`` record exactly as a live chat would be, with the real local
model (all-MiniLM-L6-v2).

Questions of category 5 (adversarial: the premise is false) are left out;
categories 1-4 (multi-hop, temporal, open-domain, single-hop) are scored.

What it prints:

* retrieval recall@k: the share of a question's evidence turns among the
  top k hits of ``Funes.search`` (hybrid BM25 + vector), and hit@k (any
  evidence turn in the top k), for k = 1, 5, 10, per category and overall;
  the vector leg alone (cosine KNN) and the keyword leg alone are printed in
  the same run as baselines;
* the auto-retrieval threshold sweep: what the context builder would inject
  (the top ``--inject`` hits that pass ``min_similarity = t``, where strong
  keyword matches pass regardless, as in ``Funes.search``) for
  t = 0.3 ... 0.5 and for no threshold: precision (injected turns that are
  evidence), recall (evidence turns injected), hit rate, mean injected, and
  the share of questions that get nothing injected. A "cosine only" row per
  threshold shows the same without the keyword exception.

One search per question (limit 50, no threshold) gives the ranked list with
each hit's cosine and keyword rank; the threshold rows filter that list the
way ``rank()`` does, so they equal searches with ``min_similarity = t``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quality_data import DATA as BENCH_DATA
from quality_data import ingest_locomo, parse_evidence  # same directory: run as bench/locomo_bench.py
from scifact_bench import capturing, noise_checks, rerank, variants

DATA = BENCH_DATA / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5)
KS = (1, 5, 10)


@dataclass
class Ranked:
    """One question's ranked hits, as dia ids with their cosine and keyword rank."""

    category: int
    evidence: set[str]
    hits: list[tuple[str, float | None, int | None]]  # (dia id, cosine, keyword rank)
    vector_only: list[str]
    keyword_only: list[str]
    captured: Any = None  # the inputs production handed to rank(), for --compare
    record_to_dia: dict[str, str] | None = None


def rank_questions(
    mem: Any, tenant: str, questions: list[dict[str, Any]], record_to_dia: dict[str, str], *, off_topic: bool = False
) -> list[Ranked]:
    """Search every scored question once; keep the ranked dia ids with their signals.

    ``off_topic`` questions come from another conversation: nothing in this
    tenant answers them, so whatever the builder would inject is noise.
    """
    from funes.memory.ranking import query_terms
    from funes.models import utcnow

    out: list[Ranked] = []
    for qa in questions:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = parse_evidence(qa.get("evidence") or [])
        if not evidence:
            continue
        sink: list[Any] = []
        with capturing(sink):
            hits = mem.search(qa["question"], tenant=tenant, limit=50, track=False)
        ranked = [
            (record_to_dia.get(h.memory.id, "?"), h.explanation.vector_similarity, h.explanation.keyword_rank)
            for h in hits
        ]
        if off_topic:
            out.append(Ranked(int(qa["category"]), set(), ranked, [], []))
            continue
        # The two legs on their own, as baselines.
        filters = mem.core._filters(tenant, None, None, None, None, None, None)
        vector = mem.store.vector_search(mem.embed_query(qa["question"]), filters, k=10, now=utcnow())
        keyword = mem.store.keyword_search(
            query_terms(qa["question"]),
            filters,
            limit=10,
            scan_cap=mem.config.keyword_scan_cap,
            common_ratio=mem.config.keyword_common_ratio,
            now=utcnow(),
        )
        out.append(
            Ranked(
                category=int(qa["category"]),
                evidence=evidence,
                hits=ranked,
                vector_only=[record_to_dia.get(i, "?") for i, _ in vector],
                keyword_only=[record_to_dia.get(i, "?") for i, _ in keyword],
                captured=sink[0] if sink else None,
                record_to_dia=record_to_dia,
            )
        )
    return out


def _dedup(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))  # a long turn has several parts; count the turn once


def recall_at(ranked: list[str], evidence: set[str], k: int) -> tuple[float, float]:
    """(share of evidence in the top k, whether any evidence is there)."""
    top = set(_dedup(ranked)[:k])
    found = len(top & evidence)
    return found / len(evidence), float(found > 0)


def print_recall(results: list[Ranked]) -> None:
    """The recall@k table, per category and overall, for hybrid search and the two legs alone."""
    groups: dict[str, list[Ranked]] = defaultdict(list)
    for r in results:
        groups[CATEGORIES[r.category]].append(r)
    groups["all"] = results
    print("\n## Retrieval of evidence turns (recall@k / hit@k)")
    print(
        f"{'method':<9} {'category':<12} {'n':>5} " + " ".join(f"{'R@' + str(k):>7} {'hit@' + str(k):>7}" for k in KS)
    )
    for method in ("hybrid", "vector", "keyword"):
        for name, items in groups.items():
            cells = []
            for k in KS:
                pairs = [
                    recall_at(
                        [h[0] for h in r.hits]
                        if method == "hybrid"
                        else (r.vector_only if method == "vector" else r.keyword_only),
                        r.evidence,
                        k,
                    )
                    for r in items
                ]
                cells.append(
                    f"{statistics.mean(p[0] for p in pairs):>7.3f} {statistics.mean(p[1] for p in pairs):>7.3f}"
                )
            print(f"{method:<9} {name:<12} {len(items):>5} " + " ".join(cells))


def print_compare(results: list[Ranked]) -> dict[str, dict[str, float]]:
    """Recall@k of the hybrid ranking under each fusion variant, on the candidates production fused."""
    print("\n## Fusion variants on the same candidates (recall@k, all categories)")
    print(f"{'variant':<40} " + " ".join(f"{'R@' + str(k):>7}" for k in KS))
    rows: dict[str, dict[str, float]] = {}
    usable = [r for r in results if r.captured is not None and r.record_to_dia is not None]
    for name, make in variants().items():
        lists = rerank([r.captured for r in usable], make)
        cells = {}
        for k in KS:
            cells[f"R@{k}"] = statistics.mean(
                recall_at([r.record_to_dia.get(i, "?") for i in ids], r.evidence, k)[0]  # type: ignore[union-attr]
                for r, ids in zip(usable, lists, strict=True)
            )
        rows[name] = cells
        print(f"{name:<40} " + " ".join(f"{v:>7.3f}" for v in cells.values()))
    print("\n## Random importance on every record (boost robustness: less loss is better)")
    for name, make in noise_checks().items():
        lists = rerank([r.captured for r in usable], make, noise=True)
        cells = {}
        for k in KS:
            cells[f"R@{k}"] = statistics.mean(
                recall_at([r.record_to_dia.get(i, "?") for i in ids], r.evidence, k)[0]  # type: ignore[union-attr]
                for r, ids in zip(usable, lists, strict=True)
            )
        rows[f"{name}, random importance"] = cells
        print(f"{name + ', random importance':<40} " + " ".join(f"{v:>7.3f}" for v in cells.values()))
    return rows


def injected(r: Ranked, threshold: float | None, inject: int, strong_rank: int, keyword_exception: bool) -> list[str]:
    """The dia ids the context builder would inject for this question."""
    kept = []
    for dia, sim, kw_rank in r.hits:
        strong = keyword_exception and kw_rank is not None and kw_rank <= strong_rank
        if threshold is None or strong or (sim is not None and sim >= threshold):
            kept.append(dia)
    return _dedup(kept)[:inject]


def print_thresholds(results: list[Ranked], inject: int, strong_rank: int) -> dict[str, dict[str, float]]:
    """Precision/recall of auto-injection per threshold; returns the rows for the summary."""
    print(f"\n## Auto-retrieval threshold (top {inject} injected; strong keyword rank <= {strong_rank} passes)")
    print(f"{'threshold':<22} {'precision':>9} {'recall':>7} {'F1':>6} {'hit':>6} {'mean inj':>8} {'nothing':>8}")
    rows: dict[str, dict[str, float]] = {}
    settings: list[tuple[str, float | None, bool]] = [("none (baseline)", None, True)]
    for t in THRESHOLDS:
        settings += [(f"{t:.2f}", t, True), (f"{t:.2f} cosine only", t, False)]
    for label, t, exception in settings:
        precision_num = precision_den = 0
        recalls, hits, counts, empty = [], [], [], 0
        for r in results:
            got = injected(r, t, inject, strong_rank, exception)
            good = len(set(got) & r.evidence)
            precision_num += good
            precision_den += len(got)
            recalls.append(good / len(r.evidence))
            hits.append(float(good > 0))
            counts.append(len(got))
            empty += not got
        precision = precision_num / precision_den if precision_den else 0.0
        recall = statistics.mean(recalls)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows[label] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "hit": statistics.mean(hits),
            "mean": statistics.mean(counts),
            "empty": empty / len(results),
        }
        print(
            f"{label:<22} {precision:>9.3f} {recall:>7.3f} {f1:>6.3f} {statistics.mean(hits):>6.3f} "
            f"{statistics.mean(counts):>8.2f} {empty / len(results):>8.1%}"
        )
    return rows


def print_off_topic(results: list[Ranked], inject: int, strong_rank: int) -> None:
    """What each threshold injects for questions about another conversation (all of it is noise)."""
    print(f"\n## Off-topic questions (from the next conversation; {len(results)} questions): injected noise")
    print(f"{'threshold':<22} {'mean inj':>8} {'nothing':>8}")
    settings: list[tuple[str, float | None, bool]] = [("none (baseline)", None, True)]
    for t in THRESHOLDS:
        settings += [(f"{t:.2f}", t, True), (f"{t:.2f} cosine only", t, False)]
    for label, t, exception in settings:
        counts = [len(injected(r, t, inject, strong_rank, exception)) for r in results]
        print(f"{label:<22} {statistics.mean(counts):>8.2f} {sum(c == 0 for c in counts) / len(counts):>8.1%}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="Path of locomo10.json (read only).")
    parser.add_argument("--conversations", type=int, default=3, help="How many conversations, from the first (1-10).")
    parser.add_argument("--skip", type=int, default=0, help="Start after this many conversations (held-out runs).")
    parser.add_argument("--inject", type=int, default=5, help="Most hits injected (context_retrieved_chunks).")
    parser.add_argument(
        "--off-topic", type=int, default=60, help="Questions of the next conversation asked per conversation."
    )
    parser.add_argument("--json", type=Path, help="Also write the numbers to this JSON file.")
    parser.add_argument("--compare", action="store_true", help="Also re-rank the candidates under other fusions.")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"No data set at {args.data}; pass --data PATH.", file=sys.stderr)
        return 1
    import funes
    from funes.providers.embed.local import LocalEmbedder

    everything = json.loads(args.data.read_text(encoding="utf-8"))
    samples = everything[args.skip : args.skip + args.conversations]
    embedder = LocalEmbedder()
    results: list[Ranked] = []
    noise: list[Ranked] = []
    timing: dict[str, float] = {"ingest_s": 0.0, "turns": 0, "search_s": 0.0, "questions": 0}
    with (
        tempfile.TemporaryDirectory(prefix="funes-locomo-") as tmp,
        funes.open(str(Path(tmp) / "locomo.db"), embedder=embedder) as mem,
    ):
        for sample in samples:
            start = time.perf_counter()
            conversation = ingest_locomo(mem, sample)
            record_to_dia, turns = conversation.record_to_dia, len(conversation.dia_text)
            timing["ingest_s"] += time.perf_counter() - start
            timing["turns"] += turns
            start = time.perf_counter()
            ranked = rank_questions(mem, sample["sample_id"], sample["qa"], record_to_dia)
            timing["search_s"] += time.perf_counter() - start
            timing["questions"] += len(ranked)
            results.extend(ranked)
            other = everything[(everything.index(sample) + 1) % len(everything)]
            noise.extend(
                rank_questions(mem, sample["sample_id"], other["qa"][: args.off_topic], record_to_dia, off_topic=True)
            )
            print(f"{sample['sample_id']}: {turns} turns, {len(ranked)} scored questions", file=sys.stderr)
        strong_rank = mem.config.strong_keyword_rank
        default = mem.config.auto_min_similarity
    ids = ", ".join(s["sample_id"] for s in samples)
    print(
        f"# LoCoMo: {len(samples)} conversation(s) ({ids}), {timing['turns']} turns, {timing['questions']} questions (categories 1-4)"
    )
    print(
        f"# ingest {timing['turns'] / timing['ingest_s']:.0f} turns/s through Session.add_message; "
        f"{1000 * timing['search_s'] / max(1, timing['questions']):.0f} ms per question (hybrid search + both legs)"
    )
    print_recall(results)
    if args.compare:
        print_compare(results)
    rows = print_thresholds(results, args.inject, strong_rank)
    print_off_topic(noise, args.inject, strong_rank)
    print(f"\nConfigured auto_min_similarity: {default}")
    if args.json:
        args.json.write_text(json.dumps({"timing": timing, "thresholds": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
