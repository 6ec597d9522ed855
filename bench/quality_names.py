"""Names turned down in the query vector, judged leave-one-dataset-out with both cosines of every hit (issue 28).

Two ``bench/quality.py --dump`` runs of the same code, one with the query's
own vector (``name_free_query_weight`` 0) and one with the blend (``--set
name_free_query_weight=W``), are paired query by query: every hit gets its
plain cosine ``c0`` and its blended cosine ``cw`` (the same for a query that
names no one). A hit one run did not return in its top 50 gets the other
cosine by the query's median ratio of the two over the hits both returned.
Each variant then says which hits are ranked (the blend run's: the vector
leg fetches with the blend; or the plain run's), what the relevance model
reads, and how it is fitted, and is judged leave-one-dataset-out like
``bench/quality_lodo.py`` (own-unit R@1 / R@10 / MRR / NDCG@10, recall kept
and off-topic empty at the fixed context floor and at the floors fitted
with the model, the held-out best trade-off), each figure marked against
the plain run with the shipped features::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality_names.py --plain w0.pkl --blend w0.3.pkl   # ~2 min a variant
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import quality_lodo as lodo
from quality_floor import Judged, best_tradeoff, fitted_floors
from quality_metrics import fit_logistic

Sets = dict[str, tuple[list[Any], list[Any]]]
Feats = Callable[..., list[float]]


def pair(runs: Sets, other: Sets, own_key: str, other_key: str, named: Callable[[str], bool]) -> None:
    """Give every hit of ``runs`` its own cosine under ``own_key`` and the other run's under ``other_key``."""
    for name, parts in runs.items():
        for mine, theirs in zip(parts, other[name], strict=True):
            for r, o in zip(mine, theirs, strict=True):
                assert r.query == o.query, "the two dumps must hold the same queries in the same order"
                is_named = named(r.query)
                found = {u: s.get("cosine") for u, s in zip(o.units, o.signals, strict=True)}
                ratios = [
                    found[u] / s["cosine"]
                    for u, s in zip(r.units, r.signals, strict=True)
                    if found.get(u) and s.get("cosine")
                ]
                ratio = statistics.median(ratios) if ratios else 1.0
                for u, s in zip(r.units, r.signals, strict=True):
                    cos = s.get("cosine")
                    s["named"], s[own_key] = float(is_named), cos
                    s[other_key] = cos if not is_named or cos is None else found.get(u) or cos * ratio


def _model(s: dict[str, Any], cosine: float | None) -> list[float]:
    """The shipped features of a hit's signals with this cosine."""
    return lodo.features({**s, "cosine": cosine})


def _shift(s: dict[str, Any], seen_only: bool = False) -> float:
    """Blended minus plain cosine (0 for a query that names no one; ``seen_only``: or names what no record holds)."""
    if seen_only and s.get("absent_name"):
        return 0.0
    return max(0.0, s.get("cw") or 0.0) - max(0.0, s.get("c0") or 0.0)


def _feats(make: Callable[[dict[str, Any]], list[float]]) -> Feats:
    def feats(s: dict[str, Any], keyword_only: bool = False) -> list[float]:
        return lodo.features(s, True) if keyword_only else make(s)

    return feats


FEATURES: dict[str, Feats] = {
    "plain": _feats(lambda s: _model(s, s.get("c0"))),
    "blend": _feats(lambda s: _model(s, s.get("cw"))),
    "half": _feats(lambda s: _model(s, (s.get("c0") or 0.0) + 0.5 * _shift(s))),
    "plain+shift": _feats(lambda s: [*_model(s, s.get("c0")), _shift(s)]),
    "plain+shift(seen names)": _feats(lambda s: [*_model(s, s.get("c0")), _shift(s, seen_only=True)]),
    "blend+shift": _feats(lambda s: [*_model(s, s.get("cw")), _shift(s)]),
    "blend+named×cos": _feats(lambda s: [*_model(s, s.get("cw")), s.get("named", 0.0) * max(0.0, s.get("cw") or 0.0)]),
}


def joint(feats: Feats) -> Callable[[Sets], tuple[float, np.ndarray]]:
    """quality_lodo's fit: one logistic, each data set weighing the same."""
    return lambda sets: lodo.fit(sets, feats=feats)


def balanced(feats: Feats) -> Callable[[Sets], tuple[float, np.ndarray]]:
    """One logistic where each data set weighs the same and, inside it, named and unnamed queries' hits too."""

    def fit(sets: Sets) -> tuple[float, np.ndarray]:
        xs, ys, ws = [], [], []
        for on, off in sets.values():
            signals, labels = lodo.labelled(on, off)
            groups: dict[float, int] = {}
            for s in signals:
                groups[s["named"]] = groups.get(s["named"], 0) + 1
            xs += [feats(s) for s in signals]
            ys += labels
            ws += [1.0 / groups[s["named"]] / len(groups) for s in signals]
        w = np.asarray(ws) * len(ws) / len(sets)
        return fit_logistic(np.asarray(xs, dtype=float), np.asarray(ys), weights=w)

    return fit


def staged(feats: Feats) -> Callable[[Sets], tuple[float, np.ndarray]]:
    """The shipped features fitted on the plain cosine first, then the extra inputs' weights alone, the first
    model's logit held as an offset: a query that names no one keeps the plain model's relevance exactly."""

    def fit(sets: Sets) -> tuple[float, np.ndarray]:
        plain = FEATURES["plain"]
        b0, w0 = lodo.fit(sets, feats=plain)
        n = len(w0)
        beta = lodo.fit_after(sets, lambda s: feats(s)[n:], lambda s: b0 + float(np.dot(w0, plain(s))))
        return b0, np.concatenate([w0, beta])

    return fit


def judged(
    sets: Sets,
    feats: Feats,
    fitter: Callable[[Sets], tuple[float, np.ndarray]],
    rng: np.random.Generator | None = None,
) -> dict[str, dict[str, float]]:
    """Per held-out set: its ranking, recall kept / off-topic empty at the fixed 0.005 and the fitted floors,
    its best trade-off, and (agent set) the share of found answers shown at relevance ≥ 0.5.

    ``rng``: the training sets' queries (on- and off-topic) are drawn with replacement first (a bootstrap of
    the fit; the held-out set stays whole).
    """
    out: dict[str, dict[str, float]] = {}
    for held in sets:
        train = {k: v for k, v in sets.items() if k != held}
        if rng is not None:
            train = {k: tuple([q[i] for i in rng.integers(0, len(q), len(q))] for q in v) for k, v in train.items()}
        scope = {**train, held: sets[held]}
        model = fitter(train)

        def again(r: Any, m: Any = model) -> tuple[list[str], list[float]]:
            return lodo.rescored(r, m, feats)

        on, _ = scope[held]
        own = lodo.own_metrics(on, [again(r)[0] for r in on])
        every = {k: Judged.of(a, b, again) for k, (a, b) in scope.items()}
        floors = fitted_floors({k: j for k, j in every.items() if k != held}, 0.1)
        row = {"R@1": own["R@1"], "R@10": own["R@10"], "MRR": own["MRR"], "NDCG@10": own["NDCG@10"]}
        for rule, floor in (
            ("fixed", 0.005),
            ("recall-first", floors["recall-first"]),
            ("abstain-first", floors["abstain-first"]),
        ):
            row[f"{rule} kept"], row[f"{rule} empty"] = every[held].at(floor, 0.1)
        best = best_tradeoff(every[held], 0.1)
        row["best empty"], row["best kept"] = best["empty_at_kept"] or 0.0, best["kept_at_empty"] or 0.0
        if held == "agent":
            found = [p for r in on for u, p in zip(*(v[:10] for v in again(r)), strict=True) if u in r.relevant]
            row["answers ≥ 0.5"] = float(np.mean([p >= 0.5 for p in found])) if found else 0.0
        out[held] = row
    return out


def spread(sets: Sets, feats: Feats, fitter: Callable[..., Any], draws: int, seed: int = 0) -> dict[str, Any]:
    """Each held-out figure's 5th and 95th percentile over ``draws`` bootstraps of the training sets."""
    rng = np.random.default_rng(seed)
    runs = [judged(sets, feats, fitter(feats), rng) for _ in range(draws)]
    return {
        h: {
            k: (float(np.percentile([r[h][k] for r in runs], 5)), float(np.percentile([r[h][k] for r in runs], 95)))
            for k in row
        }
        for h, row in runs[0].items()
    }


def paired(ref: Sets, sets: Sets, variant: tuple[Feats, Callable[..., Any]], draws: int) -> dict[str, Any]:
    """Each held-out figure's change from w = 0 (shipped features) to the variant, 5th and 95th percentile
    over ``draws`` bootstraps drawing the same training queries for both (the two runs hold the same queries)."""
    feats, fitter = variant
    plain = FEATURES["plain"]
    diffs = []
    for draw in range(draws):
        before = judged(ref, plain, joint(plain), np.random.default_rng(draw))
        after = judged(sets, feats, fitter(feats), np.random.default_rng(draw))
        diffs.append({h: {k: v - before[h][k] for k, v in row.items()} for h, row in after.items()})
    return {
        h: {
            k: (float(np.percentile([d[h][k] for d in diffs], 5)), float(np.percentile([d[h][k] for d in diffs], 95)))
            for k in row
        }
        for h, row in diffs[0].items()
    }


def compared(rows: dict[str, dict[str, float]], ref: dict[str, dict[str, float]]) -> tuple[int, int, list[str]]:
    """(figures lower than the reference, figures higher, the lower ones named)."""
    down = [
        f"{h} {k} {ref[h][k]:.3f}→{v:.3f}" for h, row in rows.items() for k, v in row.items() if v < ref[h][k] - 1e-9
    ]
    up = sum(v > ref[h][k] + 1e-9 for h, row in rows.items() for k, v in row.items())
    return len(down), up, down


VARIANTS = {  # name: (the run whose hits are ranked, features, fit)
    "w = 0 (shipped)": ("plain", "plain", joint),
    "w = W (blend in the cosine slot)": ("blend", "blend", joint),
    "fetch by the blend, relevance on the plain cosine": ("blend", "plain", joint),
    "cosine slot: plain + half the shift": ("blend", "half", joint),
    "plain cosine + shift": ("blend", "plain+shift", joint),
    "blend + shift": ("blend", "blend+shift", joint),
    "blend + named × cosine": ("blend", "blend+named×cos", joint),
    "blend, named and unnamed balanced": ("blend", "blend", balanced),
    "plain cosine + shift, balanced": ("blend", "plain+shift", balanced),
    "plain fetch, shift fitted after (seen names)": ("plain", "plain+shift(seen names)", staged),
    "plain fetch, plain + shift (seen names)": ("plain", "plain+shift(seen names)", joint),
}


def main(argv: list[str] | None = None) -> int:
    """Pair the two dumps and print every variant's held-out figures against the shipped one's."""
    import quality

    import __main__
    from funes.memory.query_names import name_free

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plain", type=Path, required=True, help="--dump of a run at name_free_query_weight 0")
    parser.add_argument("--blend", type=Path, required=True, help="--dump of a run at name_free_query_weight W")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), help="Only these (repeatable).")
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        help="Also print each variant's change from w = 0 over N bootstraps drawing the same training queries.",
    )
    parser.add_argument(
        "--bootstrap", type=int, default=0, help="Also print w = 0's figures' spread over N bootstraps of the fit."
    )
    args = parser.parse_args(argv)
    __main__.Ranked = quality.Ranked  # the dumps pickle quality.py's Ranked as run as a script
    runs = {}
    for key, path in (("plain", args.plain), ("blend", args.blend)):
        d = pickle.loads(path.read_bytes())
        runs[key] = {
            "locomo": (d["locomo"]["methods"]["funes"], d["locomo"]["noise"] + d["locomo"]["foreign"]),
            "scifact": (d["scifact"]["funes"], d["scifact_noise"]),
            "agent": (d["agent"]["on"], d["agent"]["off"]),
        }
    named = lambda q: name_free(q) is not None  # noqa: E731
    pair(runs["plain"], runs["blend"], "c0", "cw", named)
    pair(runs["blend"], runs["plain"], "cw", "c0", named)
    ref = judged(runs["plain"], FEATURES["plain"], joint(FEATURES["plain"]))
    band = spread(runs["plain"], FEATURES["plain"], joint, args.bootstrap) if args.bootstrap else None
    if band:
        print(f"\n## w = 0, each held-out figure's 5th-95th percentile over {args.bootstrap} bootstraps of the fit")
        for held, row in band.items():
            print(f"  {held:<8} " + "  ".join(f"{k} {lo:.3f}-{hi:.3f}" for k, (lo, hi) in row.items()))
    for name in args.variant or list(VARIANTS):
        hits, feats, fitter = VARIANTS[name]
        rows = judged(runs[hits], FEATURES[feats], fitter(FEATURES[feats]))
        down, up, lower = compared(rows, ref)
        print(f"\n## {name}: {down} held-out figures lower than w = 0, {up} higher")
        for held, row in rows.items():
            print(f"  {held:<8} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
        print("  lower: " + ("; ".join(lower) or "none"), flush=True)
        if band:
            under = [f"{h} {k} {v:.3f}" for h, row in rows.items() for k, v in row.items() if v < band[h][k][0] - 1e-9]
            print("  under w = 0's bootstrap 5th percentile: " + ("; ".join(under) or "none"), flush=True)
        if args.paired:
            change = paired(runs["plain"], runs[hits], (FEATURES[feats], fitter), args.paired)
            print_paired(change, f"from w = 0 over {args.paired}")
    return 0


def print_paired(change: dict[str, Any], label: str) -> None:
    """Each held-out figure's paired change (5th to 95th percentile), then those lower in 95% of the draws."""
    print(f"  change {label} paired bootstraps (5th to 95th percentile):")
    for held, row in change.items():
        print(f"  {held:<8} " + "  ".join(f"{k} {lo:+.3f}..{hi:+.3f}" for k, (lo, hi) in row.items()))
    worse = [f"{h} {k}" for h, row in change.items() for k, (_, hi) in row.items() if hi < -1e-9]
    print("  lower in 95% of the draws: " + ("; ".join(worse) or "none"), flush=True)


if __name__ == "__main__":
    sys.exit(main())
