"""The model services Funes calls, each behind a small protocol: embedders (``embed/``: the local
MiniLM, OpenAI-compatible servers) and LLMs (``llm/``: offline heuristics, OpenAI-compatible, Anthropic).

May import: ``funes.errors``, ``funes.models``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .embed import Embedder, HashEmbedder, create_embedder
    from .llm import LLM, OfflineLLM, create_llm

__getattr__ = lazy_exports(
    __name__,
    {
        "Embedder": "embed",
        "HashEmbedder": "embed",
        "create_embedder": "embed",
        "LLM": "llm",
        "OfflineLLM": "llm",
        "create_llm": "llm",
    },
)

__all__ = [
    "LLM",
    "Embedder",
    "HashEmbedder",
    "OfflineLLM",
    "create_embedder",
    "create_llm",
]
