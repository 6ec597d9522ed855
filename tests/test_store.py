"""Contract tests of the Store protocol.

Every test takes the ``store`` fixture, which is parametrised over the store
implementations: SQLite, and PostgreSQL with pgvector (marked ``postgres``;
conftest's ``pg_url`` gives each test a fresh database). Vectors are built by hand here: the store never
embeds, so its contract is tested without any model.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from funes.errors import EmbedderMismatch
from funes.models import EmbedderIdentity, Memory, RankFields, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store import AccessEvent, Store, Visibility, open_store, vis_key

DIMS = 8


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A fresh store of each implementation (conftest's ``store_url``), with an 8-dimension embedder identity."""
    opened = open_store(store_url)
    opened.set_identity(EmbedderIdentity("test-model", DIMS))
    yield opened
    opened.close()


def unit(*values: float) -> np.ndarray:
    """An L2-normalised float32 vector of DIMS values (missing ones are 0)."""
    vec = np.zeros(DIMS, dtype=np.float32)
    vec[: len(values)] = values
    return vec / np.linalg.norm(vec)


def record(content: str, **fields: object) -> Memory:
    """A valid record with the content hash filled in."""
    now = utcnow()
    base: dict[str, object] = {"id": new_id(), "content": content, "content_hash": content_hash(content)}
    base.update(created_at=now, updated_at=now, source=SourceRef(type="user"))
    base.update(fields)
    return Memory(**base)  # type: ignore[arg-type]


def filters(**kw: object) -> SearchFilters:
    """Search filters with the default tenant unless given."""
    return SearchFilters(**kw)  # type: ignore[arg-type]


def test_migrations_are_numbered_and_recorded(store: Store) -> None:
    applied = store.migrations()  # type: ignore[attr-defined]
    assert applied[0] == (1, "001_core.sql")
    versions = [v for v, _ in applied]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_reopening_does_not_reapply_migrations(tmp_path: Path) -> None:
    first = open_store(tmp_path / "again.db")
    before = first.migrations()  # type: ignore[attr-defined]
    first.close()
    second = open_store(tmp_path / "again.db")
    try:
        assert second.migrations() == before  # type: ignore[attr-defined]
    finally:
        second.close()


def test_identity_is_recorded_and_a_different_one_is_refused(store: Store) -> None:
    assert store.identity() == EmbedderIdentity("test-model", DIMS)
    with pytest.raises(EmbedderMismatch) as info:
        store.set_identity(EmbedderIdentity("other-model", 16))
    assert "funes reindex" in (info.value.hint or "")
    store.set_identity(EmbedderIdentity("other-model", 16), reset=True)
    assert store.identity() == EmbedderIdentity("other-model", 16)


def test_vector_of_the_wrong_size_is_refused_and_nothing_is_written(store: Store) -> None:
    memory = record("wrong size")
    with pytest.raises(EmbedderMismatch):
        store.put(memory, [np.ones(DIMS + 1, dtype=np.float32)])
    assert store.get(memory.id) is None
    assert store.check() == []


def test_put_get_roundtrip_keeps_every_field(store: Store) -> None:
    memory = record(
        "Quarterly revenue grew 12%",
        tenant="acme",
        user_id="ana",
        scope="project",
        project_id="p1",
        memory_type="decision",
        entity_type="FILE",
        entity_id="f-1",
        topic="finance",
        title="Revenue",
        importance=0.7,
        pinned=True,
        expires_at=utcnow() + timedelta(days=3),
        metadata={"b": 1, "a": [1, 2]},
        source=SourceRef(type="pdf", uri="/docs/report.pdf", source_id="src1", locator={"page": 3}),
    )
    store.put(memory, [unit(1, 0)])
    assert store.get(memory.id) == memory
    assert store.get_many([memory.id, "missing"]) == {memory.id: memory}


def test_put_writes_row_vector_and_keyword_entry_together(store: Store) -> None:
    memory = record("solar panels on the warehouse roof")
    store.put(memory, [unit(1, 0), unit(0, 1)])
    assert store.keyword_search(["warehouse"], filters(), limit=5, now=utcnow())[0][0] == memory.id
    assert store.vector_search(unit(0, 1), filters(), k=5, now=utcnow())[0][0] == memory.id
    assert len(store.vectors_for([memory.id])[memory.id]) == 2
    assert store.check() == []


def test_keyword_search_hands_back_the_rank_fields_it_read(store: Store) -> None:
    """What the keyword leg read of its hits' records is what ``rank_fields`` says of them (no second read)."""
    project = record("the harbour dredging plan", scope="project", project_id="p1", importance=0.9)
    later = record("harbour tide tables for the dredging", expires_at=utcnow() + timedelta(days=2))
    store.put(project, [unit(1, 0)])
    store.put(later, [unit(0, 1)])
    fields: dict[str, RankFields] = {}
    hits = store.keyword_search(["harbour", "dredging"], filters(), limit=5, now=utcnow(), fields=fields)
    assert {i for i, _ in hits} == {project.id, later.id}
    assert fields == store.rank_fields([i for i, _ in hits])


def test_replacing_a_record_replaces_its_vectors_and_keywords(store: Store) -> None:
    memory = record("the old wording about tomatoes")
    store.put(memory, [unit(1, 0)])
    changed = memory.evolve(content="new wording about cucumbers", content_hash=content_hash("cucumbers"))
    store.put(changed, [unit(0, 1)])
    assert store.keyword_search(["tomatoes"], filters(), limit=5, now=utcnow()) == []
    assert [i for i, _ in store.keyword_search(["cucumbers"], filters(), limit=5, now=utcnow())] == [memory.id]
    vectors = store.vectors_for([memory.id])[memory.id]
    assert len(vectors) == 1 and float(np.dot(vectors[0], unit(0, 1))) == pytest.approx(1.0)
    assert store.check() == []


def test_delete_removes_row_vectors_and_keyword_entry(store: Store) -> None:
    keep = record("keep this note about apples")
    drop = record("drop this note about apples")
    store.put_many([(keep, [unit(1, 0)]), (drop, [unit(1, 0.1), unit(0.2, 1)])])
    assert store.delete([drop.id, "no-such-id"]) == 1
    assert store.get(drop.id) is None
    assert [i for i, _ in store.keyword_search(["apples"], filters(), limit=5, now=utcnow())] == [keep.id]
    assert [i for i, _ in store.vector_search(unit(1, 0), filters(), k=5, now=utcnow())] == [keep.id]
    assert store.vectors_for([drop.id]) == {}
    assert store.check() == []


def test_put_many_is_atomic(store: Store) -> None:
    good = record("a good record")
    bad = record("a bad record")
    with pytest.raises(EmbedderMismatch):
        store.put_many([(good, [unit(1)]), (bad, [np.ones(3, dtype=np.float32)])])
    assert store.get(good.id) is None and store.get(bad.id) is None
    assert store.check() == []


def test_keyword_and_vector_indexes_agree_after_many_writes(store: Store) -> None:
    rng = np.random.default_rng(7)
    ids = []
    for n in range(60):
        memory = record(f"note number {n} about topic{n % 7}")
        store.put(memory, [rng.normal(size=DIMS).astype(np.float32)])
        ids.append(memory.id)
    store.delete(ids[::3])
    for memory_id in ids[1::3]:
        current = store.get(memory_id)
        assert current is not None
        store.put(current.evolve(content=current.content + " edited"), [rng.normal(size=DIMS).astype(np.float32)])
    assert store.check() == []
    found = {i for i, _ in store.keyword_search(["note"], filters(), limit=100, now=utcnow())}
    near = {i for i, _ in store.vector_search(unit(1), filters(), k=100, now=utcnow())}
    assert found == near == set(ids) - set(ids[::3])


def test_tenant_filter_is_applied_inside_the_knn(store: Store) -> None:
    rng = np.random.default_rng(1)
    query = unit(1, 0)
    crowd = [
        (record(f"crowd {n} shared words", tenant="big"), [(query + rng.normal(0, 0.01, DIMS)).astype(np.float32)])
        for n in range(5000)
    ]
    store.put_many(crowd)
    few = [record(f"small tenant note {n} shared words", tenant="small") for n in range(3)]
    store.put_many([(m, [unit(0, 1, n)]) for n, m in enumerate(few)])
    hits = store.vector_search(query, filters(tenant="small"), k=10, now=utcnow())
    assert sorted(i for i, _ in hits) == sorted(m.id for m in few)
    words = store.keyword_search(["shared"], filters(tenant="small"), limit=10, now=utcnow())
    assert sorted(i for i, _ in words) == sorted(m.id for m in few)


def test_type_filter_is_applied_inside_the_knn(store: Store) -> None:
    query = unit(1, 0)
    store.put_many([(record(f"fact {n}", memory_type="fact"), [query]) for n in range(300)])
    prefs = [record(f"preference {n}", memory_type="preference") for n in range(3)]
    store.put_many([(m, [unit(0, 1, n)]) for n, m in enumerate(prefs)])
    hits = store.vector_search(query, filters(memory_types=("preference",)), k=5, now=utcnow())
    assert sorted(i for i, _ in hits) == sorted(m.id for m in prefs)


def test_expired_records_are_never_returned(store: Store) -> None:
    now = utcnow()
    old = record("expired coupon code", expires_at=now - timedelta(seconds=1))
    live = record("valid coupon code", expires_at=now + timedelta(days=1))
    store.put_many([(old, [unit(1, 0)]), (live, [unit(1, 0.1)])])
    assert [i for i, _ in store.keyword_search(["coupon"], filters(), limit=5, now=now)] == [live.id]
    assert [i for i, _ in store.vector_search(unit(1, 0), filters(), k=5, now=now)] == [live.id]
    listed = store.list(filters(), cursor=None, limit=10, include_expired=False, pinned=None, now=now)
    assert [m.id for m in listed.items] == [live.id]
    everything = store.list(filters(), cursor=None, limit=10, include_expired=True, pinned=None, now=now)
    assert {m.id for m in everything.items} == {old.id, live.id}


def _visibility_fixture(store: Store) -> dict[str, Memory]:
    records = {
        "team": record("alpha team", scope="team"),
        "p1": record("alpha project one", scope="project", project_id="p1"),
        "p2": record("alpha project two", scope="project", project_id="p2"),
        "s1": record("alpha session one", scope="session", session_id="s1"),
        "s2": record("alpha session two", scope="session", session_id="s2"),
        "ana": record("alpha private to ana", scope="team", user_id="ana"),
        "bob": record("alpha private to bob", scope="team", user_id="bob"),
        "other": record("alpha other tenant", tenant="other"),
    }
    store.put_many([(m, [unit(1, n / 10)]) for n, m in enumerate(records.values())])
    return records


VISIBILITY_CASES = [
    ({}, {"team", "p1", "p2", "s1", "s2", "ana", "bob"}),
    ({"project_id": "p1"}, {"team", "p1", "s1", "s2", "ana", "bob"}),
    ({"project_id": "p1", "session_id": "s2"}, {"team", "p1", "s2", "ana", "bob"}),
    ({"scopes": ("team",)}, {"team", "ana", "bob"}),
    ({"scopes": ("project",), "project_id": "p2"}, {"p2"}),
    ({"scopes": ("session", "project")}, {"p1", "p2", "s1", "s2"}),
    ({"user_id": "ana"}, {"team", "p1", "p2", "s1", "s2", "ana"}),
    ({"tenant": "other"}, {"other"}),
]


@pytest.mark.parametrize(("kw", "expected"), VISIBILITY_CASES)
def test_visibility_rules_hold_in_every_index(store: Store, kw: dict[str, object], expected: set[str]) -> None:
    records = _visibility_fixture(store)
    by_id = {m.id: name for name, m in records.items()}
    f = filters(**kw)
    now = utcnow()
    listed = store.list(f, cursor=None, limit=100, include_expired=False, pinned=None, now=now)
    assert {by_id[m.id] for m in listed.items} == expected
    assert {by_id[i] for i, _ in store.keyword_search(["alpha"], f, limit=100, now=now)} == expected
    assert {by_id[i] for i, _ in store.vector_search(unit(1), f, k=100, now=now)} == expected


def test_visibility_clauses() -> None:
    assert Visibility().clauses() == [("scope", ("session", "project")), ("vis", ("team",))]
    assert Visibility(project_id="p", session_id="s").clauses() == [("vis", ("session:s", "project:p", "team"))]
    assert Visibility(scopes=("project",)).clauses() == [("scope", ("project",))]
    assert vis_key("project", "p", None) == "project:p" and vis_key("team", "p", "s") == "team"


def test_cursor_pagination_visits_every_record_once(store: Store) -> None:
    made = [record(f"page item {n}") for n in range(23)]
    store.put_many([(m, [unit(1, n)]) for n, m in enumerate(made)])
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = store.list(filters(), cursor=cursor, limit=5, include_expired=False, pinned=None, now=utcnow())
        seen += [m.id for m in page.items]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 5
    assert seen == sorted((m.id for m in made), reverse=True)


def test_find_by_hash_is_scoped_to_tenant_visibility_and_kind(store: Store) -> None:
    memory = record("same words", scope="project", project_id="p1")
    store.put(memory, [unit(1)])
    h = memory.content_hash
    assert store.find_by_hash("default", "project:p1", h, "memory") == memory
    assert store.find_by_hash("default", "team", h, "memory") is None
    assert store.find_by_hash("other", "project:p1", h, "memory") is None
    assert store.find_by_hash("default", "project:p1", h, "message") is None


def test_record_access_bumps_counters_and_logs(store: Store) -> None:
    memory = record("looked up often")
    store.put(memory, [unit(1)])
    at = utcnow()
    events = [AccessEvent(memory_id=memory.id, tenant="default", action="search", query="q", score=0.5)] * 2
    store.record_access(events, at)
    current = store.get(memory.id)
    assert current is not None and current.access_count == 2 and current.last_accessed == at
    log = store.access_log(memory.id)  # type: ignore[attr-defined]
    assert len(log) == 2 and log[0]["query"] == "q" and log[0]["score"] == 0.5


def test_embedding_cache_roundtrip(store: Store) -> None:
    store.cache_put("m", [("h1", unit(1)), ("h2", unit(0, 1))])
    got = store.cache_get("m", ["h1", "h2", "h3"])
    assert set(got) == {"h1", "h2"} and np.allclose(got["h2"], unit(0, 1))
    assert store.cache_get("other-model", ["h1"]) == {}


def test_keyword_search_escapes_fts_syntax(store: Store) -> None:
    store.put(record("plain words here"), [unit(1)])
    for terms in (['"foo'], ["AND", "OR", "NOT"], ["*"], ["-x"], ["NEAR("], ["^"], ["a:b"], [""]):
        assert store.keyword_search(terms, filters(), limit=5, now=utcnow()) == []
    # Quotes inside a term are escaped, not interpreted: the word still matches.
    found = store.keyword_search(['words"', "NOT"], filters(), limit=5, now=utcnow())
    assert [memory_id for memory_id, _ in found] == [next(iter(store.iter_records())).id]


def test_stats_and_iter_records(store: Store) -> None:
    a = record("first", memory_type="preference")
    b = record("second", tenant="t2")
    store.put_many([(a, [unit(1)]), (b, [unit(0, 1)])])
    assert [m.id for m in store.iter_records()] == [a.id, b.id]
    assert [m.id for m in store.iter_records("t2")] == [b.id]
    stats = store.stats("default")
    assert stats["records"] == 1 and stats["by_type"] == {"preference": 1}


def test_find_by_hash_never_returns_another_users_record(store: Store) -> None:
    ana = record("shared words", user_id="ana")
    store.put(ana, [unit(1)])
    h = ana.content_hash
    assert store.find_by_hash("default", "team", h, "memory", "ana") == ana
    assert store.find_by_hash("default", "team", h, "memory", "bob") is None
    assert store.find_by_hash("default", "team", h, "memory") is None


def test_replace_index_swaps_identity_and_vectors_atomically(store: Store) -> None:
    memory = record("reindexed words")
    store.put(memory, [unit(1)])
    wide = np.ones(16, dtype=np.float32) / 4.0
    with pytest.raises(EmbedderMismatch):
        store.replace_index(EmbedderIdentity("m16", 16), [(memory, [np.ones(3, dtype=np.float32)])])
    assert store.identity() == EmbedderIdentity("test-model", DIMS)
    assert len(store.vectors_for([memory.id])[memory.id][0]) == DIMS
    assert store.check() == []
    assert store.replace_index(EmbedderIdentity("m16", 16), [(memory, [wide])]) == 1
    assert store.identity() == EmbedderIdentity("m16", 16)
    assert store.vector_search(wide, filters(), k=3, now=utcnow())[0][0] == memory.id
    assert store.check() == []
