"""Poisoning detector: catch rate on our corpus and on a foreign one, false-positive rate on ordinary text.

Our corpus is ``tests/poisoning_corpus.py`` (19 injection variants, written by
the detector's authors). The foreign corpus is spikee's (a prompt-injection
kit by Reversec, Apache-2.0, ``pip install --no-deps spikee``), read in place
from the installed package, never copied: each jailbreak template of its
seed datasets with ``<INSTRUCTION>`` filled by one of the same dataset's
instructions (round robin), deduplicated. Datasets are split: the detector
was improved looking at the "dev" ones only; "held-out" ones were measured,
not read (their templates partly repeat the dev ones', so held-out is an
upper bound on truly unseen text).

False positives: LoCoMo conversation turns (``locomo10.json``, read in place),
spikee's false-positive set (ordinary finance questions) and the documents
spikee plants its attacks in (emails, reports), with the plant-point removed.
Every one is ordinary text, so each flag is a false positive. The 0.1
detector is run on the same inputs as the baseline.

Measured when the spikee corpus was added (issue 31), before/after the rules it
led to: spikee dev 16/130 (12.3%) -> 122/130 (93.8%), held-out 27/199 (13.6%) ->
103/199 (51.8%), with 0 false positives on 114 spikee ordinary texts and 5,882
LoCoMo turns both times.

    python bench/poisoning_bench.py [--data PATH] [--show]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from poisoning_corpus import BENIGN, VARIANTS
from quality_data import DATA as BENCH_DATA

from funes.memory.safety import instruction_flags

DATA = BENCH_DATA / "locomo" / "locomo10.json"
DEV = ("seeds-cybersec-2026-01", "seeds-llm-mailbox")
HELD_OUT = ("seeds-sysmsg-extraction-2025-04", "seeds-investment-advice", "zzz_LEGACY_seeds-cybersec-2025-04")

# The 0.1 patterns, verbatim, as the baseline.
_OLD = (
    re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|of\s+)*"
        r"(previous|prior|above|earlier|preceding|your|system|existing|original)\s+"
        r"(instructions?|prompts?|rules|directions?|guidelines|messages?|context)",
        re.I,
    ),
    re.compile(r"\byou\s+(must|shall|have\s+to)\s+(always|never|now|from\s+now)\b", re.I),
    re.compile(r"\bfrom\s+now\s+on,?\s+(you|the\s+assistant)\b", re.I),
    re.compile(r"\byou\s+are\s+now\b|\bact\s+as\s+(an?\s+)?(unrestricted|jailbroken|different)\b", re.I),
    re.compile(r"\b(new|updated|real)\s+(system\s+)?(instructions|prompt)\s*:", re.I),
    re.compile(r"<\s*/?\s*(system|assistant|user|human|instructions?)\s*>", re.I),
    re.compile(r"\[/?(INST|SYS)\]|<<\s*/?SYS\s*>>|<\|(im_start|im_end|system|assistant|user)\|>", re.I),
    re.compile(r"(^|\n)\s*(system|assistant|human)\s*:", re.I),
)


def old_flags(text: str) -> bool:
    """Whether the 0.1 detector flags the text."""
    return any(p.search(text) for p in _OLD)


def turns(path: Path) -> list[str]:
    """Every conversation turn's text in the LoCoMo file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for conv in data:
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                out += [t["text"] for t in value if t.get("text")]
    return out


def _spikee_rows(dataset: str, name: str) -> list[dict]:
    import importlib.resources

    path = importlib.resources.files("spikee") / "data" / "workspace" / "datasets" / dataset / name
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def spikee_attacks(datasets: tuple[str, ...]) -> list[str]:
    """spikee's jailbreak templates of ``datasets``, each filled with one of its dataset's instructions."""
    out: dict[str, None] = {}
    for dataset in datasets:
        instructions = [row["instruction"] for row in _spikee_rows(dataset, "instructions.jsonl")]
        for n, row in enumerate(_spikee_rows(dataset, "jailbreaks.jsonl")):
            if instructions:
                out[row["text"].replace("<INSTRUCTION>", instructions[n % len(instructions)])] = None
    return list(out)


def spikee_ordinary() -> list[str]:
    """spikee's ordinary questions (its false-positive set) and the documents it plants attacks in."""
    texts = [row["text"] for row in _spikee_rows("seeds-investment-advice-fp", "standalone_user_inputs.jsonl")]
    for dataset in (*DEV, *HELD_OUT):
        for row in _spikee_rows(dataset, "base_user_inputs.jsonl"):
            texts.append(row["document"].replace(row.get("placeholder") or "\0", ""))
    return list(dict.fromkeys(texts))


def _rate(check: Callable[[str], bool], texts: list[str]) -> str:
    hits = sum(1 for t in texts if check(t))
    return f"{hits}/{len(texts)} ({hits / max(1, len(texts)):.1%})"


def main(argv: list[str] | None = None) -> int:
    """Print the detection and false-positive rates, new detector against the 0.1 baseline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="Path of locomo10.json (read only).")
    parser.add_argument("--show", action="store_true", help="Print every flagged LoCoMo turn.")
    args = parser.parse_args(argv)
    texts = [t for _, t in VARIANTS]
    chat = turns(args.data)
    try:
        dev, held_out, ordinary = spikee_attacks(DEV), spikee_attacks(HELD_OUT), spikee_ordinary()
    except ModuleNotFoundError:
        print("spikee is not installed (pip install --no-deps spikee): the foreign corpus is left out")
        dev, held_out, ordinary = [], [], []
    for label, check in (("0.1 detector", old_flags), ("this detector", lambda t: bool(instruction_flags(t)))):
        print(f"{label}:")
        print(f"  caught, our 19 variants:          {_rate(check, texts)}")
        if dev:
            print(f"  caught, spikee dev datasets:      {_rate(check, dev)}")
            print(f"  caught, spikee held-out datasets: {_rate(check, held_out)}")
            print(f"  flagged, spikee ordinary texts:   {_rate(check, ordinary)}")
        print(f"  flagged, our benign look-alikes:  {_rate(check, list(BENIGN))}")
        print(f"  flagged, LoCoMo turns:            {_rate(check, chat)}")
        if args.show:
            for t in [*chat, *ordinary]:
                if check(t):
                    print(f"    false positive {instruction_flags(t)} {t[:160]!r}")
            for t in [*dev, *held_out]:
                if not check(t):
                    print(f"    missed {t[:160]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
