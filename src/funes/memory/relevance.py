"""Calibrated relevance: the estimated probability that a hit answers the query.

A search score is scaled to the best hit of the query, so an unrelated top
hit still scores near 1. ``relevance`` is different: it is computed from
signals of the hit alone, never from the other hits, so it means the same
across queries, stores and store sizes, and "nothing relevant" can be said.

Signals (each in [0, 1]):

* ``cosine``: the query-record cosine of the embedding model (the best part's);
* ``keyword``: the record's BM25 divided by the most the query's terms could
  score (each term's IDF × (k1 + 1), FTS5's BM25 ceiling for a term), so it
  does not grow with the number of terms or the store;
* ``coverage``: the IDF-weighted share of the query's terms found in the
  record (a rare word counts more than a common one);
* ``agreement``: 1 when both legs found the record (a keyword match that the
  vector leg also ranked), else 0.

A logistic model maps them to a probability, fitted in two stages on LoCoMo
conversations 1-5 plus off-topic questions (one conversation's questions
asked against another's store), with the real local model
(all-MiniLM-L6-v2): first the weights that best separate evidence hits from
off-topic hits (what a floor has to tell apart), then a Platt scaling of
that score on every top-10 hit, so that the output is a probability (an
evidence turn among the top 10 of a LoCoMo question is rare, about 6%, so
good hits score in the low tens of percent). The two stages fold into the
one set of constants below. Validated on conversations 6-10 and SciFact
(docs/benchmarks.md). Refit and print new constants with::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --calibrate

The cosine scale belongs to the model: with another embedder the numbers are
a ranking signal, not a calibrated probability (``CALIBRATED_MODELS``).
When the embedder is unreachable (keyword-only search) the keyword model,
fitted on the same data without the cosine, is used.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, replace

from ..models import Explanation, Memory

# FTS5's bm25() constants (fixed in SQLite).
BM25_K1 = 1.2
_TERM = re.compile(r"\w+", re.UNICODE)
_WORD_OR_STOP = re.compile(r"\w+|[.?!]", re.UNICODE)
# Cheap English suffix folding for term matching in Python, close enough to
# the FTS index's porter stemmer to tell whether a query term is present.
_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "est", "ed", "es", "er", "ly", "s")

# Models the constants below were fitted for.
CALIBRATED_MODELS = frozenset({"sentence-transformers/all-MiniLM-L6-v2"})

# Fitted by `bench/quality.py --calibrate` (LoCoMo 1-5 + off-topic questions, all-MiniLM-L6-v2).
FEATURES = ("cosine", "cosine_sq", "keyword", "coverage", "agreement", "absent", "absent_name")
INTERCEPT = -3.7435
COEFFICIENTS = (2.2673, 2.8120, 0.0765, 0.5795, -0.2164, -0.0477, -1.7241)
# The same fit without the cosine, for keyword-only (degraded) search.
KEYWORD_FEATURES = ("keyword", "coverage", "absent", "absent_name")
KEYWORD_INTERCEPT = -2.7873
KEYWORD_COEFFICIENTS = (1.2801, 1.9538, -0.5946, -5.4824)


@dataclass(frozen=True)
class Signals:
    """What relevance is computed from: one hit's own signals, each in [0, 1] (cosine may be None)."""

    cosine: float | None
    keyword: float
    coverage: float
    agreement: float
    absent: float = 0.0
    absent_name: float = 0.0

    def to_dict(self) -> dict[str, float | None]:
        """A JSON-ready dict."""
        return {
            "cosine": self.cosine,
            "keyword": self.keyword,
            "coverage": self.coverage,
            "agreement": self.agreement,
            "absent": self.absent,
            "absent_name": self.absent_name,
        }


def idf(total: int, count: int) -> float:
    """FTS5's BM25 inverse document frequency of a term found in ``count`` of ``total`` rows (floor 1e-6)."""
    # The total is a cached estimate and may lag a fresh count: never below it.
    total = max(total, count)
    value = math.log((total - count + 0.5) / (count + 0.5))
    return max(value, 1e-6)


def keyword_signal(bm25: float | None, idfs: Sequence[float]) -> float:
    """BM25 over the ceiling the query's terms could reach (each term's IDF × (k1 + 1)), in [0, 1]."""
    if not bm25 or bm25 <= 0:
        return 0.0
    ceiling = (BM25_K1 + 1.0) * sum(idfs)
    return 0.0 if ceiling <= 0 else min(1.0, bm25 / ceiling)


@functools.lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """A word lowercased with a common English suffix removed (a crude stem for presence checks)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def coverage(
    terms: Sequence[str], text: str, weights: Mapping[str, float], pattern: re.Pattern[str] | None = None
) -> float:
    """The ``weights``-weighted share of ``terms`` that occur in ``text`` (after :func:`fold`).

    ``pattern`` is :func:`term_pattern` of the terms, passed when many
    records are checked against one query.
    """
    if not terms:
        return 0.0
    pattern = pattern or term_pattern(terms)
    targets = {fold(t) for t in terms}
    # fold() only strips a suffix, so only words starting with a folded term can
    # fold onto it: the regex finds those in C, and only they are folded.
    words = {fold(m) for m in pattern.findall(text.lower())} & targets
    total = sum(weights.get(t, 1.0) for t in terms)
    found = sum(weights.get(t, 1.0) for t in terms if fold(t) in words or _substring(t, text))
    return 0.0 if total <= 0 else found / total


def term_pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """A regex for the words that start with one of the terms' folded forms."""
    stems = sorted({fold(t) for t in terms if t}, key=len, reverse=True)
    if not stems:
        return re.compile(r"(?!)")
    return re.compile(r"\b(?:" + "|".join(re.escape(x) for x in stems) + r")\w*", re.UNICODE)


def _substring(term: str, text: str) -> bool:
    # Scripts without spaces (Chinese, Japanese) have no word boundaries: a term
    # of such characters is present when it occurs anywhere in the text.
    return not term.isascii() and len(term) >= 2 and term in text


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def feature_vector(signals: Signals) -> list[float]:
    """The model's inputs, in :data:`FEATURES` order."""
    cos = max(0.0, signals.cosine or 0.0)
    return [cos, cos * cos, signals.keyword, signals.coverage, signals.agreement, signals.absent, signals.absent_name]


def keyword_feature_vector(signals: Signals) -> list[float]:
    """The keyword-only model's inputs, in :data:`KEYWORD_FEATURES` order."""
    return [signals.keyword, signals.coverage, signals.absent, signals.absent_name]


def named_terms(query: str) -> set[str]:
    """Query words written as names: capitalised (not all capitals), not first in a sentence; lowercased."""
    out: set[str] = set()
    initial = True
    for match in _WORD_OR_STOP.finditer(query):
        token = match.group(0)
        if token in ".?!":
            initial = True
            continue
        # All-capitals words are left out: acronyms ("RFP") often name what memory says in words.
        if not initial and token[:1].isupper() and not token.isupper():
            out.add(token.lower())
        initial = False
    return out


def absent_share(terms: Sequence[str], present: Set[str], weights: Mapping[str, float]) -> float:
    """The ``weights``-weighted share of ``terms`` that no record the search may see contains."""
    total = sum(weights.get(t, 1.0) for t in terms)
    missing = sum(weights.get(t, 1.0) for t in terms if t not in present)
    return 0.0 if total <= 0 else missing / total


def relevance_judge(
    terms: Sequence[str],
    total: int,
    counts: Mapping[str, int],
    *,
    has_vector: bool,
    present: Set[str] | None = None,
    names: Set[str] = frozenset(),
) -> Callable[[Explanation, Memory], Explanation]:
    """A function adding relevance and its signals to a hit's explanation, for one query.

    ``terms`` are the query's keyword terms; ``total`` and ``counts`` the
    keyword index's row count and each term's row count (``Store.term_stats``);
    ``present`` the terms some visible record contains (``Store.term_presence``;
    None: all of them).
    Without a query vector (keyword-only search) the keyword model is used.
    """
    weights = {t: idf(total, counts.get(t, 0)) for t in terms}
    idfs = list(weights.values())
    pattern = term_pattern(terms)
    absent = 0.0 if present is None else absent_share(terms, present, weights)
    absent_name = float(present is not None and any(t in names and t not in present for t in terms))

    def judge(explanation: Explanation, memory: Memory) -> Explanation:
        signals = Signals(
            cosine=explanation.vector_similarity if has_vector else None,
            keyword=keyword_signal(explanation.keyword_score, idfs),
            coverage=coverage(terms, f"{memory.title or ''} {memory.content}", weights, pattern),
            agreement=float(explanation.keyword_rank is not None and explanation.vector_rank is not None),
            absent=absent,
            absent_name=absent_name,
        )
        return replace(explanation, relevance=relevance(signals), signals=signals.to_dict())

    return judge


def relevance(signals: Signals) -> float:
    """The calibrated probability that the hit answers the query, in [0, 1]."""
    if signals.cosine is None:
        x = KEYWORD_INTERCEPT + sum(
            w * v for w, v in zip(KEYWORD_COEFFICIENTS, keyword_feature_vector(signals), strict=True)
        )
    else:
        x = INTERCEPT + sum(w * v for w, v in zip(COEFFICIENTS, feature_vector(signals), strict=True))
    return _sigmoid(x)


__all__ = [
    "CALIBRATED_MODELS",
    "COEFFICIENTS",
    "FEATURES",
    "INTERCEPT",
    "Signals",
    "coverage",
    "feature_vector",
    "fold",
    "idf",
    "keyword_signal",
    "relevance",
    "relevance_judge",
]
