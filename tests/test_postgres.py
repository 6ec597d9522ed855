"""PostgreSQL-only behaviour: row-level security, filtered KNN recall, SKIP LOCKED claims, clear errors.

The shared contract (tests/test_store.py, test_jobs.py, test_visibility.py,
test_fts_escaping.py) already runs on both backends; these are the things
only the PostgreSQL store has.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import psycopg
import pytest

import funes
from funes.errors import Conflict, InvalidInput
from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.providers.embed import HashEmbedder
from funes.store import open_store
from funes.store.postgres import PostgresStore
from funes.store.sqlite_forget import TOUCHED
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres

DIMS = 16


def record(content: str, **fields: object) -> Memory:
    now = utcnow()
    base: dict[str, object] = {"id": new_id(), "content": content, "content_hash": content_hash(content)}
    base.update(created_at=now, updated_at=now, source=SourceRef(type="user"))
    base.update(fields)
    return Memory(**base)  # type: ignore[arg-type]


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = open_store(pg_url)
    assert isinstance(opened, PostgresStore)
    opened.set_identity(EmbedderIdentity("test-model", DIMS))
    yield opened
    opened.close()


def _vec(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def test_row_level_security_hides_other_tenants_from_a_query_without_a_tenant_filter(
    store: PostgresStore, pg_url: str
) -> None:
    rng = np.random.default_rng(1)
    mine = record("acme's plan", tenant="acme")
    theirs = record("globex's secret plan", tenant="globex")
    store.put_many([(mine, [_vec(rng)]), (theirs, [_vec(rng)])])
    # A raw query that forgot its tenant filter, on a connection acting for acme.
    with psycopg.connect(pg_url) as conn:
        conn.execute("SELECT set_config('funes.tenant', 'acme', true)")
        rows = conn.execute("SELECT content FROM memories").fetchall()
        vectors = conn.execute("SELECT tenant FROM memory_vectors").fetchall()
    assert rows == [("acme's plan",)]
    assert vectors == [("acme",)]
    # The store's own unfiltered reads under acting_for see one tenant too.
    with acting_for("acme"):
        assert [m.id for m in store.iter_records()] == [mine.id]
        assert store.get(theirs.id) is None
        assert store.stats(None)["records"] == 1
    with acting_for("globex"):
        assert [m.id for m in store.iter_records()] == [theirs.id]
    # Acting for no tenant (the CLI, the job runner's claim) sees everything.
    assert {m.id for m in store.iter_records()} == {mine.id, theirs.id}


def test_row_level_security_refuses_a_write_into_another_tenant(store: PostgresStore) -> None:
    with acting_for("acme"), pytest.raises(psycopg.errors.InsufficientPrivilege):
        store.put(record("smuggled", tenant="globex"), None)
    assert store.get_many([]) == {}
    assert [m.content for m in store.iter_records()] == []


def test_a_superuser_connection_is_warned_about(
    pg_admin_url: str, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    superuser_url = pg_url.replace("funes_test:funes_test@", "", 1)
    if superuser_url == pg_url:
        pytest.skip("the test URL has another shape")
    from urllib.parse import urlsplit

    admin_user = urlsplit(pg_admin_url).username or "postgres"
    superuser_url = superuser_url.replace("://", f"://{admin_user}@", 1)
    with caplog.at_level(logging.WARNING, logger="funes.store.postgres"):
        open_store(superuser_url).close()
    assert any("row-level security" in r.getMessage() for r in caplog.records)


def _exact(vectors: np.ndarray, query: np.ndarray, ids: list[str], k: int) -> list[str]:
    sims = vectors @ query
    return [ids[i] for i in np.argsort(-sims)[:k]]


def test_filtered_knn_recall_on_the_hnsw_plan_matches_exact(pg_url: str) -> None:
    """10k vectors, a 5% tenant and a 0.2% tenant, searched through the HNSW plan (exact_max 0)."""
    rng = np.random.default_rng(7)
    store = PostgresStore(pg_url, exact_max=0)
    try:
        store.set_identity(EmbedderIdentity("test-model", DIMS))
        tenants = ["big"] * 9480 + ["mid"] * 500 + ["tiny"] * 20
        vectors = np.stack([_vec(rng) for _ in tenants])
        items = [(record(f"r{i}", tenant=t), [vectors[i]]) for i, t in enumerate(tenants)]
        for start in range(0, len(items), 2000):
            store.put_many(items[start : start + 2000])
        ids = [m.id for m, _ in items]
        now = utcnow() + timedelta(seconds=1)
        for tenant in ("mid", "tiny", "big"):
            mask = np.array([t == tenant for t in tenants])
            tenant_ids = [i for i, keep in zip(ids, mask, strict=True) if keep]
            recalls = []
            for _ in range(10):
                query = _vec(rng)
                got = [i for i, _ in store.vector_search(query, SearchFilters(tenant=tenant), k=10, now=now)]
                assert len(got) == 10
                want = _exact(vectors[mask], query, tenant_ids, 10)
                recalls.append(len(set(got) & set(want)) / 10)
            assert np.mean(recalls) >= 0.95, (tenant, recalls)
    finally:
        store.close()


def test_two_workers_never_claim_the_same_job(pg_url: str) -> None:
    stores = [open_store(pg_url) for _ in range(2)]
    try:
        now = utcnow()
        job_ids = {stores[0].enqueue_job("noop", {"n": n}, tenant="acme", now=now) for n in range(20)}
        claimed: list[list[str]] = [[], []]

        def work(n: int) -> None:
            while (job := stores[n].claim_job(f"w{n}", now=now, lease_seconds=60)) is not None:
                claimed[n].append(job.id)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(claimed[0] + claimed[1]) == sorted(job_ids)
        assert not set(claimed[0]) & set(claimed[1])
    finally:
        for s in stores:
            s.close()


def test_a_dedupe_key_coalesces_queued_jobs(store: PostgresStore) -> None:
    now = utcnow()
    first = store.enqueue_job("sync", {}, tenant="acme", now=now, dedupe_key="sync:acme")
    assert store.enqueue_job("sync", {"x": 1}, tenant="acme", now=now, dedupe_key="sync:acme") == first
    assert store.job_counts("acme") == {"queued": 1}


def test_api_keys_and_project_settings_roundtrip(store: PostgresStore) -> None:
    now = utcnow().replace(microsecond=0)
    row = {"id": "key_1", "team": "acme", "user_id": "u1", "role": "write", "name": "ci", "prefix": "fk_abc",
           "key_hash": "h1", "created_at": now}  # fmt: skip
    store.save_api_key(row)
    store.save_api_key({**row, "id": "key_2", "key_hash": "h2", "team": "globex", "created_at": now + timedelta(1)})
    found = store.find_api_key("h1")
    assert found is not None and found["team"] == "acme" and found["created_at"] == now and found["revoked_at"] is None
    assert [k["id"] for k in store.list_api_keys()] == ["key_2", "key_1"]
    assert [k["id"] for k in store.list_api_keys("acme")] == ["key_1"]
    assert all("key_hash" not in k for k in store.list_api_keys())
    # Keys are how a request's tenant is found: no row-level security on them.
    with acting_for("globex"):
        assert store.find_api_key("h1") is not None
    assert store.revoke_api_key("key_1", now) is True
    assert store.revoke_api_key("key_1", now) is False
    store.touch_api_key("key_2", now)
    assert store.find_api_key("h2")["last_used_at"] == now  # type: ignore[index]
    assert store.get_project_settings("acme", "file1") is None
    store.save_project_settings("acme", "file1", {"enabled": True, "chunk_size": 400}, now)
    store.save_project_settings("acme", "file1", {"enabled": False}, now)
    assert store.get_project_settings("acme", "file1") == {"enabled": False}
    with acting_for("globex"):
        assert store.get_project_settings("acme", "file1") is None


def test_funes_db_url_selects_postgres_and_file_commands_say_what_to_use(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FUNES_DB_URL", pg_url)
    with funes.open(embedder=HashEmbedder(32)) as mem:
        assert isinstance(mem.core.store, PostgresStore)
        mem.remember("Deploys go out on Tuesdays")
        assert mem.search("deploys tuesday", track=False)[0].memory.content == "Deploys go out on Tuesdays"
        with pytest.raises(InvalidInput, match="pg_dump"):
            mem.backup("/tmp/nowhere.db")
        with pytest.raises(InvalidInput, match="NUL"):
            mem.remember("a NUL \x00 byte")


def test_text_with_nul_is_refused_clearly_and_nothing_is_written(store: PostgresStore) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        store.put(record("bad \x00 text"), None)
    assert list(store.iter_records()) == []


def test_a_job_runs_acting_for_its_tenant_so_row_level_security_confines_it(pg_url: str) -> None:
    with funes.open(pg_url, embedder=HashEmbedder(32), worker="off") as mem:
        mem.remember("acme's roadmap", tenant="acme")
        mem.remember("globex's roadmap", tenant="globex")
        seen: list[list[str]] = []

        def handler(job: object) -> object:
            # A careless handler reading every record, with no tenant filter.
            seen.append(sorted(m.content for m in mem.core.store.iter_records()))
            return lambda: None

        mem.jobs.register("peek", handler)  # type: ignore[arg-type]
        mem.jobs.enqueue("peek", {}, tenant="acme")
        assert mem.run_jobs()["done"] == 1
    assert seen == [["acme's roadmap"]]


def test_keyword_scores_are_bm25_on_the_same_scale_as_sqlite(pg_url: str, tmp_path: object) -> None:
    """The calibrated relevance model reads BM25 values: both stores must give comparable ones."""
    texts = [
        "The vendor contract renews in March",
        "Energy efficiency of the new vendor is 90 percent",
        "Lunch is at noon on Fridays",
        "Our vendor list is reviewed every quarter by procurement",
        "The quarterly review covers efficiency and cost",
    ] * 4 + [f"Filler note number {n} about the weather" for n in range(40)]
    scores = {}
    both: dict[str, set[str]] = {}
    for name, url in (("sqlite", str(tmp_path) + "/kw.db"), ("postgres", pg_url)):  # type: ignore[operator]
        store = open_store(url)
        try:
            store.set_identity(EmbedderIdentity("test-model", DIMS))
            records = [record(f"{t} #{i}") for i, t in enumerate(texts)]
            store.put_many([(r, None) for r in records])
            both[name] = {r.id for r in records if {"vendor", "efficiency"} <= set(r.content.lower().split())}
            hits = store.keyword_search(["vendor", "efficiency"], SearchFilters(), limit=5, now=utcnow())
            scores[name] = hits
        finally:
            store.close()
    top = {name: hits[0][1] for name, hits in scores.items()}
    assert all(score > 0 for score in top.values())
    assert 0.5 <= top["postgres"] / top["sqlite"] <= 2.0, scores
    # A record with both words ranks first on both.
    for name, hits in scores.items():
        assert hits[0][0] in both[name]


def test_the_unique_entity_index_refuses_a_second_summary_of_one_entity(store: PostgresStore) -> None:
    fields = {"tenant": "acme", "project_id": "file1", "entity_type": "DATA_TABLE", "entity_id": "t1",
              "kind": "entity_summary", "scope": "project"}  # fmt: skip
    first = record("Table t1 holds the orders", **fields)
    store.put(first, None)
    with pytest.raises(Conflict):
        store.put(record("Table t1 holds orders, again", **fields), None)
    found = store.find_entity("acme", None, "file1", "DATA_TABLE", "t1")
    assert found is not None and found.id == first.id
    # The same entity in another file, or another tenant, is another record.
    store.put(record("Table t1 of file 2", **{**fields, "project_id": "file2"}), None)
    store.put(record("Table t1 of globex", **{**fields, "tenant": "globex"}), None)
    assert len(list(store.iter_records())) == 3


def test_vacuum_runs_when_the_connection_s_tenant_must_change_first(store: PostgresStore) -> None:
    """VACUUM cannot run in a transaction block; the tenant setting piped with it made one.

    A forget's scrub (VACUUM FULL) failed with ActiveSqlTransaction whenever the pooled connection last served
    another tenant, which under concurrent use was now and then: the forget had committed, its caller saw an error.
    """
    with acting_for("acme"):
        store.put(record("acme's note to scrub", tenant="acme"), None)
        store.delete([m.id for m in store.iter_records()])
    for tenant in ("globex", "acme"):  # each call must first change the tenant the connection was left with
        with acting_for(tenant):
            assert store.scrub([tenant]) == {"vacuum_full": list(TOUCHED)}
            store.db.reader().native("VACUUM memories")
