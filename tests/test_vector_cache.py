"""The in-process vector cache: same hits as sqlite-vec, and always fresh, also across processes."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from funes.errors import InvalidInput
from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id
from funes.store.sqlite import SqliteStore

DIMS = 24
NOW = datetime(2026, 6, 1, tzinfo=UTC)
SCOPES = ("team", "project", "session")
KINDS = ("memory", "chunk", "message")
TYPES = ("fact", "preference", "decision")
SOURCES = ("user", "file", "")


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length."""
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_record(rng: random.Random, tenant: str, **changes: object) -> Memory:
    """A record with random filter columns."""
    scope = rng.choice(SCOPES)
    source = rng.choice(SOURCES)
    content = f"note {rng.random()}"
    expiry_roll = rng.random()
    expires = None
    if expiry_roll < 0.1:
        expires = NOW - timedelta(days=1)
    elif expiry_roll < 0.2:
        expires = NOW + timedelta(days=1)
    fields: dict[str, object] = {
        "id": new_id(),
        "content": content,
        "tenant": tenant,
        "user_id": rng.choice([None, "ann", "bob"]),
        "scope": scope,
        "project_id": rng.choice(["p1", "p2"]) if scope == "project" else None,
        "session_id": rng.choice(["s1", "s2", "s3"]) if scope == "session" else None,
        "kind": rng.choice(KINDS),
        "memory_type": rng.choice(TYPES),
        "source": SourceRef(type=source, source_id=rng.choice(["a", "b", None])) if source else None,
        "expires_at": expires,
        "content_hash": content_hash(content),
        "created_at": NOW - timedelta(days=rng.randint(0, 300)),
    }
    fields.update(changes)
    return Memory(**fields)  # type: ignore[arg-type]


def vectors(rng: np.random.Generator, parts: int) -> list[np.ndarray]:
    """``parts`` random vectors, not all of unit length (vec0 normalises them in its cosine)."""
    return list(unit(rng.standard_normal((parts, DIMS))) * rng.uniform(0.5, 2.0))


def random_filters(rng: random.Random, tenant: str) -> SearchFilters:
    """Any combination of the filters the vec0 path supports."""

    def some(values: tuple[str, ...]) -> tuple[str, ...] | None:
        return tuple(rng.sample(values, rng.randint(1, len(values)))) if rng.random() < 0.3 else None

    after = NOW - timedelta(days=rng.randint(100, 300)) if rng.random() < 0.2 else None
    before = NOW - timedelta(days=rng.randint(0, 150)) if rng.random() < 0.2 else None
    return SearchFilters(
        tenant=tenant,
        user_id=rng.choice([None, None, "ann", "bob", "zed"]),
        scopes=some(SCOPES),
        project_id=rng.choice([None, "p1", "p2", "p9"]),
        session_id=rng.choice([None, "s1", "s3"]),
        kinds=some(KINDS),
        memory_types=some(TYPES),
        source_types=some(("user", "file", "none")),
        source_ids=some(("a", "b", "")),
        created_after=after,
        created_before=before,
    )


def assert_same(cached: list[tuple[str, float]], exact: list[tuple[str, float]]) -> None:
    """Same records, same similarities (float tolerance), same order up to near-ties."""
    assert [i for i, _ in cached] == [i for i, _ in exact] or (
        dict(cached).keys() == dict(exact).keys()
        and all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(cached, exact, strict=True))
    )
    ref = dict(exact)
    for memory_id, sim in cached:
        assert sim == pytest.approx(ref[memory_id], abs=1e-5)


@pytest.fixture
def stores(tmp_path: Path):  # type: ignore[no-untyped-def]
    """(cached, plain): two stores on one file, one searching from memory from the first vector, one through vec0."""
    path = tmp_path / "vc.db"
    cached = SqliteStore(path, vector_cache_min=1)
    cached.set_identity(EmbedderIdentity("test-model", DIMS))
    plain = SqliteStore(path, vector_cache_min=0)
    yield cached, plain
    cached.close()
    plain.close()


def fill(store: SqliteStore, tenant: str, count: int, seed: int) -> list[Memory]:
    """``count`` random records with 1-3 vectors each."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    items = [(make_record(rng, tenant), vectors(nrng, rng.choice([1, 1, 1, 2, 3]))) for _ in range(count)]
    store.put_many(items)
    return [m for m, _ in items]


def warm(store: SqliteStore, tenant: str) -> None:
    """Search a tenant until it is served from memory (the first search of a process never loads)."""
    query = np.ones(DIMS, dtype=np.float32)
    for _ in range(2):
        store.vector_search(query, SearchFilters(tenant=tenant), k=1, now=NOW)
    assert tenant in store.vector_cache._tenants


def test_parity_with_sqlite_vec_under_random_filters(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    fill(cached, "big", 700, seed=1)
    fill(cached, "other", 50, seed=2)
    rng, nrng = random.Random(3), np.random.default_rng(3)
    nonempty = 0
    for _ in range(150):
        filters = random_filters(rng, rng.choice(["big", "big", "other"]))
        query = nrng.standard_normal(DIMS).astype(np.float32)
        k = rng.choice([1, 5, 10, 50])
        now = rng.choice([NOW, NOW + timedelta(days=2), None])
        exact = plain.vector_search(query, filters, k=k, now=now)
        got = cached.vector_search(query, filters, k=k, now=now)
        assert_same(got, exact)
        nonempty += bool(exact)
    assert nonempty > 50  # the filters are not so tight that every result is empty
    assert set(cached.vector_cache._tenants) == {"big", "other"}
    assert not plain.vector_cache._tenants


def test_small_tenants_stay_on_sqlite_vec(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db", vector_cache_min=100)
    store.vector_cache.recheck_seconds = 0.0
    store.set_identity(EmbedderIdentity("test-model", DIMS))
    fill(store, "small", 60, seed=4)
    query = np.ones(DIMS, dtype=np.float32)
    for _ in range(3):
        assert store.vector_search(query, SearchFilters(tenant="small"), k=5, now=NOW)
    assert "small" not in store.vector_cache._tenants
    fill(store, "small", 60, seed=5)  # crosses the threshold
    assert store.vector_search(query, SearchFilters(tenant="small"), k=5, now=NOW)
    assert "small" in store.vector_cache._tenants
    store.close()


def test_a_one_shot_search_loads_nothing(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    fill(cached, "big", 100, seed=30)
    query = np.random.default_rng(31).standard_normal(DIMS).astype(np.float32)
    filters = SearchFilters(tenant="big")
    assert_same(cached.vector_search(query, filters, k=10, now=NOW), plain.vector_search(query, filters, k=10, now=NOW))
    assert cached.vector_cache.full_loads == 0 and not cached.vector_cache._tenants
    assert_same(cached.vector_search(query, filters, k=10, now=NOW), plain.vector_search(query, filters, k=10, now=NOW))
    assert cached.vector_cache.full_loads == 1


def test_fresh_after_inserts_deletes_and_updates_in_process(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    records = fill(cached, "big", 300, seed=6)
    query = unit(np.random.default_rng(7).standard_normal((1, DIMS)))[0]
    filters = SearchFilters(tenant="big")
    warm(cached, "big")
    loads = cached.vector_cache.full_loads
    # Insert the best possible match.
    best = make_record(random.Random(8), "big", scope="team", expires_at=None, user_id=None)
    cached.put(best, [query * 3])
    hits = cached.vector_search(query, filters, k=10, now=NOW)
    assert hits[0][0] == best.id and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    # Metadata change without new vectors: moving it to a session hides it from another session.
    cached.put(best.evolve(scope="session", session_id="s9"), None)
    hidden = SearchFilters(tenant="big", scopes=("session",), session_id="s1")
    assert best.id not in dict(cached.vector_search(query, hidden, k=10, now=NOW))
    shown = SearchFilters(tenant="big", scopes=("session",), session_id="s9")
    assert dict(cached.vector_search(query, shown, k=10, now=NOW))[best.id] == pytest.approx(1.0, abs=1e-5)
    # Expiry set in an update.
    cached.put(best.evolve(expires_at=NOW - timedelta(hours=1)), None)
    assert best.id not in dict(cached.vector_search(query, filters, k=10, now=NOW))
    # New vectors replace the old ones.
    cached.put(best.evolve(expires_at=None), [-query])
    assert best.id not in dict(cached.vector_search(query, filters, k=10, now=NOW))
    # Deletes.
    victims = [m.id for m in records[:100]]
    cached.delete(victims)
    hits = cached.vector_search(query, filters, k=400, now=NOW)
    assert not set(victims) & set(dict(hits))
    assert_same(hits, plain.vector_search(query, filters, k=400, now=NOW))
    # A write of this tenant's record id under another tenant is refused: nothing moves, the cache stays true.
    kept = records[150]
    before = dict(cached.vector_search(query, filters, k=400, now=NOW))
    with pytest.raises(InvalidInput):
        cached.put(kept.evolve(tenant="elsewhere"), None)
    assert dict(cached.vector_search(query, filters, k=400, now=NOW)) == before
    assert_same(
        cached.vector_search(query, filters, k=400, now=NOW), plain.vector_search(query, filters, k=400, now=NOW)
    )
    # All of it came from the change log: no reload of the tenant.
    assert cached.vector_cache.full_loads == loads
    assert cached.vector_cache.delta_loads >= 5


WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from funes.models import Memory, content_hash
    from funes.store.sqlite import SqliteStore

    path, victim, dims = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SqliteStore(path, vector_cache_min=0)
    query = np.zeros(dims, dtype=np.float32)
    query[0] = 1.0
    store.put(Memory(id="mem_from_other_process", content="x", tenant="big", content_hash=content_hash("x")), [query])
    store.delete([victim])
    store.close()
    """
)


def test_fresh_after_writes_from_another_process(stores, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    records = fill(cached, "big", 200, seed=9)
    query = np.zeros(DIMS, dtype=np.float32)
    query[0] = 1.0
    filters = SearchFilters(tenant="big")
    warm(cached, "big")
    before = dict(cached.vector_search(query, filters, k=500, now=NOW))
    victim = next(m.id for m in records if m.id in before)
    loads = cached.vector_cache.full_loads
    subprocess.run(
        [sys.executable, "-c", WRITER, cached.path, victim, str(DIMS)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    hits = cached.vector_search(query, filters, k=500, now=NOW)
    assert hits[0][0] == "mem_from_other_process"
    assert victim not in dict(hits)
    assert_same(hits, plain.vector_search(query, filters, k=500, now=NOW))
    assert cached.vector_cache.full_loads == loads


def test_truncated_change_log_forces_a_full_reload(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    records = fill(cached, "big", 200, seed=10)
    query = np.random.default_rng(11).standard_normal(DIMS).astype(np.float32)
    filters = SearchFilters(tenant="big")
    warm(cached, "big")
    loads = cached.vector_cache.full_loads
    # Another handle writes and trims the log past what the cache has seen.
    plain.delete([m.id for m in records[:50]])
    fill(plain, "big", 30, seed=12)
    plain.trim_vector_changes(keep=5)
    hits = cached.vector_search(query, filters, k=300, now=NOW)
    assert cached.vector_cache.full_loads == loads + 1
    assert_same(hits, plain.vector_search(query, filters, k=300, now=NOW))
    # The triggers trim on their own once the log grows: keep 100, trim every 1024 changes.
    with plain.db.write() as conn:
        conn.execute("UPDATE meta SET value = '100' WHERE key = 'vector_changes_keep'")
    fill(plain, "big", 700, seed=13)
    rows = plain.db.reader().execute("SELECT COUNT(*) FROM vector_changes").fetchone()[0]
    assert rows < 1024
    hits = cached.vector_search(query, filters, k=300, now=NOW)
    assert cached.vector_cache.full_loads == loads + 2
    assert_same(hits, plain.vector_search(query, filters, k=300, now=NOW))


def test_expiry_is_applied_at_search_time(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    fill(cached, "big", 50, seed=14)
    query = np.random.default_rng(15).standard_normal(DIMS).astype(np.float32)
    soon = make_record(random.Random(16), "big", scope="team", user_id=None, expires_at=NOW + timedelta(hours=1))
    cached.put(soon, [query])
    filters = SearchFilters(tenant="big")
    assert cached.vector_search(query, filters, k=3, now=NOW)[0][0] == soon.id
    later = NOW + timedelta(hours=2)
    assert soon.id not in dict(cached.vector_search(query, filters, k=3, now=later))
    assert_same(
        cached.vector_search(query, filters, k=3, now=later), plain.vector_search(query, filters, k=3, now=later)
    )


def test_reindex_reloads_every_vector(stores) -> None:  # type: ignore[no-untyped-def]
    cached, plain = stores
    records = fill(cached, "big", 120, seed=17)
    query = np.random.default_rng(18).standard_normal(DIMS).astype(np.float32)
    filters = SearchFilters(tenant="big")
    warm(cached, "big")
    loads = cached.vector_cache.full_loads
    nrng = np.random.default_rng(19)
    cached.replace_index(EmbedderIdentity("test-model-2", DIMS), [(m, vectors(nrng, 1)) for m in records])
    hits = cached.vector_search(query, filters, k=50, now=NOW)
    assert cached.vector_cache.full_loads == loads + 1
    assert_same(hits, plain.vector_search(query, filters, k=50, now=NOW))


def test_searches_from_threads_while_writing(stores) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    cached, _ = stores
    fill(cached, "big", 200, seed=20)
    query = np.random.default_rng(21).standard_normal(DIMS).astype(np.float32)
    filters = SearchFilters(tenant="big")

    def search(_: int) -> int:
        return len(cached.vector_search(query, filters, k=5, now=NOW))

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(search, i) for i in range(40)]
        for seed in range(22, 27):
            fill(cached, "big", 20, seed=seed)
        assert all(f.result() == 5 for f in futures)
