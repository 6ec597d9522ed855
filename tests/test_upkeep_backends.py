"""Maintenance, retention, project settings and learning on both backends (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

import funes
from funes.models import SearchFilters, utcnow
from funes.providers.embed import HashEmbedder


def _open(url: str, **settings) -> funes.Funes:  # type: ignore[no-untyped-def]
    return funes.open(url, embedder=HashEmbedder(64), worker="off", **settings)


def _age(mem: funes.Funes, memory_id: str, days: float, **changes) -> None:  # type: ignore[no-untyped-def]
    old = utcnow() - timedelta(days=days)
    m = mem.store.get(memory_id)
    assert m is not None
    mem.store.put(m.evolve(created_at=old, updated_at=old, **changes), None)


def test_counter_maintenance_purge_prune_and_log(store_url: str) -> None:
    mem = _open(store_url, maintain_every_writes=4)
    try:
        expired = mem.remember("expiring note", expires_at=utcnow() + timedelta(seconds=5))
        stale = mem.remember("forgotten note")
        pinned = mem.remember("pinned note", pinned=True)
        fresh = mem.remember("fresh note")
        assert len(mem.jobs.list(kind="maintain")) == 1
        _age(mem, expired.id, 0, expires_at=utcnow() - timedelta(minutes=1))
        _age(mem, stale.id, 200)
        _age(mem, pinned.id, 200)
        assert mem.run_jobs(kinds=["maintain", "optimize"])["done"] == 2
        assert mem.store.get(expired.id) is None and mem.store.get(stale.id) is None
        assert mem.store.get(pinned.id) is not None and mem.store.get(fresh.id) is not None
        assert mem.cleanup_log()[0]["records_deleted"] == 2
        assert mem.store.bump_counter("default", "writes", 0) >= 4
        rows = mem.stats(storage=True)["storage"]["rows"]
        assert sum(r["records"] for r in rows) == 2 and all(r["vector_bytes"] == r["vectors"] * 256 for r in rows)
    finally:
        mem.close()


def test_project_settings_and_retention(store_url: str) -> None:
    mem = _open(store_url, maintain_every_writes=0)
    try:
        mem.configure_project("acme", {"max_records": 5, "retrieval_k": 2})
        assert mem.project_settings("acme")["settings"]["retrieval_k"] == 2
        kept = mem.remember("acme keeper", scope="project", project="acme", pinned=True, importance=0.1)
        for i in range(6):
            mem.remember(f"acme fact {i}", scope="project", project="acme", importance=0.2 + 0.1 * i)
        report = mem.maintain()
        assert report["removed"]["evicted"] == 7 - 4
        assert mem.project_settings("acme")["records"] == 4 and mem.store.get(kept.id) is not None
        mem.configure_project("acme", {"enabled": False})
        assert mem.search("acme fact", project="acme", min_relevance=0) == []
    finally:
        mem.close()


def test_learn_supersedes_an_exclusive_fact(store_url: str) -> None:
    mem = _open(store_url)
    try:
        first = mem.learn([{"role": "user", "content": "I live in Lyon near the river."}], user="ana")
        home = first["added"][0]["memory"]
        second = mem.learn([{"role": "user", "content": "I moved to Berlin last spring."}], user="ana")
        assert [i["memory"].id for i in second["updated"]] == [home.id]
        assert mem.get(home.id, user="ana").previous_versions[0].content == "I live in Lyon near the river."
    finally:
        mem.close()


@pytest.mark.postgres
def test_postgres_maintenance_analyzes_the_records_only_when_their_statistics_are_stale(pg_url: str) -> None:
    """The background run follows every maintain_every_writes writes: ANALYZE of 100k records each time took a
    core for a second every 50 creates of a busy server (issue 29). Now only a quarter changed (or never) does."""
    mem = _open(pg_url)
    try:
        mem.remember_many([f"note {n} about the release" for n in range(40)])

        def optimized_until(wanted: str) -> str:
            deadline = time.monotonic() + 30  # PostgreSQL publishes its table statistics within a second or so
            while True:
                done = mem.store.optimize(vacuum_free_ratio=1.0)["keyword_index"]
                if done == wanted or time.monotonic() > deadline:
                    return str(done)
                time.sleep(0.2)

        assert optimized_until("analyzed") == "analyzed"  # never analysed
        assert optimized_until("statistics current") == "statistics current"
        mem.remember_many([f"more {n} about the launch" for n in range(1200)])  # over a quarter, and 1,000
        assert optimized_until("analyzed") == "analyzed"
    finally:
        mem.close()


def test_postgres_dedupe_searches_a_hundred_records_per_statement_with_the_same_answers(pg_url: str) -> None:
    """Maintenance's dedupe asks the nearest vectors of every record written since its last run: one statement
    each took 40% of PostgreSQL's time in a REST load after a 100k load (issue 29). The HNSW searches of a
    hundred records of one filter set are now one statement, and answer as ``vector_search`` does one by one."""
    mem = _open(pg_url, pg_exact_max=50)  # over 50 vectors a tenant: the HNSW plan
    try:
        topics = ("release", "budget", "hiring", "launch", "roadmap")
        texts = [f"note {n} on the {topics[n % 5]} of team {n % 13} at site {n % 7}" for n in range(260)]
        fact = "Alice moved the quarterly release review of the mobile app to the Friday morning slot in the big room"
        texts.append(fact)
        notes = [r.memory for r in mem.remember_many(texts) if r.memory is not None]
        insights = [mem.remember(f"insight {n} on the {topics[n % 5]}", kind="insight") for n in range(3)]
        twin = mem.remember(fact + " again")  # cosine 0.977 (a word more), the same words
        mem.run_jobs(kinds=["ann-index"])  # the vector index after the load (not the maintenance it queued)
        assert not mem.store.index_away()
        store = mem.core.store
        records = [*notes, *insights, twin]
        vectors = store.vectors_for([m.id for m in records])
        queries = [(vectors[m.id][0], SearchFilters(tenant="default", kinds=(m.kind,))) for m in records]
        now = utcnow()
        one_by_one = [store.vector_search(v, f, k=6, now=now) for v, f in queries]
        before = store.db.counter.round_trips
        assert store.vector_search_many(queries, k=6, now=now) == one_by_one
        trips = store.db.counter.round_trips - before
        # The 262 memories in three statements, one round trip each. The 3 insights: one statement, short of 6
        # records of their kind, so each is then asked as vector_search asks it (HNSW, then exact: 2 trips).
        assert [len(found) for found in one_by_one] == [6] * 261 + [3] * 3 + [6]
        assert trips == 3 + 1 + 3 * 2, trips
        # Only the near ones wanted (dedupe's floor): the index searches narrower, the same near neighbours.
        near = [[(i, sim) for i, sim in found if sim >= 0.95] for found in one_by_one]
        assert store.vector_search_many(queries, k=6, now=now, floor=0.95) == near
        assert twin.id in {i for i, _ in near[len(notes) - 1]} and len(near) == len(records)
        assert [(p.keep.id, p.drop.id) for p in mem.find_duplicates()] == [(twin.id, notes[-1].id)]
    finally:
        mem.close()


def _reopened_after_migration(target: str, version: int) -> tuple[funes.Funes, datetime]:
    """A store as it was before migration ``version`` (no memories_updated), 30 records written, then reopened
    (migrated on open); checks that the dedupe's read finds them, and returns the store and that read's time."""
    mem = _open(target)
    try:
        with mem.store.db.write() as conn:
            run = getattr(conn, "native", None) or conn.execute  # PostgreSQL's raw statements, SQLite's
            run("DROP INDEX memories_updated")
            run(f"DELETE FROM migrations WHERE version = {version}")
        mem.remember_many([f"note {n} about the orchard" for n in range(30)])
    finally:
        mem.close()
    mem = _open(target)
    since = utcnow() - timedelta(minutes=5)
    assert len(mem.core.store.tenant_ids("default", ("memory", "insight"), limit=100, since=since)) == 30
    return mem, since


def test_postgres_finds_what_a_tenant_wrote_since_a_time_by_an_index_on_stores_made_before(pg_url: str) -> None:
    """Maintenance's dedupe asks, every run, for the records written since its last one: a scan of the whole
    table without pg_sql/021's index (87 ms at 100k, issue 29). A store made before it gains it on open."""
    mem, since = _reopened_after_migration(pg_url, 21)
    try:
        sql = "SELECT id FROM memories WHERE tenant = %s AND updated_at > %s ORDER BY updated_at DESC LIMIT 10"
        plan = mem.core.store.db.reader().batch(
            [("EXPLAIN " + sql, ["default", since.timestamp()])], ["SET LOCAL enable_seqscan = off"]
        )[0]
        assert "memories_updated" in " ".join(row[0] for row in plan.fetchall())
    finally:
        mem.close()


def test_sqlite_finds_what_a_tenant_wrote_since_a_time_by_an_index_on_stores_made_before(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same read on SQLite walked the tenant's rows and sorted them (0.29-4.5 s at 1M records): sql/022's index."""
    mem, _ = _reopened_after_migration(str(tmp_path / "old.db"), 22)
    try:
        sql = (
            "SELECT id FROM memories WHERE tenant = ? AND kind IN (?, ?) AND updated_at > ? "
            "ORDER BY updated_at DESC LIMIT 10"
        )
        plan = mem.core.store.db.reader().execute("EXPLAIN QUERY PLAN " + sql, ["default", "memory", "insight", 0.0])
        details = " ".join(str(row[-1]) for row in plan.fetchall())
        assert "memories_updated" in details and "TEMP B-TREE" not in details, details
    finally:
        mem.close()
