"""The model services Funes calls, each behind a small protocol: embedders (``embed/``: the local
MiniLM, OpenAI-compatible servers) and LLMs (``llm/``: offline heuristics, OpenAI-compatible, Anthropic).

May import: ``funes.errors``, ``funes.models``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .embed import Embedder as Embedder
    from .embed import HashEmbedder as HashEmbedder
    from .embed import create_embedder as create_embedder
    from .llm import LLM as LLM
    from .llm import OfflineLLM as OfflineLLM
    from .llm import create_llm as create_llm

__getattr__, __all__ = lazy_exports(__name__, __file__)
