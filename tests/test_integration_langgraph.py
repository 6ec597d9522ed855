"""The LangGraph store adapter against a store conformance suite, and LangMem's tools on it.

LangGraph does not ship its store conformance tests in the package (they live in
the langgraph repository's ``libs/checkpoint/tests/test_store.py``, written
against ``InMemoryStore``). This is an equivalent suite, written for any
``BaseStore``: the same behaviours (namespace listing with prefix, suffix,
wildcards, depth and paging; invalid namespaces; get/put/delete in sync, async
and batch form; JSON filters; ttl; ``index=False``), run here against
:class:`~funes.integrations.langgraph.FunesStore` and, as a check that the
suite encodes LangGraph's semantics and not ours, against ``InMemoryStore``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

import funes
from funes.errors import InvalidInput
from funes.integrations.langgraph import FunesStore, matches_filter
from funes.models import utcnow
from funes.providers.embed import HashEmbedder


@pytest.fixture(params=["funes", "inmemory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "inmemory":
        yield InMemoryStore()
        return
    service = funes.open(str(tmp_path / "lg.db"), embedder=HashEmbedder(64))
    yield FunesStore(service)
    service.close()


def _fill(store: BaseStore, namespaces: list[tuple[str, ...]]) -> None:
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})


# -- namespaces ------------------------------------------------------------------------------
def test_list_namespaces_prefix_suffix_depth_and_paging(store: BaseStore) -> None:
    _fill(
        store,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"))) == ab
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_wildcards(store: BaseStore) -> None:
    _fill(
        store,
        [
            ("users", "123"),
            ("users", "456"),
            ("users", "789", "settings"),
            ("admin", "users", "789"),
            ("guests", "123"),
            ("guests", "456", "preferences"),
        ],
    )
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination_is_sorted(store: BaseStore) -> None:
    for i in reversed(range(20)):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        page = store.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert page == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_list_namespaces_depth_only_none_and_empty(store: BaseStore) -> None:
    assert store.list_namespaces() == []
    _fill(store, [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")])
    assert sorted(store.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]
    assert len(store.list_namespaces()) == 5


def test_a_namespace_inside_another_is_listed_and_deleted_items_leave(mem: funes.Funes) -> None:
    # Funes only: InMemoryStore keeps listing a namespace after its last item is deleted (LangGraph's
    # PostgresStore and SqliteStore, which list the items' distinct namespaces, do not).
    store = FunesStore(mem)
    _fill(store, [("a", "b"), ("a", "b", "c"), ("a", "b", "c"), ("a", "b", "c", "d"), ("x",)])
    assert sorted(store.list_namespaces()) == [("a", "b"), ("a", "b", "c"), ("a", "b", "c", "d"), ("x",)]
    store.delete(("a", "b"), "id_0")  # ("a", "b") held one item of its own
    store.delete(("a", "b", "c"), "id_1")  # ("a", "b", "c") still holds id_2
    assert sorted(store.list_namespaces(prefix=("a",))) == [("a", "b", "c"), ("a", "b", "c", "d")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=2) == [("a", "b")]


def test_namespaces_are_counted_by_the_store_on_both_backends(backend_mem: funes.Funes) -> None:
    store = FunesStore(backend_mem, namespace_fields=("tenant",))
    for ns, key in [(("acme", "notes"), "1"), (("acme", "notes"), "2"), (("acme", "notes", "old"), "3")]:
        store.put(ns, key, {"text": f"item {key}"})
    store.put(("globex", "notes"), "1", {"text": "another tenant"})
    # One grouped statement per call: each prefix of each namespace, with the records under it.
    assert backend_mem.reference_counts("langgraph-ns", tenant="acme") == {
        '["acme"]': 3,
        '["acme","notes"]': 3,
        '["acme","notes","old"]': 1,
    }
    assert backend_mem.reference_counts(
        "langgraph-ns", tenant="acme", refs=['langgraph-ns:["acme","notes","old"]']
    ) == {
        '["acme"]': 1,
        '["acme","notes"]': 1,
        '["acme","notes","old"]': 1,
    }
    assert backend_mem.reference_counts("no-such-type", tenant="acme") == {}
    with pytest.raises(InvalidInput, match="reference type"):
        backend_mem.reference_counts(" ")
    assert store.list_namespaces(prefix=("acme",)) == [("acme", "notes"), ("acme", "notes", "old")]
    store.delete(("acme", "notes", "old"), "3")
    assert store.list_namespaces(prefix=("acme",)) == [("acme", "notes")]
    assert store.list_namespaces(prefix=("globex",)) == [("globex", "notes")]


def test_invalid_namespaces_are_refused_by_the_public_api(store: BaseStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(bad, "foo", doc))
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None


# -- items -------------------------------------------------------------------------------------
def test_put_get_update_delete(store: BaseStore) -> None:
    assert store.get(("docs",), "missing") is None
    store.put(("docs", "user1"), "doc1", {"title": "First", "n": 1})
    item = store.get(("docs", "user1"), "doc1")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("docs", "user1"), "doc1", {"title": "First", "n": 1})
    store.put(("docs", "user1"), "doc1", {"title": "Second"})
    again = store.get(("docs", "user1"), "doc1")
    assert again is not None and again.value == {"title": "Second"}
    assert again.updated_at >= item.updated_at
    # The same key in another namespace is another item.
    assert store.get(("docs", "user2"), "doc1") is None
    store.delete(("docs", "user1"), "doc1")
    assert store.get(("docs", "user1"), "doc1") is None
    store.delete(("docs", "user1"), "doc1")  # deleting what is gone is not an error


def test_same_text_under_two_keys_is_two_items(store: BaseStore) -> None:
    store.put(("n",), "a", {"text": "same words"})
    store.put(("n",), "b", {"text": "same words"})
    assert sorted(i.key for i in store.search(("n",))) == ["a", "b"]


def test_batch_reads_see_the_state_before_its_writes(store: BaseStore) -> None:
    first = store.batch(
        [
            PutOp(("test", "batch"), "k1", {"v": 0}),
            PutOp(("test", "batch"), "k2", {"v": 2}),
            GetOp(("test", "batch"), "k1"),
            PutOp(("test", "batch"), "k1", {"v": 1}),  # the last write of a key wins
        ]
    )
    assert first == [None, None, None, None]
    second = store.batch(
        [
            GetOp(("test", "batch"), "k1"),
            SearchOp(("test",), filter={"v": 2}),
            ListNamespacesOp(),
            PutOp(("test", "batch"), "k1", None),
            GetOp(("test", "batch"), "k1"),
        ]
    )
    assert second[0].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in second[1]] == ["k2"]  # type: ignore[union-attr]
    assert second[2] == [("test", "batch")]
    assert second[3] is None and second[4] is not None
    assert store.get(("test", "batch"), "k1") is None
    assert store.get(("test", "batch"), "k2").value == {"v": 2}  # type: ignore[union-attr]


def test_async_api(store: BaseStore) -> None:
    async def scenario() -> None:
        await store.aput(("a", "b"), "k", {"x": "y"})
        item = await store.aget(("a", "b"), "k")
        assert item is not None and item.value == {"x": "y"}
        assert [i.key for i in await store.asearch(("a",))] == ["k"]
        assert await store.alist_namespaces(prefix=("a",)) == [("a", "b")]
        got = await asyncio.gather(store.aget(("a", "b"), "k"), store.aget(("a", "b"), "nope"))
        assert got[0] is not None and got[1] is None
        await store.adelete(("a", "b"), "k")
        assert await store.aget(("a", "b"), "k") is None

    asyncio.run(scenario())


def test_search_filters_and_paging(store: BaseStore) -> None:
    docs = [
        ("d1", {"color": "red", "score": 4.5, "meta": {"kind": "a"}}),
        ("d2", {"color": "blue", "score": 3.0, "meta": {"kind": "b"}}),
        ("d3", {"color": "red", "score": 2.0, "meta": {"kind": "b"}}),
        ("d4", {"color": "green", "score": 5.0, "tags": ["x", "y"]}),
    ]
    for key, value in docs:
        store.put(("f",), key, value)

    def keys(**kwargs: object) -> list[str]:
        return sorted(i.key for i in store.search(("f",), **kwargs))  # type: ignore[arg-type]

    assert keys(filter={"color": "red"}) == ["d1", "d3"]
    assert keys(filter={"score": {"$gt": 3.0}}) == ["d1", "d4"]
    assert keys(filter={"score": {"$gte": 3.0, "$lt": 5.0}}) == ["d1", "d2"]
    assert keys(filter={"color": {"$ne": "red"}}) == ["d2", "d4"]
    assert keys(filter={"meta": {"kind": "b"}}) == ["d2", "d3"]
    assert keys(filter={"tags": ["x", "y"]}) == ["d4"]
    assert keys(filter={"color": "red", "score": {"$lte": 2.0}}) == ["d3"]
    assert keys(filter={"color": "purple"}) == []
    assert len(store.search(("f",), limit=3)) == 3
    first, rest = store.search(("f",), limit=2), store.search(("f",), limit=10, offset=2)
    assert len(rest) == 2 and {i.key for i in first}.isdisjoint({i.key for i in rest})


def test_dotted_filter_paths_reach_nested_values() -> None:
    assert matches_filter({"meta": {"kind": "a"}}, {"meta.kind": "a"})
    assert not matches_filter({"meta": {"kind": "a"}}, {"meta.kind": "b"})
    assert matches_filter({"meta.kind": "z"}, {"meta.kind": "z"})
    with pytest.raises(InvalidInput, match="operator"):
        matches_filter({"n": 1}, {"n": {"$regex": "1"}})


def test_ttl_expires_items_and_reads_refresh_them(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "ttl.db"), embedder=HashEmbedder(64)) as service:
        store = FunesStore(service)
        store.put(("t",), "short", {"v": 1}, ttl=0.001)  # 60 ms
        store.put(("t",), "long", {"v": 2}, ttl=60)
        store.put(("t",), "forever", {"v": 3})
        time.sleep(0.2)
        assert store.get(("t",), "short") is None
        assert sorted(i.key for i in store.search(("t",))) == ["forever", "long"]
        [record] = [m for m in service.list(entity_types=["langgraph"]).items if m.title == "long"]
        assert record.expires_at is not None
        store.get(("t",), "long", refresh_ttl=True)
        refreshed = service.get(record.id)
        assert refreshed.expires_at is not None and refreshed.expires_at > record.expires_at
        forever = next(m for m in service.list(entity_types=["langgraph"]).items if m.title == "forever")
        assert forever.expires_at is None
        # A put without ttl makes an expiring item permanent again.
        store.put(("t",), "long", {"v": 2})
        assert service.get(record.id).expires_at is None


def test_ttl_config_defaults_refresh_on_read_and_sweep(tmp_path: Path) -> None:
    ttl = {"default_ttl": 0.002, "refresh_on_read": False}  # 120 ms unless a put says otherwise
    with funes.open(str(tmp_path / "ttl.db"), embedder=HashEmbedder(64)) as service:
        store = FunesStore(service, ttl=ttl)
        store.put(("t",), "default", {"v": 1})
        store.put(("t",), "kept", {"v": 2}, ttl=None)
        record = next(m for m in service.list(entity_types=["langgraph"]).items if m.title == "default")
        assert record.expires_at is not None
        store.get(("t",), "default")  # refresh_on_read off: the expiry stays
        assert service.get(record.id).expires_at == record.expires_at
        time.sleep(0.3)
        assert store.sweep_ttl() == 1 and store.sweep_ttl() == 0
        assert [m.title for m in service.list(entity_types=["langgraph"], include_expired=True).items] == ["kept"]
        assert asyncio.run(store.asweep_ttl()) == 0

        def titles() -> list[str | None]:
            return [m.title for m in service.list(entity_types=["langgraph"], include_expired=True).items]

        store.start_ttl_sweeper(0.001)
        store.put(("t",), "swept", {"v": 3})
        deadline = time.monotonic() + 20
        while len(titles()) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.stop_ttl_sweeper(5)
        assert [m.title for m in service.list(entity_types=["langgraph"], include_expired=True).items] == ["kept"]


def test_query_search_fills_the_limit_and_scores_the_best_field(mem: funes.Funes) -> None:
    store = FunesStore(mem, index={"fields": ["title", "body"]})
    for i in range(30):
        store.put(("docs",), f"d{i}", {"title": f"note {i}", "body": "unrelated words here", "n": i % 2})
    store.put(("docs",), "exact", {"title": "quarterly revenue", "body": "something else entirely"})
    hits = store.search(("docs",), query="quarterly revenue", limit=10)
    assert len(hits) == 10  # no similarity floor drops candidates
    assert hits[0].key == "exact" and hits[0].score == pytest.approx(1.0, abs=1e-5)  # cosine of the best field
    assert hits[1].score is not None and hits[1].score < hits[0].score
    assert len(store.search(("docs",), query="revenue", filter={"n": 1}, limit=100)) == 15
    assert len(store.search(("docs",), query="revenue", offset=25, limit=10)) == 6
    # Each listed field is embedded apart: the body alone matches as well as the title did.
    store.put(("docs",), "body", {"title": "x", "body": "quarterly revenue"})
    scores = {h.key: h.score for h in store.search(("docs",), query="quarterly revenue", limit=2)}
    assert scores["body"] == pytest.approx(1.0, abs=1e-5) and scores["exact"] == pytest.approx(1.0, abs=1e-5)


class _LengthEmbeddings(Embeddings):
    """[len(text), 1]: vectors of different lengths, so cosine, inner product and L2 all differ."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]


@pytest.mark.parametrize(
    ("distance", "expected"),
    [("cosine", 9 / math.sqrt(17 * 5)), ("inner_product", 9.0), ("l2", -2.0), (None, 9 / math.sqrt(17 * 5))],
)
def test_the_index_distance_type_is_the_score(mem: funes.Funes, distance: str | None, expected: float) -> None:
    index = {"embed": _LengthEmbeddings(), "dims": 2, **({"distance_type": distance} if distance else {})}
    store = FunesStore(mem, index=index)
    store.put(("d",), "doc", {"text": "aaaa"})  # [4, 1]
    [hit] = store.search(("d",), query="aa")  # [2, 1]
    assert hit.score == pytest.approx(expected, abs=1e-5)


def test_an_unknown_distance_type_is_refused(mem: funes.Funes) -> None:
    with pytest.raises(InvalidInput, match="distance_type"):
        FunesStore(mem, index={"embed": _LengthEmbeddings(), "distance_type": "hamming"})


def test_reads_refresh_the_ttl_of_items_written_meanwhile_from_many_threads(mem: funes.Funes) -> None:
    """Threads reading (refresh_ttl) and rewriting one key: a refresh that loses the race retries, never raises."""
    store = FunesStore(mem, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "k", {"v": 0})

    def work(i: int) -> None:
        for n in range(15):
            if i % 2:
                store.put(("t",), "k", {"v": n})
            else:
                assert store.get(("t",), "k") is not None
                store.search(("t",))

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(work, range(6)))
    record = next(m for m in mem.list(entity_types=["langgraph"]).items if m.title == "k")
    assert record.expires_at is not None and record.expires_at > utcnow()


def test_puts_and_deletes_of_one_key_from_many_threads_never_fail(backend_mem: funes.Funes) -> None:
    """A put whose record another thread deleted after the put read it writes the record anew.

    On PostgreSQL the delete commits between the put's read and its update (the put holds no lock on the
    row until it writes): the update then changes nothing and, before the fix, the put's vectors broke
    the foreign key to a record that was gone (LangGraph's ``test_large_batches`` on PostgreSQL).
    """
    store = FunesStore(backend_mem)

    def work(i: int) -> None:
        for n in range(40):
            key = f"k{n % 2}"
            if (i + n) % 3:
                store.put(("t",), key, {"v": f"value {i} {n}"})
            else:
                store.delete(("t",), key)

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(work, range(6)))
    for key in ("k0", "k1"):
        item = store.get(("t",), key)
        records = backend_mem.list(entity_types=["langgraph"]).items
        assert len([m for m in records if m.title == key]) == (item is not None)
    assert backend_mem.doctor() == []


def test_concurrent_async_operations_are_coalesced_and_all_answered(mem: funes.Funes) -> None:
    """The shape of LangGraph's large async batch test (60,000 operations there), smaller."""
    store = FunesStore(mem)
    ns = ("test", "foo", "bar")

    async def main() -> list[object]:
        coros = []
        for m in range(4):
            for i in range(50):
                where = (*ns, str(m % 2))
                coros += [
                    store.aput(where, f"key{i}", {"foo": f"bar{i}"}),
                    store.aget(where, f"key{i}"),
                    store.alist_namespaces(prefix=None, max_depth=m + 1),
                    store.asearch(("test",)),
                    store.aput(where, f"key{i}", {"foo": f"bar{i}"}),
                    store.adelete(where, f"key{i}"),
                ]
        return await asyncio.gather(*coros)

    results = asyncio.run(main())
    assert len(results) == 4 * 50 * 6
    # Within one coalesced batch the last write per key wins (LangGraph's batch rule): every key was deleted.
    assert store.search(("test",), limit=100) == []
    assert not mem.list(entity_types=["langgraph"]).items

    async def sequential() -> tuple[object, object]:
        await store.aput(ns, "k", {"v": 1})
        got = await store.aget(ns, "k")
        await store.adelete(ns, "k")
        return got, await store.aget(ns, "k")

    got, gone = asyncio.run(sequential())
    assert got.value == {"v": 1} and gone is None  # type: ignore[attr-defined]


def test_a_namespace_prefix_matches_whole_labels_only(mem: funes.Funes) -> None:
    store = FunesStore(mem)
    for namespace in [("foo",), ("foo", "bar"), ("foobar",), ("foobar", "baz")]:
        store.put(namespace, "k", {"text": "same text"})
    assert {i.namespace for i in store.search(("foo",))} == {("foo",), ("foo", "bar")}
    assert {i.namespace for i in store.search(("foo",), query="same text")} == {("foo",), ("foo", "bar")}
    assert store.list_namespaces(prefix=("foo",)) == [("foo",), ("foo", "bar")]


def test_index_false_keeps_the_value_out_of_search_text(mem: funes.Funes) -> None:
    store = FunesStore(mem)
    store.put(("n",), "secret-key", {"text": "zebra crossing"}, index=False)
    store.put(("n",), "visible", {"text": "zebra stripes"})
    [hidden] = [m for m in mem.list(entity_types=["langgraph"]).items if m.title == "secret-key"]
    assert "zebra" not in hidden.content
    hits = store.search(("n",), query="zebra")
    assert hits[0].key == "visible" and hits[0].score is not None
    assert all(h.score is None for h in hits if h.key == "secret-key")
    assert store.get(("n",), "secret-key").value == {"text": "zebra crossing"}  # type: ignore[union-attr]
    # index=[fields] indexes those fields only.
    store.put(("n",), "fields", {"title": "quokka", "body": "platypus"}, index=["title"])
    text = next(m for m in mem.list(entity_types=["langgraph"]).items if m.title == "fields").content
    assert "quokka" in text and "platypus" not in text


def test_namespace_fields_map_to_funes_identities(mem: funes.Funes) -> None:
    store = FunesStore(mem, namespace_fields=("tenant", None, "user", "project"))
    store.put(("acme", "memories", "alice", "apollo"), "k", {"content": "Alice uses the staging cluster"})
    store.put(("acme", "memories", "bob"), "k", {"content": "Bob prefers short answers"})
    store.put(("globex", "memories", "alice"), "k", {"content": "Globex Alice likes tea"})
    alice = mem.list(tenant="acme", user="alice", entity_types=["langgraph"]).items
    assert [(m.tenant, m.user_id, m.project_id, m.scope) for m in alice] == [("acme", "alice", "apollo", "project")]
    bob = mem.list(tenant="acme", user="bob", entity_types=["langgraph"]).items
    assert [(m.user_id, m.scope) for m in bob] == [("bob", "team")]
    # A tenant is a hard partition: acme's namespaces never list globex's.
    assert store.list_namespaces(prefix=("acme",)) == [
        ("acme", "memories", "alice", "apollo"),
        ("acme", "memories", "bob"),
    ]
    assert store.list_namespaces(prefix=("globex",)) == [("globex", "memories", "alice")]
    with pytest.raises(InvalidInput, match="namespace field"):
        FunesStore(mem, namespace_fields=("team",))


# -- real model: hybrid search, calibrated scores, LangMem ---------------------------------------
@pytest.mark.slow
def test_query_scores_are_cosine_similarities_with_the_model(real_mem: funes.Funes) -> None:
    store = FunesStore(real_mem, namespace_fields=(None, "user"))
    facts = {
        "diet": "The user is vegetarian and avoids fish.",
        "editor": "The user writes code in Neovim with a dark theme.",
        "travel": "The user is flying to Lisbon in March for a conference.",
        "pet": "The user has a golden retriever named Biscuit.",
    }
    for key, text in facts.items():
        store.put(("memories", "alice"), key, {"content": text})
    store.put(("memories", "bob"), "diet", {"content": "Bob eats anything, especially sushi."})
    hits = store.search(("memories", "alice"), query="what food should I cook for them?")
    assert hits[0].key == "diet"
    assert all(h.namespace == ("memories", "alice") for h in hits)
    assert hits[0].score is not None and 0.0 <= hits[0].score <= 1.0
    assert hits[0].score > hits[-1].score  # type: ignore[operator]
    assert store.search(("memories", "alice"), query="which dog do they have", limit=1)[0].key == "pet"
    exact = store.search(("memories", "alice"), query=facts["pet"], limit=1)[0]
    assert exact.key == "pet" and exact.score == pytest.approx(1.0, abs=1e-4)
    # The same records are what Funes recall finds for that user.
    recalled = real_mem.search("golden retriever", user="alice")
    assert recalled and recalled[0].memory.metadata["langgraph"]["key"] == "pet"


@pytest.mark.slow
def test_langmem_tools_run_unchanged_on_the_store(real_mem: funes.Funes) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = FunesStore(real_mem, namespace_fields=(None, "user"))
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace, store=store)
    search = create_search_memory_tool(namespace, store=store)
    config = {"configurable": {"langgraph_user_id": "alice"}}

    created = manage.invoke({"content": "Alice prefers answers in Portuguese.", "action": "create"}, config)
    assert "created memory" in str(created)
    manage.invoke({"content": "Alice's manager is called Rui.", "action": "create"}, config)
    found = search.invoke({"query": "which language should replies use?"}, config)
    assert "Portuguese" in str(found)
    [item] = [i for i in store.search(("memories", "alice"), query="language") if "Portuguese" in str(i.value)]
    manage.invoke({"content": "Alice prefers answers in English now.", "action": "update", "id": item.key}, config)
    assert "English" in str(store.get(("memories", "alice"), item.key).value)  # type: ignore[union-attr]
    record = real_mem.list(user="alice", entity_types=["langgraph"], limit=10).items
    assert any(m.version == 2 and "Portuguese" in m.previous_versions[0].content for m in record)
    manage.invoke({"action": "delete", "id": item.key}, config)
    assert store.get(("memories", "alice"), item.key) is None
    # Another user sees none of alice's memories.
    other = search.invoke({"query": "manager"}, {"configurable": {"langgraph_user_id": "bob"}})
    assert "Rui" not in str(other)


def test_project_and_session_namespaces_are_searched_across_scopes(mem: funes.Funes) -> None:
    store = FunesStore(mem, namespace_fields=("project", "session"))
    store.put(("apollo", "s1"), "a", {"t": "alpha words"})
    store.put(("apollo", "s2"), "b", {"t": "beta words"})
    store.put(("zeus",), "c", {"t": "gamma words"})
    scopes = {m.title: (m.scope, m.project_id, m.session_id) for m in mem.list(entity_types=["langgraph"]).items}
    assert scopes == {
        "a": ("session", "apollo", "s1"),
        "b": ("session", "apollo", "s2"),
        "c": ("project", "zeus", None),
    }
    assert sorted(i.key for i in store.search(())) == ["a", "b", "c"]
    assert sorted(i.key for i in store.search(("apollo",), query="words")) == ["a", "b"]
    assert [i.key for i in store.search(("apollo", "s2"), query="words")] == ["b"]
    assert store.list_namespaces(max_depth=1) == [("apollo",), ("zeus",)]
