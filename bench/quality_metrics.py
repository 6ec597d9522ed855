"""Ranking metrics and the relevance calibration fit for bench/quality.py (numpy only)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence, Set

import numpy as np


def dedup(ids: Sequence[str]) -> list[str]:
    """Ids in first-seen order: a unit found through several parts counts once, at its best rank."""
    return list(dict.fromkeys(ids))


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the relevant units among the top ``k``."""
    return len(set(dedup(ranked)[:k]) & relevant) / len(relevant) if relevant else 0.0


def all_hit_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1 when every relevant unit is in the top ``k``."""
    return float(bool(relevant) and relevant <= set(dedup(ranked)[:k]))


def ndcg_at(ranked: Sequence[str], gains: dict[str, int] | set[str], k: int = 10) -> float:
    """NDCG@k with graded (dict) or binary (set) gains."""
    grade = gains if isinstance(gains, dict) else dict.fromkeys(gains, 1)
    dcg = sum(grade.get(d, 0) / math.log2(i + 2) for i, d in enumerate(dedup(ranked)[:k]))
    ideal = sorted(grade.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mrr(ranked: Sequence[str], relevant: set[str]) -> float:
    """Reciprocal rank of the first relevant unit (0 when none is ranked)."""
    for i, d in enumerate(dedup(ranked), start=1):
        if d in relevant:
            return 1.0 / i
    return 0.0


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iterations: int = 50, weights: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Logistic regression by Newton's method (IRLS) with a small ridge: (intercept, coefficients).

    ``weights`` weigh the examples (default: 1 each).
    """
    design = np.hstack([np.ones((len(x), 1)), x])
    sw = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    w = np.zeros(design.shape[1])
    ridge = l2 * np.eye(design.shape[1])
    ridge[0, 0] = 0.0  # the intercept is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (sw * (p - y)) + ridge @ w
        hess = design.T @ (design * (sw * p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(w[0]), w[1:]


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[float, list[tuple[str, int, float, float]]]:
    """Expected calibration error over equal-width bins, and the table (bin, n, mean predicted, observed rate)."""
    rows = []
    ece = 0.0
    edges = np.linspace(0.0, 1.0, bins + 1)
    for lo, hi in itertools.pairwise(edges):
        mask = (p >= lo) & ((p < hi) if hi < 1.0 else (p <= hi))
        n = int(mask.sum())
        if not n:
            continue
        predicted, observed = float(p[mask].mean()), float(y[mask].mean())
        ece += n / len(p) * abs(predicted - observed)
        rows.append((f"{lo:.1f}-{hi:.1f}", n, predicted, observed))
    return ece, rows


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else 0.0


# -- hits that carry context: each hit is the set of units it shows (a turn and its neighbours) --
def covered(windows: Sequence[Set[str]], k: int) -> set[str]:
    """The units the top ``k`` hits show."""
    return set().union(*windows[:k]) if windows[:k] else set()


def window_recall_at(windows: Sequence[Set[str]], relevant: Set[str], k: int) -> float:
    """Share of the relevant units shown by the top ``k`` hits."""
    return len(covered(windows, k) & relevant) / len(relevant) if relevant else 0.0


def window_all_hit_at(windows: Sequence[Set[str]], relevant: Set[str], k: int) -> float:
    """1 when the top ``k`` hits show every relevant unit."""
    return float(bool(relevant) and relevant <= covered(windows, k))


def window_ndcg_at(windows: Sequence[Set[str]], relevant: Set[str], k: int = 10) -> float:
    """Binary NDCG@k where a hit gains when it shows a relevant unit no better hit showed (ideal: one per hit)."""
    credited: set[str] = set()
    dcg = 0.0
    for i, window in enumerate(windows[:k]):
        new = (window & relevant) - credited
        if new:
            dcg += 1.0 / math.log2(i + 2)
            credited |= new
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / idcg if idcg else 0.0


def window_mrr(windows: Sequence[Set[str]], relevant: Set[str]) -> float:
    """Reciprocal rank of the first hit showing a relevant unit."""
    for i, window in enumerate(windows, start=1):
        if window & relevant:
            return 1.0 / i
    return 0.0
