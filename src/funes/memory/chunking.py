"""Token-aware text splitting.

Chunks are measured with the embedder's own tokenizer (``count_tokens``), so
no chunk ever exceeds the model's limit and nothing is silently truncated.
Text is split at paragraph, then sentence, then word boundaries, and only
mid-word when a single word is longer than a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CountTokens = Callable[[str], int]

_PARAGRAPH = re.compile(r"\n\s*\n")
_FAST_PATH_CHARS = 8
_SENTENCE = re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+(?=\S)")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (keeps their punctuation)."""
    parts = [p.strip() for p in _SENTENCE.split(text)]
    return [p for p in parts if p]


def _units(text: str) -> list[str]:
    """Paragraphs split into sentences, in order; paragraph ends are kept as '\n\n' joins."""
    units: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if not para:
            continue
        sentences = split_sentences(para)
        if sentences:
            sentences[-1] = sentences[-1] + "\n\n"
        units.extend(sentences)
    return units


def _split_long(unit: str, count: CountTokens, limit: int) -> list[str]:
    """Split one over-long sentence at word boundaries (mid-word only for giant words)."""
    words = unit.split()
    pieces: list[str] = []
    current: list[str] = []
    for word in words:
        candidate = " ".join([*current, word])
        if current and count(candidate) > limit:
            pieces.append(" ".join(current))
            current = [word]
        else:
            current.append(word)
        while count(" ".join(current)) > limit and len(current) == 1:
            # A single "word" longer than the limit (a URL, base64): cut by characters.
            w = current[0]
            lo, hi = 1, len(w)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if count(w[:mid]) <= limit:
                    lo = mid
                else:
                    hi = mid - 1
            pieces.append(w[:lo])
            current = [w[lo:]] if w[lo:] else []
            if not current:
                break
    if current:
        pieces.append(" ".join(current))
    return [p for p in pieces if p.strip()]


def split_text(text: str, count: CountTokens, max_tokens: int, overlap: int = 0) -> list[str]:
    """Split text into chunks of at most ``max_tokens``, carrying ``overlap`` tokens of context.

    Boundaries fall between paragraphs or sentences whenever one exists; the
    overlap repeats whole trailing sentences of the previous chunk.
    """
    if max_tokens <= 0:
        raise ValueError("max_tokens must be positive")
    overlap = max(0, min(overlap, max_tokens // 2))
    text = text.strip()
    if not text:
        return []
    # Counting a whole book at once is slow and pointless: a word piece is
    # rarely over ~8 characters, so long texts go straight to the units.
    if len(text) <= max_tokens * _FAST_PATH_CHARS and count(text) <= max_tokens:
        return [text]
    units: list[tuple[str, int]] = []
    for unit in _units(text):
        n = count(unit)
        if n > max_tokens:
            units.extend((p, count(p)) for p in _split_long(unit, count, max_tokens))
        else:
            units.append((unit, n))
    chunks: list[str] = []
    current: list[tuple[str, int]] = []
    size = 0
    for unit, n in units:
        if current and size + n > max_tokens:
            chunks.append(_join(current))
            carry: list[tuple[str, int]] = []
            carried = 0
            for prev in reversed(current):
                if carried + prev[1] > overlap or carried + prev[1] + n > max_tokens:
                    break
                carry.insert(0, prev)
                carried += prev[1]
            current, size = carry, carried
        current.append((unit, n))
        size += n
    if current:
        chunks.append(_join(current))
    # Joining can add a token or two at boundaries: re-check and split further.
    out: list[str] = []
    for chunk in chunks:
        if count(chunk) > max_tokens:
            out.extend(_split_long(chunk, count, max_tokens))
        else:
            out.append(chunk)
    return out


def _join(units: list[tuple[str, int]]) -> str:
    text = ""
    for unit, _ in units:
        if text and not text.endswith("\n\n"):
            text += " "
        text += unit
    return text.strip()


def pack(sizes: Sequence[int], max_tokens: int, overlap: int = 0) -> list[list[int]]:
    """Group consecutive units (given by token size) into chunks of at most ``max_tokens``.

    Returns the unit indices of each chunk, in order. A chunk starts with up to
    ``overlap`` tokens of whole trailing units from the previous chunk. A unit
    larger than ``max_tokens`` gets a chunk of its own; callers split it first
    when that matters.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, n in enumerate(sizes):
        if current and size + n > max_tokens:
            groups.append(current)
            carry: list[int] = []
            carried = 0
            for j in reversed(current):
                if carried + sizes[j] > overlap or carried + sizes[j] + n > max_tokens:
                    break
                carry.insert(0, j)
                carried += sizes[j]
            if len(carry) == len(current):
                # Carrying the whole previous chunk would only repeat it.
                carry, carried = [], 0
            current, size = carry, carried
        current.append(i)
        size += n
    if current:
        groups.append(current)
    return groups


@dataclass(frozen=True)
class Chunker:
    """Token-aware splitting with one tokenizer, size and overlap (the ingestion settings)."""

    count: CountTokens
    max_tokens: int
    overlap: int = 0

    def split(self, text: str, max_tokens: int | None = None) -> list[str]:
        """Text as chunks of at most ``max_tokens`` (default: the chunker's size)."""
        return split_text(text, self.count, max_tokens or self.max_tokens, self.overlap)

    def budget(self, *context: str | None) -> int:
        """Tokens left for a chunk's body once its context lines are repeated in it."""
        used = sum(self.count(c) + 1 for c in context if c)
        # A huge header must not starve the body: keep at least a quarter.
        return max(self.max_tokens - used, self.max_tokens // 4, 1)


def chunk_size_for(requested: int, model_limit: int) -> tuple[int, str | None]:
    """The chunk size used for a requested one (at most what the model reads), and a note when it was capped."""
    size = max(16, min(int(requested), int(model_limit)))
    if int(requested) <= int(model_limit):
        return size, None
    return size, (
        f"A chunk size of {requested} tokens is over the {model_limit} the embedding model reads, "
        f"so chunks are {size} tokens (never truncated). Lower chunk_tokens to {model_limit} or less to silence this."
    )
