"""Words as the keyword index holds them: lowercased, without diacritics, Porter-stemmed.

SQLite's FTS5 ``porter`` tokenizer stems what it indexes and what it is
asked. PostgreSQL's 'simple' configuration stems nothing, so its store folds
its indexed text and query terms here (:func:`fold_words`); and relevance's
``coverage`` (:mod:`funes.memory.relevance`) reads a record's words with the
same :func:`fold_word`, so "move", "moves" and "moving" count as one term on
both stores, as the keyword index counts them.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import Any

WORD = re.compile(r"[^\W_]+", re.UNICODE)  # as unicode61: letters and digits, "_" separates
# FTS5's porter tokenizer leaves words shorter than 3 or longer than 64 characters as they are.
_STEM_MIN, _STEM_MAX = 3, 64
# A vowel (y after a consonant is one) then a consonant: Porter's measure m > 0, near enough.
_VC = re.compile(r"(?:[aeiou]|(?<=[^aeiou])y)[^aeiou]")
_ASCII_LETTER = re.compile(r"[a-z]")

# A Snowball stemmer keeps the word it works on in the object (stemWord is not thread-safe): one per thread.
_local = threading.local()


def _porter() -> Any:
    stemmer = getattr(_local, "porter", None)
    if stemmer is None:
        import snowballstemmer  # a base dependency; lazy so importing the store stays light

        stemmer = _local.porter = snowballstemmer.stemmer("porter")
    return stemmer


def plain(text: str) -> str:
    """The text without diacritics ("café" → "cafe"), as unicode61's ``remove_diacritics`` reads it."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=65536)
def fold_word(word: str) -> str:
    """A word lowercased, without diacritics, Porter-stemmed as SQLite's FTS5 ``porter`` tokenizer stems it.

    The stemmer is Snowball's ``porter`` (the original 1980 algorithm that
    FTS5's porter implements), so "vendors", "relational" and "running" meet
    the same words on both stores (bench/pg_keyword_bench.py, docs/postgres.md).
    Every word that folds to a stem ``s`` of 3 or more letters starts with
    ``s[:-1]`` (Porter only rewrites a stem's last letter: "happy" → "happi"),
    which :func:`stem_prefix` gives a search of a text.
    """
    word = plain(word.lower())
    if not _STEM_MIN <= len(word) <= _STEM_MAX or not _ASCII_LETTER.search(word):
        return word  # CJK and other scripts stay as they are
    stem = str(_porter().stemWord(word))
    # Two departures of Porter's own C code (and so FTS5's) from the 1980 paper, which Snowball follows:
    # step 2 also turns "logi" into "log" and "bli" into "ble" (which steps 4 and 5 then shorten).
    if stem.endswith("logi") and _VC.search(stem[:-4]):
        return stem[:-1]
    if stem.endswith("bli") and not stem.endswith("abli") and _VC.search(stem[:-3]):
        return str(_porter().stemWord(stem[:-1] + "e"))
    return stem


def stem_prefix(stem: str) -> str:
    """What every lowercased, plain word that :func:`fold_word` folds to ``stem`` starts with."""
    return stem[:-1] if len(stem) >= _STEM_MIN else stem


def fold_words(text: str | None) -> str:
    """The text as the keyword index holds it: folded words (see :func:`fold_word`) joined by spaces.

    FTS5's ``porter unicode61 remove_diacritics 2`` finds "cafe" in "café" and
    "vendor" in "vendors"; PostgreSQL's 'simple' configuration does neither,
    and the unaccent extension is not always installed, so both sides fold in
    Python: the indexed text here, the query terms in ``_word_search``.
    """
    return " ".join(fold_word(w) for w in WORD.findall(text or ""))
