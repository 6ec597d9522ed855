"""Adapters that plug Funes into agent frameworks, each an optional extra.

* :mod:`funes.integrations.langgraph`: a LangGraph ``BaseStore`` (``funes-memory[langgraph]``);
* :mod:`funes.integrations.langchain`: the agent tools as ``StructuredTool`` objects and a
  ``BaseRetriever`` (``funes-memory[langchain]``);
* :mod:`funes.integrations.llamaindex`: a LlamaIndex ``BaseMemoryBlock`` and a vector store
  (``funes-memory[llamaindex]``);
* :mod:`funes.integrations.openai_agents`: an OpenAI Agents SDK ``Session`` (``funes-memory[openai-agents]``).

They are shells, like the CLI and the MCP server: each calls the :class:`funes.Funes`
facade and nothing else, and each imports its framework only when the adapter module
itself is imported (``import funes`` never loads a framework).

Never another shell, nor another adapter. May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``, ``funes.curation``, ``funes.agents``, ``funes.service``.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import DependencyMissing


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import a framework module, or raise :class:`DependencyMissing` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise DependencyMissing(
            f"The {what} adapter needs the {module.split('.')[0]} package.",
            hint=f"Run `pip install 'funes-memory[{extra}]'`.",
        ) from exc


# -- vectors an adapter keeps beside a record (a framework's own embeddings) ---------------------
DISTANCES = ("cosine", "inner_product", "l2")


def pack_vectors(vectors: Any) -> list[str]:
    """Vectors as base64 little-endian float32 strings, for a record's JSON metadata."""
    return [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii") for v in np.atleast_2d(vectors)]


def unpack_vectors(packed: Sequence[str]) -> np.ndarray:
    """The vectors :func:`pack_vectors` wrote, one row each."""
    return np.array([np.frombuffer(base64.b64decode(p), dtype="<f4") for p in packed], dtype=np.float32)


def unit_vectors(vectors: Any) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero)."""
    array = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


def similarity(vectors: Any, query: Any, distance: str = "cosine") -> np.ndarray:
    """Each row's score for a query: cosine, inner product, or the negated L2 distance (higher is nearer)."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    point = np.asarray(query, dtype=np.float32).reshape(-1)
    if distance == "inner_product":
        return rows @ point
    if distance == "l2":
        return -np.linalg.norm(rows - point, axis=1)
    return unit_vectors(rows) @ unit_vectors(point)[0]
