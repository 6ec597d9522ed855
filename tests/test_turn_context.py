"""A chat turn's vector is blended with the turn it follows (issue 28): a short reply means what it answers.

With the real local model: the same reply stored after two different
questions gets two different vectors, and a search about one question finds
its own reply first; one message at a time and a batch give the same vectors;
a session's first message and a long message split into parts keep their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import funes
from funes.errors import EmbedderUnavailable
from funes.memory.turns import TURN_WEIGHT, blend

REPLY = "Yes, twice, and I loved every minute of it!"


@pytest.fixture
def real(tmp_path: Path, local_embedder: Any) -> Iterator[funes.Funes]:
    service = funes.open(str(tmp_path / "turns.db"), embedder=local_embedder)
    yield service
    service.close()


def _vector(mem: funes.Funes, record_id: str) -> np.ndarray:
    return np.asarray(mem.store.vectors_for([record_id])[record_id][0])


def test_the_same_reply_after_two_questions_is_found_for_its_own_question(real: funes.Funes) -> None:
    pottery = real.session("pottery")
    pottery.add_message("user", "Did you go to the pottery class at the community centre?")
    kept = pottery.add_message("assistant", REPLY)
    football = real.session("football")
    football.add_message("user", "Did you watch the football final with your brother?")
    other = football.add_message("assistant", REPLY)

    # One text, two vectors: each reply is read with the question it answers.
    own = real.embed_records([REPLY])[0][0]
    mine, theirs = _vector(real, kept.record_ids[0]), _vector(real, other.record_ids[0])
    assert not np.allclose(mine, theirs)
    question = real.embed_records(["Did you go to the pottery class at the community centre?"])[0][0]
    assert np.allclose(mine, blend(own, question), atol=1e-5)
    assert float(mine @ own) > TURN_WEIGHT  # still mostly the turn itself

    hits = real.search("How often did she go to the pottery class?", min_relevance=0, limit=10)
    replies = [h for h in hits if h.memory.content == REPLY]
    assert [h.memory.id for h in replies] == [kept.record_ids[0], other.record_ids[0]]
    assert replies[0].explanation.signals["cosine"] > replies[1].explanation.signals["cosine"] + 0.05


def test_a_session_first_message_and_a_long_message_keep_their_own_vectors(real: funes.Funes) -> None:
    session = real.session("plans")
    first = session.add_message("user", "We should plan the offsite for the spring.")
    assert np.allclose(_vector(real, first.record_ids[0]), real.embed_records([first.content])[0][0], atol=1e-5)
    long_text = " ".join(f"Point {n}: the venue needs a projector, parking and a quiet room." for n in range(60))
    long = session.add_message("assistant", long_text)
    assert len(long.record_ids) > 1  # split into parts: each part keeps its own vector
    parts = real.embed_records([long_text])[0][: len(long.record_ids)]  # its text's parts (passage windows follow)
    for record_id, part in zip(long.record_ids, parts, strict=True):
        assert np.allclose(_vector(real, record_id), part, atol=1e-5)


def test_a_batch_reads_each_turn_with_the_one_before_it(real: funes.Funes) -> None:
    added = real.session("batch").add_messages(
        [
            {"role": "user", "content": "Did you go to the pottery class at the community centre?"},
            {"role": "assistant", "content": REPLY},
        ]
    )
    single = real.session("single")
    single.add_message("user", "Did you go to the pottery class at the community centre?")
    one = single.add_message("assistant", REPLY)
    batched = _vector(real, added[1].record_ids[0])
    assert np.allclose(batched, _vector(real, one.record_ids[0]), atol=1e-5)
    assert not np.allclose(batched, real.embed_records([REPLY])[0][0], atol=1e-3)


def test_blend_is_a_unit_vector_weighted_towards_the_turn() -> None:
    own, view = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    mixed = blend(own, view)
    assert np.isclose(float(np.linalg.norm(mixed)), 1.0)
    assert mixed[0] > mixed[1] > 0


def test_a_batch_appended_to_a_session_reads_its_first_turn_with_the_stored_one(real: funes.Funes) -> None:
    session = real.session("later")
    session.add_message("user", "Did you go to the pottery class at the community centre?")
    added = session.add_messages([{"role": "assistant", "content": REPLY}, {"role": "user", "content": "Great!"}])
    own, question = real.embed_records([REPLY, "Did you go to the pottery class at the community centre?"])
    assert np.allclose(_vector(real, added[0].record_ids[0]), blend(own[0], question[0]), atol=1e-5)
    great = real.embed_records(["Great!"])[0][0]
    assert np.allclose(_vector(real, added[1].record_ids[0]), blend(great, own[0]), atol=1e-5)


class _Outage:
    """The real model behind a switch: while ``down``, every call fails as a remote embedder's outage does."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.down = inner, False
        self.model_id, self.dimensions, self.max_tokens = inner.model_id, inner.dimensions, inner.max_tokens

    def embed_batch(self, texts: Any, *, query: bool = False) -> np.ndarray:
        if self.down:
            raise EmbedderUnavailable("the embedding service is down", hint="wait")
        return np.asarray(self.inner.embed_batch(texts, query=query))

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))


def _conversation(mem: funes.Funes) -> list[str]:
    session = mem.session("pottery")
    added = session.add_messages(
        [
            {"role": "user", "content": "Did you go to the pottery class at the community centre?"},
            {"role": "assistant", "content": REPLY},
            {"role": "user", "content": "What did you make there?"},
        ]
    )
    return [m.record_ids[0] for m in added]


def test_turns_embedded_again_by_reindex_get_the_vectors_they_were_written_with(
    tmp_path: Path, local_embedder: Any
) -> None:
    with funes.open(str(tmp_path / "again.db"), embedder=local_embedder, worker="off") as mem:
        ids = _conversation(mem)
        written = [_vector(mem, i) for i in ids]
        assert not np.allclose(written[1], mem.embed_records([REPLY])[0][0], atol=1e-4)  # blended when written
        assert mem.reindex() == 3
        for record_id, vector in zip(ids, written, strict=True):
            assert np.allclose(_vector(mem, record_id), vector, atol=1e-5)


def test_turns_embedded_by_the_vectors_job_after_an_outage_are_read_with_their_context(
    tmp_path: Path, local_embedder: Any
) -> None:
    outage = _Outage(local_embedder)
    with funes.open(str(tmp_path / "up.db"), embedder=local_embedder, worker="off") as mem:
        expected = [_vector(mem, i) for i in _conversation(mem)]
    with funes.open(str(tmp_path / "down.db"), embedder=outage, worker="off") as mem:
        outage.down = True
        ids = _conversation(mem)
        assert mem.store.pending_vectors() == 3
        outage.down = False
        assert mem.jobs.run_pending()["done"] >= 1
        assert mem.store.pending_vectors() == 0
        for record_id, vector in zip(ids, expected, strict=True):
            assert np.allclose(_vector(mem, record_id), vector, atol=1e-5)
