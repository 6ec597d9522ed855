"""Judging and ordering a search's candidates: every candidate judged, only the hits returned explained.

Search judges every candidate (:func:`funes.memory.relevance.signal_judge`)
so that the order never depends on ``limit``, but returns ``limit`` hits.
This module orders the candidates on plain numbers (relevance, question
share, fused score, id, chat place) and builds the explanation, signals and
:class:`~funes.models.SearchHit` of the hits returned only: the same hits,
order and numbers as explaining every candidate first, at a fraction of the
objects.

* Calibrated model (:func:`answers_first` order): best relevance first, a
  stored question never above the turn of its session that answers it.
* Another model (:func:`monotone` order): the fused score orders, and the
  relevance shown is capped by the hit above; candidates are judged in that
  order until ``limit`` hits are found.

The parts of one chat message collapse into one hit (its best part).

May import: ``funes.models``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ..models import Explanation, JudgedRecord, Memory, SearchHit
from .relevance import Judged, SignalValues, signal_dict
from .turns import place


class Candidate(Judged, Protocol):
    """A fused candidate (:class:`funes.memory.ranking.Scored`)."""

    @property
    def id(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def explanation(self) -> Explanation: ...


# (relevance shown, signals, calibrated probability): funes.memory.relevance.signal_judge's answer.
Judge = Callable[[Candidate, Memory | JudgedRecord], tuple[float, SignalValues, float]]
# Each candidate's relevance bound, never under what the judge shows for it (funes.memory.relevance.SignalJudge.bounds).
Bounds = Callable[[Sequence[Candidate]], list[float]]


def _judge_all(present: Sequence[tuple[Candidate, Memory | JudgedRecord]], judge: Judge) -> list[_Judged]:
    """The candidates judged: in one batch on columns when the judge can (``SignalJudge.many``: the same numbers)."""
    many = getattr(judge, "many", None)
    if many is None:
        return [_Judged(s, memory, judge(s, memory)) for s, memory in present]
    found = many([s for s, _ in present], [memory for _, memory in present])
    return [_Judged(s, memory, j) for (s, memory), j in zip(present, found, strict=True)]


class _Judged:
    """One judged candidate, before it is explained."""

    __slots__ = ("answers", "calibrated", "memory", "own", "question", "relevance", "scored", "signals")

    def __init__(
        self, scored: Candidate, memory: Memory | JudgedRecord, judged: tuple[float, SignalValues, float]
    ) -> None:
        self.scored, self.memory = scored, memory
        self.relevance, self.signals, self.calibrated = judged
        self.own = self.relevance  # before an answer is raised to its question's
        # As the signals dict reads it back: ``float(signals.get("question") or 0.0)``.
        self.question = float(self.signals[3] or 0.0)
        self.answers: float | None = None  # the relevance of the question this turn answers

    def hit(self, relevance: float) -> SearchHit:
        signals = signal_dict(self.signals, self.calibrated)
        if self.answers is not None:
            signals["answers"] = self.answers
        explained = getattr(self.scored, "explained", None)  # ranking.Scored: made once, with the judged values
        if explained is not None:
            explanation = explained(relevance, signals)
        else:
            explanation = replace(self.scored.explanation, relevance=relevance, signals=signals)
        # A partial record (JudgedRecord) until search swaps in the whole one for the hits it returns.
        return SearchHit(memory=self.memory, score=self.scored.score, explanation=explanation)  # type: ignore[arg-type]


def ordered_hits(
    scored: Sequence[Candidate],
    records: Mapping[str, Memory] | Mapping[str, JudgedRecord],
    judge: Judge,
    *,
    calibrated: bool,
    limit: int,
) -> list[SearchHit]:
    """The best ``limit`` hits of the candidates, judged and ordered, one per chat message.

    ``records`` holds what judging reads of each candidate (a candidate
    without one was deleted meanwhile: left out); ``calibrated``: the
    embedder is one the relevance model was fitted for.
    """
    # A candidate deleted between the two reads has no record: left out.
    present = [(s, memory) for s in scored if (memory := records.get(s.id)) is not None]
    bounds: Bounds | None = getattr(judge, "bounds", None)
    if calibrated and bounds is not None and limit < len(present):
        return _bounded(present, judge, bounds, limit)
    if calibrated:
        judged = _judge_all(present, judge)
        order: Iterable[tuple[_Judged, float]] = ((j, j.relevance) for j in answers_first(judged))
    else:
        # The fused score orders: candidates are judged in that order until ``limit`` hits are found.
        present.sort(key=lambda p: (-p[0].score, p[1].id))
        order = monotone(_Judged(s, memory, judge(s, memory)) for s, memory in present)
    return [j.hit(relevance) for j, relevance in _first(order, limit)]


def _first(order: Iterable[tuple[_Judged, float]], limit: int) -> list[tuple[_Judged, float]]:
    """The first ``limit`` of the ordered candidates, one per chat message (its best part)."""
    out: list[tuple[_Judged, float]] = []
    seen: set[str] = set()
    for candidate, relevance in order:
        message = _message_of(candidate.memory)
        if message is not None:
            if message in seen:
                continue  # a long message's better part is already a hit: one message, one hit
            seen.add(message)
        out.append((candidate, relevance))
        if len(out) == limit:
            break
    return out


def _bounded(
    present: list[tuple[Candidate, Memory | JudgedRecord]], judge: Judge, bounds: Bounds, limit: int
) -> list[SearchHit]:
    """:func:`answers_first`'s first ``limit`` hits, judging only the candidates that could be among them.

    A candidate's relevance is at most its bound (read without its text)
    or, for the turn after a stored question, that question's bound (an
    answer shows its question's relevance). Candidates are judged best bound
    first until the ``limit``-th hit of those judged shows more than every
    bound left: the rest would order after it, and raising an answer to an
    unjudged question's relevance moves only turns below it. The same hits,
    order and numbers as judging every candidate.
    """
    keys = [place(memory) for _, memory in present]
    turns = {key: n for n, key in enumerate(keys) if key is not None}  # the last candidate of each turn
    most = bounds([s for s, _ in present])
    for n, key in enumerate(keys):  # the turn after a question may show the question's relevance
        at = turns.get((key[0], key[1] + 1)) if key is not None else None
        if at is not None and most[at] < most[n]:
            most[at] = most[n]
    pending = sorted(range(len(present)), key=lambda n: -most[n])
    judged: dict[int, _Judged] = {}
    done, take = 0, limit
    while True:
        batch = pending[done : done + take]
        judged.update(zip(batch, _judge_all([present[n] for n in batch], judge), strict=True))
        done += take
        found = _first(((j, j.relevance) for j in _answered(judged, keys, turns)), limit)
        least = found[-1][1] if len(found) == limit else -1.0  # the relevance the last hit shows
        # Under the bar by more than rounding: never shown above the last hit (ties would need the judge).
        take = next((k for k, n in enumerate(pending[done:]) if most[n] < least - 1e-12), len(pending) - done)
        if take == 0:
            return [j.hit(relevance) for j, relevance in found]


def _answered(
    judged: dict[int, _Judged], keys: list[tuple[str, int] | None], turns: dict[tuple[str, int], int]
) -> list[_Judged]:
    """:func:`answers_first` of the judged candidates (keyed by their place among all), each answer raised afresh:
    a question's own relevance (before any answer was raised) is what its answer shows."""
    for j in judged.values():
        j.answers = None
        j.relevance = j.own
    for n in sorted(judged):
        j, key = judged[n], keys[n]
        if key is None or j.question < 0.5:
            continue
        answer = judged.get(turns.get((key[0], key[1] + 1), -1))
        if answer is None or answer.question >= 0.5 or answer.relevance >= j.own:
            continue
        answer.relevance = answer.answers = j.own
    return sorted(judged.values(), key=lambda j: (-j.relevance, j.question, -j.scored.score, j.memory.id))


def answers_first(judged: list[_Judged]) -> list[_Judged]:
    """The candidates best first by the relevance they show, a stored question never above the turn that answers it.

    A chat message that asks (``question`` signal at least one half) repeats
    the words of a later query without answering it; the next message of its
    session is the answer. When both are candidates, the answer shows at least
    the question's relevance (``signals["answers"]`` says so) and, on a tie,
    comes first.
    """
    keys = [place(j.memory) for j in judged]
    turns = {key: n for n, key in enumerate(keys) if key is not None}
    return _answered(dict(enumerate(judged)), keys, turns)


def monotone(judged: Iterable[_Judged]) -> Iterator[tuple[_Judged, float]]:
    """Candidates in their order, each with at most the relevance of the one above it.

    Lazy: the caller stops at ``limit``.
    """
    cap = 1.0
    for j in judged:
        relevance = cap if j.relevance > cap else j.relevance
        cap = relevance
        yield j, relevance


def _message_of(memory: Memory | JudgedRecord) -> str | None:
    """The chat message a record is a part of (None for other records)."""
    if memory.kind != "message" or memory.source is None:
        return None
    message = memory.source.locator.get("message_id")
    return str(message) if message else None


__all__ = ["answers_first", "monotone", "ordered_hits"]
