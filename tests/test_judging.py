"""Search explains only the hits it returns: the same hits, order and numbers as explaining every candidate.

The reference is the path before issue 29's change: each candidate judged
into a new explanation, then ordered as SearchHits
(``_answers_first_reference`` / ``_monotone_reference``, the functions it
used, kept here). The new path (:func:`funes.memory.judging.ordered_hits`)
judges into plain numbers and explains the hits returned. Both are fed the
same candidates of real searches over a store with chats (questions and
their answers, long messages stored in parts), for the calibrated and the
uncalibrated order and several limits. The judging shortcuts (coverage
prepared once per query, no regex for a text without a question mark) are
checked against the plain functions on generated texts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_search_parity import _fill, _queries

import funes
import funes.memory.search as search_mod
from funes.memory import judging
from funes.memory.relevance import (
    COEFFICIENTS,
    INTERCEPT,
    KEYWORD_COEFFICIENTS,
    KEYWORD_INTERCEPT,
    Signals,
    _prepared_coverage,
    _sigmoid,
    coverage,
    feature_vector,
    idf,
    keyword_feature_vector,
    question_share,
    relevance,
    signal_dict,
    signal_judge,
)
from funes.memory.turns import place
from funes.models import SearchHit, utcnow
from funes.providers.embed import HashEmbedder


def _question(hit: SearchHit) -> float:
    return float((hit.explanation.signals or {}).get("question") or 0.0)


def _answers_first_reference(hits: list[SearchHit]) -> list[SearchHit]:
    turns = {key: n for n, h in enumerate(hits) if (key := place(h.memory)) is not None}
    out = list(hits)
    for hit in hits:
        key = place(hit.memory)
        if key is None or _question(hit) < 0.5:
            continue
        n = turns.get((key[0], key[1] + 1))
        if n is None or _question(out[n]) >= 0.5 or out[n].relevance >= hit.relevance:
            continue
        answer = out[n]
        signals = {**(answer.explanation.signals or {}), "answers": hit.relevance}
        out[n] = replace(answer, explanation=replace(answer.explanation, relevance=hit.relevance, signals=signals))
    out.sort(key=lambda h: (-h.relevance, _question(h), -h.score, h.memory.id))
    return out


def _monotone_reference(hits: Iterable[SearchHit]) -> Iterator[SearchHit]:
    cap = 1.0
    for hit in hits:
        if hit.relevance > cap:
            hit = replace(hit, explanation=replace(hit.explanation, relevance=cap))
        cap = hit.relevance
        yield hit


def _reference(scored: Any, records: Any, judge: Any, *, calibrated: bool, limit: int) -> list[SearchHit]:
    """Every candidate explained, then ordered (search before the change)."""

    def explained(explanation: Any, memory: Any) -> Any:
        shown, signals, calibrated_ = judge(explanation, memory)
        return replace(explanation, relevance=shown, signals=signal_dict(signals, calibrated_))

    judged = [
        SearchHit(memory=memory, score=s.score, explanation=explained(s.explanation, memory))
        for s in scored
        if (memory := records.get(s.id)) is not None
    ]
    if calibrated:
        ordered: Iterable[SearchHit] = _answers_first_reference(judged)
    else:
        ordered = _monotone_reference(sorted(judged, key=lambda h: (-h.score, h.memory.id)))
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for hit in ordered:
        message = judging._message_of(hit.memory)
        if message is not None:
            if message in seen:
                continue
            seen.add(message)
        hits.append(hit)
        if len(hits) == limit:
            break
    return hits


def test_search_explains_only_what_it_returns_with_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = {"calibrated": 0, "uncalibrated": 0, "answers": 0, "parts": 0}

    def checked(scored: Any, records: Any, judge: Any, *, calibrated: bool, limit: int) -> list[SearchHit]:
        for order in (True, False):
            for n in (1, 3, limit, len(scored)):
                got = judging.ordered_hits(scored, records, judge, calibrated=order, limit=n)
                assert got == _reference(scored, records, judge, calibrated=order, limit=n)
                compared["calibrated" if order else "uncalibrated"] += len(got)
                compared["answers"] += sum("answers" in (h.explanation.signals or {}) for h in got)
        compared["parts"] += len(scored) - len({judging._message_of(r) or r.id for r in records.values()})
        return judging.ordered_hits(scored, records, judge, calibrated=calibrated, limit=limit)

    monkeypatch.setattr(search_mod, "ordered_hits", checked)
    with funes.open(str(tmp_path / "j.db"), embedder=HashEmbedder(64), worker="off") as mem:
        _fill(mem, seed=5)
        at = utcnow()
        for query in _queries(6):
            mem.search(query, min_relevance=0, track=False, as_of=at)
            mem.search(query, min_relevance=0, track=False, as_of=at, limit=3, scopes=["team"])
    # The comparison saw many hits of both orders, answers raised to their question, and messages in parts.
    assert compared["calibrated"] > 1000 and compared["uncalibrated"] > 1000
    assert compared["answers"] > 0 and compared["parts"] > 0


_WORDS = [
    "deploy",
    "deploying",
    "deployed",
    "invoice",
    "invoices",
    "vendor",
    "Acme",
    "renews",
    "发票",
    "到期",
    "résumé",
    "happy",
]
_text = st.lists(st.sampled_from([*_WORDS, "the", "a", "?", ".", "!", " ", "\n", "x"]), max_size=40).map(" ".join)
# Texts whose words run into the terms (no spaces, underscores, digits, accents, Greek, CJK): where word boundaries are.
_glued = st.lists(
    st.sampled_from([*_WORDS, "re", "_", "9", "é", "ΣΑΣ", "İ", "x", "-", " ", "ing", "s", "\u0307", "发", "½", "⁄"]),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(st.sampled_from([w.lower() for w in _WORDS] + ["renew", "deploys"]), max_size=4, unique=True),
    text=_text,
    counts=st.lists(st.integers(0, 1000), min_size=6, max_size=6),
)
def test_coverage_prepared_once_per_query_is_coverage(terms: list[str], text: str, counts: list[int]) -> None:
    weights = {t: idf(1000, c) for t, c in zip(terms, counts, strict=False)}
    assert _prepared_coverage(terms, weights)(text) == coverage(terms, text, weights)


@settings(max_examples=600, deadline=None)
@given(
    terms=st.lists(
        st.sampled_from(
            [w.lower() for w in _WORDS]
            + ["renew", "deploys", "re", "x_9", "é", "σας", "i̇", "9", "resume", "happi", "½", "1⁄2"]
        ),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    text=_glued,
)
@example(terms=["deploy"], text="9deploy")
@example(terms=["deploy"], text="_deploy deployé")
@example(terms=["deploy", "re"], text="ΣΑΣdeploy redeploy re9")
@example(terms=["resume", "deploy"], text="Résumé redéployé déploy")
@example(terms=["½", "1⁄2"], text="½ 1⁄2")
def test_coverage_finds_the_words_the_terms_pattern_finds(terms: list[str], text: str) -> None:
    """The prepared coverage finds words by str.find; the reference runs the terms' regex over the text."""
    weights = {t: 1.0 + n for n, t in enumerate(terms)}
    assert _prepared_coverage(terms, weights)(text) == coverage(terms, text, weights)


_SENTENCE = re.compile(r"[^.?!]*\w[^.?!]*(?:[.?!]+|$)", re.UNICODE)


def _question_share_reference(text: str) -> float:
    sentences = [m.group(0) for m in _SENTENCE.finditer(text[:2000])]
    if not sentences:
        return 0.0
    return sum(s.rstrip().endswith("?") for s in sentences) / len(sentences)


@settings(max_examples=300, deadline=None)
@given(text=_text, pad=st.integers(0, 2100))
def test_question_share_without_a_question_mark_skips_the_regex(text: str, pad: int) -> None:
    for candidate in (text, "word " * (pad // 5) + text):
        assert question_share(candidate) == _question_share_reference(candidate)


_unit = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=500, deadline=None)
@given(
    cosine=st.one_of(st.floats(-1.0, 1.0, allow_nan=False), st.just(0.0), st.none()),
    keyword=_unit,
    cover=_unit,
    question=_unit,
    absent=_unit,
    named=st.sampled_from([0.0, 1.0]),
)
def test_relevance_adds_the_features_as_the_fitted_model_sums_them(
    cosine: float | None, keyword: float, cover: float, question: float, absent: float, named: float
) -> None:
    signals = Signals(cosine, keyword, cover, question, absent, named)
    if cosine is None:  # keyword-only search: the keyword model
        features, intercept, weights = keyword_feature_vector(signals), KEYWORD_INTERCEPT, KEYWORD_COEFFICIENTS
    else:
        features, intercept, weights = feature_vector(signals), INTERCEPT, COEFFICIENTS
    assert relevance(signals) == _sigmoid(intercept + sum(w * v for w, v in zip(weights, features, strict=True)))


def test_a_candidate_explains_itself_once_with_what_judging_read() -> None:
    from datetime import timedelta

    from funes.memory.ranking import RankSettings, rank_scored
    from funes.models import RankFields

    now = utcnow()
    records = {
        i: RankFields(
            id=i, scope="team", project_id=None, importance=0.5, updated_at=now - timedelta(days=n), expires_at=None
        )
        for n, i in enumerate("abc")
    }
    keyword, vector = [("a", 3.0), ("b", 1.0)], [("b", 0.9), ("c", 0.5)]
    scored = rank_scored(keyword, vector, {"a": 0.2, "b": 0.9, "c": 0.5}, records, RankSettings(), now, 10)
    ranks = {s.id: (s.explanation.keyword_rank, s.explanation.vector_rank) for s in scored}
    assert ranks == {"a": (1, None), "b": (2, 1), "c": (None, 2)}
    for s in scored:
        explanation = s.explanation
        assert explanation is s.explanation  # made once
        assert (explanation.keyword_score, explanation.vector_similarity, explanation.boosts, explanation.score) == (
            s.keyword_score,
            s.vector_similarity,
            s.boosts,
            s.score,
        )
        assert sum(explanation.contributions.values()) == explanation.fused
        assert explanation.score == pytest.approx(explanation.fused * math.prod(explanation.boosts.values()))


class _Fused:
    """What judging reads of a fused candidate."""

    def __init__(self, keyword_score: float | None, vector_similarity: float | None, boosts: dict[str, float]) -> None:
        self.keyword_score, self.vector_similarity, self.boosts = keyword_score, vector_similarity, boosts


def _query_judge(terms: list[str], counts: list[int], has_vector: bool, seen: list[bool]) -> Any:
    """A query's judge: ``counts`` the terms' row counts in 1000, ``seen`` which terms a visible record holds."""
    present = {t for t, s in zip(terms, seen, strict=False) if s}
    return signal_judge(
        terms, 1000, dict(zip(terms, counts, strict=False)), has_vector=has_vector, present=present, names={"acme"}
    )


def _fused(bm25: float | None, cosine: float | None, boosts: list[float]) -> _Fused:
    return _Fused(bm25, cosine, dict(zip(("project", "importance", "recency", "date"), boosts, strict=False)))


@settings(max_examples=600, deadline=None)
@given(
    terms=st.lists(st.sampled_from([w.lower() for w in _WORDS] + ["renew", "deploys"]), max_size=4, unique=True),
    text=_text,
    counts=st.lists(st.integers(0, 1000), min_size=6, max_size=6),
    cosine=st.one_of(st.floats(-1.0, 1.0, allow_nan=False), st.none()),
    bm25=st.one_of(st.none(), st.floats(0.0, 40.0, allow_nan=False)),
    boosts=st.lists(st.floats(0.5, 2.0, allow_nan=False), max_size=4),
    has_vector=st.booleans(),
    seen=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_a_candidates_bound_is_never_under_the_relevance_it_shows(
    terms: list[str],
    text: str,
    counts: list[int],
    cosine: float | None,
    bm25: float | None,
    boosts: list[float],
    has_vector: bool,
    seen: list[bool],
) -> None:
    """Ordering skips a candidate on its bound: the bound holds whatever the record's text (coverage, questions)."""
    judge = _query_judge(terms, counts, has_vector, seen)
    fused = _fused(bm25, cosine, boosts)
    for record in (text, " ".join(terms), " ".join(terms) + "?", ""):
        memory = SimpleNamespace(title=None, content=record)
        assert judge(fused, memory)[0] <= judge.bound(fused)


def test_the_bound_is_what_a_text_holding_every_term_shows() -> None:
    """Tight where the text takes the best end of both text signals: not a bound far above every candidate."""
    terms = ["invoice", "vendor"]
    judge = signal_judge(terms, 1000, {"invoice": 3, "vendor": 40}, has_vector=True)
    for cosine in (0.05, 0.2, 0.4):
        fused = _Fused(5.0, cosine, {"importance": 1.1, "recency": 1.05})
        shown = judge(fused, SimpleNamespace(title=None, content="The vendor sent the invoice."))[0]
        assert shown <= judge.bound(fused) <= shown + 1e-8
