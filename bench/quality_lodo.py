"""Own-unit ranking metrics, the agent-memory set, and leave-one-dataset-out calibration for bench/quality.py.

Every data set gives on-topic queries (each with the units that answer it) and
off-topic queries (nothing in the store answers them):

* LoCoMo: evidence turns, counted on the hit's own turn (not the ±1 turns it
  carries); off-topic: the next conversation's questions and SciFact claims;
* SciFact: judged abstracts; off-topic: LoCoMo questions and the agent set's;
* agent memory (bench/agent_memory_data.py): the one memory that answers;
  off-topic: general questions and people the store never mentions.

Relevance is refitted from the hits' recorded signals (no new searches): a
logistic on every top-20 hit (answer = 1, other hits and off-topic hits = 0),
each data set weighing the same. Leave-one-dataset-out fits on two sets and
scores the third, re-ranking its hits by the refitted relevance (the order
search shows), so the floor is judged on a distribution it never saw.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np
from agent_memory_data import AgentStore, ingest_agent, stores
from quality_floor import Judged, floor_fitted_report
from quality_metrics import dedup, fit_logistic

FIT_TOP = 20  # hits per query that enter the fit
LODO_FLOORS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3)


# -- ranking metrics on the hit's own unit ------------------------------------------------------
def own_metrics(results: Sequence[Any], units: Sequence[Sequence[str]] | None = None) -> dict[str, float]:
    """R@1, R@5, R@10, MRR and NDCG@10 over each query's own units (a hit counts for its own unit only)."""
    rows: dict[str, list[float]] = {"R@1": [], "R@5": [], "R@10": [], "MRR": [], "NDCG@10": []}
    for n, r in enumerate(results):
        ranked = dedup(units[n] if units is not None else r.units)
        relevant = set(r.relevant)
        if not relevant:
            continue
        for k in (1, 5, 10):
            rows[f"R@{k}"].append(len(set(ranked[:k]) & relevant) / len(relevant))
        rows["MRR"].append(next((1.0 / i for i, u in enumerate(ranked, 1) if u in relevant), 0.0))
        dcg = sum(1.0 / math.log2(i + 2) for i, u in enumerate(ranked[:10]) if u in relevant)
        rows["NDCG@10"].append(dcg / sum(1.0 / math.log2(i + 2) for i in range(min(10, len(relevant)))))
    return {k: statistics.mean(v) if v else 0.0 for k, v in rows.items()} | {"n": len(rows["R@1"])}


def print_own(label: str, tables: dict[str, dict[str, float]]) -> None:
    """One headline table: method, R@1, R@5, R@10, MRR, NDCG@10."""
    print(f"\n## {label}: the hit's own unit (headline)")
    print(f"{'method':<22} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'NDCG@10':>8}")
    for method, row in tables.items():
        print(
            f"{method:<22} {row['n']:>5} {row['R@1']:>6.3f} {row['R@5']:>6.3f} {row['R@10']:>6.3f} "
            f"{row['MRR']:>6.3f} {row['NDCG@10']:>8.3f}"
        )


# -- the agent-memory set -------------------------------------------------------------------
def run_agent(mem: Any, search: Any, ranked_cls: Any) -> dict[str, Any]:
    """Every agent store in its own tenant: its questions (the answer is one memory) and the off-topic ones."""
    on: list[Any] = []
    off: list[Any] = []
    for store in stores():
        store = ingest_agent(mem, store)
        for question, answer in store.questions:
            r = search(mem, question, store.tenant, store.record_to_unit, 50)
            r.relevant = {str(answer)}
            on.append(r)
        for question in store.off_topic:
            off.append(search(mem, question, store.tenant, store.record_to_unit, 50))
    return {"on": on, "off": off, "stores": [s.tenant for s in stores()]}


def agent_report(
    on: list[Any], off: list[Any], floors: dict[str, float], unseen_name_floor: float = 0.0
) -> dict[str, float]:
    """The issue's targets: top-1 accuracy, the answer's relevance >= 0.5 when found, off-topic abstention.

    ``unseen_name_floor``: automatic context's floor for a query naming what no memory mentions
    (``context_unseen_name_relevance``), applied with the ``context`` floor.
    """
    top1 = statistics.mean(float(bool(r.units) and r.units[0] in r.relevant) for r in on)
    found = [p for r in on for u, p in zip(r.units[:10], r.relevance, strict=False) if u in r.relevant]
    strong = statistics.mean(float(p >= 0.5) for p in found) if found else 0.0
    out = {"top1": top1, "answer_relevance>=0.5": strong, "answer_found@10": len(found) / max(1, len(on))}
    for name, floor in floors.items():
        out[f"off_topic_empty@{name}={floor:g}"] = statistics.mean(
            float(not [p for p in r.relevance[:10] if p >= floor]) for r in off
        )
    if "context" in floors:
        out[f"off_topic_empty@context+unseen_name={unseen_name_floor:g}"] = statistics.mean(
            float(not context_kept(r.relevance[:10], r.signals[:10], floors["context"], unseen_name_floor)) for r in off
        )
    print(f"\n## Agent memory ({len(on)} questions over stores of 3-300 memories, {len(off)} off-topic)")
    for k, v in out.items():
        print(f"{k:<40} {v:.3f}")
    return out


# -- refitting relevance from the recorded signals --------------------------------------------
def features(signals: dict[str, Any], keyword_only: bool = False) -> list[float]:
    """The relevance model's inputs for one hit's recorded signals."""
    from funes.memory.relevance import Signals, feature_vector, keyword_feature_vector

    sig = Signals(
        signals.get("cosine"),
        signals.get("keyword", 0.0),
        signals.get("coverage", 0.0),
        signals.get("question", 0.0),
        signals.get("absent", 0.0),
        signals.get("absent_name", 0.0),
        signals.get("name_excess", 0.0),
    )
    return keyword_feature_vector(sig) if keyword_only else feature_vector(sig)


def labelled(on: list[Any], off: list[Any], top: int = FIT_TOP) -> tuple[list[dict[str, Any]], list[float]]:
    """Top-``top`` hits as (signals, label): a hit whose own unit answers is 1, every other hit 0."""
    signals: list[dict[str, Any]] = []
    labels: list[float] = []
    for r in on:
        for u, s in list(zip(r.units, r.signals, strict=True))[:top]:
            signals.append(s)
            labels.append(float(u in r.relevant))
    for r in off:
        for s in r.signals[:top]:
            signals.append(s)
            labels.append(0.0)
    return signals, labels


# The last of the model's inputs (``name_excess``) is fitted after the others, their logit held as an offset, as
# the shipped constants were (docs/benchmarks.md, "what a name does not explain"): fitted jointly, it lowered 16
# held-out figures; after, a query naming no one keeps the relevance the other inputs give it.
STAGED = 1


def fit(
    sets: dict[str, tuple[list[Any], list[Any]]], keyword_only: bool = False, feats: Any = None
) -> tuple[float, np.ndarray]:
    """One logistic over the labelled hits of these data sets, each set weighing the same (``feats``: the
    model's inputs of a hit's signals; by default :func:`features`, its last ``STAGED`` fitted after the rest)."""
    if feats is None and not keyword_only:

        def base(s: dict[str, Any], keyword_only: bool = False) -> list[float]:
            return features(s)[:-STAGED]

        b0, w0 = fit(sets, feats=base)
        extra = fit_after(sets, lambda s: features(s)[-STAGED:], lambda s: b0 + float(np.dot(w0, base(s))))
        return b0, np.concatenate([w0, extra])
    feats = feats or features
    xs, ys, ws = [], [], []
    for on, off in sets.values():
        signals, labels = labelled(on, off)
        if not labels:
            continue
        xs += [feats(s, keyword_only) for s in signals]
        ys += labels
        ws += [1.0 / len(labels)] * len(labels)
    w = np.asarray(ws) * len(ws) / len(sets)
    return fit_logistic(np.asarray(xs, dtype=float), np.asarray(ys), weights=w)


def fit_after(sets: dict[str, tuple[list[Any], list[Any]]], extra: Any, offset: Any) -> np.ndarray:
    """The weights of the ``extra`` inputs of a hit's signals, fitted with ``offset`` (a hit's logit from a model
    fitted before) held fixed, each set weighing the same (Newton's method)."""
    xs, z, ys, ws = [], [], [], []
    for on, off in sets.values():
        signals, labels = labelled(on, off)
        xs += [extra(s) for s in signals]
        z += [offset(s) for s in signals]
        ys += labels
        ws += [1.0 / len(labels)] * len(labels)
    x, z0, y, w = (np.asarray(v, dtype=float) for v in (xs, z, ys, ws))
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z0 + x @ beta)))
        step = np.linalg.solve((x * (w * p * (1 - p))[:, None]).T @ x + 1e-9 * np.eye(len(beta)), x.T @ (w * (y - p)))
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def rescored(r: Any, model: tuple[float, np.ndarray] | None, feats: Any = None) -> tuple[list[str], list[float]]:
    """A query's hits re-ranked by a refitted relevance (boosts on its odds, as search shows it); None: as run."""
    if model is None:
        return list(r.units), list(r.relevance)
    from funes.memory.relevance import boosted

    feats = feats or features
    b, w = model
    rows = []
    for u, s in zip(r.units, r.signals, strict=True):
        p = 1.0 / (1.0 + math.exp(-(b + float(np.dot(w, feats(s))))))
        rows.append((boosted(p, s.get("boosts") or {}), float(s.get("score", 0.0)), u))
    rows.sort(key=lambda t: (-t[0], -t[1]))
    return [u for _, _, u in rows], [p for p, _, _ in rows]


def floor_rows(on: list[Any], off: list[Any], model: tuple[float, np.ndarray] | None) -> dict[float, dict[str, float]]:
    """Per floor: the share of no-floor own-unit recall@10 kept, and the share of off-topic queries left empty."""
    judged = Judged.of(on, off, lambda r: rescored(r, model))
    out = {}
    for floor in LODO_FLOORS:
        kept, empty = judged.at(floor)
        out[floor] = {"recall_kept": kept, "off_topic_empty": empty}
    return out


def context_kept(
    probs: Sequence[float], signals: Sequence[dict[str, Any]], floor: float, name_floor: float
) -> list[float]:
    """The relevances automatic context keeps: each at least its hit's context floor (funes.memory.relevance)."""
    from funes.memory.relevance import context_floor

    return [p for p, s in zip(probs, signals, strict=False) if p >= context_floor(s, floor, name_floor)]


UNSEEN_NAME_FLOORS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


def unseen_name_rows(
    on: list[Any], off: list[Any], model: tuple[float, np.ndarray] | None, floor: float = 0.005
) -> dict[float, dict[str, float]]:
    """At the context floor: recall@10 kept and off-topic empty when a query naming what no record holds needs more."""
    judged = Judged.of(on, off, lambda r: rescored(r, model))
    share = sum(named for *_, named in judged.on) / max(1, len(on))
    out = {}
    for name_floor in UNSEEN_NAME_FLOORS:
        kept, empty = judged.at(floor, name_floor)
        out[name_floor] = {"recall_kept": kept, "off_topic_empty": empty, "on_topic_unseen_name": share}
    return out


def leave_one_out(sets: dict[str, tuple[list[Any], list[Any]]], unseen_name_floor: float = 0.1) -> dict[str, Any]:
    """Fit on all sets but one, rank and judge the floor on the one left out (held fixed, then fitted with the
    model on the other sets: quality_floor); ``unseen_name_floor``: automatic context's one for unseen names."""
    report: dict[str, Any] = {}
    print("\n## Leave-one-dataset-out: relevance fitted on the other sets, judged on the held-out one")
    for held in sets:
        model = fit({k: v for k, v in sets.items() if k != held})
        on, off = sets[held]
        metrics = own_metrics(on, [rescored(r, model)[0] for r in on])
        shipped = own_metrics(on)
        rows = floor_rows(on, off, model)
        names = unseen_name_rows(on, off, model)
        report[held] = {"own_refit": metrics, "own_shipped": shipped, "floors": rows, "unseen_name": names}
        print(
            f"\n{held}: own-unit R@1 {metrics['R@1']:.3f} R@10 {metrics['R@10']:.3f} MRR {metrics['MRR']:.3f} "
            f"NDCG@10 {metrics['NDCG@10']:.3f} (shipped constants: R@1 {shipped['R@1']:.3f} "
            f"R@10 {shipped['R@10']:.3f} MRR {shipped['MRR']:.3f})"
        )
        print(f"{'floor':>6} {'recall kept':>12} {'off-topic empty':>16}")
        for floor, row in rows.items():
            print(f"{floor:>6.3f} {row['recall_kept']:>12.3f} {row['off_topic_empty']:>16.1%}")
        share = names[0.0]["on_topic_unseen_name"]
        print(f"context floor 0.005, a query naming what no record holds needs (on-topic such queries: {share:.1%}):")
        print(f"{'needs':>6} {'recall kept':>12} {'off-topic empty':>16}")
        for name_floor, row in names.items():
            print(f"{name_floor:>6.3f} {row['recall_kept']:>12.3f} {row['off_topic_empty']:>16.1%}")
    # The floors that keep 0.99 of recall on every held-out set, and what they abstain on.
    print(f"\n{'floor':>6} {'min recall kept':>16} {'min off-topic empty':>20}  (over held-out sets)")
    worst = {}
    for floor in LODO_FLOORS:
        kept = min(report[h]["floors"][floor]["recall_kept"] for h in sets)
        empty = min(report[h]["floors"][floor]["off_topic_empty"] for h in sets)
        worst[floor] = {"recall_kept": kept, "off_topic_empty": empty}
        print(f"{floor:>6.3f} {kept:>16.3f} {empty:>20.1%}")
    report["worst"] = worst
    print(f"\n{'needs':>6} {'min recall kept':>16} {'min off-topic empty':>20}  (context 0.005, unseen name, held out)")
    for name_floor in UNSEEN_NAME_FLOORS:
        kept = min(report[h]["unseen_name"][name_floor]["recall_kept"] for h in sets)
        empty = min(report[h]["unseen_name"][name_floor]["off_topic_empty"] for h in sets)
        print(f"{name_floor:>6.3f} {kept:>16.3f} {empty:>20.1%}")
    report["floor_fitted"] = floor_fitted_report(sets, fit, rescored, unseen_name_floor)
    report["answer_rate_by_cosine"] = answer_rate_by_cosine(sets)
    return report


COSINE_BINS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def answer_rate_by_cosine(sets: dict[str, tuple[list[Any], list[Any]]]) -> dict[str, list[tuple[float, int, int]]]:
    """Per data set and cosine bin: (bin start, top-20 hits that answer, top-20 hits), off-topic hits included.

    What any relevance read from the hit alone can say at that cosine: an answer in a bin where most hits do
    not answer cannot get a high calibrated relevance from its cosine.
    """
    out: dict[str, list[tuple[float, int, int]]] = {}
    for name, (on, off) in sets.items():
        counts = {b: [0, 0] for b in COSINE_BINS}
        rows = [(u in r.relevant, s) for r in on for u, s in list(zip(r.units, r.signals, strict=True))[:FIT_TOP]]
        rows += [(False, s) for r in off for s in r.signals[:FIT_TOP]]
        for answers, s in rows:
            b = max(x for x in COSINE_BINS if x <= max(0.0, s.get("cosine") or 0.0))
            counts[b][0] += answers
            counts[b][1] += 1
        out[name] = [(b, a, n) for b, (a, n) in counts.items()]
    print(f"\n## Share of top-{FIT_TOP} hits that answer, by cosine (on- and off-topic queries)")
    print(f"{'cosine':<8}" + "".join(f"{name:>25}" for name in out))
    for i, b in enumerate(COSINE_BINS):
        cells = "".join(f"{a:>7}/{n:<7} {a / n if n else 0.0:>7.3f}  " for _, a, n in (out[k][i] for k in out))
        print(f"≥ {b:<6.1f}{cells}")
    return out


def print_constants(sets: dict[str, tuple[list[Any], list[Any]]]) -> None:
    """The relevance constants fitted on every set (both models), ready for funes/memory/relevance.py."""
    from funes.memory.relevance import FEATURES, KEYWORD_FEATURES

    print(f"\n## Calibration fit on {', '.join(sets)} (top-{FIT_TOP} hits, each set weighing the same)")
    for name, names, keyword_only in (("", FEATURES, False), ("KEYWORD_", KEYWORD_FEATURES, True)):
        intercept, coef = fit(sets, keyword_only)
        print(f"{name}FEATURES = {tuple(names)!r}")
        print(f"{name}INTERCEPT = {intercept:.4f}")
        print(f"{name}COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in coef)})")


__all__ = ["AgentStore", "agent_report", "fit", "leave_one_out", "own_metrics", "print_constants", "run_agent"]
