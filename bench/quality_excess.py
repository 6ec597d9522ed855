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
    from funes.memory.relevance import named_terms
    from funes.store.words import fold_word as fold

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


def annotate_shares(sets: Sets, data: Path) -> None:
    """Give every hit ``share``: the largest share of its tenant's records holding one of the query's names
    (the data sets' own texts, as stored), and ``gated``: its excess when that share is at least ``NAME_SHARE``."""
    import re

    from agent_memory_data import stores
    from quality_data import load_locomo, load_scifact, turn_text

    from funes.memory.relevance import NAME_SHARE, named_terms
    from funes.store.words import fold_word as fold

    texts: dict[str, list[str]] = {}
    for sample in load_locomo(data):
        turns = [
            t for k, v in sample["conversation"].items() if k.startswith("session_") and isinstance(v, list) for t in v
        ]
        texts[sample["sample_id"]] = [turn_text(t) for t in turns]
    texts["scifact"] = [f"{d['title']}\n{d['text']}" for d in load_scifact(data, None)[0]]
    for store in stores():
        texts[store.tenant] = [m for m, _ in store.memories]
    words = {g: [set(map(fold, re.findall(r"\w+", t.lower()))) for t in ts] for g, ts in texts.items()}
    for name, (on, off) in sets.items():
        for r in [*on, *off]:
            records = words["scifact" if name == "scifact" else r.group]
            names = {fold(n) for n in named_terms(r.query)}
            share = max((sum(n in w for w in records) / len(records) for n in names), default=0.0)
            for s in r.signals:
                s["share"], s["gated"] = share, s.get("excess", 0.0) * (share >= NAME_SHARE)


def fitted_after_shipped(sets: Sets, key: str, names: tuple[str, ...] = ("locomo", "agent")) -> float:
    """The weight of ``key`` fitted with the shipped constants' logit held fixed (each set weighing the same)."""
    import numpy as np

    from funes.memory.relevance import COEFFICIENTS, INTERCEPT

    weights = np.asarray(COEFFICIENTS[: -lodo.STAGED])
    chosen = {name: sets[name] for name in names}
    return float(
        lodo.fit_after(
            chosen,
            lambda s: [s.get(key, 0.0)],
            lambda s: INTERCEPT + float(np.dot(weights, lodo.features(s)[: -lodo.STAGED])),
        )[0]
    )


def _extra(key: str) -> Feats:
    return _feats(lambda s: [*lodo.features(s), s.get(key, 0.0)])


FEATURES: dict[str, Feats] = {
    "plain": _feats(lambda s: lodo.features(s)),
    "excess": _extra("excess"),
    "free_held": _extra("free_held"),
    "signed": _extra("signed"),
    "gated": _extra("gated"),
    "excess+free_held": _feats(lambda s: [*lodo.features(s), s.get("excess", 0.0), s.get("free_held", 0.0)]),
    "cos-slot+excess": _feats(
        lambda s: lodo.features({**s, "cosine": max(0.0, s.get("cosine") or 0.0) + s.get("excess", 0.0)})
    ),
}

VARIANTS: dict[str, tuple[str, Callable[[Feats], Callable[[Sets], Any]]]] = {
    "shipped features": ("plain", joint),
    "excess for names in >= 2% of the records, fitted after (shipped)": ("gated", staged),
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
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"), help="Folder holding locomo/, scifact/.")
    args = parser.parse_args(argv)
    sets = load(args.dump)
    annotate(sets)
    annotate_shares(sets, args.data)
    weight = fitted_after_shipped(sets, "gated")
    print(
        f"name_excess (names in >= 2% of the records) fitted after the shipped constants, LoCoMo + agent: {weight:.4f}"
    )
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
