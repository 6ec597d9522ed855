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
* ``question``: the share of the record's sentences that are questions. A
  stored question repeats the words of a later query ("Which vendors are on
  probation?") without answering it; the turn that answers does.
* ``name_excess``: for a query that names someone and a record that holds the
  name, how much nearer the record is to the query than to the name alone
  (``max(0, cosine - cosine with the names)``; 0 otherwise). A name dominates
  a short text's embedding, so every record about Bruno is near "How should
  I get in touch with Bruno?"; what the name does not explain is what the
  record says about the question. It raises the record that answers and
  lowers none (a query naming no one, or only names no record holds, is
  judged as before). Only a name held by at least ``NAME_SHARE`` of the
  records counts (:func:`subject_names`): a person or a speaker the store
  is about; a rarer capitalised word (a gene, a product) is itself what
  tells the few records holding it apart.

No signal depends on the other candidates or on how many were asked for
(``limit``): a hit's relevance is the same at ``limit=5`` and ``limit=50``.
Month and weekday names in a query are dates, not names (``absent_name``
ignores them).

(``absent`` and ``absent_name``, per query: the share of the query's terms
no visible record holds, and whether a word written as a name is one.
``absent_name`` is the same for every hit of a query, so it moves the level,
not the order; automatic context holds such a query's hits to the higher
``context_unseen_name_relevance``: :func:`context_floor`.)

A logistic model maps them (with ``cosine²``, ``√keyword`` and ``coverage ×
cosine``) to a probability, fitted on every top-20 hit of LoCoMo (evidence
turns, counted on the hit's own turn) and of the agent-memory set
(bench/agent_memory_data.py), with their off-topic questions, each data set
weighing the same, with the real local model (all-MiniLM-L6-v2). Search
orders hits by this number (boosts multiply its odds: :func:`boosted`), so
the fit is a ranker as well as a calibration: a question that matches the
query's words but not its answer is a negative example. Leave-one-dataset-out
results and the floors they support are in docs/benchmarks.md. Refit and
print new constants with::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --dataset all --calibrate

The cosine scale belongs to the model: with another embedder the numbers are
a ranking signal, not a calibrated probability (``CALIBRATED_MODELS``).
When the embedder is unreachable (keyword-only search) the keyword model,
fitted on the same data without the cosine, is used.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..models import JudgedRecord, Memory, SearchHit
from ..store.words import fold_word, stem_prefix
from .dates import MONTHS, WEEKDAYS

# FTS5's bm25() constants (fixed in SQLite).
BM25_K1 = 1.2
_TERM = re.compile(r"\w+", re.UNICODE)
_WORD_OR_STOP = re.compile(r"\w+|[.?!]", re.UNICODE)

# The share of the keyword index's records a name must be in for ``name_excess`` (subject_names).
NAME_SHARE = 0.02

# Models the constants below were fitted for.
CALIBRATED_MODELS = frozenset({"sentence-transformers/all-MiniLM-L6-v2"})

# Fitted by `bench/quality.py --calibrate` (LoCoMo + agent memory, their off-topic questions, all-MiniLM-L6-v2).
FEATURES = (
    "cosine",
    "cosine_sq",
    "keyword",
    "coverage",
    "question",
    "absent",
    "absent_name",
    "keyword_sqrt",
    "coverage_cosine",
    "name_excess",
)
INTERCEPT = -11.7699
# The last, name_excess's, fitted after the others with their logit held fixed (bench/quality_excess.py, LoCoMo +
# agent memory; docs/benchmarks.md, "what a name does not explain"), so a query naming no one keeps its relevance.
COEFFICIENTS = (4.3927, 14.8503, -2.1425, 13.7845, -2.7000, 1.6109, -0.4155, 2.0132, -17.8660, 2.2844)
# The same fit without the cosine, for keyword-only (degraded) search.
KEYWORD_FEATURES = ("keyword", "coverage", "absent", "absent_name")
KEYWORD_INTERCEPT = -4.1130
KEYWORD_COEFFICIENTS = (2.9126, 1.5487, -0.1561, -3.2240)


@dataclass(frozen=True)
class Signals:
    """What relevance is computed from: one hit's own signals, each in [0, 1] (cosine may be None)."""

    cosine: float | None
    keyword: float
    coverage: float
    question: float = 0.0
    absent: float = 0.0
    absent_name: float = 0.0
    name_excess: float = 0.0

    def to_dict(self) -> dict[str, float | None]:
        """A JSON-ready dict."""
        return {
            "cosine": self.cosine,
            "keyword": self.keyword,
            "coverage": self.coverage,
            "question": self.question,
            "absent": self.absent,
            "absent_name": self.absent_name,
            "name_excess": self.name_excess,
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


def coverage(terms: Sequence[str], text: str, weights: Mapping[str, float]) -> float:
    """The ``weights``-weighted share of ``terms`` whose stem is one of the text's words' stems.

    Words are stemmed as the keyword index stems them (:func:`fold_word`,
    FTS5's porter), so "move" is found in "The office moves…" and "study"
    in "She studied…". The definition; search uses :func:`_prepared_coverage`.
    """
    if not terms:
        return 0.0
    words = {fold_word(w) for w in _TERM.findall(text.lower())}
    total = sum(weights.get(t, 1.0) for t in terms)
    found = sum(weights.get(t, 1.0) for t in terms if fold_word(t) in words or _substring(t, text))
    return 0.0 if total <= 0 else found / total


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
    return [
        cos,
        cos * cos,
        signals.keyword,
        signals.coverage,
        signals.question,
        signals.absent,
        signals.absent_name,
        math.sqrt(max(0.0, signals.keyword)),
        signals.coverage * cos,
        signals.name_excess,
    ]


def keyword_feature_vector(signals: Signals) -> list[float]:
    """The keyword-only model's inputs, in :data:`KEYWORD_FEATURES` order."""
    return [signals.keyword, signals.coverage, signals.absent, signals.absent_name]


# Capitalised words that name a time, not someone: "in March", "on Friday" (funes.memory.dates reads them).
CALENDAR_WORDS = frozenset(w for w in (*MONTHS, *WEEKDAYS) if len(w) > 4 or w == "may")


def named_terms(query: str) -> set[str]:
    """Query words written as names: capitalised (not all capitals), not first in a sentence, not a month or
    weekday; lowercased."""
    out: set[str] = set()
    initial = True
    for match in _WORD_OR_STOP.finditer(query):
        token = match.group(0)
        if token in ".?!":
            initial = True
            continue
        # All-capitals words are left out: acronyms ("RFP") often name what memory says in words.
        if not initial and token[:1].isupper() and not token.isupper() and token.lower() not in CALENDAR_WORDS:
            out.add(token.lower())
        initial = False
    return out


def absent_share(terms: Sequence[str], present: Set[str], weights: Mapping[str, float]) -> float:
    """The ``weights``-weighted share of ``terms`` that no record the search may see contains."""
    total = sum(weights.get(t, 1.0) for t in terms)
    missing = sum(weights.get(t, 1.0) for t in terms if t not in present)
    return 0.0 if total <= 0 else missing / total


class Judged(Protocol):
    """What judging reads of a fused candidate (an :class:`~funes.models.Explanation` has it, and so has
    :class:`funes.memory.ranking.Scored`)."""

    @property
    def keyword_score(self) -> float | None: ...

    @property
    def vector_similarity(self) -> float | None: ...

    @property
    def boosts(self) -> Mapping[str, float]: ...


def signal_judge(
    terms: Sequence[str],
    total: int,
    counts: Mapping[str, int],
    *,
    has_vector: bool,
    present: Set[str] | None = None,
    names: Set[str] = frozenset(),
    name_cosines: Mapping[str, float] | None = None,
) -> SignalJudge:
    """A function judging one hit for one query: (relevance shown, signal values, calibrated probability).

    ``terms`` are the query's keyword terms; ``total`` and ``counts`` the
    keyword index's row count and each term's row count (``Store.term_stats``);
    ``present`` the terms some visible record contains (``Store.term_presence``;
    None: all of them).
    Without a query vector (keyword-only search) the keyword model is used.
    Search judges every candidate but explains only the hits it returns
    (:mod:`funes.memory.judging`); :func:`signal_dict` makes an explanation's signals.
    Its :meth:`~SignalJudge.bound` says, without reading the record, the most
    relevance a candidate can show (ordering skips those that cannot reach the hits returned).
    ``name_cosines``: each candidate's best cosine with the query's names alone (by record id), when the
    query names someone (``names``); a record holding one of the names gets ``name_excess`` from it.
    """
    weights = {t: idf(total, counts.get(t, 0)) for t in terms}
    absent = 0.0 if present is None else absent_share(terms, present, weights)
    absent_name = float(present is not None and any(t in names and t not in present for t in terms))
    named = sorted(subject_names(names, total, counts))
    holds = _prepared_coverage(named, {}) if named and name_cosines and has_vector else None
    return SignalJudge(
        list(weights.values()),
        _prepared_coverage(terms, weights),
        has_vector,
        absent,
        absent_name,
        (holds, name_cosines or {}) if holds is not None else None,
    )


def subject_names(names: Set[str], total: int, counts: Mapping[str, int]) -> set[str]:
    """The query's names held by at least ``NAME_SHARE`` of the keyword index's ``total`` records (``counts``: each
    term's row count): what the store is about, whose records ``name_excess`` tells apart."""
    return {n for n in names if counts.get(n, 0) >= NAME_SHARE * max(total, 1)}


# Added to a bound's logit: far above the rounding of the model's sum (about 1e-13), far below a relevance step
# that matters. The bound is an upper bound of the computed double, not only of the real number.
_BOUND_MARGIN = 1e-9


class SignalJudge:
    """One query's judge (:func:`signal_judge`): call it on a candidate and its record; ``bound`` it without the record."""

    __slots__ = ("_absent", "_absent_name", "_ceiling", "_covered", "_has_vector", "_idfs", "_names")

    def __init__(
        self,
        idfs: list[float],
        covered: Callable[[str], float],
        has_vector: bool,
        absent: float,
        absent_name: float,
        names: tuple[Callable[[str], float], Mapping[str, float]] | None = None,
    ) -> None:
        self._idfs, self._covered, self._has_vector = idfs, covered, has_vector
        self._absent, self._absent_name = absent, absent_name
        self._names = names  # (whether a text holds one of the query's names, each candidate's names cosine)
        self._ceiling = (BM25_K1 + 1.0) * sum(idfs)  # keyword_signal's

    def __call__(self, explanation: Judged, memory: Memory | JudgedRecord) -> tuple[float, SignalValues, float]:
        text = f"{memory.title or ''} {memory.content}"
        cosine = explanation.vector_similarity if self._has_vector else None
        values = (
            cosine,
            keyword_signal(explanation.keyword_score, self._idfs),
            self._covered(text),
            question_share(memory.content),
            self._absent,
            self._absent_name,
            self._excess(memory, text, cosine),
        )
        calibrated = _probability(*values)
        return boosted(calibrated, explanation.boosts), values, calibrated

    def _excess(self, memory: Memory | JudgedRecord, text: str, cosine: float | None) -> float:
        """``name_excess`` of a candidate: its cosine's excess over its names cosine, when it holds a name."""
        if self._names is None or cosine is None:
            return 0.0
        holds, cosines = self._names
        alone = cosines.get(memory.id)
        if alone is None or not holds(text):
            return 0.0
        return max(0.0, max(0.0, cosine) - alone)

    def _most_excess(self, record: str, cosine: float) -> float:
        """The most ``name_excess`` a candidate can have whatever its text (its names cosine known)."""
        alone = None if self._names is None else self._names[1].get(record)
        return 0.0 if alone is None else max(0.0, max(0.0, cosine) - alone)

    def bound(self, explanation: Judged) -> float:
        """At least the relevance :meth:`__call__` shows for this candidate, whatever its record's text.

        Coverage and question share are the only signals read from the text;
        each is taken at whichever end of [0, 1] adds more to the logit (the
        model is linear in both, given the cosine), plus ``_BOUND_MARGIN``.
        """
        keyword = keyword_signal(explanation.keyword_score, self._idfs)
        absent, absent_name = self._absent, self._absent_name
        if not self._has_vector:
            k = KEYWORD_COEFFICIENTS  # keyword_feature_vector's order: keyword, coverage, absent, absent_name
            x = KEYWORD_INTERCEPT + k[0] * keyword + max(0.0, k[1]) + k[2] * absent + k[3] * absent_name
        else:
            cos = max(0.0, explanation.vector_similarity or 0.0)
            x = (
                INTERCEPT
                + _C[0] * cos
                + _C[1] * (cos * cos)
                + _C[2] * keyword
                + max(0.0, _C[3] + _C[8] * cos)  # coverage, with its product with the cosine
                + max(0.0, _C[4])  # question share
                + _C[5] * absent
                + _C[6] * absent_name
                + _C[7] * math.sqrt(max(0.0, keyword))
                + max(0.0, _C[9]) * self._most_excess(_id(explanation), cos)  # whether it holds a name: unread
            )
        return boosted(_sigmoid(x + _BOUND_MARGIN), explanation.boosts)

    def many(
        self, candidates: Sequence[Judged], memories: Sequence[Memory | JudgedRecord]
    ) -> list[tuple[float, SignalValues, float]]:
        """:meth:`__call__` of each candidate and its record, the numbers worked out on columns: the same doubles.

        Only the text signals are read per record; the model's sums, the
        boosts and the keyword signal are numpy operations in the order the
        scalar path does them (``math.exp`` for the sigmoid, as it calls it).
        """
        if not candidates:
            return []
        keyword = self._keyword_signals(candidates)
        cover = float_column([self._covered(f"{m.title or ''} {m.content}") for m in memories])
        question = float_column([question_share(m.content) for m in memories])
        absent, absent_name = self._absent, self._absent_name
        sims = [c.vector_similarity if self._has_vector else None for c in candidates]
        excess = (
            [self._excess(m, f"{m.title or ''} {m.content}", sim) for m, sim in zip(memories, sims, strict=True)]
            if self._names is not None
            else [0.0] * len(memories)  # a query naming no one the store is about: no text to read
        )
        k = KEYWORD_COEFFICIENTS  # _probability's keyword model: sum() from 0 in feature order, then the intercept
        x = KEYWORD_INTERCEPT + (k[0] * keyword + k[1] * cover + k[2] * absent + k[3] * absent_name)
        with_cosine = [n for n, sim in enumerate(sims) if sim is not None]
        if with_cosine:
            cos = np.maximum(0.0, float_column([sims[n] or 0.0 for n in with_cosine]))
            kw, cv = keyword[with_cosine], cover[with_cosine]
            x[with_cosine] = INTERCEPT + (
                _C[0] * cos
                + _C[1] * (cos * cos)
                + _C[2] * kw
                + _C[3] * cv
                + _C[4] * question[with_cosine]
                + _C[5] * absent
                + _C[6] * absent_name
                + _C[7] * np.sqrt(np.maximum(0.0, kw))
                + _C[8] * (cv * cos)
                + _C[9] * float_column([excess[n] for n in with_cosine])
            )
        calibrated = _sigmoids(x)
        shown = _boosted(calibrated, _factors(candidates)).tolist()
        probabilities = calibrated.tolist()
        signals = zip(sims, keyword.tolist(), cover.tolist(), question.tolist(), excess, strict=True)
        return [
            (shown[n], (sim, kw_, cv_, q, absent, absent_name, ex), probabilities[n])
            for n, (sim, kw_, cv_, q, ex) in enumerate(signals)
        ]

    def bounds(self, candidates: Sequence[Judged]) -> list[float]:
        """:meth:`bound` of each candidate, on columns: the same doubles."""
        if not candidates:
            return []
        keyword = self._keyword_signals(candidates)
        absent, absent_name = self._absent, self._absent_name
        if not self._has_vector:
            k = KEYWORD_COEFFICIENTS
            x = KEYWORD_INTERCEPT + k[0] * keyword + max(0.0, k[1]) + k[2] * absent + k[3] * absent_name
        else:
            sims = [c.vector_similarity or 0.0 for c in candidates]
            cos = np.maximum(0.0, float_column(sims))
            most = (
                float_column([self._most_excess(_id(c), sim) for c, sim in zip(candidates, sims, strict=True)])
                if self._names is not None
                else 0.0
            )
            x = (
                INTERCEPT
                + _C[0] * cos
                + _C[1] * (cos * cos)
                + _C[2] * keyword
                + np.maximum(0.0, _C[3] + _C[8] * cos)
                + max(0.0, _C[4])
                + _C[5] * absent
                + _C[6] * absent_name
                + _C[7] * np.sqrt(np.maximum(0.0, keyword))
                + max(0.0, _C[9]) * most
            )
        return _boosted(_sigmoids(x + _BOUND_MARGIN), _factors(candidates)).tolist()  # type: ignore[no-any-return]

    def _keyword_signals(self, candidates: Sequence[Judged]) -> np.ndarray:
        """:func:`keyword_signal` of each candidate's BM25."""
        bm25 = float_column([c.keyword_score or 0.0 for c in candidates])
        if self._ceiling <= 0:
            return np.zeros(len(bm25))
        with np.errstate(over="ignore"):  # a score past the float range over a small ceiling is 1.0, as in Python
            return np.where(bm25 > 0, np.minimum(1.0, bm25 / self._ceiling), 0.0)


def _id(candidate: Judged) -> str:
    """A candidate's record id (a fused candidate has one; another Judged has no names cosine)."""
    return str(getattr(candidate, "id", ""))


def float_column(values: Sequence[float]) -> np.ndarray:
    """A float64 column of the values (``np.fromiter``: no type and shape discovery per element)."""
    return np.fromiter(values, dtype=np.float64, count=len(values))


def _sigmoids(x: np.ndarray) -> np.ndarray:
    """:func:`_sigmoid` of each value (``math.exp``: numpy's exp may round differently in the last bit)."""
    return float_column([_sigmoid(v) for v in x.tolist()])


def _factors(candidates: Sequence[Judged]) -> np.ndarray:
    """Each candidate's boosts multiplied together, as :func:`boosted` multiplies them."""
    factors = (getattr(c, "factor", None) for c in candidates)
    return float_column([boost_factor(c.boosts) if f is None else f for c, f in zip(candidates, factors, strict=True)])


def _boosted(probability: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """:func:`boosted` of each probability and boost factor."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf and nan as Python's floats give them
        odds = probability / (1.0 - probability) * factor
        raised = odds / (1.0 + odds)
    plain = (factor == 1.0) | (probability <= 0.0) | (probability >= 1.0)
    return np.where(plain, probability, raised)


# A hit's signals in :class:`Signals`' field order (``Signals(*values)``): what judging keeps of every candidate.
SignalValues = tuple[float | None, float, float, float, float, float, float]


def signal_dict(values: SignalValues, calibrated: float) -> dict[str, float | None]:
    """The signals an explanation shows: each signal and the calibrated probability before boosts."""
    cosine, keyword, cover, question, absent, absent_name, excess = values  # Signals.to_dict's keys, in order
    return {
        "cosine": cosine,
        "keyword": keyword,
        "coverage": cover,
        "question": question,
        "absent": absent,
        "absent_name": absent_name,
        "name_excess": excess,
        "calibrated": calibrated,
    }


def _prepared_coverage(terms: Sequence[str], weights: Mapping[str, float]) -> Callable[[str], float]:
    """:func:`coverage` of one query's terms, with what does not depend on the text worked out once.

    The same sums in the same order as :func:`coverage`, so the same doubles.
    Where coverage stems every word of the text, this finds only the words
    that can stem to a term's: those starting with the stem's prefix
    (:func:`stem_prefix`) at a word's start, found by ``str.find`` in C, and
    in a text with letters that decompose ("é"), its non-ASCII words.
    """
    if not terms:
        return lambda _text: 0.0
    total = sum(weights.get(t, 1.0) for t in terms)
    if total <= 0:
        return lambda _text: 0.0
    checks = [(fold_word(t), weights.get(t, 1.0), t, not t.isascii() and len(t) >= 2) for t in terms]
    targets = {folded for folded, *_ in checks if folded}
    # A stem with a character that is not a word's (NFKD of "½" is "1⁄2") starts no word: only the
    # non-ASCII words of a text whose letters decompose can fold to it.
    prefixes = sorted({stem_prefix(f) for f in targets if all(_is_word(c) for c in f)})

    def covered(text: str) -> float:
        lowered = text.lower()
        words = _words_from(prefixes, lowered, targets)
        if len(words) < len(targets) and not lowered.isascii() and not unicodedata.is_normalized("NFKD", lowered):
            # A diacritic can sit inside a prefix ("résumé" folds to "resum"): such words are read one by one.
            words.update(f for w in _TERM.findall(lowered) if not w.isascii() and (f := fold_word(w)) in targets)
        found = sum(w for folded, w, t, anywhere in checks if folded in words or (anywhere and t in text))
        return found / total

    return covered


def _is_word(char: str) -> bool:
    """Whether ``re``'s ``\\w`` matches the character (Unicode: alphanumeric or the underscore)."""
    return char.isalnum() or char == "_"


_WORD_REST = re.compile(r"\w*", re.UNICODE)


def _words_from(prefixes: Sequence[str], lowered: str, targets: Set[str]) -> set[str]:
    """The ``targets`` among the stems of the text's words that start with one of the ``prefixes``.

    A place matches when a prefix starts there at a word's start (``\\b``);
    the word runs on to its end (``\\w*``) and is stemmed. It stops once
    every target is found.
    """
    words: set[str] = set()
    for prefix in prefixes:
        if len(words) == len(targets):
            break
        at = lowered.find(prefix)
        while at >= 0:
            if at and _is_word(lowered[at - 1]):
                at = lowered.find(prefix, at + 1)  # inside a word
                continue
            end = _WORD_REST.match(lowered, at + len(prefix)).end()  # type: ignore[union-attr]
            folded = fold_word(lowered[at:end])
            if folded in targets:
                words.add(folded)
                if len(words) == len(targets):
                    break
            at = lowered.find(prefix, end)
    return words


_SENTENCE = re.compile(r"[^.?!]*\w[^.?!]*(?:[.?!]+|$)", re.UNICODE)


def question_share(text: str) -> float:
    """The share of a text's sentences that are questions (end with a question mark), in [0, 1]."""
    head = text[:2000]
    if "?" not in head:
        return 0.0  # no sentence can end with one (most records: no regex)
    sentences = [m.group(0) for m in _SENTENCE.finditer(head)]
    if not sentences:
        return 0.0
    return sum(s.rstrip().endswith("?") for s in sentences) / len(sentences)


def boost_factor(boosts: Mapping[str, float]) -> float:
    """The boosts multiplied together in their order, from 1.0: what :func:`boosted` multiplies the odds by."""
    factor = 1.0
    for value in boosts.values():
        factor *= value
    return factor


def boosted(probability: float, boosts: Mapping[str, float]) -> float:
    """The relevance shown and ranked on: the calibrated probability with the ranking boosts multiplying its odds.

    A boost of 1.5 (the current project, a date the query names) makes the
    odds 1.5 times better; unboosted hits show the calibrated probability.
    Results are ordered by this one number, so the order and the number
    a caller reads never disagree.
    """
    factor = boost_factor(boosts)
    if factor == 1.0 or probability <= 0.0 or probability >= 1.0:
        return probability
    odds = probability / (1.0 - probability) * factor
    return odds / (1.0 + odds)


def context_floor(signals: Mapping[str, float | None] | None, floor: float, unseen_name_floor: float) -> float:
    """The relevance a hit needs for automatic context: ``floor``, or ``unseen_name_floor`` when higher and the
    query names someone or something no visible record mentions (``absent_name``).

    The hit then matches the question's other words about someone else ("What did Gina make in the pottery
    class?" of Caroline's pottery turns): its calibrated relevance is low but not negligible, and injecting it
    would answer about the wrong person.
    """
    if signals and signals.get("absent_name"):
        return max(floor, unseen_name_floor)
    return floor


def marked_weak(
    hits: Iterable[SearchHit], min_relevance: float, floor: float, unseen_name_floor: float
) -> Iterator[SearchHit]:
    """The hits at ``min_relevance`` or above, each marked ``weak`` when under its :func:`context_floor`."""
    for hit in hits:
        if hit.relevance >= min_relevance:
            need = context_floor(hit.explanation.signals, floor, unseen_name_floor)
            yield replace(hit, weak=hit.relevance < need)


def relevance(signals: Signals) -> float:
    """The calibrated probability that the hit answers the query, in [0, 1]."""
    return _probability(
        signals.cosine,
        signals.keyword,
        signals.coverage,
        signals.question,
        signals.absent,
        signals.absent_name,
        signals.name_excess,
    )


_C = COEFFICIENTS


def _probability(
    cosine: float | None,
    keyword: float,
    cover: float,
    question: float,
    absent: float,
    absent_name: float,
    excess: float = 0.0,
) -> float:
    """:func:`relevance` of the signals' values (search computes it for every candidate).

    ``INTERCEPT + sum(w * v for w, v in zip(COEFFICIENTS, feature_vector(signals)))``
    without the list: the same products added in the same order, so the same double.
    """
    if cosine is None:
        features = (keyword, cover, absent, absent_name)  # keyword_feature_vector's order
        return _sigmoid(KEYWORD_INTERCEPT + sum(w * v for w, v in zip(KEYWORD_COEFFICIENTS, features, strict=True)))
    cos = max(0.0, cosine or 0.0)
    x = (
        _C[0] * cos
        + _C[1] * (cos * cos)
        + _C[2] * keyword
        + _C[3] * cover
        + _C[4] * question
        + _C[5] * absent
        + _C[6] * absent_name
        + _C[7] * math.sqrt(max(0.0, keyword))
        + _C[8] * (cover * cos)
        + _C[9] * excess
    )
    return _sigmoid(INTERCEPT + x)


__all__ = [
    "CALIBRATED_MODELS",
    "COEFFICIENTS",
    "FEATURES",
    "INTERCEPT",
    "SignalJudge",
    "SignalValues",
    "Signals",
    "boosted",
    "context_floor",
    "coverage",
    "feature_vector",
    "idf",
    "keyword_signal",
    "marked_weak",
    "question_share",
    "relevance",
    "signal_dict",
    "signal_judge",
    "subject_names",
]
