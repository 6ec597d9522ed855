"""Passage windows: a long record is also matched by its best few sentences (issue 28).

A document chunk of ten sentences has one vector, so a question answered by
one of them sees its cosine diluted by the other nine, and a table chunk that
only shares words wins. A record whose text has more sentences than a window
and at least ``passage_window_min_tokens`` tokens is therefore also embedded
as overlapping windows of ``passage_window_sentences`` sentences (stride one).

The window vectors are stored as further parts of the record, after the parts
of its text (:meth:`funes.memory.embedding.Embedding.embed_records`): they are
written in the record's transaction, and deleted, scrubbed, exported and
rebuilt with it like any part. Search reads the cosines of a long candidate's parts
with the candidate (one statement on PostgreSQL) and takes its whole text's
cosine plus ``passage_window_weight`` of its best window's gain over it: the
full gain (the window's own cosine) lowered SciFact's R@1, half of it raises
it (docs/benchmarks.md, "Passage windows"). Which part is which window
follows from the text and the settings alone (:func:`sentence_windows`), so
a hit's explanation can say which sentences matched (:func:`passage`). Short records (agent memories, most notes) get
none, and neither does a chat message of any length: it is one utterance,
recalled whole with the turns around it
(:func:`funes.memory.embedding.windowed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..models import Memory
from .chunking import split_sentences

CountTokens = Callable[[str], int]
# A record shorter than this many characters has fewer tokens than any window threshold worth setting:
# search, the backfill job, the migrations and imports skip it without counting its tokens.
MIN_CHARS = 300


@dataclass(frozen=True)
class Window:
    """A run of a text's sentences embedded on its own: sentences ``first`` to ``last`` (from 0) and their text."""

    first: int
    last: int
    text: str


def sentence_windows(text: str, count: CountTokens, size: int, min_tokens: int, max_tokens: int) -> list[Window]:
    """``text``'s overlapping windows of ``size`` sentences, stride one; none for a short or one-window text."""
    if size <= 0:
        return []
    # Sentences, not lines: a table's rows end in no full stop, so a sheet chunk stays one passage.
    sentences = split_sentences(text)
    if len(sentences) <= size or count(text) < min_tokens:
        return []
    out: list[Window] = []
    for first in range(len(sentences) - size + 1):
        window = " ".join(sentences[first : first + size])
        if count(window) <= max_tokens:  # a window the model cannot read whole is left to the parts
            out.append(Window(first, first + size - 1, window))
    return out


def long_enough(memory: Memory) -> bool:
    """Whether a record may be long enough for passage windows (the cheap test before counting tokens)."""
    return len(memory.title or "") + len(memory.content) >= MIN_CHARS


def passage(windows: list[Window], parts: int, best_part: int, cosine: float) -> dict[str, Any] | None:
    """What a hit's explanation says of its best-matching part: the window's sentences, or None for the text itself.

    ``parts``: how many vectors the record's text has before its windows (see
    :meth:`funes.memory.embedding.Embedding.embed_records`).
    """
    n = best_part - parts
    if n < 0 or n >= len(windows):
        return None  # the whole text matched best (or the record predates its windows)
    window = windows[n]
    return {"sentences": [window.first + 1, window.last + 1], "text": window.text, "cosine": round(cosine, 4)}
