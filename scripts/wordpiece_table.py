"""Write src/funes/providers/embed/wordpiece_unicode.json: where tokenizers' Unicode tables disagree with Python's.

The Python word-piece tokenizer (providers/embed/wordpiece.py) follows Python's
``unicodedata``; ``tokenizers`` (Rust) carries older tables. For every code
point this compares one character's normalisation (BertNormalizer) and whether
BertPreTokenizer splits it off as punctuation, and keeps each difference, so
the two give the same word pieces. Rerun after upgrading Python or tokenizers;
tests/test_wordpiece.py checks every code point against the table.

    python scripts/wordpiece_table.py
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from tokenizers import normalizers, pre_tokenizers

from funes.providers.embed import wordpiece

OUT = Path(wordpiece.__file__).with_name("wordpiece_unicode.json")


def differences() -> dict[str, dict]:
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    normalized: dict[str, str] = {}
    punctuation: dict[str, bool] = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        rust = norm.normalize_str(c)
        if rust != wordpiece._normalize_by_python(c):
            normalized[f"{cp:x}"] = rust
        if rust == c:  # a character that survives normalisation as itself: is it split off?
            split = len(pre.pre_tokenize_str(f"a{c}a")) == 3
            if split != wordpiece._punctuation_by_python(c):
                punctuation[f"{cp:x}"] = split
    return {"normalized": normalized, "punctuation": punctuation, "unordered_marks": unordered_marks()}


def unordered_marks() -> list[str]:
    """Combining marks (by Python) that tokenizers' NFD does not reorder: its tables give them class 0."""
    nfd = normalizers.NFD()
    out = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        m = chr(cp)
        cls = unicodedata.combining(m)
        if not cls or unicodedata.decomposition(m):
            continue
        if cls > 1:  # after a class-1 mark it moves behind it, if NFD knows its class
            probe, moved = f"a{m}\u0334", "a\u0334" + m
        else:  # a class-1 mark moves before a class-230 one
            probe, moved = f"a\u0301{m}", f"a{m}\u0301"
        if nfd.normalize_str(probe) != moved:
            out.append(f"{cp:x}")
    return out


if __name__ == "__main__":
    table = differences()
    OUT.write_text(json.dumps(table, ensure_ascii=True, sort_keys=True, indent=0) + "\n", encoding="utf-8")
    print(
        f"{OUT}: {len(table['normalized'])} normalisations, {len(table['punctuation'])} punctuation flags, "
        f"{len(table['unordered_marks'])} marks NFD leaves in place"
    )
