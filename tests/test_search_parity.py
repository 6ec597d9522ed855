"""Search reads whole records only for the hits it returns: the same hits, order, numbers and explanations.

On SQLite every candidate is judged and ordered from a partial record (its
text, kind and place in a chat: ``judge_records``), and only the hits
returned are read whole. The reference is the path that reads every
candidate whole (PostgreSQL's, and SQLite's before): a store without
``judge_records`` takes it. Both answer the same queries over the same store.
"""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

import pytest

import funes
from funes.models import utcnow
from funes.providers.embed import HashEmbedder

TOPICS = (
    "deploy the billing service to the eu region",
    "invoice 4471 from the hosting vendor is overdue",
    "the quarterly budget review moved to thursday",
    "Maria prefers window seats on long flights",
    "backup of the customer database failed last night",
    "the onboarding checklist needs a security section",
    "latency alerts fire when p95 passes 300 ms",
    "our contract with Acme renews in March",
)
TITLED = ("kubernetes upgrade", "payroll export", "visa renewal")  # words only titles hold
ANSWERED = (  # a stored question and the turn that answers it: the answer is ordered first
    ("When does the contract with Acme renew?", "It renews in March, and the notice period is 60 days."),
    ("Who prefers window seats?", "Maria does, on every flight longer than three hours."),
    ("What failed last night?", "The customer database backup failed at 02:00."),
    ("Which invoice is overdue?", "Invoice 4471 from the hosting vendor, by two weeks."),
)
QUESTIONS = tuple(q for q, _ in ANSWERED)
SENTENCES = (  # long notes of these get passage windows: a hit explains the sentence that matched best
    "The billing service moves to the eu region after the audit.",
    "Invoice 4471 is still unpaid and the vendor has called twice.",
    "Maria asked for a window seat on the flight to Lisbon.",
    "The database backup now runs at two in the morning.",
    "Security training is part of onboarding from next quarter.",
    "Latency alerts go to the on-call engineer first.",
    "The Acme contract has a sixty day notice period.",
    "Thursday's budget review needs the hosting figures.",
)


def _fill(mem: funes.Funes, seed: int) -> None:
    rng = random.Random(seed)
    texts = [f"{rng.choice(TOPICS)} (note {i}, {rng.choice(TOPICS).split()[-1]})" for i in range(240)]
    mem.remember_many(texts[:200])
    for n, text in enumerate(texts[200:]):
        mem.remember(text, title=f"Runbook {n}: {rng.choice(TITLED)}", importance=rng.random())
    for n in range(6):  # long notes: their windows are further vectors (and the vector count a partial record reads)
        mem.remember(" ".join(rng.sample(SENTENCES, 8) * 2), title=f"Handbook {n}")
    for s in range(16):  # chats: questions with their answers, some long answers stored in parts
        question, answer = ANSWERED[s % len(ANSWERED)]
        filler = f" {rng.choice(TOPICS)}." * (2 + 60 * (s % 3 == 0))
        mem.session(f"chat-{s}").add_messages(
            [
                {"role": "user", "content": question},
                {"role": "assistant", "content": answer + filler},
                {"role": "user", "content": f"Thanks! And {rng.choice(QUESTIONS).lower()}"},
            ]
        )


def _queries(seed: int) -> list[str]:
    rng = random.Random(seed)
    words = " ".join(TOPICS + QUESTIONS).replace("?", "").split()
    out = list(QUESTIONS) + [t.split(" the ")[0] for t in TOPICS] + [f"{t} {w}" for t in TITLED for w in words[:3]]
    out += [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(40)]
    return [*out, "nothing about zebras", "Acme", "window"]


def _answers(mem: funes.Funes, queries: list[str], at: datetime, **options: object) -> list[list[tuple[object, ...]]]:
    out = []
    for query in queries:
        # At one fixed time (as_of): recency boosts are measured from it, so two runs can compare exactly.
        results = mem.search(query, min_relevance=0, track=False, as_of=at, **options)  # type: ignore[arg-type]
        out.append([(h.memory, h.score, h.relevance, h.weak, h.explanation.to_dict(), h.context) for h in results])
    return out


def _whole_records_for_every_candidate(mem: funes.Funes) -> None:
    mem.store.judge_records = None  # type: ignore[attr-defined]  # what a store without the partial read does


def test_the_real_model_ranks_alike_from_partial_records(real_mem: funes.Funes) -> None:
    _fill(real_mem, seed=1)
    queries, at = _queries(2), utcnow()
    partial = _answers(real_mem, queries, at) + _answers(real_mem, queries[:12], at, limit=3, context_turns=0)
    assert sum(len(hits) for hits in partial) > 300
    assert any(h[4].get("passage") for hits in partial for h in hits)  # windows matched, and were explained
    _whole_records_for_every_candidate(real_mem)
    whole = _answers(real_mem, queries, at) + _answers(real_mem, queries[:12], at, limit=3, context_turns=0)
    assert whole == partial


def test_an_uncalibrated_model_ranks_alike_from_partial_records(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "h.db"), embedder=HashEmbedder(64), worker="off") as mem:
        _fill(mem, seed=3)
        queries, at = _queries(4), utcnow()
        partial = _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4)
        assert sum(len(hits) for hits in partial) > 300
        _whole_records_for_every_candidate(mem)
        assert _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4) == partial


@pytest.mark.postgres
def test_postgres_ranks_alike_from_the_partial_records_its_legs_read(pg_url: str) -> None:
    """On PostgreSQL the keyword and vector statements return their hits' partial records (funes.store.pg_judged)."""
    with funes.open(pg_url, embedder=HashEmbedder(64), worker="off") as mem:
        _fill(mem, seed=5)
        queries, at = _queries(6), utcnow()
        store = mem.store
        partial = _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4)
        assert sum(len(hits) for hits in partial) > 300
        assert any(h[4].get("passage") for hits in partial for h in hits)  # windows matched, and were explained
        store.exact_max = 0  # every search through the HNSW plan (its statement reads the partial records too)
        hnsw = _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4)
        _whole_records_for_every_candidate(mem)
        assert _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4) == hnsw
        store.exact_max = 4000
        assert _answers(mem, queries, at) + _answers(mem, queries[:10], at, scopes=["team"], limit=4) == partial
