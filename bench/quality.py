"""Retrieval quality through the public API: LoCoMo, SciFact and agent memory, in-run baselines, calibration.

Run from the repository root (see docs/benchmarks.md for the recorded figures)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --dataset all            # ~25 min cold, ~8 min warm
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --dataset agent          # the agent-memory set, ~1 min
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --dataset locomo --limit 2   # while developing
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --calibrate               # refit funes.memory.relevance

The headline is what a hit is, not what it carries: own-unit R@1, R@5,
R@10, MRR and NDCG@10 (bench/quality_lodo.py) for Funes and the baselines.
With more than one data set loaded, relevance is refitted from the recorded
hit signals leaving one data set out, and the held-out set's ranking, recall
kept under each floor and off-topic abstention are printed.

LoCoMo (``locomo/locomo10.json``): each of the 10 conversations is a tenant,
each session a Funes session and each turn a message (``Speaker: text``
with the shared photo's caption, at the session's date, role by speaker);
the turn's ``dia_id`` is mapped from the message's record ids. Questions are
asked ``as_of`` the conversation's last session (a user asking their imported
history: "last year" and recency count from then, not from the wall clock;
``--as-of now`` for the wall clock). Questions of categories 1-4 are scored
against their evidence turns: recall@5/@10, all-evidence hit@10, NDCG@10
and MRR, overall and per category. Off-topic questions (the next
conversation's, asked in this tenant) measure abstention: the share that
return nothing at the relevance floor.

SciFact (BEIR): every abstract is one record through ``remember``; NDCG@10
and recall@100 over the 300 test claims.

Baselines in the same run, over the same units (turns, abstracts): BM25
alone (bm25s) and dense alone (cosine with the same model). Search latency
is the wall time of ``Funes.search``; the query vectors come from the
harness's embedding cache after the first run, so it is store + ranking +
relevance time (the embedding forward pass is measured by bench/store_bench.py).

Calibration: every top-20 hit is a labelled example (its own evidence turn,
judged abstract or answering memory = 1). ``--calibrate`` fits the logistic
model of ``funes.memory.relevance`` on every loaded data set (each weighing
the same) and prints the constants; every run reports ECE and a reliability
table with the shipped constants.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from quality_data import (  # same directory: run as bench/quality.py
    CATEGORIES,
    DATA,
    SCIFACT_TENANT,
    CachingEmbedder,
    Conversation,
    ingest_locomo,
    ingest_scifact,
    load_locomo,
    require,
)
from quality_lodo import agent_report, leave_one_out, own_metrics, print_constants, print_own, run_agent
from quality_metrics import (
    dedup,
    ndcg_at,
    percentile,
    recall_at,
    reliability,
    window_all_hit_at,
    window_mrr,
    window_ndcg_at,
    window_recall_at,
)

FLOORS = (0.0, 0.01, 0.02, 0.03, 0.035, 0.04, 0.045, 0.05, 0.055, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.7)
TRAIN_CONVERSATIONS = 5  # conversations 1-5 fit the relevance model, 6-10 validate it


@dataclass
class Ranked:
    """One query's ranked units (dia ids or doc ids) for one method, with hit relevance and signals."""

    group: str  # tenant
    category: int
    relevant: set[str] | dict[str, int]
    units: list[str]
    relevance: list[float] = field(default_factory=list)
    # What each hit shows: its unit plus the units of the turns it carries (hit.context).
    windows: list[frozenset[str]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    query: str = ""
    texts: list[str] = field(default_factory=list)  # each hit's record text (for offline feature studies)


def search(
    mem: Any, query: str, tenant: str, unit_of: dict[str, str], limit: int, as_of: datetime | None = None
) -> Ranked:
    """``Funes.search`` with no relevance floor: the ranked units with each hit's relevance and signals."""
    start = time.perf_counter()
    hits = mem.search(query, tenant=tenant, limit=limit, track=False, min_relevance=0, as_of=as_of)
    seconds = time.perf_counter() - start
    units = [unit_of.get(h.memory.id, "?") for h in hits]
    extra = name_signals(mem, query, hits)
    return Ranked(
        group=tenant,
        category=0,
        relevant=set(),
        units=units,
        windows=[
            frozenset({u, *(unit_of.get(t.record_ids[0], "?") for t in h.context if t.record_ids)})
            for u, h in zip(units, hits, strict=True)
        ],
        relevance=[h.relevance for h in hits],
        signals=[
            {**(h.explanation.signals or {}), "score": h.score, "boosts": h.explanation.boosts, **x}
            for h, x in zip(hits, extra, strict=True)
        ],
        seconds=seconds,
        query=query,
        texts=[f"{h.memory.title or ''}\n{h.memory.content}".lstrip("\n") for h in hits],
    )


def name_signals(mem: Any, query: str, hits: list[Any]) -> list[dict[str, float]]:
    """For a query naming someone, each hit's best cosine with the query's name-free text (``free``) and with its
    names alone (``name_cos``), read from the hit's stored vectors (recorded for offline studies, never ranked on)."""
    from funes.memory.query_names import name_free, names_text

    free = name_free(query) if hits else None
    if free is None:
        return [{} for _ in hits]
    alone = names_text(query)
    vectors = mem.core.store.vectors_for([h.memory.id for h in hits])
    q_free, q_name = mem.embedding.embed_query(free), mem.embedding.embed_query(alone)
    out = []
    for h in hits:
        parts = vectors.get(h.memory.id)
        if not parts:
            out.append({})
            continue
        m = np.vstack(parts)
        out.append({"free": float((m @ q_free).max()), "name_cos": float((m @ q_name).max())})
    return out


class Baselines:
    """BM25 (bm25s) and dense cosine over one group's units, the same model as Funes."""

    def __init__(self, mem: Any, embedder: CachingEmbedder, units: dict[str, str]) -> None:
        import bm25s

        self.ids = list(units)
        self.embedder = embedder
        self.bm25 = bm25s.BM25()
        tokens = bm25s.tokenize([units[i] for i in self.ids], stopwords="en", show_progress=False)
        self.bm25.index(tokens, show_progress=False)
        # Long units are split into parts the model can read (as Funes does); a unit scores its best part.
        parts = mem.embed_records([units[i] for i in self.ids])
        self.owner = np.asarray([n for n, vecs in enumerate(parts) for _ in vecs])
        self.matrix = np.stack([v for vecs in parts for v in vecs])

    def bm25_rank(self, query: str, k: int) -> list[str]:
        """The top ``k`` units by BM25."""
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.ids or not tokens.ids[0]:
            return []
        docs, scores = self.bm25.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def dense_rank(self, query: str, k: int) -> list[str]:
        """The top ``k`` units by cosine."""
        q = self.embedder.embed_batch([query], query=True)[0]
        best = np.full(len(self.ids), -np.inf)
        np.maximum.at(best, self.owner, self.matrix @ q)
        return [self.ids[int(i)] for i in np.argsort(-best)[:k]]


# -- LoCoMo ----------------------------------------------------------------------------------
def run_locomo(
    mem: Any, embedder: CachingEmbedder, samples: list[dict[str, Any]], off_topic: int, foreign: list[str]
) -> dict[str, Any]:
    """Ingest the conversations, search every question with Funes and the baselines, and off-topic ones."""
    methods: dict[str, list[Ranked]] = defaultdict(list)
    noise: list[Ranked] = []
    conversations: list[Conversation] = []
    ingest_s = 0.0
    for sample in samples:
        start = time.perf_counter()
        conv = ingest_locomo(mem, sample)
        ingest_s += time.perf_counter() - start
        conversations.append(conv)
        base = Baselines(mem, embedder, conv.dia_text)
        for q in conv.questions:
            r = search(mem, q.text, conv.tenant, conv.record_to_dia, 50, as_of(conv))
            r.category, r.relevant = q.category, q.evidence
            methods["funes"].append(r)
            for name, ranked in (("bm25s", base.bm25_rank(q.text, 50)), ("dense", base.dense_rank(q.text, 50))):
                windows = [turn_window(u, conv.dia_text) for u in ranked]
                methods[name].append(Ranked(conv.tenant, q.category, q.evidence, ranked, windows=windows))
        print(f"{conv.tenant}: {len(conv.dia_text)} turns, {len(conv.questions)} questions", file=sys.stderr)
    # Off-topic: the next conversation's questions asked in this tenant (nothing here answers them).
    for i, conv in enumerate(conversations):
        other = conversations[(i + 1) % len(conversations)] if len(conversations) > 1 else None
        source = other.questions if other else _next_questions(samples[i])
        for q in source[:off_topic]:
            r = search(mem, q.text, conv.tenant, conv.record_to_dia, 50, as_of(conv))
            r.category = q.category
            noise.append(r)
    # Another domain: SciFact claims asked of each conversation.
    strangers: list[Ranked] = []
    for conv in conversations:
        for text in foreign[:off_topic]:
            strangers.append(search(mem, text, conv.tenant, conv.record_to_dia, 50, as_of(conv)))
    return {
        "methods": methods,
        "noise": noise,
        "foreign": strangers,
        "conversations": conversations,
        "ingest_s": ingest_s,
    }


def as_of(conv: Conversation) -> datetime | None:
    """The reference time of a conversation's questions: its last session (``--as-of last-session``), or now."""
    return conv.last_at if ARGS.as_of == "last-session" else None


def turn_window(unit: str, known: dict[str, str], width: int = 1) -> frozenset[str]:
    """A turn and its ``width`` neighbours in its session (what a Funes hit shows with context_turns=1)."""
    session, _, number = unit.partition(":")
    if not number.isdigit():
        return frozenset({unit})
    near = (f"{session}:{int(number) + d}" for d in range(-width, width + 1))
    return frozenset(u for u in near if u in known or u == unit)


def shown(r: Ranked, alone: bool = False) -> list[frozenset[str]]:
    """What each hit shows: its unit and its context turns, or (``alone``) its unit only."""
    if alone or not r.windows:
        return [frozenset({u}) for u in dedup(r.units)]
    return r.windows


def scifact_claims(data: Path) -> list[str]:
    """SciFact's test claims, as off-topic queries for the LoCoMo tenants (empty without the data set)."""
    from quality_data import load_scifact

    if not (data / "scifact").is_dir():
        return []
    _, queries, _ = load_scifact(data, None)
    return list(queries.values())


def _next_questions(sample: dict[str, Any]) -> list[Any]:
    """With one conversation loaded, off-topic questions come from the next one in the file."""
    from quality_data import questions_of

    everything = load_locomo(ARGS.data)
    index = [s["sample_id"] for s in everything].index(sample["sample_id"])
    return questions_of(everything[(index + 1) % len(everything)])


def locomo_table(methods: dict[str, list[Ranked]]) -> dict[str, dict[str, dict[str, float]]]:
    """Recall@5/@10, all-evidence hit@10, NDCG@10 and MRR per method, overall and per category.

    A hit counts what it shows: its turn and the turns it carries (Funes'
    ``hit.context``; the baselines get the same ±1 turns). The ``/alone`` rows
    count the hit's own turn only.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    print("\n## LoCoMo: evidence turns (categories 1-4); a hit shows its turn and the turns beside it")
    print(f"{'method':<14} {'category':<12} {'n':>5} {'R@5':>6} {'R@10':>6} {'all@10':>7} {'NDCG@10':>8} {'MRR':>6}")
    for method, results in methods.items():
        for alone in (False, True):
            name_m = method + ("/alone" if alone else "")
            groups: dict[str, list[Ranked]] = defaultdict(list)
            for r in results:
                groups[CATEGORIES[r.category]].append(r)
            groups = {"all": results, **dict(sorted(groups.items()))}
            out[name_m] = {}
            for name, items in groups.items():
                if alone and name != "all":
                    continue
                views = [(shown(r, alone), set(r.relevant)) for r in items]
                row = {
                    "n": len(items),
                    "recall@5": statistics.mean(window_recall_at(w, rel, 5) for w, rel in views),
                    "recall@10": statistics.mean(window_recall_at(w, rel, 10) for w, rel in views),
                    "all@10": statistics.mean(window_all_hit_at(w, rel, 10) for w, rel in views),
                    "ndcg@10": statistics.mean(window_ndcg_at(w, rel, 10) for w, rel in views),
                    "mrr": statistics.mean(window_mrr(w, rel) for w, rel in views),
                }
                out[name_m][name] = row
                print(
                    f"{name_m:<14} {name:<12} {row['n']:>5} {row['recall@5']:>6.3f} {row['recall@10']:>6.3f} "
                    f"{row['all@10']:>7.3f} {row['ndcg@10']:>8.3f} {row['mrr']:>6.3f}"
                )
    return out


def unseen_name(r: Ranked) -> bool:
    """Whether the query names someone or something no record of the tenant mentions (the absent_name signal)."""
    return bool(r.signals and r.signals[0].get("absent_name"))


def floor_table(
    on_topic: list[Ranked], noise: list[Ranked], label: str, foreign: list[Ranked] | None = None
) -> dict[str, dict[str, float]]:
    """Per relevance floor: on-topic recall@10 (against no floor) and the share of off-topic queries answered with nothing.

    Off-topic queries are split: those naming someone the tenant never
    mentions (most of LoCoMo's, since each conversation has its own people)
    and the rest; ``foreign`` are queries from another domain (SciFact claims).
    """
    named = [r for r in noise if unseen_name(r)]
    plain = [r for r in noise if not unseen_name(r)]
    foreign = foreign or []
    print(
        f"\n## Relevance floor ({label}: {len(on_topic)} on-topic, {len(noise)} off-topic questions "
        f"[{len(named)} naming an unseen name, {len(plain)} not], {len(foreign)} SciFact claims)"
    )
    print(
        f"{'floor':>6} {'R@10':>6} {'ΔR@10':>7} {'off-topic empty':>16} {'no unseen name':>15} "
        f"{'SciFact claims':>15} {'on-topic empty':>15}"
    )
    rows: dict[str, dict[str, float]] = {}
    base = None
    for floor in FLOORS:

        def kept(r: Ranked, floor: float = floor) -> list[frozenset[str]]:
            # Search cuts to the limit, then drops hits under the floor: nothing below rank 10 moves up.
            return [w for w, p in list(zip(shown(r), r.relevance, strict=True))[:10] if p >= floor]

        def empty(results: list[Ranked], floor: float = floor) -> float:
            return sum(not kept(r, floor) for r in results) / max(1, len(results))

        recall = statistics.mean(window_recall_at(kept(r), set(r.relevant), 10) for r in on_topic)
        base = recall if base is None else base
        row = {
            "recall@10": recall,
            "delta": recall - base,
            "off_empty": empty(noise),
            "off_empty_no_unseen_name": empty(plain),
            "foreign_empty": empty(foreign),
            "on_empty": empty(on_topic),
        }
        rows[f"{floor:.3f}"] = row
        print(
            f"{floor:>6.3f} {recall:>6.3f} {recall - base:>+7.3f} {row['off_empty']:>16.1%} "
            f"{row['off_empty_no_unseen_name']:>15.1%} {row['foreign_empty']:>15.1%} {row['on_empty']:>15.1%}"
        )
    return rows


def tenant_isolation(
    embedder: CachingEmbedder, sample: dict[str, Any], shared: list[Ranked], path: Path, **settings: Any
) -> dict[str, float]:
    """How much the other tenants move one tenant's ranking: its questions in a store of its own vs the shared store.

    Keyword statistics (BM25's IDF and average length) are store-wide in
    FTS5, so other tenants' words change a tenant's keyword scores.
    """
    import funes

    with funes.open(str(path), embedder=embedder, **settings) as mem:  # the run's --set settings too
        conv = ingest_locomo(mem, sample)
        alone = [search(mem, q.text, conv.tenant, conv.record_to_dia, 10, as_of(conv)) for q in conv.questions]
    together = [r for r in shared if r.group == conv.tenant]
    same = [float(a.units[:10] == b.units[:10]) for a, b in zip(alone, together, strict=True)]
    overlap = [
        len(set(a.units[:10]) & set(b.units[:10])) / max(1, len(set(a.units[:10])))
        for a, b in zip(alone, together, strict=True)
    ]
    recall_alone = statistics.mean(
        recall_at(a.units, q.evidence, 10) for a, q in zip(alone, conv.questions, strict=True)
    )
    recall_shared = statistics.mean(recall_at(b.units, b.relevant, 10) for b in together)  # type: ignore[arg-type]
    out = {
        "identical_top10": statistics.mean(same),
        "top10_overlap": statistics.mean(overlap),
        "recall@10_alone": recall_alone,
        "recall@10_shared": recall_shared,
    }
    print(f"\n## Tenant isolation ({conv.tenant} alone vs beside {len(shared) and 'the other tenants'}): {out}")
    return out


def evidence_in_context(
    mem: Any, conversations: list[Conversation], limit: int | None, searched: list[Ranked]
) -> dict[str, float]:
    """Share of evidence turns present in the system message ``build_context`` assembles (128k and 32k windows).

    Each question is asked in a new session of the conversation's tenant, as
    an app would on the user's next visit. Printed beside search's recall@10
    and recall@5 on the same questions (the targets: at least those).
    """
    shares: dict[int, list[float]] = {128_000: [], 32_000: []}
    same: list[Ranked] = []
    for conv in conversations:
        session = mem.session(f"{conv.tenant}-ask", tenant=conv.tenant, title="questions")
        same += [r for r in searched if r.group == conv.tenant][:limit]
        for q in conv.questions[:limit]:
            for window, out in shares.items():
                system = mem.build_context(session, q.text, model_window=window).system
                out.append(sum(conv.dia_text[d] in system for d in q.evidence if d in conv.dia_text) / len(q.evidence))
    result = {f"{w // 1000}k": statistics.mean(v) for w, v in shares.items() if v}
    for k in (10, 5):
        result[f"search_recall@{k}"] = statistics.mean(window_recall_at(shown(r), set(r.relevant), k) for r in same)
    print(f"\n## Evidence in context (build_context, new session per conversation, {len(same)} questions): {result}")
    return result


# -- calibration -----------------------------------------------------------------------------
def examples(results: list[Ranked], top: int = 10) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
    """Top-``top`` hits as (signals, shipped relevance, label) examples."""
    signals, predicted, labels = [], [], []
    for r in results:
        relevant = set(r.relevant)
        for window, p, s in list(zip(shown(r), r.relevance, r.signals, strict=True))[:top]:
            signals.append(s)
            predicted.append(p)
            labels.append(float(bool(window & relevant)))
    return signals, np.asarray(predicted), np.asarray(labels)


def print_reliability(label: str, results: list[Ranked]) -> dict[str, Any]:
    """ECE and the reliability table of the shipped relevance on these results' top-10 hits."""
    _, p, y = examples(results)
    if not len(y):
        return {}
    ece, rows = reliability(p, y)
    print(f"\n## Reliability ({label}): {len(y)} hits, base rate {y.mean():.3f}, ECE {ece:.4f}")
    print(f"{'bin':<8} {'n':>6} {'predicted':>10} {'observed':>9}")
    for b, n, pred, obs in rows:
        print(f"{b:<8} {n:>6} {pred:>10.3f} {obs:>9.3f}")
    return {"ece": ece, "n": len(y), "base_rate": float(y.mean()), "table": rows}


def latency(results: list[Ranked]) -> dict[str, float]:
    """Mean and p95 search time in ms."""
    ms = [1000 * r.seconds for r in results if r.seconds]
    return {"mean_ms": statistics.mean(ms) if ms else 0.0, "p95_ms": percentile(ms, 95)}


# -- SciFact ---------------------------------------------------------------------------------
def run_scifact(mem: Any, embedder: CachingEmbedder, data: Path, limit: int | None) -> dict[str, Any]:
    """Ingest SciFact, search every test claim with Funes and the baselines; NDCG@10 and recall@100."""
    start = time.perf_counter()
    sf = ingest_scifact(mem, data, limit)
    ingest_s = time.perf_counter() - start
    base = Baselines(mem, embedder, sf.doc_text)
    methods: dict[str, list[Ranked]] = defaultdict(list)
    for qid, text in sf.queries.items():
        gains = sf.qrels[qid]
        r = search(mem, text, SCIFACT_TENANT, sf.record_to_doc, 100)
        r.relevant = {d for d, g in gains.items() if g > 0}
        methods["funes"].append(r)
        methods["bm25s"].append(Ranked(SCIFACT_TENANT, 0, r.relevant, base.bm25_rank(text, 100)))
        methods["dense"].append(Ranked(SCIFACT_TENANT, 0, r.relevant, base.dense_rank(text, 100)))
    # Off-topic: conversation questions and the agent set's, asked of the abstracts.
    noise = [search(mem, text, SCIFACT_TENANT, sf.record_to_doc, 50) for text in scifact_noise(data)]
    print(f"\n## SciFact: {len(sf.doc_text)} abstracts, {len(sf.queries)} claims")
    print(f"{'method':<8} {'NDCG@10':>8} {'R@100':>6}")
    table = {}
    for method, results in methods.items():
        nd = statistics.mean(ndcg_at(r.units, r.relevant, 10) for r in results)
        rc = statistics.mean(recall_at(r.units, r.relevant, 100) for r in results)  # type: ignore[arg-type]
        table[method] = {"ndcg@10": nd, "recall@100": rc}
        print(f"{method:<8} {nd:>8.3f} {rc:>6.3f}")
    print_own("SciFact", {m: own_metrics(rs) for m, rs in methods.items()})
    return {"methods": methods, "table": table, "ingest_s": ingest_s, "noise": noise}


def scifact_noise(data: Path, per_conversation: int = 8) -> list[str]:
    """Off-topic queries for SciFact: a few questions of each LoCoMo conversation and the agent set's."""
    from agent_memory_data import OFF_TOPIC
    from quality_data import questions_of

    out = list(OFF_TOPIC)
    if (data / "locomo").is_dir():
        for sample in load_locomo(data):
            out += [q.text for q in questions_of(sample)[:per_conversation]]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the harness and print its tables."""
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=("locomo", "scifact", "agent", "all"), default="all")
    parser.add_argument("--limit", type=int, help="First N LoCoMo conversations / first N SciFact claims.")
    parser.add_argument("--data", type=Path, default=DATA, help="Folder holding locomo/ and scifact/ (read only).")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "funes-quality", help="Embedding cache folder."
    )
    parser.add_argument("--off-topic", type=int, default=60, help="Off-topic questions asked per conversation.")
    parser.add_argument("--json", type=Path, help="Also write the numbers to this JSON file.")
    parser.add_argument(
        "--calibrate", action="store_true", help="Refit funes.memory.relevance and print its constants."
    )
    parser.add_argument(
        "--context",
        type=int,
        default=0,
        help="Also measure evidence in context on the first N questions of each conversation.",
    )
    parser.add_argument(
        "--as-of",
        choices=("last-session", "now"),
        default="last-session",
        help="Reference time of LoCoMo questions: the conversation's last session (default: a user asking their "
        "imported history), or the wall clock (what the harness did before).",
    )
    parser.add_argument("--dump", type=Path, help="Also pickle every query's ranked units and hit signals here.")
    parser.add_argument(
        "--from-dump",
        type=Path,
        help="Search nothing: redo leave-one-dataset-out (and --calibrate) from a --dump of an earlier run.",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="A Funes setting for both stores (repeatable), e.g. --set vector_weight=0.6: what a changed default would do.",
    )
    ARGS = args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.set)
    if args.from_dump:
        return from_dump(args.from_dump, args, settings)
    require(args.data)
    import funes
    from funes.providers.embed.local import LocalEmbedder

    embedder = CachingEmbedder(LocalEmbedder(), args.cache)
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    dumped: dict[str, Any] = {}
    sets: dict[str, tuple[list[Ranked], list[Ranked]]] = {}  # data set: (on-topic, off-topic) Funes results
    try:
        with tempfile.TemporaryDirectory(prefix="funes-quality-") as tmp:
            if args.dataset in ("locomo", "all"):
                samples = load_locomo(args.data)[: args.limit or None]
                with funes.open(str(Path(tmp) / "locomo.db"), embedder=embedder, **settings) as mem:
                    foreign = scifact_claims(args.data)
                    lo = run_locomo(mem, embedder, samples, args.off_topic, foreign)
                    embedder.save()
                    if args.context:
                        report["evidence_in_context"] = evidence_in_context(
                            mem, lo["conversations"], args.context, lo["methods"]["funes"]
                        )
                if len(samples) > 1:
                    report["tenant_isolation"] = tenant_isolation(
                        embedder, samples[0], lo["methods"]["funes"], Path(tmp) / "alone.db", **settings
                    )
                if args.dump:
                    dumped["locomo"] = {"methods": dict(lo["methods"]), "noise": lo["noise"], "foreign": lo["foreign"]}
                report["locomo"] = locomo_table(lo["methods"])
                funes_hits = lo["methods"]["funes"]
                train_ids = {s["sample_id"] for s in samples[:TRAIN_CONVERSATIONS]}
                held = [r for r in funes_hits if r.group not in train_ids] or funes_hits
                held_noise = [r for r in lo["noise"] if r.group not in train_ids] or lo["noise"]
                label = "conversations 6-10" if len(samples) > TRAIN_CONVERSATIONS else "all loaded (no held-out set)"
                held_foreign = [r for r in lo["foreign"] if r.group not in train_ids] or lo["foreign"]
                if len(samples) > TRAIN_CONVERSATIONS:  # the defaults are chosen on this one
                    report["floors_train"] = floor_table(
                        [r for r in funes_hits if r.group in train_ids],
                        [r for r in lo["noise"] if r.group in train_ids],
                        "conversations 1-5, training",
                        [r for r in lo["foreign"] if r.group in train_ids],
                    )
                report["floors"] = floor_table(held, held_noise, label, held_foreign)
                report["locomo_latency"] = latency(funes_hits)
                print(f"\nsearch latency (LoCoMo): {report['locomo_latency']}")
                report["reliability_locomo_train"] = print_reliability(
                    "LoCoMo 1-5 + off-topic, training",
                    [r for r in funes_hits + lo["noise"] if r.group in train_ids],
                )
                report["reliability_locomo_heldout"] = print_reliability(
                    f"LoCoMo {label} + off-topic", held + held_noise
                )
                print_own("LoCoMo", {m: own_metrics(rs) for m, rs in lo["methods"].items()})
                report["locomo_own"] = {m: own_metrics(rs) for m, rs in lo["methods"].items()}
                sets["locomo"] = (funes_hits, lo["noise"] + lo["foreign"])
            if args.dataset in ("scifact", "all"):
                with funes.open(str(Path(tmp) / "scifact.db"), embedder=embedder, **settings) as mem:
                    sf = run_scifact(mem, embedder, args.data, args.limit)
                    embedder.save()
                if args.dump:
                    dumped["scifact"] = dict(sf["methods"])
                report["scifact"] = sf["table"]
                report["scifact_latency"] = latency(sf["methods"]["funes"])
                print(f"\nsearch latency (SciFact): {report['scifact_latency']}")
                report["reliability_scifact"] = print_reliability("SciFact", sf["methods"]["funes"])
                report["scifact_own"] = {m: own_metrics(rs) for m, rs in sf["methods"].items()}
                sets["scifact"] = (sf["methods"]["funes"], sf["noise"])
                if args.dump:
                    dumped["scifact_noise"] = sf["noise"]
            if args.dataset in ("agent", "all"):
                with funes.open(str(Path(tmp) / "agent.db"), embedder=embedder, **settings) as mem:
                    ag = run_agent(mem, search, Ranked)
                    floors = {"search": mem.config.search_min_relevance, "context": mem.config.context_min_relevance}
                    name_floor = mem.config.context_unseen_name_relevance
                    embedder.save()
                report["agent"] = agent_report(ag["on"], ag["off"], floors, name_floor)
                report["agent_own"] = own_metrics(ag["on"])
                print_own("Agent memory", {"funes": report["agent_own"]})
                sets["agent"] = (ag["on"], ag["off"])
                if args.dump:
                    dumped["agent"] = ag
            if len(sets) > 1:
                report["leave_one_out"] = leave_one_out(sets, unseen_name_floor(settings))
            if args.calibrate and sets:
                print_constants(sets)
    finally:
        embedder.save()
    if args.dump:
        import pickle

        args.dump.write_bytes(pickle.dumps(dumped))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


def unseen_name_floor(settings: dict[str, str]) -> float:
    """Automatic context's floor for a query naming what no record holds, with the run's ``--set`` settings."""
    from funes.models.config import load

    return float(load(**settings).context_unseen_name_relevance)


def from_dump(path: Path, args: argparse.Namespace, settings: dict[str, str]) -> int:
    """Leave-one-dataset-out (and the calibration fit) from the recorded hits of a ``--dump``, searching nothing."""
    import pickle

    dumped = pickle.loads(path.read_bytes())
    sets: dict[str, tuple[list[Ranked], list[Ranked]]] = {}
    if "locomo" in dumped:
        sets["locomo"] = (dumped["locomo"]["methods"]["funes"], dumped["locomo"]["noise"] + dumped["locomo"]["foreign"])
    if "scifact" in dumped:
        sets["scifact"] = (dumped["scifact"]["funes"], dumped.get("scifact_noise", []))
    if "agent" in dumped:
        sets["agent"] = (dumped["agent"]["on"], dumped["agent"]["off"])
    report: dict[str, Any] = {"from_dump": str(path)}
    if len(sets) > 1:
        report["leave_one_out"] = leave_one_out(sets, unseen_name_floor(settings))
    if args.calibrate and sets:
        print_constants(sets)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


ARGS: argparse.Namespace


if __name__ == "__main__":
    sys.exit(main())
