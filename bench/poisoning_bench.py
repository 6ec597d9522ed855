"""Poisoning detector: detection rate on the issue-9 corpus, false-positive rate on LoCoMo turns.

The corpus is ``tests/poisoning_corpus.py`` (19 injection variants). The
false-positive rate counts LoCoMo conversation turns (``locomo10.json``, read
in place, never copied) that the detector flags; every one of them is
ordinary chat, so each flag is a false positive. The 0.1 detector is run on
the same inputs as the baseline.

    python bench/poisoning_bench.py [--data PATH] [--show]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from poisoning_corpus import BENIGN, VARIANTS
from quality_data import DATA as BENCH_DATA

from funes.memory.safety import instruction_flags

DATA = BENCH_DATA / "locomo" / "locomo10.json"

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


def main(argv: list[str] | None = None) -> int:
    """Print the detection and false-positive rates, new detector against the 0.1 baseline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="Path of locomo10.json (read only).")
    parser.add_argument("--show", action="store_true", help="Print every flagged LoCoMo turn.")
    args = parser.parse_args(argv)
    texts = [t for _, t in VARIANTS]
    chat = turns(args.data)
    for label, check in (("0.1 detector", old_flags), ("this detector", lambda t: bool(instruction_flags(t)))):
        caught = sum(1 for t in texts if check(t))
        benign = sum(1 for t in BENIGN if check(t))
        flagged = [t for t in chat if check(t)]
        print(
            f"{label:>14}: variants caught {caught}/{len(texts)} ({caught / len(texts):.0%}); "
            f"benign look-alikes flagged {benign}/{len(BENIGN)}; "
            f"LoCoMo turns flagged {len(flagged)}/{len(chat)} ({len(flagged) / len(chat):.2%})"
        )
        if args.show:
            for t in flagged:
                print(f"    {instruction_flags(t)} {t[:160]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
