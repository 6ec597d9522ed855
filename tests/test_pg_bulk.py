"""Bulk writes on PostgreSQL (issue 29): put_many in batches, the HNSW index rebuilt by a job after a large load."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from funes.errors import InvalidInput
from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.pg_load import REBUILD_MIN
from funes.store.postgres import PostgresStore
from funes.store.postgres_bulk import BATCH

pytestmark = pytest.mark.postgres


def _record(text: str, tenant: str = "acme", **fields: object) -> Memory:
    now = utcnow()
    return Memory(
        id=new_id(), content=text, content_hash=content_hash(text), tenant=tenant, created_at=now, updated_at=now,
        source=SourceRef(type="user"), **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _unit(rng: np.random.Generator, dims: int = 16) -> np.ndarray:
    v = rng.standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def store(pg_url: str):  # type: ignore[no-untyped-def]
    s = PostgresStore(pg_url)
    s.set_identity(EmbedderIdentity("bulk-test", 16))
    s.load_quiet = 0.0  # each load here is over when its call returns (loads across calls: test_pg_load.py)
    yield s
    s.close()


def test_a_large_load_is_written_whole_and_searchable_before_and_after_the_job_rebuilds_the_index(
    store: PostgresStore,
) -> None:
    rng = np.random.default_rng(7)
    n = max(REBUILD_MIN, 3 * BATCH) + 500
    records = [_record(f"note {i} about {'zeppelins' if i % 100 == 0 else 'ships'}", title=f"t{i}") for i in range(n)]
    vectors = [_unit(rng) for _ in range(n)]
    before = store.db.counter.statements
    conn = store.db.reader()

    def graph() -> list[str]:  # the HNSW index's build options: a denser graph than pgvector's default 64
        return conn.native("SELECT reloptions FROM pg_class WHERE relname = 'memory_vectors_hnsw'").fetchone()[0]

    assert sorted(graph()) == ["ef_construction=128", "m=16"]  # as the store created it, empty
    assert store.put_many([(m, [v]) for m, v in zip(records, vectors, strict=True)]) == n
    assert store.db.counter.statements - before < n // 50  # batches, not a statement per record
    assert conn.native("SELECT count(*) FROM memories").fetchone()[0] == n
    assert conn.native("SELECT count(*) FROM memory_vectors").fetchone()[0] == n

    def indexes() -> set[str]:
        return {r[0] for r in conn.native("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_vectors'")}

    # The load dropped the index and queued its build, in its own transaction; a search asks for it once.
    assert "memory_vectors_hnsw" not in indexes()
    jobs = conn.native("SELECT kind, tenant, status FROM jobs").fetchall()
    assert jobs == [("ann-index", "acme", "queued")]
    assert store.index_work() == ["acme"] and store.index_work() == []
    later = utcnow() + timedelta(seconds=1)
    # The keyword vector is written with the row (title weighted), and each vector belongs to its record.
    hits = store.keyword_search(["zeppelins"], SearchFilters(tenant="acme"), limit=100, now=later)
    assert {i for i, _ in hits} == {m.id for m in records[::100]}
    store.exact_max = 0  # the HNSW plan, with and then without the index
    for built in (False, True):
        if built:
            assert "built the HNSW index" in store.maintain_index("acme")
            assert "memory_vectors_hnsw" in indexes() and sorted(graph()) == ["ef_construction=128", "m=16"]
            assert "nothing to do" in store.maintain_index("acme")
        for probe in (3, n // 2, n - 1):
            found = store.vector_search(vectors[probe], SearchFilters(tenant="acme"), k=5, now=later)
            assert found[0][0] == records[probe].id and found[0][1] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("inside", [False, True], ids=["own transaction", "caller's transaction"])
def test_a_failure_in_a_later_batch_leaves_nothing_written_and_the_index_whole(
    store: PostgresStore, inside: bool
) -> None:
    rng = np.random.default_rng(10)
    n = 2 * BATCH + 500
    records = [_record(f"note {i}") for i in range(n)]
    # PostgreSQL refuses the NUL of the third batch's record: the first batches were already sent.
    records[2 * BATCH + 10] = records[2 * BATCH + 10].evolve(content="a \x00 in the text")
    with pytest.raises(Exception, match="NUL"):
        if inside:
            with store.db.write():
                store.put_many([(m, [_unit(rng)]) for m in records])
        else:
            store.put_many([(m, [_unit(rng)]) for m in records])
    conn = store.db.reader()
    assert conn.native("SELECT count(*) FROM memories").fetchone()[0] == 0
    assert conn.native("SELECT count(*) FROM memory_vectors").fetchone()[0] == 0

    def indexed() -> bool:
        return bool(
            conn.native("SELECT count(*) FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'").fetchone()[0]
        )

    jobs = conn.native("SELECT kind FROM jobs").fetchall()
    if inside:  # dropped in the transaction that rolled back: the index is back and no job was queued
        assert indexed() and jobs == []
    else:  # dropped concurrently before the load, its build queued first: the job builds it again
        assert not indexed() and jobs == [("ann-index",)]
        store.maintain_index("acme")
        assert indexed()


def test_a_batch_replaces_updates_and_keeps_vectors_as_one_by_one_writes_do(store: PostgresStore) -> None:
    rng = np.random.default_rng(8)
    first = [_record(f"first {i}") for i in range(5)]
    store.put_many([(m, [_unit(rng), _unit(rng)]) for m in first])
    new_vector = _unit(rng)
    # A record never moves to another tenant: the batch is refused whole (tests/test_tenant_ids.py).
    with pytest.raises(InvalidInput, match="another tenant"):
        store.put_many([(_record("brand new"), [_unit(rng)]), (first[0].evolve(tenant="globex"), None)])
    changed = [
        (first[0].evolve(content="first 0 rewritten"), None),  # vectors kept
        (first[1].evolve(content="first 1 rewritten"), [new_vector]),  # vectors replaced
        (first[2], []),  # vectors dropped
        (_record("brand new"), [_unit(rng)]),
    ]
    store.put_many(changed)
    conn = store.db.reader()
    parts = dict(
        conn.native(
            "SELECT m.id, count(v.*) FROM memories m LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid "
            "GROUP BY m.id"
        ).fetchall()
    )
    assert [parts[m.id] for m in first] == [2, 1, 0, 2, 2]
    tenants = {t for (t,) in conn.native(
        "SELECT DISTINCT v.tenant FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid WHERE m.id = %s",
        (first[0].id,),
    ).fetchall()}  # fmt: skip
    assert tenants == {"acme"}
    assert store.get(first[1].id).content == "first 1 rewritten"  # type: ignore[union-attr]
    got = store.vectors_for([first[1].id])[first[1].id]
    assert len(got) == 1 and np.allclose(got[0], new_vector, atol=1e-6)
    # One id twice in a batch: the later write wins, as it would one by one.
    twice = _record("twice v1")
    store.put_many([(twice, [_unit(rng)]), (twice.evolve(content="twice v2"), [_unit(rng)])])
    assert store.get(twice.id).content == "twice v2"  # type: ignore[union-attr]
    assert len(store.vectors_for([twice.id])[twice.id]) == 1


def test_a_bad_vector_in_a_batch_writes_nothing(store: PostgresStore) -> None:
    rng = np.random.default_rng(9)
    good = [(_record(f"good {i}"), [_unit(rng)]) for i in range(3)]
    bad = (_record("bad"), [np.zeros(16, dtype=np.float32)])
    with pytest.raises(Exception, match="nothing was written"):
        store.put_many([*good, bad])
    assert store.db.reader().native("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_a_tenants_load_counts_the_whole_stores_vectors_not_only_the_ones_security_shows_it(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import funes.store.pg_load as load
    from funes.store.tenancy import acting_for

    monkeypatch.setattr(load, "REBUILD_SHARE", 1.0)
    rng = np.random.default_rng(11)
    store.put_many([(_record(f"big {i}", tenant="big"), [_unit(rng)]) for i in range(3 * BATCH)])
    store.maintain_index("big")
    store.index_work()
    conn = store.db.reader()
    queued = conn.native("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0]
    # Row-level security shows the small tenant none of big's 3,000 vectors: a count(*) would say the store is
    # empty and drop the whole store's index for a load of 1,200.
    with acting_for("small"):
        store.put_many([(_record(f"small {i}", tenant="small"), [_unit(rng)]) for i in range(BATCH + 200)])
        assert store.db.reader().native("SELECT count(*) FROM memory_vectors").fetchone()[0] == BATCH + 200
    assert conn.native("SELECT count(*) FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'").fetchone()[0] == 1
    assert conn.native("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0] == queued


def test_a_batch_of_many_tenants_writes_each_tenants_vectors_side_by_side(store: PostgresStore) -> None:
    """An exact search reads its tenant's vectors through the tenant btree: grouped on the heap, they fill a few
    pages instead of one page each (bench/store_bench.py's layout: 3,730 pages for 3,687 vectors before, 800 after)."""
    rng = np.random.default_rng(5)
    tenants = ["acme", "globex", "initech"]
    records = [_record(f"note {i}", tenant=tenants[i % 3]) for i in range(300)]
    store.put_many([(m, [_unit(rng)]) for m in records])
    rows = store.db.reader().native("SELECT tenant FROM memory_vectors ORDER BY ctid").fetchall()
    runs = [t for n, (t,) in enumerate(rows) if n == 0 or rows[n - 1][0] != t]
    assert runs == tenants  # one run per tenant, not 300 alternations
    for tenant in tenants:  # and every record still has its own vector
        found = store.vector_search(_unit(rng), SearchFilters(tenant=tenant), k=200)
        assert len(found) == 100
