"""Embedder protocol and implementations.

An embedder has an identity (``model_id``, ``dimensions``), a token limit
(``max_tokens``, in its own tokenizer's units, special tokens excluded), a
``count_tokens`` method for token-aware chunking, and one required method,
``embed_batch``. The service owns batching, caching and normalisation.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ...models import EmbedderIdentity

if TYPE_CHECKING:
    from ...models.config import Config


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors."""

    model_id: str
    dimensions: int
    max_tokens: int

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """One row per text, float32, shape (len(texts), dimensions)."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many of the model's tokens the text takes (special tokens excluded)."""
        ...


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag-of-words embedder for tests and demos: no model, no network.

    Words are hashed into buckets, so texts sharing words are similar. It has
    no notion of meaning; retrieval quality is tested with the real model.
    """

    def __init__(self, dimensions: int = 64, max_tokens: int = 256) -> None:
        self.dimensions = dimensions
        self.max_tokens = max_tokens
        self.model_id = f"funes-hash-{dimensions}"

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Hashed word counts, L2-normalised."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimensions
                sign = 1.0 if digest[4] & 1 else -1.0
                out[i, bucket] += sign
            norm = np.linalg.norm(out[i])
            if norm == 0:
                out[i, 0] = 1.0
            else:
                out[i] /= norm
        return out

    def count_tokens(self, text: str) -> int:
        """Words and punctuation marks, roughly a word-piece count."""
        return len(re.findall(r"\w+|[^\w\s]", text))


def check_output(vectors: object, count: int, dimensions: int, model_id: str) -> np.ndarray:
    """The embedder's output as a float32 matrix, or a clear error when it is malformed.

    An embedding server that returns zeros or NaN used to plant vectors that
    broke every search of their tenant (issue 9); nothing such is ever stored.
    """
    from ...errors import BackendUnavailable

    hint = (
        f"Nothing was written. Check the embedding server and its model ({model_id}); "
        "`funes config` shows embed_base_url and embed_model."
    )
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise BackendUnavailable(f"The embedder {model_id} returned something that is not vectors.", hint=hint) from exc
    if matrix.shape != (count, dimensions):
        raise BackendUnavailable(
            f"The embedder {model_id} returned shape {matrix.shape} for {count} texts of {dimensions} dimensions.",
            hint=hint,
        )
    finite = np.all(np.isfinite(matrix), axis=1)
    nonzero = np.any(matrix != 0, axis=1)
    bad = int(np.count_nonzero(~(finite & nonzero)))
    if bad:
        raise BackendUnavailable(
            f"The embedder {model_id} returned {bad} of {count} vectors that are all zeros or hold NaN/infinite values.",
            hint=hint,
        )
    return matrix


def configured_identity(config: Config, known: EmbedderIdentity | None = None) -> EmbedderIdentity | None:
    """The identity of the embedder the settings name, without creating it (None when only the server knows).

    ``known`` is the store's recorded identity: an OpenAI-compatible model the
    store already holds vectors of needs no probe for its size.
    """
    name = config.embedder
    if name == "local":
        from .local import DIMENSIONS, MODEL_ID

        return EmbedderIdentity(MODEL_ID, DIMENSIONS)
    if name.startswith("hash"):
        dims = int(name.split(":", 1)[1]) if ":" in name else 64
        return EmbedderIdentity(f"funes-hash-{dims}", dims)
    if name == "openai":
        from .openai import KNOWN_DIMENSIONS

        model_id = f"openai-compatible:{config.embed_model}"
        dims = config.embed_dimensions or KNOWN_DIMENSIONS.get(config.embed_model, 0)
        if not dims and known is not None and known.model_id == model_id:
            dims = known.dimensions
        return EmbedderIdentity(model_id, dims) if dims else None
    return None


def create_embedder(config: Config, known: EmbedderIdentity | None = None) -> Embedder:
    """The embedder the settings ask for (``known``: the store's recorded identity, see :func:`configured_identity`)."""
    from ...errors import InvalidInput

    name = config.embedder
    if name == "local":
        from .local import LocalEmbedder

        return LocalEmbedder(
            batch_threads=config.embed_threads, query_threads=config.query_threads, backend=config.embed_runtime
        )
    if name == "openai":
        from .openai import OpenAIEmbedder

        same = known is not None and known.model_id == f"openai-compatible:{config.embed_model}"
        return OpenAIEmbedder.from_config(config, known_dimensions=known.dimensions if same and known else None)
    if name.startswith("hash"):
        dims = int(name.split(":", 1)[1]) if ":" in name else 64
        return HashEmbedder(dims)
    raise InvalidInput(
        f"Unknown embedder {name!r}.",
        hint="Set embedder to 'local' or 'openai' (funes config set embedder local).",
    )


__all__ = ["Embedder", "HashEmbedder", "check_output", "configured_identity", "create_embedder"]
