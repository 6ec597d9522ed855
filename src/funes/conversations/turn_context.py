"""A chat turn's vector, read together with the turn it follows.

A reply says little alone ("Yes, twice, and I loved it!"); what it is about is
often in the turn before it. A message record's vector is therefore the
normalised blend of the turn's own vector (weight :data:`TURN_WEIGHT`) and the
vector of the previous turn and this one read as one text (the *context
view*). One vector per record, as before: the store, the vector index and
search are unchanged, and a query costs no extra embedding; writing a message
costs one more embedding (the view) and a read of the session's last message.

Measured on LoCoMo (bench/context_bench.py, docs/benchmarks.md "Turns read
with the turn before them"): dense own-turn R@10 0.444 → 0.471 at this
weight, and Funes' hybrid own-turn R@1 and R@10 rise, with SciFact and the
agent-memory set unchanged (they hold no chat turns), also when the relevance
model is refitted leaving each data set out. A weight of 0.5 gained more on
LoCoMo but moved held-out SciFact in the refit, so the turn keeps most weight.

Kept to their own vector: a session's first message, a message long enough
to be split into parts (it carries its own context), and turns embedded later
(by the pending-embedding job after the embedder was down, or when the
embedding model changes). They are found as before, only without the context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..memory.embedding import Embedding
    from ..models import Memory

#: The turn's own vector's share of the blend (the context view has the rest).
TURN_WEIGHT = 0.7


def context_view(previous: str, turn: str, count_tokens: Callable[[str], int], max_tokens: int) -> str | None:
    """The previous turn then this one as one text the model reads whole (the previous turn's tail if need be).

    None when even a few words of the previous turn do not fit beside this turn.
    """
    words = previous.split()
    while words:
        view = " ".join(words) + "\n" + turn
        if count_tokens(view) <= max_tokens:
            return view
        if len(words) < 4:
            return None
        words = words[len(words) // 2 :]  # keep the end of the previous turn: it is what this one answers
    return None


def blend(own: np.ndarray, view: np.ndarray, weight: float | None = None) -> np.ndarray:
    """The unit vector of ``weight × own + (1 − weight) × view`` (``weight``: :data:`TURN_WEIGHT` unless given)."""
    weight = TURN_WEIGHT if weight is None else weight
    mixed = weight * np.asarray(own, dtype=np.float32) + (1.0 - weight) * np.asarray(view, dtype=np.float32)
    norm = float(np.linalg.norm(mixed))
    return mixed / norm if norm else np.asarray(own, dtype=np.float32)


def turn_vectors(
    embedding: Embedding, previous: str | None, messages: Sequence[tuple[str, Sequence[Memory]]]
) -> list[list[np.ndarray]]:
    """The vectors of every message's records, in order, each single-record turn blended with its context view.

    ``messages``: each message's content and the records it is stored as;
    ``previous``: the content of the session's message before the first one
    (None for a new session). Raises what the embedder raises.
    """
    texts = [embedding.embed_text(r) for _, rs in messages for r in rs]
    split = [embedding.parts(t) for t in texts]  # a long record is embedded in parts
    embedder = embedding.embedder
    views: dict[int, str] = {}
    position = 0
    for content, rs in messages:
        if len(rs) == 1 and len(split[position]) == 1 and previous:
            view = context_view(previous, texts[position], embedder.count_tokens, embedder.max_tokens)
            if view is not None:
                views[position] = view
        position += len(rs)
        if content.strip():
            previous = content.strip()
    # One embedding call for the turns and their views together.
    flat = [p for parts in split for p in parts] + list(views.values())
    matrix = embedding.embed(flat) if flat else np.zeros((0, embedder.dimensions), dtype=np.float32)
    vectors: list[list[np.ndarray]] = []
    start = 0
    for parts in split:
        vectors.append([matrix[start + j] for j in range(len(parts))])
        start += len(parts)
    for index, view_vector in zip(views, matrix[start:], strict=True):
        vectors[index] = [blend(vectors[index][0], view_vector)]
    return vectors
