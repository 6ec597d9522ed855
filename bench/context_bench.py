"""Chat turns embedded alone or with the turn before them: dense own-turn recall on LoCoMo.

Run from the repository root (a few minutes cold, seconds with the cache)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/context_bench.py --cache /tmp/funes-quality

Every turn of each conversation is a candidate; a question's evidence turns
are its relevant units, counted on the turn itself (own-turn, as the headline
of bench/quality.py). The baseline in the same run is the turn's own vector
(what Funes stored before issue 28's second pass). Compared:

* ``blend w (own, previous own)``: the unit vector of ``w × own + (1 − w) ×
  the previous turn's own vector``: what :mod:`funes.conversations.turn_context`
  stores at its weight (one vector per turn, no extra embedding);
* ``blend w (own, prev view)``: the same with the vector of the previous
  turn and this one embedded as one text (a second, longer embedding per
  turn);
* ``mean(own, view)``: the mean of the two cosines. It needs a second vector
  per turn and a search that reads both (not shipped; the figure says what a
  second-vector design would add);
* the views alone (``prev``: previous + turn; ``prev+next``: previous, turn
  and next, which is only known after the next message arrives).

The hybrid figures (Funes' own ranking, relevance refitted leaving one data
set out) are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np
from quality_data import DATA, CachingEmbedder, load_locomo, questions_of, turn_text

Views = dict[str, list[tuple[str, str]]]


def views_of(sample: dict) -> Views:
    """Each turn (dia id) as text: alone, with the previous turn, and with the previous and next turns."""
    conv = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.count("_") == 1 and k.startswith("session_"))
    out: Views = {"own": [], "previous own": [], "prev": [], "prev+next": []}
    for n in numbers:
        turns = [(t["dia_id"], turn_text(t)) for t in conv[f"session_{n}"]]
        for i, (dia, text) in enumerate(turns):
            before = turns[i - 1][1] if i else ""
            after = turns[i + 1][1] if i + 1 < len(turns) else ""
            out["own"].append((dia, text))
            out["previous own"].append((dia, before or text))  # a session's first turn: its own vector
            out["prev"].append((dia, f"{before}\n{text}" if before else text))
            out["prev+next"].append((dia, "\n".join(t for t in (before, text, after) if t)))
    return out


def blend(own: np.ndarray, view: np.ndarray, weight: float) -> np.ndarray:
    """Row-wise unit vectors of ``weight × own + (1 − weight) × view`` (as turn_context.blend)."""
    mixed = weight * own + (1.0 - weight) * view
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="Folder holding locomo/ (read only).")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "funes-quality")
    parser.add_argument("--weights", default="0.6,0.7,0.75,0.8", help="Own-vector weights of the blends to compare.")
    args = parser.parse_args(argv)
    from funes.providers.embed.local import LocalEmbedder

    embedder = CachingEmbedder(LocalEmbedder(), args.cache)
    rows: dict[str, list[tuple[float, float, float]]] = {}

    def score(name: str, sims: np.ndarray, ids: list[str], questions: list) -> None:
        for column, q in enumerate(questions):
            order = [ids[i] for i in np.argsort(-sims[:, column])[:50]]
            relevant = set(q.evidence)
            rank = next((n for n, unit in enumerate(order, start=1) if unit in relevant), None)
            top = set(order[:10])
            rows.setdefault(name, []).append(
                (
                    float(order[0] in relevant) / len(relevant),
                    len(relevant & top) / len(relevant),
                    1.0 / rank if rank else 0.0,
                )
            )

    for sample in load_locomo(args.data):
        questions = questions_of(sample)
        views = views_of(sample)
        ids = [dia for dia, _ in views["own"]]
        vec = {k: embedder.embed_batch([t for _, t in v]) for k, v in views.items()}
        query = embedder.embed_batch([q.text for q in questions], query=True).T
        cos = {k: v @ query for k, v in vec.items()}
        score("own (baseline)", cos["own"], ids, questions)
        for weight in (float(w) for w in args.weights.split(",")):
            mixed = blend(vec["own"], vec["previous own"], weight)
            score(f"blend {weight:g} (own, previous own)", mixed @ query, ids, questions)
        for weight in (float(w) for w in args.weights.split(",")):
            score(f"blend {weight:g} (own, prev view)", blend(vec["own"], vec["prev"], weight) @ query, ids, questions)
        combos = {  # (the blends above are one vector per turn; these are not)
            "prev alone": cos["prev"],
            "prev+next alone": cos["prev+next"],
            "mean(own, prev) cosines": (cos["own"] + cos["prev"]) / 2,
            "mean(own, prev+next) cosines": (cos["own"] + cos["prev+next"]) / 2,
        }
        for name, sims in combos.items():
            score(name, sims, ids, questions)
        embedder.save()
    print(f"LoCoMo dense own-turn, {len(rows['own (baseline)'])} questions, every turn a candidate")
    print(f"{'turn vector':<36} {'R@1':>6} {'R@10':>6} {'MRR':>6}")
    for name, values in rows.items():
        r1, r10, mrr = (statistics.mean(v[i] for v in values) for i in range(3))
        print(f"{name:<36} {r1:6.3f} {r10:6.3f} {mrr:6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
