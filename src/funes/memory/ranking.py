"""Ranking as pure functions: query terms, fusion, boosts, thresholds.

Everything here works on plain data (ids, scores, records), so it is tested
exhaustively without a database. The service gathers the two candidate
lists (keyword BM25 and vector KNN) from the store and calls :func:`rank`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..models import Explanation, Memory, SearchHit
from .dates import DateWindow
from .relevance import boost_factor, float_column

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves""".split()
)
_TERM = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 16
FUSIONS = ("convex", "rrf")


def query_terms(query: str) -> list[str]:
    """Keyword terms of a query: words, lowercased, stopwords dropped (unless nothing is left).

    Only word characters survive, so FTS syntax in user text (quotes, ``*``,
    ``-x``, ``AND OR NOT``) is never interpreted.
    """
    words = list(dict.fromkeys(w.lower() for w in _TERM.findall(query)))
    kept = [w for w in words if w not in STOPWORDS]
    return (kept or words)[:MAX_TERMS]


def fuse_rrf(lists: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: sum over lists of weight / (k + rank), rank starting at 1 (weights default to 1)."""
    if k < 0:
        raise ValueError("k must be >= 0")
    if weights is not None and len(weights) != len(lists):
        raise ValueError("one weight per list")
    scores: dict[str, float] = {}
    for n, ranked in enumerate(lists):
        weight = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def scale_to_best(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores divided by the best one, clamped to [0, 1]; all 0 when none is positive.

    Zero, not the lowest candidate, maps to 0 (the "theoretical minimum"
    form of min-max): the last keyword candidate still matched a term, and
    the last neighbour's cosine is not a property of the record but of how
    many candidates were taken. Measured on SciFact and LoCoMo, mapping the
    last neighbour to 0 instead ranked worse when the vector leg weighs more
    (bench/README.md).
    """
    best = max(scores.values(), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(scores, 0.0)
    return {i: min(1.0, max(0.0, s / best)) for i, s in scores.items()}


def fuse_convex(
    keyword: Mapping[str, float],
    vector: Mapping[str, float],
    keyword_weight: float,
    vector_weight: float,
) -> dict[str, dict[str, float]]:
    """Convex combination of the legs' scores, each scaled to its best: per-candidate contributions.

    ``keyword`` holds BM25 scores and ``vector`` cosines. A candidate missing
    from a leg gets 0 from it. The fused score is the sum of the two
    contributions, at most ``keyword_weight + vector_weight``.
    """
    kw = scale_to_best(keyword)
    vec = scale_to_best(vector)
    return {
        i: {"keyword": keyword_weight * kw.get(i, 0.0), "vector": vector_weight * vec.get(i, 0.0)}
        for i in dict.fromkeys([*keyword, *vector])
    }


class Rankable(Protocol):
    """What ranking reads of a record (a :class:`~funes.models.Memory` has it all)."""

    @property
    def scope(self) -> str: ...

    @property
    def project_id(self) -> str | None: ...

    @property
    def importance(self) -> float: ...

    @property
    def updated_at(self) -> datetime: ...

    @property
    def created_at(self) -> datetime | None: ...

    def is_expired(self, now: datetime | None = None) -> bool: ...


class Scored:
    """A ranked record id with its score and explanation.

    The explanation is made when first read: search judges every candidate
    from the fields it reads here (``keyword_score``, ``vector_similarity``,
    ``boosts`` or their product ``factor``, as an :class:`~funes.models.Explanation`
    names them) but explains only the hits it returns. What only the explanation
    reads (ranks, contributions, dates) stays in the ``ranked`` lists of the
    whole search, shared by its candidates; ``boosts`` is made from the search's
    boost columns when first read.
    """

    __slots__ = (
        "_boosts",
        "_explanation",
        "_fused",
        "_ranked",
        "_row",
        "factor",
        "id",
        "keyword_score",
        "score",
        "vector_similarity",
    )

    def __init__(
        self,
        id: str,
        score: float,
        keyword_score: float | None,
        vector_similarity: float | None,
        fused: float,
        boosts: dict[str, float] | _Boosts,
        ranked: Ranked,
        factor: float | None = None,
        row: int = 0,
    ) -> None:
        self.id, self.score, self.keyword_score, self.vector_similarity = id, score, keyword_score, vector_similarity
        self._boosts, self._fused, self._ranked, self._row = boosts, fused, ranked, row
        # The boosts multiplied together in their order, as relevance.boosted multiplies them.
        self.factor = boost_factor(boosts) if factor is None and isinstance(boosts, dict) else factor
        self._explanation: Explanation | None = None

    @property
    def boosts(self) -> dict[str, float]:
        """The multiplicative boosts the record earned (:func:`boosts_for`): the ``row``-th of the search's columns."""
        if not isinstance(self._boosts, dict):
            self._boosts = self._boosts.of(self._row)
        return self._boosts

    @property
    def explanation(self) -> Explanation:
        """Per-signal explanation of the score (made once, on first read)."""
        if self._explanation is None:
            self._explanation = self.explained()
        return self._explanation

    def explained(self, relevance: float | None = None, signals: dict[str, float | None] | None = None) -> Explanation:
        """The explanation with the relevance judging found and its signals (what ``replace`` of it would give)."""
        keyword_rank, vector_rank, contributions, dates = self._ranked
        return Explanation(
            keyword_rank=keyword_rank.get(self.id),
            keyword_score=self.keyword_score,
            vector_rank=vector_rank.get(self.id),
            vector_similarity=self.vector_similarity,
            fused=self._fused,
            boosts=self.boosts,
            contributions=contributions[self.id],
            score=self.score,
            relevance=relevance,
            signals=signals,
            dates=dates,
        )


# One search's ranks of each leg, each candidate's contributions and the query's dates: what explanations read.
Ranked = tuple[Mapping[str, int], Mapping[str, int], Mapping[str, dict[str, float]], tuple[dict[str, Any], ...]]


@dataclass(frozen=True)
class RankSettings:
    """Knobs of :func:`rank`."""

    fusion: str = "convex"
    keyword_weight: float = 0.5
    vector_weight: float = 0.5
    rrf_k: int = 60
    boost_project: float = 1.5
    boost_team: float = 1.3
    importance_weight: float = 0.5
    recency_weight: float = 0.2
    recency_half_life_days: float = 30.0
    min_similarity: float | None = None
    strong_keyword_rank: int = 3
    vector_floor: float | None = 0.15
    floor_exempt: int = 3
    current_project: str | None = None
    # Date awareness: the windows the query names (funes.query_dates) and how much a record inside one gains.
    date_boost: float = 0.0
    date_windows: tuple[DateWindow, ...] = ()

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {self.fusion!r}; use one of {', '.join(FUSIONS)}")
        if self.keyword_weight < 0 or self.vector_weight < 0 or self.keyword_weight + self.vector_weight <= 0:
            raise ValueError("fusion weights must be >= 0 and not both 0")
        if self.rrf_k < 0:
            raise ValueError("rrf_k must be >= 0")


def boosts_for(
    memory: Rankable, settings: RankSettings, now: datetime, match: Callable[[datetime], float] | None = None
) -> dict[str, float]:
    """The multiplicative boosts a record earns: scope, importance, recency, and date when the query names a time.

    The date boost is ``1 + date_boost × match``: full inside a window
    the query names, fading just outside it (:func:`date_matcher`), measured on
    the record's own time (``created_at``: when a message was said).
    ``match`` is :func:`date_matcher` of the windows, when the caller
    boosts many records for one query.
    """
    boosts: dict[str, float] = {}
    if memory.scope == "project" and settings.current_project and memory.project_id == settings.current_project:
        boosts["project"] = settings.boost_project
    elif memory.scope == "team":
        boosts["team"] = settings.boost_team
    boosts["importance"] = 1.0 + settings.importance_weight * (memory.importance - 0.5)
    age_days = max(0.0, (now - memory.updated_at).total_seconds() / 86400.0)
    half_life = max(settings.recency_half_life_days, 1e-9)
    boosts["recency"] = 1.0 + settings.recency_weight * math.pow(2.0, -age_days / half_life)
    if settings.date_windows and settings.date_boost > 0:
        match = match or date_matcher(settings.date_windows)
        boosts["date"] = 1.0 + settings.date_boost * match(memory.created_at or memory.updated_at)
    return boosts


# A month or day named without a year ("in June") is resolved to the most recent one; the same span in
# earlier years counts this much (1: any June counts as much as the latest; 0: only the latest).
YEARLESS_OLDER_WEIGHT = 1.0
_MIN_FALLOFF = 86400.0  # seconds: a day window halves its boost a day outside it
_MAX_FALLOFF = 15 * 86400.0


def _closeness(t: float, start: float, end: float, half_life: float) -> float:
    """1 inside ``[start, end)``, halving every ``half_life`` seconds outside it."""
    if start <= t < end:
        return 1.0
    return math.pow(2.0, -((start - t) if t < start else (t - end)) / half_life)


@functools.lru_cache(maxsize=1024)
def _span(start: datetime, end: datetime, years_back: int) -> tuple[float, float, float]:
    """A window (moved ``years_back`` years earlier) as epoch seconds, with its falloff half-life."""
    if years_back:
        start, end = _years_back(start, years_back), _years_back(end, years_back)
    s, e = start.timestamp(), end.timestamp()
    return s, e, min(_MAX_FALLOFF, max(_MIN_FALLOFF, (e - s) / 4))


def _years_back(t: datetime, years: int) -> datetime:
    try:
        return t.replace(year=t.year - years)
    except ValueError:  # February 29
        return t.replace(year=t.year - years, day=28)


def date_matcher(windows: Sequence[DateWindow]) -> Callable[[datetime], float]:
    """How well a record's time matches the query's windows, in [0, 1], prepared once for one search.

    1 inside a window, halving every quarter window length outside it (1 to
    15 days); the best window counts. A window marked ``every_year`` also
    matches the same span in the record's own year and the years around it,
    if they are earlier than the window (weighted by ``YEARLESS_OLDER_WEIGHT``).
    """
    spans = [(_span(w.start, w.end, 0), w.every_year and YEARLESS_OLDER_WEIGHT > 0, w) for w in windows]

    def match(when: datetime) -> float:
        t = when.timestamp()
        best = 0.0
        for (start, end, half_life), every_year, w in spans:
            if start <= t < end:
                return 1.0
            best = max(best, _closeness(t, start, end, half_life))
            if every_year:
                lag = w.start.year - when.year
                for years in (lag - 1, lag, lag + 1):
                    if 1 <= years < w.start.year:  # _span caches the shifted windows
                        best = max(best, YEARLESS_OLDER_WEIGHT * _closeness(t, *_span(w.start, w.end, years)))
        return best

    return match


def retention_score(memory: Memory, settings: RankSettings, now: datetime) -> float:
    """How much a record is worth keeping: the importance and recency boosts ranking gives it, recency counted
    from its last use (written or read), so retention evicts what ranking would put last.

    Scope boosts are left out: they depend on the query's project, not on the record's worth.
    """
    last = max(memory.updated_at, memory.last_accessed or memory.updated_at)
    boosts = boosts_for(replace(memory, updated_at=last), settings, now)
    return boosts["importance"] * boosts["recency"]


def _contributions(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    vec_ids: Sequence[str],
    similarities: Mapping[str, float],
    settings: RankSettings,
    at: Mapping[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's score from each leg under the configured fusion, as two columns in ``at``'s order.

    The same doubles as :func:`fuse_convex` and :func:`fuse_rrf` give each candidate.
    """
    kw_ids = [i for i, _ in keyword]
    kw_part, vec_part = np.zeros(len(at)), np.zeros(len(at))
    if settings.fusion == "rrf":
        for column, ids, weight in (
            (kw_part, kw_ids, settings.keyword_weight),
            (vec_part, vec_ids, settings.vector_weight),
        ):
            for i, value in fuse_rrf([ids], k=settings.rrf_k, weights=[weight]).items():
                column[at[i]] = value
        return kw_part, vec_part
    # Keyword-only candidates have a known cosine too: it counts, as long as
    # it clears the floor (a record the vector leg missed is not a non-match).
    floor = settings.vector_floor
    admitted = set(vec_ids)
    cosines = {i: s for i, s in vector if i in admitted}
    for i in kw_ids:
        sim = similarities.get(i)
        if i not in cosines and sim is not None and (floor is None or sim >= floor):
            cosines[i] = sim
    for column, scores, weight in (
        (kw_part, dict(keyword), settings.keyword_weight),
        (vec_part, cosines, settings.vector_weight),
    ):
        if scores:
            column[[at[i] for i in scores]] = weight * _scaled_to_best(list(scores.values()))
    return kw_part, vec_part


def _scaled_to_best(scores: list[float]) -> np.ndarray:
    """:func:`scale_to_best` of the values: the same doubles."""
    best = max(scores, default=0.0)
    if best <= 0.0:
        return np.zeros(len(scores))
    with np.errstate(over="ignore"):  # a huge negative over a tiny best is -inf, then 0, as Python's division gives
        return np.minimum(1.0, np.maximum(0.0, float_column(scores) / best))


class _Parts(Mapping[str, dict[str, float]]):
    """Each candidate's contributions (``{"keyword": ..., "vector": ...}``), made from the columns when read."""

    def __init__(self, at: Mapping[str, int], keyword: np.ndarray, vector: np.ndarray) -> None:
        self._at, self._keyword, self._vector = at, keyword, vector

    def __getitem__(self, memory_id: str) -> dict[str, float]:
        n = self._at[memory_id]
        return {"keyword": float(self._keyword[n]), "vector": float(self._vector[n])}

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


class _Boosts:
    """The boosts of a search's kept candidates, one column each (:func:`boosts_for`'s values and order)."""

    def __init__(
        self,
        records: Sequence[Rankable],
        settings: RankSettings,
        now: datetime,
        match: Callable[[datetime], float] | None,
    ) -> None:
        project = settings.current_project
        self.scope = [
            ("project", settings.boost_project)
            if m.scope == "project" and project and m.project_id == project
            else ("team", settings.boost_team)
            if m.scope == "team"
            else None
            for m in records
        ]
        importance = float_column([m.importance for m in records])
        self.columns: list[tuple[str, np.ndarray]] = [
            ("importance", 1.0 + settings.importance_weight * (importance - 0.5))
        ]
        age = float_column([(now - m.updated_at).total_seconds() for m in records])
        exponent = -np.maximum(0.0, age / 86400.0) / max(settings.recency_half_life_days, 1e-9)
        # math.pow, as boosts_for calls it: numpy's power may round differently in the last bit.
        halves = float_column([math.pow(2.0, x) for x in exponent.tolist()])
        self.columns.append(("recency", 1.0 + settings.recency_weight * halves))
        if settings.date_windows and settings.date_boost > 0:
            match = match or date_matcher(settings.date_windows)
            matched = float_column([match(m.created_at or m.updated_at) for m in records])
            self.columns.append(("date", 1.0 + settings.date_boost * matched))
        # Multiplied in boosts_for's order; a missing scope boost is 1.0, which multiplies exactly.
        self.scope_factor = float_column([1.0 if s is None else s[1] for s in self.scope])
        self.factor = self.scope_factor
        for _, column in self.columns:
            self.factor = self.factor * column
        self.lists = [(name, column.tolist()) for name, column in self.columns]

    def of(self, n: int) -> dict[str, float]:
        """The ``n``-th candidate's boosts."""
        scope = self.scope[n]
        boosts = {} if scope is None else {scope[0]: scope[1]}
        for name, values in self.lists:
            boosts[name] = values[n]
        return boosts


def rank_scored(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    similarities: Mapping[str, float],
    records: Mapping[str, Rankable],
    settings: RankSettings,
    now: datetime,
    limit: int,
) -> list[Scored]:
    """Fuse the keyword and vector lists, boost, threshold and cut to ``limit``.

    ``records`` need only the fields ranking reads (:class:`Rankable`): the
    service passes light rows and loads whole records for the winners only.

    ``convex`` fusion (the default) adds ``keyword_weight × BM25/best BM25``
    and ``vector_weight × cosine/best cosine``; a keyword-only candidate's
    cosine counts when it clears the floor. ``rrf`` adds
    ``weight / (rrf_k + rank)`` per leg. Each hit's explanation carries both
    legs' contributions (they sum to ``fused``) and the boosts that multiply it.
    The score scale matters for the boosts: RRF scores of the first ten
    ranks differ by under 15%, so an importance or recency boost could lift
    a much weaker match; convex scores spread over [0, 1], so boosts reorder
    near ties and scope boosts (×1.5 / ×1.3) lift comparable matches only.

    ``similarities`` gives the cosine similarity of every candidate (also
    those found only by keyword). Vector candidates under ``vector_floor``
    are not matches: their cosine adds nothing to the fused score (except for
    the first ``floor_exempt`` neighbours), but they stay candidates. A candidate under ``min_similarity`` is
    dropped unless it is a strong keyword match (ranked within
    ``strong_keyword_rank`` by BM25): an exact term match stays findable
    even when the embedding disagrees. Expired records never pass.
    """
    kw_ids = [i for i, _ in keyword]
    # Nearest neighbours always exist; below the floor their cosine is no match,
    # so it adds nothing to the fused score (boosts must not lift noise over
    # signal). The first few neighbours count: they are the best the store has
    # (an agent's "new RFP" should still reach a terse "prefers LED fixtures").
    # A neighbour under the floor is still a candidate: a filtered search over
    # few records returns them all, each judged on its own relevance.
    floor = settings.vector_floor
    vec_ids = [
        i
        for rank_, (i, sim) in enumerate(vector, start=1)
        if floor is None or sim >= floor or rank_ <= settings.floor_exempt
    ]
    kw_rank = {i: r for r, i in enumerate(kw_ids, start=1)}
    kw_score = dict(keyword)
    dates = tuple(w.to_dict() for w in settings.date_windows)
    match = date_matcher(settings.date_windows) if dates else None
    vec_rank = {i: r for r, (i, _) in enumerate(vector, start=1)}
    at = {i: n for n, i in enumerate(dict.fromkeys([*kw_ids, *vec_ids, *vec_rank]))}
    kw_part, vec_part = _contributions(keyword, vector, vec_ids, similarities, settings, at)
    # Score every candidate on columns, explain only the ones kept.
    rows: list[int] = []
    kept: list[Rankable] = []
    for memory_id, n in at.items():
        memory = records.get(memory_id)
        if memory is None or memory.is_expired(now):
            continue
        if settings.min_similarity is not None and kw_rank.get(memory_id, 10**9) > settings.strong_keyword_rank:
            sim = similarities.get(memory_id)
            if sim is None or sim < settings.min_similarity:
                continue
        rows.append(n)
        kept.append(memory)
    ids = list(at)
    kept_ids = [ids[n] for n in rows]
    fused = kw_part[rows] + vec_part[rows]
    boosts = _Boosts(kept, settings, now, match)
    # boosts_for's factors multiplied into the fused score one by one, in their order (the same doubles).
    score = fused * boosts.scope_factor
    for _, column in boosts.columns:
        score = score * column
    scores, fused_list, factors = score.tolist(), fused.tolist(), boosts.factor.tolist()
    order = sorted(range(len(rows)), key=lambda k: (-scores[k], kept_ids[k]))[:limit]
    ranked: Ranked = (kw_rank, vec_rank, _Parts(at, kw_part, vec_part), dates)
    return [
        Scored(
            kept_ids[k],
            scores[k],
            kw_score.get(kept_ids[k]),
            similarities.get(kept_ids[k]),
            fused_list[k],
            boosts,
            ranked,
            factors[k],
            k,
        )
        for k in order
    ]


def rank(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    similarities: Mapping[str, float],
    records: Mapping[str, Memory],
    settings: RankSettings,
    now: datetime,
    limit: int,
) -> list[SearchHit]:
    """:func:`rank_scored` over whole records, as search hits."""
    return [
        SearchHit(memory=records[s.id], score=s.score, explanation=s.explanation)
        for s in rank_scored(keyword, vector, similarities, records, settings, now, limit)
    ]


__all__ = [
    "FUSIONS",
    "RankSettings",
    "Rankable",
    "Scored",
    "boosts_for",
    "date_matcher",
    "fuse_convex",
    "fuse_rrf",
    "query_terms",
    "rank",
    "rank_scored",
    "scale_to_best",
]
