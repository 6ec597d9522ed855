"""A chat turn's vector, read with the turn it follows: the blend, and the paths that embed stored turns again.

A reply says little alone ("Yes, twice, and I loved it!"); what it is about is
often in the turn before it. A one-part message record's vector is therefore
the unit vector of ``TURN_WEIGHT × own + (1 − TURN_WEIGHT) × previous``: the
turn's own vector blended with the previous turn's own vector (its last part).
There is still one vector per record, so the store, the vector index and
search are unchanged, and a query costs no extra embedding.

:mod:`funes.conversations.turn_context` blends turns as they are written.
:func:`in_context` does the same for turns embedded again later: by
``funes reindex`` (a model change) and by the ``vectors`` job that embeds what
was accepted while the embedder was down. So a store gives its turns the same
vectors whichever path embedded them.

Measured on LoCoMo (bench/context_bench.py, docs/benchmarks.md "Third pass"):
own-turn R@1, R@10 and MRR rise; SciFact and the agent-memory set hold no chat
turns and are unchanged. 0.75 is the largest turn share that left held-out
SciFact unchanged when the relevance model was refitted leaving each data set
out.

May import: ``funes.models``, ``funes.store``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..models import JudgedRecord, Memory

if TYPE_CHECKING:
    from ..store import Store
    from .embedding import Embedding

#: The turn's own vector's share of the blend (the previous turn's vector has the rest).
TURN_WEIGHT = 0.75


def blend(own: np.ndarray, previous: np.ndarray, weight: float | None = None) -> np.ndarray:
    """The unit vector of ``weight × own + (1 − weight) × previous`` (``weight``: :data:`TURN_WEIGHT` unless given)."""
    weight = TURN_WEIGHT if weight is None else weight
    mixed = weight * np.asarray(own, dtype=np.float32) + (1.0 - weight) * np.asarray(previous, dtype=np.float32)
    norm = float(np.linalg.norm(mixed))
    return mixed / norm if norm else np.asarray(own, dtype=np.float32)


def place(memory: Memory | JudgedRecord) -> tuple[str, int] | None:
    """A chat message record's session and place in it (None for other records)."""
    if memory.kind != "message" or memory.source is None:
        return None
    seq = memory.source.locator.get("seq")
    session = memory.session_id or memory.source.locator.get("session")
    if not isinstance(seq, int) or isinstance(seq, bool) or not session:
        return None
    return str(session), seq


def in_context(
    store: Store, embedding: Embedding, records: Sequence[Memory], vectors: list[list[np.ndarray]]
) -> list[list[np.ndarray]]:
    """``vectors`` (each record's own, in order) with every one-part turn blended with the turn before it.

    What :func:`funes.conversations.turn_context.turn_vectors` gives a turn as
    it is written: a message stored as one record, after a message with text,
    is blended; a session's first message and a message split into parts keep
    their own vectors. The previous turns are read in one statement per
    session (``Store.turns_near``); their vectors come from the embedding cache
    when they were embedded before. Raises what the embedder raises.
    """
    wanted: dict[str, dict[int, tuple[str, int]]] = {}
    for n, (memory, own) in enumerate(zip(records, vectors, strict=True)):
        at = place(memory)
        if at is not None and len(own) == 1:
            wanted.setdefault(memory.tenant, {})[n] = at
    if not wanted:
        return vectors
    previous: dict[int, str] = {}
    for tenant, anchors in wanted.items():
        turns = {(t.session_id, t.seq): t for t in store.turns_near(tenant, sorted(set(anchors.values())), 1)}
        for n, (session, seq) in anchors.items():
            turn, before = turns.get((session, seq)), turns.get((session, seq - 1))
            if turn is None or len(turn.record_ids) != 1 or before is None or not before.content.strip():
                continue  # a message in parts, or the first one with text: its own vector
            previous[n] = before.content.strip()
    if not previous:
        return vectors
    last_parts = [embedding.parts(text)[-1] for text in previous.values()]
    matrix = embedding.embed(last_parts)
    out = list(vectors)
    for row, n in enumerate(previous):
        out[n] = [blend(vectors[n][0], matrix[row])]
    return out


__all__ = ["TURN_WEIGHT", "blend", "in_context", "place"]
