"""FunesVectorStore: LlamaIndex nodes as Funes records, on SQLite and PostgreSQL.

LlamaIndex's own ``test_vector.py`` runs against it in bench/conformance.py;
these tests pin the vector-store contract itself: nodes come back as added,
queries rank by the query embedding with metadata filters, deletes by document,
id and filter, collections and users kept apart, and bad calls refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("llama_index.core", reason="needs llama-index-core: pip install 'funes-memory[llamaindex]'")

from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage
from llama_index.core.memory.memory_blocks.vector import VectorMemoryBlock
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

import funes
from funes.errors import InvalidInput
from funes.integrations.llamaindex import FunesEmbedding, FunesVectorStore, matches_filters
from funes.providers.embed import HashEmbedder


@pytest.fixture
def service(store_url: str) -> Iterator[funes.Funes]:
    mem = funes.open(store_url, embedder=HashEmbedder(64))
    yield mem
    mem.close()


def _node(
    node_id: str, text: str, embedding: list[float] | None, doc: str | None = None, **metadata: object
) -> TextNode:
    node = TextNode(id_=node_id, text=text, embedding=embedding, metadata=dict(metadata))
    if doc is not None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return node


def _filters(*rules: MetadataFilter | MetadataFilters, condition: str = "and") -> MetadataFilters:
    return MetadataFilters(filters=list(rules), condition=FilterCondition(condition))


def test_nodes_come_back_as_added_and_queries_rank_by_the_embedding(service: funes.Funes) -> None:
    store = FunesVectorStore(funes=service, collection="notes")
    nodes = [
        _node("a", "  Paris is the capital of France.\n", [1.0, 0.0], doc="geo", topic="geo", year=2020),
        _node("b", "Berlin is the capital of Germany.", [0.0, 1.0], doc="geo", topic="geo", year=2024),
        _node("c", "Bread needs flour, water and salt.", [0.6, 0.8], doc="food", topic="food", year=2022),
    ]
    assert store.add(nodes) == ["a", "b", "c"]
    back = store.nodes
    assert list(back) == ["a", "b", "c"]
    assert back["a"].text == "  Paris is the capital of France.\n"  # whitespace kept, though content is stripped
    assert back["a"].metadata == {"topic": "geo", "year": 2020} and back["a"].ref_doc_id == "geo"
    assert back["a"].embedding is None  # like LlamaIndex's own stores: the vector stays in the store

    result = store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=2))
    assert result.ids == ["a", "c"]
    assert result.similarities == pytest.approx([1.0, 0.6], abs=1e-6)
    assert [n.node_id for n in result.nodes] == ["a", "c"]

    # Filters narrow the candidates before the ranking; node_ids and doc_ids too.
    geo = MetadataFilter(key="topic", value="geo")
    assert store.query(VectorStoreQuery(query_embedding=[0.6, 0.8], similarity_top_k=5, filters=_filters(geo))).ids == [
        "b",
        "a",
    ]
    recent = MetadataFilter(key="year", value=2021, operator=FilterOperator.GT)
    either = _filters(_filters(geo, recent), MetadataFilter(key="topic", value="food"), condition="or")
    assert sorted(store.query(VectorStoreQuery(query_embedding=[1, 0], similarity_top_k=5, filters=either)).ids) == [
        "b",
        "c",
    ]
    assert store.query(VectorStoreQuery(query_embedding=[1, 0], similarity_top_k=5, doc_ids=["food"])).ids == ["c"]
    assert store.query(VectorStoreQuery(query_embedding=[1, 0], similarity_top_k=5, node_ids=["b"])).ids == ["b"]

    # The records are ordinary Funes memories, found by Funes search.
    assert any(h.memory.content.startswith("Berlin") for h in service.search("capital of Germany"))


def test_adding_a_node_again_replaces_it(service: funes.Funes) -> None:
    store = FunesVectorStore(funes=service)
    store.add([_node("n", "first text", [1.0, 0.0])])
    store.add([_node("n", "second text", [0.0, 1.0])])
    assert [n.text for n in store.nodes.values()] == ["second text"]
    [record] = service.list(entity_types=["llamaindex"]).items
    assert record.content == "second text" and record.version == 2
    assert store.query(VectorStoreQuery(query_embedding=[0.0, 1.0])).similarities == pytest.approx([1.0])


def test_deletes_by_document_ids_filters_and_clear(service: funes.Funes) -> None:
    store = FunesVectorStore(funes=service)
    store.add(
        [
            _node("a1", "alpha one", [1.0, 0.0], doc="alpha", kind="x"),
            _node("a2", "alpha two", [1.0, 0.1], doc="alpha", kind="y"),
            _node("b1", "beta one", [0.0, 1.0], doc="beta", kind="x"),
            _node("b2", "beta two", [0.1, 1.0], doc="beta", kind="y"),
            _node("c1", "gamma one", [0.5, 0.5], doc="gamma", kind="z"),
        ]
    )
    store.delete("alpha")
    assert sorted(store.nodes) == ["b1", "b2", "c1"]
    store.delete_nodes(node_ids=["b1"])
    assert sorted(store.nodes) == ["b2", "c1"]
    store.delete_nodes(filters=_filters(MetadataFilter(key="kind", value="z")))
    assert sorted(store.nodes) == ["b2"]
    assert [n.node_id for n in store.get_nodes(filters=_filters(MetadataFilter(key="kind", value="y")))] == ["b2"]
    with pytest.raises(InvalidInput, match="node_ids or filters"):
        store.delete_nodes()
    assert sorted(store.nodes) == ["b2"]  # the refused call deleted nothing
    store.clear()
    assert store.nodes == {} and not service.list(entity_types=["llamaindex"]).items


def test_collections_and_users_are_kept_apart(service: funes.Funes) -> None:
    mine = FunesVectorStore(funes=service, collection="chat", user="ana")
    other_collection = FunesVectorStore(funes=service, collection="docs", user="ana")
    other_user = FunesVectorStore(funes=service, collection="chat", user="ben")
    mine.add([_node("n", "Ana's note", [1.0, 0.0])])
    other_user.add([_node("n", "Ben's note", [1.0, 0.0])])
    assert [n.text for n in mine.nodes.values()] == ["Ana's note"]
    assert [n.text for n in other_user.nodes.values()] == ["Ben's note"]
    assert other_collection.nodes == {}
    other_collection.clear()
    assert len(mine.nodes) == 1 and len(other_user.nodes) == 1


def test_bad_queries_are_refused(service: funes.Funes) -> None:
    store = FunesVectorStore(funes=service)
    store.add([_node("n", "text", [1.0, 0.0])])
    with pytest.raises(InvalidInput, match="query_embedding or query_str"):
        store.query(VectorStoreQuery(similarity_top_k=1))
    with pytest.raises(InvalidInput, match="not supported"):
        store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], mode=VectorStoreQueryMode.MMR))
    with pytest.raises(InvalidInput, match="operator"):
        matches_filters({"k": 1}, _filters(MetadataFilter.model_construct(key="k", value=1, operator="~")))


def test_metadata_filter_operators() -> None:
    meta = {"n": 3, "tags": ["a", "b"], "name": "Funes the Memorious", "empty": ""}

    def check(key: str, value: object, op: FilterOperator) -> bool:
        return matches_filters(meta, _filters(MetadataFilter(key=key, value=value, operator=op)))

    assert check("n", 3, FilterOperator.EQ) and not check("n", 3, FilterOperator.NE)
    assert (
        check("n", 2, FilterOperator.GT) and check("n", 3, FilterOperator.GTE) and not check("n", 3, FilterOperator.LT)
    )
    assert check("n", [1, 3], FilterOperator.IN) and check("n", [1, 2], FilterOperator.NIN)
    assert check("tags", ["b", "z"], FilterOperator.ANY) and not check("tags", ["a", "z"], FilterOperator.ALL)
    assert check("tags", "a", FilterOperator.CONTAINS)
    assert check("name", "the Mem", FilterOperator.TEXT_MATCH) and not check(
        "name", "the mem", FilterOperator.TEXT_MATCH
    )
    assert check("name", "the mem", FilterOperator.TEXT_MATCH_INSENSITIVE)
    assert check("empty", None, FilterOperator.IS_EMPTY) and check("missing", None, FilterOperator.IS_EMPTY)
    assert not check("missing", 1, FilterOperator.EQ)  # a node without the key never matches a comparison
    assert matches_filters(meta, _filters(MetadataFilter(key="n", value=4), condition="not"))


def test_nodes_without_embeddings_are_ranked_by_funes_model(real_mem: funes.Funes) -> None:
    store = FunesVectorStore(funes=real_mem)
    store.add(
        [
            _node("fr", "The capital of France is Paris.", None),
            _node("bread", "Bread needs flour, water and salt.", None),
            _node("de", "The capital of Germany is Berlin.", None),
        ]
    )
    result = store.query(VectorStoreQuery(query_str="Which city is France's capital?", similarity_top_k=3))
    assert result.ids[0] == "fr"
    assert result.similarities[0] > result.similarities[-1]
    # A query embedding from another model (another length) is compared through Funes' model as well.
    other = store.query(
        VectorStoreQuery(query_str="baking ingredients", query_embedding=[0.1] * 10, similarity_top_k=1)
    )
    assert other.ids == ["bread"]


def test_vector_memory_block_stores_and_retrieves_per_session(real_mem: funes.Funes) -> None:
    store = FunesVectorStore(funes=real_mem, collection="block")
    block = VectorMemoryBlock(vector_store=store, embed_model=MockEmbedding(embed_dim=8), similarity_top_k=1)

    async def run() -> tuple[str, str, str]:
        await block.aput(
            [ChatMessage(role="user", content="My cat is called Tom.", additional_kwargs={"session_id": "s1"})]
        )
        await block.aput(
            [ChatMessage(role="user", content="The meeting is on Friday.", additional_kwargs={"session_id": "s2"})]
        )
        one = await block.aget([ChatMessage(role="user", content="what was the meeting day?")], session_id="s1")
        block.query_kwargs.clear()
        two = await block.aget([ChatMessage(role="user", content="what was the meeting day?")], session_id="s2")
        block.query_kwargs.clear()
        return one, two, await block.aget([])

    one, two, empty = asyncio.run(run())
    assert "Tom" in one and "Friday" not in one  # the session filter keeps s2's node out
    assert "Friday" in two
    assert empty == ""
    assert sorted(n.metadata["session_id"] for n in store.nodes.values()) == ["s1", "s2"]


def test_vector_memory_block_with_funes_embeddings_recalls_the_relevant_turns(real_mem: funes.Funes) -> None:
    store = FunesVectorStore(funes=real_mem, collection="chat")
    block = VectorMemoryBlock(vector_store=store, embed_model=FunesEmbedding(funes=real_mem), similarity_top_k=1)
    turns = [
        "My sister lives in Lisbon and works as a nurse.",
        "The quarterly report is due on the last Friday of March.",
        "I am allergic to peanuts and shellfish.",
    ]

    async def run() -> str:
        for text in turns:
            await block.aput([ChatMessage(role="user", content=text)])
        return await block.aget([ChatMessage(role="user", content="Which foods must the restaurant avoid for me?")])

    recalled = asyncio.run(run())
    assert "peanuts" in recalled and "Lisbon" not in recalled
    [node] = [n for n in store.nodes.values() if "peanuts" in n.text]
    assert real_mem.search("shellfish allergy")[0].memory.content == node.text.strip()
