"""Adapters that plug Funes into agent frameworks, each an optional extra.

* :mod:`funes.integrations.langgraph`: a LangGraph ``BaseStore`` (``funes-memory[langgraph]``);
* :mod:`funes.integrations.langchain`: the agent tools as ``StructuredTool`` objects and a
  ``BaseRetriever`` (``funes-memory[langchain]``);
* :mod:`funes.integrations.llamaindex`: a LlamaIndex ``BaseMemoryBlock`` (``funes-memory[llamaindex]``);
* :mod:`funes.integrations.openai_agents`: an OpenAI Agents SDK ``Session`` (``funes-memory[openai-agents]``).

They are shells, like the CLI and the MCP server: each calls the :class:`funes.Funes`
facade and nothing else, and each imports its framework only when the adapter module
itself is imported (``import funes`` never loads a framework).

Never another shell, nor another adapter. May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``, ``funes.curation``, ``funes.agents``, ``funes.service``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

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
