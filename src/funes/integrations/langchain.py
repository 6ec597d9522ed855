"""LangChain: the Funes agent tools as ``StructuredTool`` objects, and a ``BaseRetriever`` over search.

The tools are rendered from the one definition in :mod:`funes.agents.specs` (the
same names, descriptions and pydantic input models as the MCP, Anthropic and
OpenAI renderings) and run through :meth:`funes.Funes.execute_tool`, so a
LangChain agent gets exactly the behaviour of every other shell: text for the
model as the tool message, the JSON data as the artifact, and errors as text
the model can act on.

The retriever returns ``Document`` objects whose metadata carries the record's
attribution (the rendered source, e.g. ``report.pdf p.3 §Revenue``), its source
and locator, and the hit's relevance and score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..models import Caller, SearchHit
from . import require

require("langchain_core.tools", "langchain", "LangChain")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.tools import StructuredTool, ToolException  # noqa: E402
from pydantic import ConfigDict, Field, ValidationError  # noqa: E402

from ..agents.specs import TOOLS, TOOLS_BY_NAME, ToolSpec, describe_errors  # noqa: E402

if TYPE_CHECKING:
    from ..service import Funes


def _tool(funes: Funes, spec: ToolSpec, caller: Caller, project: str | None) -> StructuredTool:
    name = spec.name

    def run(**arguments: Any) -> tuple[str, dict[str, Any]]:
        result = funes.execute_tool(name, arguments, caller=caller, project=project)
        if result.is_error:
            raise ToolException(result.text)
        return result.text, result.data

    async def arun(**arguments: Any) -> tuple[str, dict[str, Any]]:
        return await asyncio.to_thread(run, **arguments)

    def invalid(exc: ValidationError) -> str:
        return f"Error: Invalid arguments for {name}: {describe_errors(spec, exc)}. Fix them and call {name} again."

    return StructuredTool(
        name=name,
        description=spec.description,
        args_schema=spec.args,
        func=run,
        coroutine=arun,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=invalid,
        metadata={"title": spec.title, "read_only": spec.hints.read_only, "destructive": spec.hints.destructive},
    )


def funes_tools(
    funes: Funes,
    *,
    tenant: str | None = None,
    user: str | None = None,
    project: str | None = None,
    session: str | None = None,
    agent: str | None = None,
    names: Sequence[str] | None = None,
) -> list[StructuredTool]:
    """The agent tools (all, or the named ones) as LangChain tools acting for one caller.

    ``tenant`` and ``user`` say whose memory the agent reads and writes
    (default: the configured ones); ``project`` is the current project and
    ``session`` the current conversation, resolved by the host, as the model
    cannot know them.
    """
    from ..errors import InvalidInput

    if names is not None:
        unknown = [n for n in names if n not in TOOLS_BY_NAME]
        if unknown:
            raise InvalidInput(
                f"Unknown tool(s): {', '.join(unknown)}.", hint=f"Tools are: {', '.join(TOOLS_BY_NAME)}."
            )
    caller = Caller(
        tenant=tenant if tenant is not None else funes.config.tenant,
        user_id=user if user is not None else (funes.config.user or None),
        agent_id=agent,
        session_id=session,
    )
    specs = [TOOLS_BY_NAME[n] for n in names] if names is not None else list(TOOLS)
    return [_tool(funes, spec, caller, project) for spec in specs]


def hit_document(hit: SearchHit) -> Document:
    """A search hit as a LangChain ``Document``: the text, and the attribution and scores in metadata."""
    memory = hit.memory
    source = memory.source
    metadata: dict[str, Any] = {
        "id": memory.id,
        "attribution": memory.attribution,
        "source_type": source.type if source else None,
        "source": source.uri if source else None,
        "locator": dict(source.locator) if source else {},
        "title": memory.title,
        "kind": memory.kind,
        "memory_type": memory.memory_type,
        "scope": memory.scope,
        "project": memory.project_id,
        "relevance": hit.explanation.relevance,
        "score": hit.score,
        "similarity": hit.explanation.vector_similarity,
        "created_at": memory.created_at.isoformat(),
    }
    return Document(page_content=memory.content, metadata=metadata, id=memory.id)


class FunesRetriever(BaseRetriever):
    """A LangChain retriever over Funes hybrid search; each ``Document`` carries its attribution."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    funes: Any
    """The :class:`funes.Funes` service to search."""
    k: int = 5
    """How many documents to return at most."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further :meth:`funes.Funes.search` arguments: tenant, user, project, source_types, min_relevance, ..."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """The hits for ``query``; ``invoke(query, k=1, ...)`` overrides ``k`` and ``search_kwargs`` for one call."""
        options = {**self.search_kwargs, **kwargs}
        limit = options.pop("k", self.k)
        hits = self.funes.search(query, limit=limit, **options)
        return [hit_document(h) for h in hits]
