"""A chat turn's vector, read with the turn it follows.

A reply says little alone ("Yes, twice, and I loved it!"); what it is about is
often in the turn before it. A message record's vector is therefore the unit
vector of ``TURN_WEIGHT × own + (1 − TURN_WEIGHT) × previous``: the turn's own
vector blended with the previous turn's own vector. There is still one vector
per record, so the store, the vector index and search are unchanged, and a
query costs no extra embedding. Writing a message costs no extra embedding
either: the previous turn's vector comes from the embedding cache (the turns
of one batch are embedded together).

Measured on LoCoMo (bench/context_bench.py, docs/benchmarks.md "Third pass").
Blending with the previous turn's vector matched or beat embedding the two
turns as one text, and that text cost a second, longer embedding per message.
Funes' own-turn R@1, R@10 and MRR rise. SciFact and the agent-memory set hold
no chat turns, so they are unchanged, also when the relevance model is
refitted leaving each data set out. The weight 0.75 is the largest turn share
that left held-out SciFact unchanged in that refit. Lower weights gained a
little more on LoCoMo but moved SciFact.

A few turns keep their own vector:

* a session's first message;
* a message long enough to be split into parts (it carries its own context).

Turns embedded again later (``funes reindex`` after a model change, or the
``vectors`` job after the embedder was down) get the same blend from
:func:`funes.memory.turns.in_context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..memory.turns import blend

if TYPE_CHECKING:
    from ..memory.embedding import Embedding
    from ..models import Memory


def turn_vectors(
    embedding: Embedding, previous: str | None, messages: Sequence[Sequence[Memory]]
) -> list[list[np.ndarray]]:
    """The vectors of every message's records, in order; a one-record turn blended with the turn before it.

    ``messages``: the records each message is stored as (none for a message
    without text); ``previous``: the content of the session's message before
    the first one (None for a new session). One embedding call for the batch;
    the previous message's vector is usually in the embedding cache. Raises
    what the embedder raises.
    """
    texts = [embedding.embed_text(r) for rs in messages for r in rs]
    split = [embedding.parts(t) for t in texts]  # a long record is embedded in parts
    before = embedding.parts(previous.strip())[-1:] if previous and previous.strip() else []
    flat = [p for parts in split for p in parts] + before
    if not flat:
        return []
    matrix = embedding.embed(flat)
    own: list[list[np.ndarray]] = []
    start = 0
    for parts in split:
        own.append([matrix[start + j] for j in range(len(parts))])
        start += len(parts)
    last = matrix[start] if before else None  # the previous turn's own vector (its last part)
    out: list[list[np.ndarray]] = []
    index = 0
    for rs in messages:
        for _ in rs:
            vectors = own[index]
            single = len(rs) == 1 and len(vectors) == 1
            out.append([blend(vectors[0], last)] if single and last is not None else vectors)
            index += 1
        if rs:
            last = own[index - 1][-1]
    return out


__all__ = ["turn_vectors"]
