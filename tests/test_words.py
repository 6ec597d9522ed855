"""Words as the keyword index holds them (funes.store.words): Porter stems, one stemmer per thread."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from funes.store.words import fold_word, plain, stem_prefix


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads take turns every microsecond, so a stemmer shared between them is caught mid-word."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _words() -> list[str]:
    """Distinct English-like words with the suffixes Porter's steps rewrite ("relational", "hopping", "studies")."""
    stems = ["relat", "gener", "hop", "stud", "run", "caress", "pon", "vend", "condit", "sens", "mov", "happ", "argu"]
    endings = ["", "e", "es", "ed", "ing", "ional", "ization", "ility", "ness", "ies", "y", "ier", "ably", "ment"]
    return [f"{pre}{stem}{end}" for pre in ("", "re", "un", "pre", "over") for stem in stems for end in endings]


def test_threads_stemming_at_once_get_the_stems_one_thread_gets(fast_switching: None) -> None:
    """Snowball's stemmer keeps the word it works on in the object: one shared by threads mixed their words."""
    words = _words()
    stem = fold_word.__wrapped__  # type: ignore[attr-defined]  # past the cache: every call stems
    alone = {w: stem(w) for w in words}

    def stem_all(_: int) -> list[object]:
        try:
            return [w for _ in range(10) for w in words if stem(w) != alone[w]]
        except Exception as exc:  # a stemmer caught mid-word can also index past its word's end
            return [exc]

    with ThreadPoolExecutor(4) as pool:
        wrong = [w for found in pool.map(stem_all, range(4)) for w in found]
    assert wrong == []


def test_every_word_starts_with_its_stems_prefix() -> None:
    """Relevance's coverage finds a term's words by the stem's prefix: it must start every word of that stem."""
    words = [*_words(), "happy", "toy", "ties", "biology", "possibly", "mobility", "sensibility", "Café", "ΣΑΣ", "x"]
    for word in words:
        assert plain(word.lower()).startswith(stem_prefix(fold_word(word))), word
