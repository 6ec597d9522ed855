"""Round trips and row-level security of a PostgreSQL search (issue 29, issue 31).

A statement counter on the store's connections (:class:`funes.store.pg_connection.StatementCounter`)
counts what a search sends: at most three round trips (the keyword leg, the vector leg, the records,
with the access rows of earlier searches in the same trip), and every statement runs with the
caller's tenant set, so row-level security is in force for all of them.
"""

from __future__ import annotations

import pytest

import funes
from funes.models import SearchFilters, utcnow
from funes.providers.embed import HashEmbedder
from funes.store.postgres import PostgresStore
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def mem(pg_url: str):  # type: ignore[no-untyped-def]
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")  # no job runner beside the count
    for tenant in ("acme", "globex"):
        with acting_for(tenant):
            service.remember_many(
                [f"{tenant} note {n}: the quarterly budget review is on Friday" for n in range(30)]
                + [f"{tenant} recipe {n}: bake the bread at 220 degrees" for n in range(30)],
                tenant=tenant,
            )
    yield service
    service.close()


def _search_counted(mem: funes.Funes, query: str, tenant: str, track: bool = True) -> tuple[list[str], int, list]:
    counter = mem.core.store.db.counter
    counter.log = []
    before = counter.round_trips
    with acting_for(tenant):
        hits = mem.search(query, tenant=tenant, track=track)
    trips = counter.round_trips - before
    log, counter.log = counter.log, None
    return [h.memory.content for h in hits], trips, log


@pytest.mark.parametrize("exact_max", [4000, 0], ids=["exact", "hnsw"])
def test_a_search_is_at_most_three_round_trips_with_the_tenant_set_on_every_statement(
    mem: funes.Funes, exact_max: int
) -> None:
    mem.core.store.exact_max = exact_max  # 0: every tenant goes through the HNSW plan
    _search_counted(mem, "budget review", "acme")  # the vector count is a plan input cached a while
    for query in ("budget review Friday", "bread", "ümlaut nothing matches", "予算 budget"):
        contents, trips, log = _search_counted(mem, query, "acme")
        assert trips <= 3, (query, trips, "\n".join(f"{t} {q[:90]}" for t, q in log))
        assert log and all(tenant == "acme" for tenant, _ in log), [s for s in log if s[0] != "acme"]
        assert all(c.startswith("acme") for c in contents)
    contents, _, _ = _search_counted(mem, "budget review", "acme")
    assert contents and all("budget" in c for c in contents[:10])


def test_the_keyword_leg_counts_terms_within_the_tenant_under_row_level_security(mem: funes.Funes) -> None:
    with acting_for("globex"):
        mem.remember("globex only: a zeppelin", tenant="globex")
    store = mem.core.store
    with acting_for("acme"):
        total, counts = store.term_stats(["zeppelin", "budget"])
    assert counts == {"zeppelin": 0, "budget": 30}
    assert total == 60
    with acting_for("globex"):
        total, counts = store.term_stats(["zeppelin", "budget"])
    assert counts == {"zeppelin": 1, "budget": 30}
    assert total == 61


def test_access_rows_go_with_the_next_fetch_and_every_row_is_written(mem: funes.Funes) -> None:
    first, _, _ = _search_counted(mem, "quarterly budget", "acme")
    _, _, log = _search_counted(mem, "bread", "acme")
    assert any("INSERT INTO access_log" in sql for _, sql in log)  # the first search's rows, in this search's trips
    _search_counted(mem, "bread", "globex")  # another tenant's rows wait for that tenant (RLS refuses them elsewhere)
    mem.core.sync_access()
    with acting_for("acme"):
        rows = mem.core.store.access_log(limit=1000)
        counts = {m.content: m.access_count for m in mem.list(tenant="acme", limit=100).items}
    assert {r["tenant"] for r in rows} == {"acme"}
    assert {r["query"] for r in rows} == {"quarterly budget", "bread"}
    assert all(counts[c] >= 1 for c in first)
    with acting_for("globex"):
        assert {r["query"] for r in mem.core.store.access_log(limit=1000)} == {"bread"}


def test_access_rows_do_not_wait_on_a_record_a_writer_holds_and_are_written_once_it_lets_go(
    mem: funes.Funes, pg_url: str
) -> None:
    """A read that carries access rows never queues behind a writer's row lock (nor closes a deadlock with it)."""
    import threading

    import psycopg

    hits, _, _ = _search_counted(mem, "quarterly budget", "acme")
    with acting_for("acme"):
        held = next(m for m in mem.list(tenant="acme", limit=100).items if m.content == hits[0])
    with psycopg.connect(pg_url) as writer:  # another process's transaction, holding the first hit's row
        writer.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (held.id,))
        done = threading.Event()

        def read() -> None:
            with acting_for("acme"):
                mem.get(held.id, tenant="acme")  # the fetch that carries the search's access rows
            done.set()

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(10.0)  # a wait, not a timing: it ends at once unless the read queues behind the writer
        assert done.is_set()
        writer.rollback()
    mem.core.sync_access()
    with acting_for("acme"):
        assert mem.get(held.id, tenant="acme").access_count >= 1
        assert {r["query"] for r in mem.core.store.access_log(held.id)} == {"quarterly budget"}


def test_a_search_that_finds_a_long_record_explains_its_window_in_the_same_three_round_trips(mem: funes.Funes) -> None:
    """The window that matched is read with the candidates (issue 28): no round trip of its own."""
    sentences = [f"Sentence {n} of the acme budget memo names the quarterly item number {n} in full." for n in range(8)]
    with acting_for("acme"):
        memo = mem.remember(" ".join(sentences), tenant="acme")
    assert len(mem.core.store.vectors_for([memo.id])[memo.id]) == 1 + 8  # the text and its eight sentences
    mem.core.store.exact_max = 4000
    _search_counted(mem, "budget memo", "acme")
    counter = mem.core.store.db.counter
    before = counter.round_trips
    with acting_for("acme"):
        hits = mem.search(sentences[4], tenant="acme")
    assert counter.round_trips - before <= 3
    assert hits[0].memory.id == memo.id
    assert hits[0].explanation.passage is not None and hits[0].explanation.passage["sentences"] == [5, 5]


def test_a_statement_after_a_batch_with_settings_runs_as_the_tenant_the_batch_set(pg_url: str) -> None:
    """The batch's tenant setting and its BEGIN share the pipeline's implicit transaction: ending it kept the
    setting (a ROLLBACK undid it, and the next statement on that connection ran as the previous tenant)."""
    store = PostgresStore(pg_url, pool_min=1, pool_max=1)  # one connection: each statement finds the last one's
    try:
        with acting_for("acme"):
            store.db.reader().native("SELECT 1")
        with acting_for("globex"):
            store.db.reader().batch([("SELECT 1", None)], ["SET LOCAL work_mem = '8MB'"])
            seen = store.db.reader().native("SELECT current_setting('funes.tenant')").fetchone()[0]
        assert seen == "globex"
    finally:
        store.close()


def test_access_rows_on_a_search_s_way_commit_without_waiting_for_the_wal_and_nothing_else_does(pg_url: str) -> None:
    """The access write that rides with a fetch sets synchronous_commit off for its own transaction alone (issue 29)."""
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off", pg_pool_max=1)  # one connection to look at
    try:
        with acting_for("acme"):
            service.remember_many([f"acme note {n}: the budget review" for n in range(5)], tenant="acme")
        _search_counted(service, "budget review", "acme")
        _, _, log = _search_counted(service, "budget", "acme")
        statements = [sql for _, sql in log]
        write = next(n for n, sql in enumerate(statements) if "INSERT INTO access_log" in sql)
        assert statements[write - 1] == "SET LOCAL synchronous_commit = off"
        store = service.core.store
        with acting_for("acme"):
            assert store.db.reader().native("SHOW synchronous_commit").fetchone()[0] == "on"
            service.core.sync_access()
            assert {r["query"] for r in store.access_log(limit=100)} == {"budget review", "budget"}
    finally:
        service.close()


def test_the_keyword_statement_says_which_terms_are_present_as_the_probes_do(mem: funes.Funes) -> None:
    """Term presence rides in the keyword statement (issue 29): a term a scanned match holds is present, the others
    are probed there; the answer is the separate probes' (term_presence), within the tenant and its filters."""
    with acting_for("globex"):
        mem.remember("globexonly: a word of the other tenant", tenant="globex")
    with acting_for("acme"):
        mem.remember("acme zeppelin hangar", tenant="acme")
    store = mem.core.store
    terms = ["budget", "bread", "zeppelin", "globexonly", "qqq", "超时"]
    filters = SearchFilters(tenant="acme")
    counter = store.db.counter
    with acting_for("acme"):
        for cap in (1, 2000):  # 1: only the newest match is scanned (zeppelin's), the rest are probed
            counter.log = []
            *_, present, _ = store.keyword_leg(terms, filters, limit=10, scan_cap=cap, now=utcnow())
            log, counter.log = counter.log, None
            assert present == store.term_presence(terms, filters, utcnow()) == {"budget", "bread", "zeppelin", "超时"}
            assert not any(sql.startswith("SELECT ARRAY[EXISTS") for _, sql in log)  # no statement of their own


def test_a_search_reads_its_project_settings_in_the_keyword_pipeline_and_sees_a_change_at_once(
    mem: funes.Funes,
) -> None:
    """Once the process's two-second cache of a tenant's project settings lapses, the search still takes three round
    trips: its keyword leg read them (issue 29). A project disabled here is left out by the very next search."""
    with acting_for("acme"):
        secret = mem.remember("acme zeppelin budget plan", tenant="acme", scope="project", project="p1")
    _search_counted(mem, "zeppelin budget", "acme")
    mem.core.projects._disabled.clear()  # the process's cache lapsed
    contents, trips, log = _search_counted(mem, "zeppelin budget", "acme")
    assert trips <= 3, "\n".join(q[:90] for _, q in log)
    assert secret.content in contents
    with acting_for("acme"):
        mem.core.projects.update("acme", "p1", {"enabled": False})
    contents, _, _ = _search_counted(mem, "zeppelin budget", "acme")
    assert contents and secret.content not in contents


def _counted(mem: funes.Funes, run) -> tuple[object, int, list]:  # type: ignore[no-untyped-def]
    counter = mem.core.store.db.counter
    counter.log = []
    before = counter.round_trips
    out = run()
    trips = counter.round_trips - before
    log, counter.log = counter.log, None
    return out, trips, log


def test_a_create_is_six_round_trips_with_its_transaction_in_three(mem: funes.Funes) -> None:
    """Issue 29: a remember was 20 round trips. Now: the duplicate check, the embedding cache's read and its
    write (committed without waiting for the disk), and one transaction of three trips whose BEGIN, savepoints
    and releases travel with the statements after them: the locks with the duplicates and the id owners, the
    record with its vectors, and the write counter (with the maintenance job it may queue) with the COMMIT."""
    with acting_for("acme"):
        mem.remember("acme warms up the embedder and the counters", tenant="acme")
        memory, trips, log = _counted(mem, lambda: mem.remember("acme moved the standup to 9:30", tenant="acme"))
    shown = "\n".join(f"{t} {q[:90]}" for t, q in log)
    assert trips == 6, shown
    assert sum(q.strip().startswith("COMMIT") for _, q in log) == 2, shown  # the cache's and the record's
    # Every statement acts for the tenant, but the read of which tenant holds the new id: ids are the store's.
    control = ("SELECT set_config", "SAVEPOINT", "RELEASE", "BEGIN", "COMMIT")
    other = [q[:40] for t, q in log if t != "acme" and not q.startswith(control)]
    assert other == ["SELECT id, rowid, tenant FROM memories W"], shown
    with acting_for("acme"):
        stored = mem.get(memory.id, tenant="acme")
        assert stored.content == "acme moved the standup to 9:30"
        assert len(mem.core.store.vectors_for([memory.id])[memory.id]) == 1
        hits = mem.search("standup", tenant="acme")
        assert hits and hits[0].memory.id == memory.id
        again, trips, _ = _counted(mem, lambda: mem.remember("acme moved the standup to 9:30", tenant="acme"))
    assert again.id == memory.id and trips == 1  # a known duplicate: its read alone


def test_a_failed_statement_inside_a_savepoint_rolls_back_to_it_and_the_transaction_goes_on(
    mem: funes.Funes,
) -> None:
    """The savepoint a nested write opens travels with its first statement; a failure rolls back to it alone."""
    store = mem.core.store
    with acting_for("acme"), store.db.write() as conn:
        conn.native("INSERT INTO counters (tenant, name, value) VALUES ('acme', 'probe', 1)")
        with pytest.raises(Exception, match="division by zero"), store.db.write() as inner:
            inner.native("INSERT INTO counters (tenant, name, value) VALUES ('acme', 'lost', 1)")
            inner.native("SELECT 1 / 0")
        with store.db.write():
            pass  # an empty savepoint costs nothing
        conn.native("UPDATE counters SET value = 2 WHERE tenant = 'acme' AND name = 'probe'")
    with acting_for("acme"):
        rows = store.db.reader().native("SELECT name, value FROM counters WHERE name IN ('probe', 'lost')").fetchall()
    assert rows == [("probe", 2)]


def test_a_request_with_a_key_resolved_moments_ago_reads_no_key(mem: funes.Funes) -> None:
    """The server's key lookup is kept a few seconds (memory.keys.KEY_CACHE_SECONDS): a search is its three
    round trips and a create its six, with nothing for the key."""
    from fastapi.testclient import TestClient

    from funes.interfaces.server import create_app

    key = mem.keys.create("acme", "write")[0]
    headers = {"Authorization": f"Bearer {key}"}
    client = TestClient(create_app(mem))
    assert client.get("/v1/teams/acme/memories/search", params={"q": "budget"}, headers=headers).status_code == 200
    client.post("/v1/teams/acme/memories", json={"content": "a first create"}, headers=headers)
    reply, trips, log = _counted(
        mem, lambda: client.get("/v1/teams/acme/memories/search", params={"q": "quarterly budget"}, headers=headers)
    )
    assert reply.status_code == 200 and trips <= 3, log  # type: ignore[attr-defined]
    assert not any("api_keys" in q for _, q in log)
    reply, trips, log = _counted(
        mem, lambda: client.post("/v1/teams/acme/memories", json={"content": "a second create"}, headers=headers)
    )
    assert reply.status_code == 201 and trips == 6, log  # type: ignore[attr-defined]
    assert not any("api_keys" in q for _, q in log)


def test_a_query_naming_whom_the_store_is_about_reads_the_hits_vectors_in_the_same_three_round_trips(
    pg_url: str, local_embedder, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """``name_excess`` needs every candidate's vectors: the vector leg's statement reads them (no fourth trip),
    and the answer is SQLite's."""
    facts = [
        "Bruno lives in Montreal.",
        "Bruno prefers to be contacted by email, never by phone.",
        "Ana likes the window seat.",
        "Ana is vegetarian.",
    ] + [f"Note {n}: Bruno shipped release {n} of the billing service." for n in range(20)]
    query = "How should I get in touch with Bruno?"
    answers = []
    for target in (pg_url, str(tmp_path / "same.db")):
        service = funes.open(target, embedder=local_embedder, worker="off")
        try:
            with acting_for("acme"):
                service.remember_many(facts, tenant="acme")
                service.search(query, tenant="acme")  # plan inputs cached a while (the tenant's vector count)
            if target == pg_url:
                _, trips, log = _search_counted(service, query, "acme")
                assert trips <= 3, "\n".join(q[:90] for _, q in log)
            with acting_for("acme"):
                hits = service.search(query, tenant="acme")
            answers.append([(h.memory.content, round(h.explanation.signals["name_excess"], 5)) for h in hits[:3]])
        finally:
            service.close()
    assert answers[0] == answers[1]
    assert answers[0][0][0].startswith("Bruno prefers to be contacted") and answers[0][0][1] > 0
