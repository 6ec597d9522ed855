"""LlamaIndex: a ``BaseMemoryBlock`` backed by a Funes session, and a vector store of Funes records.

LlamaIndex's ``Memory`` keeps the recent turns itself and flushes older ones
into its memory blocks. :class:`FunesMemoryBlock` stores what it is given as
messages of one Funes session (indexed, so recall and every other shell find
them), and answers with Funes' budgeted context for the latest user message:
the memory section of :meth:`funes.Funes.build_context` (relevant earlier
history, important facts, retrieved documents and memories, each fenced as
data and attributed), within the block's token budget. The stored turns are
the ones LlamaIndex no longer holds, so none is repeated as plain history:
the relevant ones come back as recalled history.

:class:`FunesVectorStore` is a ``BasePydanticVectorStore`` for LlamaIndex's own
``VectorMemoryBlock`` (or any index): each node is a Funes record, ranked by
the query embedding with LlamaIndex's metadata filters.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..memory.safety import FENCE_NOTE
from ..models import Memory, SourceRef
from . import pack_vectors, require, similarity, unit_vectors, unpack_vectors

require("llama_index.core.memory", "llamaindex", "LlamaIndex")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import BaseMemoryBlock  # noqa: E402
from llama_index.core.schema import BaseNode, MetadataMode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict  # noqa: E402
from pydantic import ConfigDict, Field  # noqa: E402

_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}


def _text(message: ChatMessage) -> str:
    return message.content if isinstance(message.content, str) else ""


def to_funes_message(message: ChatMessage) -> dict[str, Any] | None:
    """A LlamaIndex chat message as a Funes message dict (None for system prompts and empty turns)."""
    role = _ROLES.get(message.role)
    if role is None:  # system / developer: the prompt, not conversation
        return None
    text = _text(message)
    calls = message.additional_kwargs.get("tool_calls") or None
    if role == "tool":
        call_id = message.additional_kwargs.get("tool_call_id") or message.additional_kwargs.get("name")
        if not call_id:
            # A tool result nobody can pair with its call is kept as the assistant's observation.
            return {"role": "assistant", "content": f"Tool result: {text}"} if text.strip() else None
        return {"role": "tool", "content": text, "tool_call_id": str(call_id)}
    if not text.strip() and not calls:
        return None
    out: dict[str, Any] = {"role": role, "content": text}
    if calls and role == "assistant":
        out["tool_calls"] = [c.model_dump() if hasattr(c, "model_dump") else c for c in calls]
    return out


class FunesMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block: stores flushed messages in a Funes session, returns Funes' context."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="funes_memory", description="The name of the memory block.")
    funes: Any = Field(description="The funes.Funes service.")
    session_id: str = Field(description="The Funes session the messages are stored in (created on first use).")
    tenant: str | None = Field(default=None, description="Whose memory (default: the configured tenant).")
    user: str | None = Field(default=None, description="The user within the tenant (default: the configured one).")
    project: str | None = Field(default=None, description="The project of the session, when it is created.")
    token_limit: int = Field(default=1500, description="Tokens at most for the memory sections of the context.")

    def _session(self) -> Any:
        return self.funes.session(self.session_id, project=self.project, tenant=self.tenant, user=self.user)

    def _context(self, query: str) -> str:
        session = self._session()
        # LlamaIndex keeps the recent turns itself; the turns stored here are the older ones, so none goes in
        # as plain history (conversation 0) and the relevant ones come back as recalled history.
        budget = {"retrieved": max(int(self.token_limit), 1), "conversation": 0}
        built = self.funes.build_context(session, query, budget=budget, tenant=self.tenant, user=self.user)
        names = ("relevant_history", "project_facts", "retrieved_context")
        parts = [built.sections[n].text for n in names if n in built.sections and built.sections[n].text.strip()]
        # The fence rule travels with the fenced sections: the block lands in someone else's system prompt.
        return "\n\n".join([FENCE_NOTE, *parts]) if parts else ""

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = next((_text(m) for m in reversed(messages or []) if m.role == MessageRole.USER and _text(m)), "")
        if not query.strip():
            return ""
        return await asyncio.to_thread(self._context, query)

    def _store(self, messages: list[ChatMessage]) -> None:
        converted = [m for m in (to_funes_message(msg) for msg in messages) if m is not None]
        if converted:
            self.funes.add_messages(self._session(), converted, tenant=self.tenant, user=self.user)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not isinstance(messages, list):
            raise InvalidInput("Messages must be a list of ChatMessage.", hint="Pass [ChatMessage(...), ...].")
        await asyncio.to_thread(self._store, messages)


# -- a vector store: LlamaIndex nodes as Funes records ------------------------------------------
NODE_ENTITY = "llamaindex"
COLLECTION_REF = "llamaindex-collection"
DOCUMENT_REF = "llamaindex-doc"
_PAGE = 1000


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _filter_value(metadata: dict[str, Any], rule: MetadataFilter) -> bool:
    """One LlamaIndex metadata filter against a node's metadata (a missing key never matches, but is_empty)."""
    try:
        op, expected = FilterOperator(rule.operator), rule.value
    except ValueError:
        raise InvalidInput(
            f"Unknown metadata filter operator {rule.operator!r}.",
            hint=f"Use one of: {', '.join(o.value for o in FilterOperator)}.",
        ) from None
    present = rule.key in metadata
    actual = metadata.get(rule.key)
    if op == FilterOperator.IS_EMPTY:
        return not present or actual in (None, "", [], {})
    if not present:
        return False
    listed = list(expected) if isinstance(expected, (list, tuple)) else [expected]
    if op == FilterOperator.EQ:
        return bool(actual == expected)
    if op == FilterOperator.NE:
        return bool(actual != expected)
    if op in (FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE):
        try:
            a, b = (float(actual), float(expected)) if not isinstance(actual, str) else (actual, str(expected))
            return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op.value]  # type: ignore[operator]
        except (TypeError, ValueError):
            return False
    if op == FilterOperator.IN:
        return actual in listed
    if op == FilterOperator.NIN:
        return actual not in listed
    items = actual if isinstance(actual, (list, tuple)) else [actual]
    if op == FilterOperator.ANY:
        return any(v in items for v in listed)
    if op == FilterOperator.ALL:
        return all(v in items for v in listed)
    if op == FilterOperator.CONTAINS:
        return expected in items
    if op == FilterOperator.TEXT_MATCH:
        return str(expected) in str(actual)
    if op == FilterOperator.TEXT_MATCH_INSENSITIVE:
        return str(expected).lower() in str(actual).lower()
    raise InvalidInput(  # an operator newer than this adapter
        f"The metadata filter operator {op.value!r} is not supported by FunesVectorStore.",
        hint="Use ==, !=, >, >=, <, <=, in, nin, any, all, contains, text_match or is_empty.",
    )


def matches_filters(metadata: dict[str, Any], filters: MetadataFilters | None) -> bool:
    """Whether a node's metadata passes LlamaIndex ``MetadataFilters`` (nested, with and / or / not)."""
    if filters is None or not filters.filters:
        return True
    results = (
        matches_filters(metadata, f) if isinstance(f, MetadataFilters) else _filter_value(metadata, f)
        for f in filters.filters
    )
    condition = FilterCondition(filters.condition or FilterCondition.AND)
    if condition == FilterCondition.OR:
        return any(results)
    if condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


def text_vector(funes: Any, text: str) -> np.ndarray:
    """Funes' vector of a text to store (a long one: the mean of its parts), of length 1."""
    return unit_vectors(funes.embed(funes.parts(text)).mean(axis=0))[0]


class FunesEmbedding(BaseEmbedding):
    """Funes' embedder as a LlamaIndex embedding model (``VectorMemoryBlock(embed_model=...)``).

    Nodes and queries embedded with it share the space of Funes' own vectors; a
    long text is embedded as the mean of its parts, as Funes does.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    funes: Any = Field(exclude=True, description="The funes.Funes service.")
    model_name: str = Field(default="funes", description="The embedding model's name.")

    @classmethod
    def class_name(cls) -> str:
        return "FunesEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self.funes.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in text_vector(self.funes, text)]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)


class FunesVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store whose nodes are Funes records (``VectorMemoryBlock(vector_store=...)``).

    Each node is one record of ``entity_type`` ``llamaindex`` in a named
    ``collection``: its text is the record's content (so Funes search, recall
    and the other shells find it), and ``metadata["llamaindex"]`` keeps the node
    (LlamaIndex's own serialisation) and its embedding. A node added again
    under its id replaces the record as a new version. A query ranks the
    collection's nodes that pass ``filters`` (and ``node_ids`` / ``doc_ids``) by
    the cosine similarity of ``query_embedding`` and each node's embedding;
    a node added without one, or a query without one, uses Funes' embedder.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    stores_text: bool = True
    is_embedding_query: bool = True
    funes: Any = Field(exclude=True, description="The funes.Funes service.")
    collection: str = Field(default="default", description="The set of nodes this store holds.")
    tenant: str | None = Field(default=None, description="Whose records (default: the configured tenant).")
    user: str | None = Field(default=None, description="The user within the tenant (default: the configured one).")
    project: str | None = Field(default=None, description="The project the records belong to (project scope).")
    memory_type: str = Field(default="fact", description="The Funes type of the records.")

    @property
    def client(self) -> Any:
        """The Funes service."""
        return self.funes

    @property
    def nodes(self) -> dict[str, BaseNode]:
        """Every node of the collection by id, oldest first (reads the whole collection)."""
        return {node.node_id: node for node in (self._node_of(m) for m in reversed(list(self._records())))}

    # -- records --------------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "user": self.user}

    def _records(self, refs: list[tuple[str, str]] | None = None) -> Iterator[Memory]:
        """The collection's records, newest first (optionally only those with ``refs``)."""
        cursor: str | None = None
        while True:
            page = self.funes.list(
                **self._identity(),
                entity_types=[NODE_ENTITY],
                refs=refs or [(COLLECTION_REF, self.collection)],
                cursor=cursor,
                limit=_PAGE,
            )
            for memory in page.items:
                data = memory.metadata.get("llamaindex") or {}
                if data.get("collection") == self.collection:
                    yield memory
            cursor = page.next_cursor
            if not cursor:
                return

    @staticmethod
    def _node_of(memory: Memory) -> BaseNode:
        data = memory.metadata["llamaindex"]
        return metadata_dict_to_node(dict(data["node"]), text=data.get("text", memory.content))

    def _selected(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        doc_ids: list[str] | None = None,
    ) -> Iterator[tuple[Memory, BaseNode]]:
        wanted = set(node_ids) if node_ids is not None else None
        docs = set(doc_ids) if doc_ids is not None else None
        for memory in self._records():
            node = self._node_of(memory)
            if wanted is not None and node.node_id not in wanted:
                continue
            if docs is not None and node.ref_doc_id not in docs:
                continue
            if matches_filters(node.metadata, filters):
                yield memory, node

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.array([text_vector(self.funes, t) for t in texts], dtype=np.float32)

    def _forget(self, memories: Iterable[Memory]) -> None:
        ids = [m.id for m in memories]
        if ids:
            self.funes.forget_many(ids, **self._identity())

    # -- BasePydanticVectorStore ----------------------------------------------------------------
    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store the nodes (their text as the record's content); their ids, in order."""
        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        missing = [i for i, node in enumerate(nodes) if node.embedding is None and texts[i].strip()]
        computed = dict(zip(missing, self._embed([texts[i] for i in missing]), strict=True)) if missing else {}
        for i, node in enumerate(nodes):
            text = texts[i]
            embedding = node.embedding if node.embedding is not None else computed.get(i)
            data: dict[str, Any] = {
                "collection": self.collection,
                "node_id": node.node_id,
                "node": _jsonable(node_to_metadata_dict(node, remove_text=True, flat_metadata=False)),
                "embedding": pack_vectors(embedding)[0] if embedding is not None else None,
                "embedder": "node" if node.embedding is not None else "funes",
            }
            if text.strip() != text or not text.strip():
                data["text"] = text  # content is stored stripped; the node comes back as it was
            refs = [(COLLECTION_REF, self.collection)]
            if node.ref_doc_id:
                refs.append((DOCUMENT_REF, json.dumps([self.collection, node.ref_doc_id])))
            self.funes.remember(
                text.strip() or node.node_id,
                type=self.memory_type,
                scope="project" if self.project else "team",
                project=self.project,
                tenant=self.tenant,
                user=self.user,
                entity_type=NODE_ENTITY,
                entity_id=json.dumps([self.collection, node.node_id]),
                source=SourceRef(type="agent", uri=f"llamaindex:{self.collection}/{node.node_id}"),
                metadata={"llamaindex": data},
                references=refs,
            )
        return [node.node_id for node in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, nodes, **add_kwargs)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the document ``ref_doc_id``."""
        self._forget(self._records([(DOCUMENT_REF, json.dumps([self.collection, ref_doc_id]))]))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The nodes with these ids and / or passing these filters (all of them when neither is given)."""
        return [node for _, node in self._selected(node_ids, filters)]

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Delete the nodes with these ids and / or passing these filters."""
        if node_ids is None and filters is None:
            raise InvalidInput("delete_nodes needs node_ids or filters.", hint="Use clear() to delete every node.")
        self._forget(m for m, _ in list(self._selected(node_ids, filters)))

    async def adelete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters)

    def clear(self) -> None:
        """Delete every node of the collection."""
        self._forget(list(self._records()))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest the query, with their cosine similarities and ids."""
        if query.mode != VectorStoreQueryMode.DEFAULT:
            raise InvalidInput(
                f"Query mode {query.mode.value!r} is not supported by FunesVectorStore.",
                hint="Use the default (dense) mode; Funes' own hybrid search is funes.search().",
            )
        if query.query_embedding is None and not (query.query_str or "").strip():
            raise InvalidInput(
                "A query needs query_embedding or query_str.", hint="Use get_nodes() to fetch by filter."
            )
        given = np.asarray(query.query_embedding, dtype=np.float32) if query.query_embedding is not None else None
        ours: np.ndarray | None = None
        scored: list[tuple[float, BaseNode]] = []
        for memory, node in self._selected(query.node_ids, query.filters, query.doc_ids):
            data = memory.metadata["llamaindex"]
            vector = unpack_vectors([data["embedding"]])[0] if data.get("embedding") else None
            if vector is None or given is None or vector.shape != given.shape:
                # A node or a query without a comparable embedding: both by Funes' embedder, from their text.
                if not (query.query_str or "").strip():
                    continue
                if ours is None:
                    ours = np.asarray(self.funes.embed_query(query.query_str), dtype=np.float32)
                if data.get("embedder") != "funes" or vector is None or vector.shape != ours.shape:
                    vector = self._embed([memory.content])[0]
                point = ours
            else:
                point = given
            scored.append((float(similarity(vector, point)[0]), node))
        scored.sort(key=lambda pair: pair[0], reverse=True)
        top = scored[: max(int(query.similarity_top_k), 0)]
        return VectorStoreQueryResult(
            nodes=[n for _, n in top], similarities=[s for s, _ in top], ids=[n.node_id for _, n in top]
        )

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)
