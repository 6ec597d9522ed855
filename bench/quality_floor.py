"""The context floor fitted with the relevance model, for bench/quality_lodo.py's leave-one-dataset-out.

A floor is a cut on a calibrated probability, so it belongs to the
calibration it was chosen with: when leave-one-dataset-out refits relevance
on two sets, a floor held fixed (0.005) judges the refit with a number chosen
for other constants. Here the floor is chosen on the two training sets with
the refitted model, by one of two rules, and then judged on the held-out set:

* ``recall-first``: the highest floor whose cost on every training set is at
  most 1% of recall@10 (its recall kept is ≥ 0.99 of the same set's recall
  with the unseen-name floor alone, which the floor cannot undo);
* ``abstain-first``: the lowest floor that leaves ≥ 90% of every training
  set's off-topic queries empty.

Beside them the held-out set's own best trade-off (the floor chosen on the
held-out set itself, which no shipped default can do): the most off-topic
queries left empty while keeping ≥ 0.99 of recall, and the most recall kept
while leaving ≥ 90% empty. A change that moves only the calibration shifts
the fitted floors; one that hurts the ranking or the separation of answers
from off-topic hits lowers the best trade-off as well.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

RECALL_KEPT = 0.99  # the targets on every held-out set
OFF_TOPIC_EMPTY = 0.90
# Floors tried: fine where the calibrated relevance of weak answers lies (0.0001 steps to 0.01).
FINE_FLOORS = (
    tuple(round(i * 0.0001, 4) for i in range(100))
    + tuple(round(0.01 + i * 0.0005, 4) for i in range(20))
    + tuple(round(0.02 + i * 0.005, 3) for i in range(37))
)


@dataclass(frozen=True)
class Judged:
    """One data set's queries re-ranked by one model: each query's relevances, whether it names someone
    no record holds, and (on-topic) its ranked units and answers."""

    on: list[tuple[list[str], list[float], set[str], bool]]
    off: list[tuple[list[float], bool]]

    @classmethod
    def of(cls, on: list[Any], off: list[Any], rescored: Callable[[Any], tuple[list[str], list[float]]]) -> Judged:
        """Rescore every query once (``rescored(r)``: units and relevances in the order search shows)."""

        def named(r: Any) -> bool:  # absent_name is the same for all a query's hits: read its first
            return bool(r.signals and r.signals[0].get("absent_name"))

        rows_on = [(*rescored(r), set(r.relevant), named(r)) for r in on]
        return cls(rows_on, [(rescored(r)[1], named(r)) for r in off])

    def at(self, floor: float, name_floor: float = 0.0) -> tuple[float, float]:
        """(recall@10 kept as a share of the no-floor recall@10, share of off-topic queries left empty)."""

        def kept(probs: list[float], named: bool) -> list[int]:
            need = max(floor, name_floor) if named else floor
            return [n for n, p in enumerate(probs[:10]) if p >= need]

        def recall(units: list[str], idx: list[int] | range, relevant: set[str]) -> float:
            return len({units[n] for n in idx} & relevant) / len(relevant) if relevant else 0.0

        base = statistics.mean(recall(u, range(min(10, len(u))), rel) for u, _, rel, _ in self.on) if self.on else 0.0
        got = statistics.mean(recall(u, kept(p, nm), rel) for u, p, rel, nm in self.on) if self.on else 0.0
        empty = statistics.mean(float(not kept(p, nm)) for p, nm in self.off) if self.off else 0.0
        return (got / base if base else 1.0), empty


def fitted_floors(train: dict[str, Judged], name_floor: float) -> dict[str, float]:
    """The two rules' floors, chosen on the training sets only (see the module docstring)."""
    own = {k: j.at(0.0, name_floor)[0] for k, j in train.items()}
    rows = {f: {k: j.at(f, name_floor) for k, j in train.items()} for f in FINE_FLOORS}
    recall_first = max(f for f, r in rows.items() if all(r[k][0] >= RECALL_KEPT * own[k] - 1e-12 for k in r))
    abstain = [f for f, r in rows.items() if all(e >= OFF_TOPIC_EMPTY for _, e in r.values())]
    return {"recall-first": recall_first, "abstain-first": min(abstain) if abstain else FINE_FLOORS[-1]}


def best_tradeoff(held: Judged, name_floor: float) -> dict[str, float | None]:
    """The held-out set's own best: most off-topic empty at ≥ 0.99 recall kept, most recall kept at ≥ 90% empty."""
    points = [held.at(f, name_floor) for f in FINE_FLOORS]
    empty = [e for k, e in points if k >= RECALL_KEPT - 1e-12]
    kept = [k for k, e in points if e >= OFF_TOPIC_EMPTY]
    return {"empty_at_kept": max(empty) if empty else None, "kept_at_empty": max(kept) if kept else None}


def floor_fitted_report(
    sets: dict[str, tuple[list[Any], list[Any]]],
    fit: Callable[[dict[str, tuple[list[Any], list[Any]]]], Any],
    rescored: Callable[[Any, Any], tuple[list[str], list[float]]],
    name_floor: float,
) -> dict[str, Any]:
    """Per held-out set: each rule's floor fitted with the model on the other sets, and what it does there."""
    out: dict[str, Any] = {}
    print(
        f"\n## Leave-one-dataset-out, the context floor fitted with the model on the training sets "
        f"(unseen-name floor {name_floor:g})"
    )
    print(
        f"{'held out':<9} {'rule':<14} {'floor':>7} {'recall kept':>12} {'off-topic empty':>16}   "
        f"held-out best: empty at kept ≥ {RECALL_KEPT:g} / kept at empty ≥ {OFF_TOPIC_EMPTY:.0%}"
    )
    for held in sets:
        model = fit({k: v for k, v in sets.items() if k != held})
        judged = {k: Judged.of(on, off, lambda r, m=model: rescored(r, m)) for k, (on, off) in sets.items()}
        floors = fitted_floors({k: j for k, j in judged.items() if k != held}, name_floor)
        best = best_tradeoff(judged[held], name_floor)
        out[held] = {"best": best}
        for n, (rule, floor) in enumerate(floors.items()):
            kept, empty = judged[held].at(floor, name_floor)
            out[held][rule] = {"floor": floor, "recall_kept": kept, "off_topic_empty": empty}
            tail = ""
            if n == 0:
                e, k = best["empty_at_kept"], best["kept_at_empty"]
                tail = f"   {'none' if e is None else f'{e:.1%}'} / {'none' if k is None else f'{k:.3f}'}"
            print(f"{held:<9} {rule:<14} {floor:>7.4f} {kept:>12.3f} {empty:>16.1%}{tail}")
    return out


__all__ = ["FINE_FLOORS", "Judged", "best_tradeoff", "fitted_floors", "floor_fitted_report"]
