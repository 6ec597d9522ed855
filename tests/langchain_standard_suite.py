"""LangChain's standard tests (the ``langchain-tests`` package) for FunesRetriever and every Funes tool.

Not collected by the main run (the file name does not start with ``test_``):
tests/test_langchain_standard.py runs it in a pytest of its own, so the
plugins langchain-tests brings (pytest-asyncio, pytest-socket, syrupy) stay
out of the rest of the suite. Each class only says how to build the retriever
or the tool and gives example arguments; every test and assertion is
langchain-tests'.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

import funes
from funes.agents.specs import TOOLS
from funes.integrations.langchain import FunesRetriever, funes_tools
from funes.providers.embed import HashEmbedder

_HOME = Path(tempfile.mkdtemp(prefix="funes-langchain-standard-"))
MEM = funes.open(str(_HOME / "funes.db"), embedder=HashEmbedder(64), worker="off")
for _text in (
    "The user prefers window seats on long flights.",
    "The team ships releases on Thursdays.",
    "The office is closed on public holidays.",
    "Invoices are due within thirty days.",
    "The staging cluster runs in Frankfurt.",
    "The user drinks tea, not coffee.",
):
    MEM.remember(_text, type="fact")
TOOLS_BY_NAME = {t.name: t for t in funes_tools(MEM, project="standard", session="standard-session")}


def _memory_id(text: str) -> str:
    return MEM.remember(text, type="context", scope="team").id


EXAMPLES: dict[str, Any] = {
    "create_memory": lambda: {"content": "The user likes short answers.", "memory_type": "preference"},
    "search_memories": lambda: {"query": "releases", "limit": 3},
    "update_memory": lambda: {"memory_id": _memory_id("A draft to update."), "content": "An updated note."},
    "delete_memory": lambda: {"memory_id": _memory_id("A note to delete.")},
    "get_memory_context": lambda: {"query": "travel"},
    "memory_search": lambda: {"query": "invoices", "source_filter": "all"},
    "list_scopes": lambda: {},
    "list_memories": lambda: {"memory_types": ["fact"], "limit": 5},
}


class TestFunesRetriever(RetrieversIntegrationTests):
    """FunesRetriever against LangChain's retriever contract."""

    @property
    def retriever_constructor(self) -> type[FunesRetriever]:
        return FunesRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        # Every record may come back: the contract counts results, it does not judge relevance.
        return {"funes": MEM, "search_kwargs": {"min_relevance": 0.0, "types": ["fact"]}}

    @property
    def retriever_query_example(self) -> str:
        return "when does the team ship releases?"


def _tool_classes() -> dict[str, type]:
    classes: dict[str, type] = {}
    for spec in TOOLS:
        name = spec.name

        def constructor(self: Any, name: str = name) -> BaseTool:
            return TOOLS_BY_NAME[name]

        def example(self: Any, name: str = name) -> dict[str, Any]:
            return EXAMPLES[name]()  # type: ignore[no-any-return]

        members = {"tool_constructor": property(constructor), "tool_invoke_params_example": property(example)}
        camel = "".join(part.title() for part in name.split("_"))
        for kind, base in (("Unit", ToolsUnitTests), ("Integration", ToolsIntegrationTests)):
            classes[f"Test{camel}{kind}"] = type(f"Test{camel}{kind}", (base,), dict(members))
    return classes


globals().update(_tool_classes())
