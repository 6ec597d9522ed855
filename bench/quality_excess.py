"""A named query's answer raised by what its name does not explain, judged leave-one-dataset-out (issue 28).

A name dominates a short text's embedding: every record holding "Bruno" is
near "How should I get in touch with Bruno?", and the one that answers is
not always first. The sixth pass turned names down in the query vector,
which lowers every record holding the name; this study reads signals that
raise the answer instead, from one ``bench/quality.py --dump`` run (w = 0:
the query's own vector fetches and ranks), which records for every hit of a
query naming someone:

* ``free``: its best cosine with the query's name-free text;
* ``name_cos``: its best cosine with the query's names alone ("Bruno").

"What the name explains" of a record's cosine is ``name_cos``: a record
that is only about Bruno is as near "Bruno" as it is near the question. So
``excess = max(0, cosine - name_cos)`` is how much more the record matches
the question than the name alone, and ``holds`` (the record holds one of the
query's names, read from its text) gates it: a record about someone else is
not raised. A query naming no one, or only names no record holds, gets 0,
so off-topic questions without a name the store knows keep their relevance.

Variants are judged like ``bench/quality_names.py`` (R@1, R@10, MRR, NDCG@10;
recall kept and off-topic empty at the fixed and fitted floors; the best
trade-off; the agent answers shown at ≥ 0.5), each against the shipped
features refitted the same way, with ``--paired N`` bootstraps::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality_excess.py --dump w0.pkl --paired 20
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import quality_lodo as lodo
from quality_names import Feats, Sets, _feats, compared, joint, judged, paired, print_paired, staged


def holds(query: str, text: str) -> float:
    """1.0 when the text holds one of the names the query is asked about (folded words, as coverage reads)."""
    from funes.memory.relevance import fold, named_terms

    names = {fold(n) for n in named_terms(query)}
    if not names:
        return 0.0
    words = {fold(w) for w in lodo_words(text)}
    return float(bool(names & words))


def lodo_words(text: str) -> list[str]:
    import re

    return re.findall(r"\w+", text.lower())


def annotate(sets: Sets) -> None:
    """Give every hit ``holds`` (the record holds one of the query's names) and ``excess``."""
    for on, off in sets.values():
        for r in [*on, *off]:
            for s, text in zip(r.signals, r.texts, strict=True):
                s.pop("name_excess", None)  # a run that ranked on it: the baseline is the features without it
                cos = max(0.0, s.get("cosine") or 0.0)
                s["c0"] = s.get("cosine")  # quality_names' shipped features read it
                s["holds"] = holds(r.query, text) if "name_cos" in s else 0.0
                s["excess"] = s["holds"] * max(0.0, cos - s.get("name_cos", 0.0))
                s["free_held"] = s["holds"] * max(0.0, s.get("free") or 0.0)
                s["signed"] = s["holds"] * (cos - s.get("name_cos", cos))


def _extra(key: str) -> Feats:
    return _feats(lambda s: [*lodo.features(s), s.get(key, 0.0)])


FEATURES: dict[str, Feats] = {
    "plain": _feats(lambda s: lodo.features(s)),
    "excess": _extra("excess"),
    "free_held": _extra("free_held"),
    "signed": _extra("signed"),
    "excess+free_held": _feats(lambda s: [*lodo.features(s), s.get("excess", 0.0), s.get("free_held", 0.0)]),
    "cos-slot+excess": _feats(
        lambda s: lodo.features({**s, "cosine": max(0.0, s.get("cosine") or 0.0) + s.get("excess", 0.0)})
    ),
}

VARIANTS: dict[str, tuple[str, Callable[[Feats], Callable[[Sets], Any]]]] = {
    "shipped features": ("plain", joint),
    "excess, joint": ("excess", joint),
    "excess, fitted after": ("excess", staged),
    "signed excess, joint": ("signed", joint),
    "signed excess, fitted after": ("signed", staged),
    "name-free cosine of holders, joint": ("free_held", joint),
    "name-free cosine of holders, fitted after": ("free_held", staged),
    "excess + name-free of holders, fitted after": ("excess+free_held", staged),
    "cosine slot + excess, joint": ("cos-slot+excess", joint),
}


def load(path: Path) -> Sets:
    """The three data sets of a ``--dump`` (on-topic and off-topic queries)."""
    import quality

    import __main__

    __main__.Ranked = quality.Ranked  # the dumps pickle quality.py's Ranked as run as a script
    d = pickle.loads(path.read_bytes())
    return {
        "locomo": (d["locomo"]["methods"]["funes"], d["locomo"]["noise"] + d["locomo"]["foreign"]),
        "scifact": (d["scifact"]["funes"], d["scifact_noise"]),
        "agent": (d["agent"]["on"], d["agent"]["off"]),
    }


def main(argv: list[str] | None = None) -> int:
    """Print every variant's held-out figures against the shipped features'."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", type=Path, required=True, help="--dump of a run recording free and name_cos")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), help="Only these (repeatable).")
    parser.add_argument("--paired", type=int, default=0, help="Also each variant's change over N paired bootstraps.")
    args = parser.parse_args(argv)
    sets = load(args.dump)
    annotate(sets)
    ref = judged(sets, FEATURES["plain"], joint(FEATURES["plain"]))
    for name in args.variant or list(VARIANTS):
        feats, fitter = VARIANTS[name]
        model = fitter(FEATURES[feats])(sets)
        rows = judged(sets, FEATURES[feats], fitter(FEATURES[feats]))
        down, up, lower = compared(rows, ref)
        print(f"\n## {name}: {down} held-out figures lower than the shipped features, {up} higher")
        print(f"  fitted on all three: extra weights {[round(float(w), 3) for w in model[1][10:]]}")
        for held, row in rows.items():
            print(f"  {held:<8} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
        print("  lower: " + ("; ".join(lower) or "none"), flush=True)
        if args.paired:
            print_paired(paired(sets, sets, (FEATURES[feats], fitter), args.paired), f"over {args.paired}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
