"""A load made of many calls on PostgreSQL (issue 29): tracked across calls and processes, the HNSW index
dropped once and built by the durable ``ann-index`` job only after the load has stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import pytest

import funes
from funes.models import Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.providers.embed import HashEmbedder
from funes.store.pg_load import LOAD_KEY, REBUILD_MIN, quiet_in
from funes.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres
DIMS = 16


def _record(text: str, tenant: str = "acme") -> Memory:
    now = utcnow()
    return Memory(
        id=new_id(), content=text, content_hash=content_hash(text), tenant=tenant, created_at=now, updated_at=now,
        source=SourceRef(type="user"),
    )  # fmt: skip


def _units(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def mem(pg_url: str) -> Iterator[funes.Funes]:
    service = funes.open(pg_url, embedder=HashEmbedder(DIMS), worker="off")
    yield service
    service.close()


def _store(mem: funes.Funes) -> PostgresStore:
    store = mem.store
    assert isinstance(store, PostgresStore)
    return store


def _indexed(store: PostgresStore) -> bool:
    sql = "SELECT count(*) FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'"
    return bool(store.db.reader().native(sql).fetchone()[0])


def _ann_jobs(store: PostgresStore) -> list[tuple[str, str]]:
    sql = "SELECT status, tenant FROM jobs WHERE kind = 'ann-index' ORDER BY created_at, id"
    return [tuple(r) for r in store.db.reader().native(sql).fetchall()]


def _load(store: PostgresStore, rng: np.random.Generator, n: int, tag: str) -> list[tuple[Memory, np.ndarray]]:
    vectors = _units(rng, n)
    items = [(_record(f"{tag} {i}"), vectors[i]) for i in range(n)]
    store.put_many([(m, [v]) for m, v in items])
    return items


def test_a_load_of_many_small_calls_drops_the_index_once_and_the_job_builds_it_only_after_the_load(
    mem: funes.Funes,
) -> None:
    store = _store(mem)
    rng = np.random.default_rng(1)
    store.load_quiet = 0.0
    first = _load(store, rng, 3 * REBUILD_MIN, "first")  # one large call into an empty store: dropped
    assert not _indexed(store)
    assert mem.jobs.run_pending()["done"] >= 1 and _indexed(store)

    store.load_quiet = 3600.0  # the load below never turns quiet by itself
    call = 3 * REBUILD_MIN // 10  # calls of 300: the first three extend the index (too small to be worth a build)
    loaded: list[tuple[Memory, np.ndarray]] = []
    for n in range(1, 6):
        loaded += _load(store, rng, call, f"call {n}")
        # The fourth call makes the load 1,200 vectors into a store of at most 3,900: worth a build.
        assert _indexed(store) == (n * call < REBUILD_MIN)
    # One job, queued by the call that dropped the index (the later calls' requests were absorbed by it).
    assert _ann_jobs(store) == [("done", "acme"), ("queued", "acme")]
    load = store.db.reader().native("SELECT value FROM meta WHERE key = %s", [LOAD_KEY]).fetchone()[0]
    assert int(load.split()[1]) == 5 * call

    # While the index is away, a search is exact: every probe finds its own record first.
    store.exact_max = 0  # the plan of a large tenant
    later = utcnow()
    for memory, vector in (first[5], loaded[0], loaded[-1]):
        found = store.vector_search(vector, SearchFilters(tenant="acme"), k=3, now=later)
        assert found[0][0] == memory.id and found[0][1] == pytest.approx(1.0, abs=1e-5)

    # The job, run while the load may still be writing, leaves the index away and queues itself again.
    store.db.reader().native("UPDATE jobs SET run_after = 0 WHERE status = 'queued'")
    assert mem.jobs.run_pending()["done"] == 1
    assert not _indexed(store)
    assert [s for s, _ in _ann_jobs(store)] == ["done", "done", "queued"]
    # Once the load has been quiet long enough, the same job builds the index.
    store.load_quiet = 0.0
    store.db.reader().native("UPDATE jobs SET run_after = 0 WHERE status = 'queued'")
    assert mem.jobs.run_pending()["done"] == 1
    assert _indexed(store)
    assert [s for s, _ in _ann_jobs(store)] == ["done", "done", "done"]
    for memory, vector in (first[5], loaded[-1]):
        found = store.vector_search(vector, SearchFilters(tenant="acme"), k=3, now=utcnow())
        assert found[0][0] == memory.id


def test_remember_many_calls_each_in_its_own_transaction_are_counted_as_one_load(mem: funes.Funes) -> None:
    store = _store(mem)
    store.load_quiet = 0.0
    mem.remember_many([f"first note {i} about ships" for i in range(3 * REBUILD_MIN)])
    assert not _indexed(store)  # dropped inside remember_many's transaction, its build queued in it
    mem.jobs.run_pending()
    assert _indexed(store)
    store.load_quiet = 3600.0
    call = 3 * REBUILD_MIN // 10
    for n in range(1, 5):
        mem.remember_many([f"call {n} note {i} about zeppelins" for i in range(call)])
        assert _indexed(store) == (n * call < REBUILD_MIN)
    assert [s for s, _ in _ann_jobs(store)] == ["done", "queued"]
    hits = mem.search("call 4 note 7 about zeppelins", limit=3)
    assert hits and hits[0].memory.content == "call 4 note 7 about zeppelins"


_LOADER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from funes.models import Memory, SourceRef, content_hash, new_id, utcnow
    from funes.store.postgres import PostgresStore

    store = PostgresStore(sys.argv[1])
    store.load_quiet = 3600.0
    rng = np.random.default_rng(5)
    n = 0
    while True:  # an import loop that never ends on its own: the test kills it
        vectors = rng.standard_normal((400, 16)).astype(np.float32)
        batch = []
        for v in vectors:
            now = utcnow()
            text = f"loaded {n}"
            n += 1
            m = Memory(id=new_id(), content=text, content_hash=content_hash(text), tenant="acme",
                       created_at=now, updated_at=now, source=SourceRef(type="user"))
            batch.append((m, [v / np.linalg.norm(v)]))
        store.put_many(batch)
        print(n, flush=True)
    """
)


def test_a_process_killed_mid_load_leaves_the_job_that_builds_the_index_back(mem: funes.Funes, pg_url: str) -> None:
    store = _store(mem)
    rng = np.random.default_rng(2)
    store.load_quiet = 0.0
    _load(store, rng, 2 * REBUILD_MIN, "before")
    mem.jobs.run_pending()
    assert _indexed(store)
    loader = subprocess.Popen(
        [sys.executable, "-c", _LOADER, pg_url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        # Killed at once after a call that dropped the index, with more calls under way.
        assert loader.stdout is not None
        written = 0
        while _indexed(store):
            line = loader.stdout.readline()
            assert line, "the loader ended on its own"
            written = int(line)
        loader.stdout.readline()  # one more call into the store without its index
    finally:
        loader.send_signal(signal.SIGKILL)
        loader.wait()
        if loader.stdout is not None:
            loader.stdout.close()
    assert written >= 400
    assert not _indexed(store)
    assert [s for s, _ in _ann_jobs(store)][-1] == "queued"
    # The job the dead process queued first builds the index once the load has been quiet long enough.
    store.load_quiet = 1.0
    while quiet_in(store.db.reader(), store.load_quiet) > 0:
        time.sleep(0.2)
    store.db.reader().native("UPDATE jobs SET run_after = 0 WHERE status = 'queued'")
    mem.jobs.run_pending()
    assert _indexed(store)
    valid = (
        store.db.reader()
        .native("SELECT indisvalid FROM pg_index WHERE indexrelid = 'memory_vectors_hnsw'::regclass")
        .fetchone()[0]
    )
    assert valid


def test_maintenance_waits_for_the_index_a_load_took_away(mem: funes.Funes) -> None:
    # Dedupe searches once per record: with the index away each search would scan the whole tenant.
    store = _store(mem)
    store.load_quiet = 3600.0  # the load never turns quiet by itself
    _load(store, np.random.default_rng(3), 3 * REBUILD_MIN, "load")
    assert store.index_away() and not _indexed(store)
    mem.jobs.enqueue("maintain", {"tenant": "acme"}, tenant="acme")
    assert mem.run_jobs(kinds=["maintain"])["done"] == 1
    done = mem.jobs.list(kind="maintain", status="done")
    assert done[0].result and "deferred" in done[0].result
    assert len(mem.jobs.list(kind="maintain", status="queued")) == 1  # it looks again later

    # Once the ann-index job has built the index, the queued run does the work.
    store.load_quiet = 0.0
    store.db.reader().native("UPDATE jobs SET run_after = 0 WHERE status = 'queued'")
    assert mem.run_jobs(kinds=["ann-index"])["done"] == 1
    assert _indexed(store) and not store.index_away()
    store.db.reader().native("UPDATE jobs SET run_after = 0 WHERE status = 'queued'")
    assert mem.run_jobs(kinds=["maintain"])["done"] == 1
    latest = mem.jobs.list(kind="maintain", status="done")[0]
    assert latest.result and "removed" in latest.result and "deferred" not in latest.result
