"""BERT's word-piece tokenizer in Python: the local model without the ``tokenizers`` package.

``tokenizers`` (Rust) brings huggingface_hub and its own requirements, about
40 MB of a ``[local]`` install that is otherwise a quarter of a gigabyte. This
module reads the same ``tokenizer.json`` and gives the same ids and the same
character offsets (tests/test_wordpiece.py compares the two on fixed and
generated text), for the pipeline the model declares and nothing else:

* added tokens (``[CLS]``, ``[SEP]``, ...) matched in the raw text first;
* ``BertNormalizer``: control characters removed, white space made a space,
  CJK ideographs spaced apart, accents stripped (NFD, marks dropped), lower case;
* ``BertPreTokenizer``: split at white space, punctuation kept as one-character words;
* ``WordPiece``: greedy longest match against the vocabulary, ``##`` for a
  continuation, ``[UNK]`` for a word with no match or over 100 characters;
* ``[CLS] ... [SEP]`` around the text when special tokens are asked for.

ASCII text, most of what Funes embeds, takes a regular-expression fast path;
the pieces of each distinct word are cached. ``local.py`` uses ``tokenizers``
when it is installed (it is faster) and this otherwise.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

_CONTROL_ASCII = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# BertPreTokenizer on lower-cased ASCII: runs of letters and digits, and each punctuation character.
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


@dataclass(slots=True)
class Encoding:
    """The ids of one text and each id's character span in it (``(0, 0)`` for [CLS] and [SEP])."""

    ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


@lru_cache(maxsize=1)
def _unicode_table() -> tuple[dict[str, str], dict[str, bool], frozenset[str]]:
    """Where ``tokenizers``' Unicode tables (older than Python's) treat a character otherwise
    (scripts/wordpiece_table.py writes them)."""
    data = json.loads((Path(__file__).with_name("wordpiece_unicode.json")).read_text(encoding="utf-8"))
    normalized = {chr(int(cp, 16)): text for cp, text in data["normalized"].items()}
    punctuation = {chr(int(cp, 16)): flag for cp, flag in data["punctuation"].items()}
    return normalized, punctuation, frozenset(chr(int(cp, 16)) for cp in data["unordered_marks"])


def _normalize_by_python(c: str) -> str:
    """One raw character as BertNormalizer leaves it, by Python's Unicode tables: "" (removed), " ",
    " c " (CJK ideographs) or the character without its accents, in lower case."""
    if c in "\t\n\r":
        return " "
    category = unicodedata.category(c)
    if c == "\0" or c == "\ufffd" or category in ("Cc", "Cf", "Co", "Cs"):
        return ""
    if c.isspace():
        return " "
    stripped = "".join(d for d in unicodedata.normalize("NFD", c) if unicodedata.category(d) != "Mn")
    lowered = "".join(ch.lower() for ch in stripped)
    return f" {lowered} " if _is_cjk(ord(c)) else lowered


def _punctuation_by_python(c: str) -> bool:
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


@lru_cache(maxsize=8192)
def _normalize_char(c: str) -> str:
    override = _unicode_table()[0].get(c)
    return override if override is not None else _normalize_by_python(c)


@lru_cache(maxsize=8192)
def _is_punctuation(c: str) -> bool:
    override = _unicode_table()[1].get(c)
    return override if override is not None else _punctuation_by_python(c)


def _combining(c: str) -> int:
    """The canonical combining class, 0 for a mark newer than tokenizers' NFD tables."""
    cls = unicodedata.combining(c)
    return 0 if cls and c in _unicode_table()[2] else cls


def _in_canonical_order(text: str, start: int, end: int) -> list[str]:
    """``text[start:end]`` with each run of combining marks in NFD's order (stable by combining class).

    tokenizers aligns by position: the k-th character after the reordering keeps
    the span of the k-th raw character, so the caller pairs this list with the
    raw indices as they are.
    """
    chars = list(text[start:end])
    i = 0
    while i < len(chars):
        if not _combining(chars[i]):
            i += 1
            continue
        j = i
        while j < len(chars) and _combining(chars[j]):
            j += 1
        if j - i > 1:
            chars[i:j] = sorted(chars[i:j], key=_combining)
        i = j
    return chars


class WordPiece:
    """The uncased BERT tokenizer that ``tokenizer.json`` describes; ``encode`` and ``encode_batch`` as in
    ``tokenizers.Tokenizer`` (without truncation or padding)."""

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk_token: str = "[UNK]",
        prefix: str = "##",
        max_chars: int = 100,
        added: dict[str, int] | None = None,
        cls_id: int | None = None,
        sep_id: int | None = None,
    ) -> None:
        self.vocab = vocab
        self.unk_id = vocab[unk_token]
        self.prefix = prefix
        self.max_chars = max_chars
        self.added = dict(added or {})
        self.cls_id = cls_id if cls_id is not None else vocab.get("[CLS]")
        self.sep_id = sep_id if sep_id is not None else vocab.get("[SEP]")
        self._added_re = (
            re.compile("|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True)))
            if self.added
            else None
        )
        self._pieces: dict[str, tuple[tuple[int, int, int], ...]] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> WordPiece:
        """Read a ``tokenizer.json``; refuses a pipeline other than the uncased BERT one this implements."""
        spec: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
        model, norm = spec.get("model") or {}, spec.get("normalizer") or {}
        pre = spec.get("pre_tokenizer") or {}
        supported = (
            model.get("type") == "WordPiece"
            and norm.get("type") == "BertNormalizer"
            and norm.get("lowercase", True)
            and norm.get("strip_accents") in (None, True)
            and norm.get("clean_text", True)
            and norm.get("handle_chinese_chars", True)
            and pre.get("type") == "BertPreTokenizer"
        )
        if not supported:
            raise ValueError(
                f"{path} describes a tokenizer other than uncased BERT word pieces; install the tokenizers "
                "package to read it (pip install tokenizers)."
            )
        added = {t["content"]: int(t["id"]) for t in spec.get("added_tokens") or [] if t.get("special")}
        return cls(
            dict(model["vocab"]),
            unk_token=model.get("unk_token", "[UNK]"),
            prefix=model.get("continuing_subword_prefix", "##"),
            max_chars=int(model.get("max_input_chars_per_word", 100)),
            added=added,
        )

    # -- the tokenizers.Tokenizer subset Funes uses ---------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        out = Encoding()
        if add_special_tokens and self.cls_id is not None:
            out.ids.append(self.cls_id)
            out.offsets.append((0, 0))
        at = 0
        if self._added_re is not None:
            for m in self._added_re.finditer(text):
                self._segment(text, at, m.start(), out)
                out.ids.append(self.added[m.group()])
                out.offsets.append((m.start(), m.end()))
                at = m.end()
        self._segment(text, at, len(text), out)
        if add_special_tokens and self.sep_id is not None:
            out.ids.append(self.sep_id)
            out.offsets.append((0, 0))
        return out

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[Encoding]:
        return [self.encode(t, add_special_tokens) for t in texts]

    # -- the pipeline --------------------------------------------------------
    def _segment(self, text: str, start: int, end: int, out: Encoding) -> None:
        """Word pieces of ``text[start:end]`` (no added tokens in it) appended to ``out``."""
        if start >= end:
            return
        part = text[start:end]
        if part.isascii() and not _CONTROL_ASCII.search(part):
            for m in _ASCII_WORDS.finditer(part.lower()):
                base = start + m.start()
                for piece_id, s, e in self._word(m.group()):
                    out.ids.append(piece_id)
                    out.offsets.append((base + s, base + e))
            return
        # The normalised characters, each with the raw index it came from (by position: see
        # _in_canonical_order).
        chars: list[str] = []
        starts: list[int] = []
        for i, raw in enumerate(_in_canonical_order(text, start, end), start):
            for c in _normalize_char(raw):
                chars.append(c)
                starts.append(i)
        first = 0  # where the current word begins in ``chars``

        def flush(stop: int) -> None:
            if stop > first:
                for piece_id, s, e in self._word("".join(chars[first:stop])):
                    out.ids.append(piece_id)
                    out.offsets.append((starts[first + s], starts[first + e - 1] + 1))

        for at, c in enumerate(chars):
            if c == " ":
                flush(at)
                first = at + 1
            elif _is_punctuation(c):
                flush(at)
                first = at
                flush(at + 1)
                first = at + 1
        flush(len(chars))

    def _word(self, word: str) -> tuple[tuple[int, int, int], ...]:
        """(id, start, end) of each piece of one normalised word, ends in characters of the word."""
        cached = self._pieces.get(word)
        if cached is not None:
            return cached
        pieces: list[tuple[int, int, int]] = []
        if len(word) > self.max_chars:
            pieces = [(self.unk_id, 0, len(word))]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while start < end:
                    sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                    found = self.vocab.get(sub)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    pieces = [(self.unk_id, 0, len(word))]
                    break
                pieces.append((found, start, end))
                start = end
        result = tuple(pieces)
        if len(self._pieces) < 200_000:
            self._pieces[word] = result
        return result
