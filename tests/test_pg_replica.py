"""Read replicas (issue 29, "Past one machine"): a real streaming replica from the local PostgreSQL package's binaries on 127.0.0.1.

The module starts its own primary (``initdb``, ``wal_level=replica``, TCP on
127.0.0.1), clones it with ``pg_basebackup -R`` into a hot standby on another
port, and points Funes at both (``db_read_url``). The replica's pool has its
own statement counter (:attr:`funes.store.pg_replica.ReadReplica.counter`), and
``pg_is_in_recovery()`` run through the store's reader says which server
answered. The replica refuses every write (it is a hot standby), so a
workload that ran without an error sent it none.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from replica_pair import ROLE, Cluster, bin_dir, free_port

import funes
from funes.providers.embed import HashEmbedder
from funes.store.consistency import wal_position
from funes.store.pg_replica import is_pure_read
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    binaries = bin_dir()
    if binaries is None:
        pytest.skip("the local PostgreSQL package's binaries (pg_ctl, pg_basebackup) are not installed")
    pair = Cluster(binaries, Path(tempfile.mkdtemp(prefix="funes-replica-")))
    try:
        pair.setup()
        yield pair
    finally:
        pair.stop(pair.replica_dir)
        pair.stop(pair.primary_dir)
        shutil.rmtree(pair.base, ignore_errors=True)


@pytest.fixture
def mem(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[funes.Funes]:
    monkeypatch.setenv("FUNES_DB_READ_URL", cluster.url(cluster.replica_port, ROLE, "funes"))  # the setting
    service = funes.open(cluster.url(cluster.primary_port, ROLE, "funes"), embedder=HashEmbedder(64), worker="off")
    yield service
    service.close()


def _served_by_replica(mem: funes.Funes) -> bool:
    return bool(mem.core.store.db.reader().native("SELECT pg_is_in_recovery()").fetchone()[0])


def test_reads_go_to_the_replica_and_writes_never_do(cluster: Cluster, mem: funes.Funes) -> None:
    db = mem.core.store.db
    replica = db.replica
    assert replica is not None and replica.pool is not None
    with acting_for("acme"):
        done = mem.remember_many([f"acme note {n}: the deploy is on Tuesday" for n in range(20)], tenant="acme")
        ids = [r.memory.id for r in done if r.memory is not None]
    cluster.wait_for_replay()
    with acting_for("acme"):
        assert _served_by_replica(mem)  # the store's reads now land on the standby
        replica.counter.log, db.counter.log = [], []
        hits = mem.search("deploy Tuesday", tenant="acme")
        got = mem.get(ids[0], tenant="acme")
        listed = mem.list(tenant="acme", limit=5)
    assert hits and all("deploy" in h.memory.content for h in hits)
    assert got is not None and got.content.startswith("acme note 0")
    assert len(listed.items) == 5
    # A batch with SET LOCAL settings runs its reads in a read-only transaction, which a standby runs too.
    control = ("BEGIN READ ONLY", "COMMIT", "SET LOCAL ")
    served = [sql for _, sql in replica.counter.log if not sql.startswith(control)]
    assert served, "the reads went to the primary"
    assert all(is_pure_read(sql) for sql in served), [s for s in served if not is_pure_read(s)]
    # The reads ran on the replica; the primary served no read of the search, get or list.
    primary_reads = [sql for _, sql in db.counter.log if is_pure_read(sql)]
    assert primary_reads == [], primary_reads
    replica.counter.log = db.counter.log = None
    # Access tracking is a write: it goes to the primary, and the replica (read-only) never refused one.
    mem.core.store.flush_accesses()
    with cluster.admin(cluster.primary_port) as conn:  # type: ignore[attr-defined]
        logged = conn.execute("SELECT count(*) FROM access_log WHERE tenant = 'acme'").fetchone()[0]
        counted = conn.execute("SELECT sum(access_count) FROM memories WHERE tenant = 'acme'").fetchone()[0]
    assert logged > 0 and counted >= logged


def test_a_tenant_reads_its_own_writes_while_the_replica_lags(cluster: Cluster, mem: funes.Funes) -> None:
    db = mem.core.store.db
    replica = db.replica
    with acting_for("globex"):
        mem.remember("globex keeps its invoices in the blue folder", tenant="globex")
    cluster.wait_for_replay()
    cluster.replay(False)  # the replica receives WAL but applies none: it lags from here on
    try:
        with acting_for("acme"):
            fresh = mem.remember("acme's new office is in Lisbon", tenant="acme")
            assert mem.get(fresh.id, tenant="acme") is not None  # read-your-writes: served by the primary
            assert not _served_by_replica(mem)
            hits = mem.search("office Lisbon", tenant="acme")
            assert [h.memory.id for h in hits][:1] == [fresh.id]
        with acting_for("globex"):  # another tenant did not write: its reads stay on the replica
            assert _served_by_replica(mem)
            assert mem.search("invoices blue folder", tenant="globex")
    finally:
        cluster.replay(True)
    cluster.wait_for_replay()
    with acting_for("acme"):  # replayed: acme's reads go back to the replica, which now holds the write
        assert _served_by_replica(mem)
        assert mem.get(fresh.id, tenant="acme") is not None
        assert replica.counter.statements > 0


def test_another_process_reads_a_write_after_the_token_it_was_handed(cluster: Cluster, mem: funes.Funes) -> None:
    # Two services on the same primary and replica stand for two processes: the reader knows nothing of the
    # writer's writes, so only the token it is handed sends its read to the primary while the replica lags.
    reader = funes.open(cluster.url(cluster.primary_port, ROLE, "funes"), embedder=HashEmbedder(64), worker="off")
    cluster.wait_for_replay()
    cluster.replay(False)
    try:
        with acting_for("acme"), funes.noting_writes() as mark:
            fresh = mem.remember("acme signed the Porto lease", tenant="acme")
        assert mark.token is not None and wal_position(mark.token) > 0
        with acting_for("acme"):
            with pytest.raises(funes.NotFound):  # the replica has not replayed it: this process reads stale
                reader.get(fresh.id, tenant="acme")
            with funes.reading_after(mark.token):
                assert reader.get(fresh.id, tenant="acme") is not None  # served by the primary
                assert [h.memory.id for h in reader.search("Porto lease", tenant="acme")][:1] == [fresh.id]
                assert not _served_by_replica(reader)
            assert _served_by_replica(reader)  # outside the block: back to the replica
        with funes.noting_writes() as nothing, acting_for("acme"):
            reader.search("Porto lease", tenant="acme")
        assert nothing.token is None  # reads hand on no token
    finally:
        cluster.replay(True)
    cluster.wait_for_replay()
    with acting_for("acme"), funes.reading_after(mark.token):  # replayed: the token no longer needs the primary
        assert _served_by_replica(reader)
        assert reader.get(fresh.id, tenant="acme") is not None
    reader.close()


def test_the_rest_server_hands_the_token_out_and_honours_it(cluster: Cluster, mem: funes.Funes) -> None:
    from fastapi.testclient import TestClient

    from funes.interfaces.server import create_app

    other = funes.open(cluster.url(cluster.primary_port, ROLE, "funes"), embedder=HashEmbedder(64), worker="off")
    key = {"Authorization": "Bearer " + mem.keys.create("acme", "write")[0]}
    cluster.wait_for_replay()
    with TestClient(create_app(mem)) as writer, TestClient(create_app(other)) as reader:
        for client in (writer, reader):  # each process notes the key's first use (a write) before the lag
            assert client.get("/v1/teams/acme/memories", headers=key).status_code == 200
        cluster.wait_for_replay()
        cluster.replay(False)
        try:
            made = writer.post("/v1/teams/acme/memories", json={"content": "acme moved to Porto"}, headers=key)
            assert made.status_code == 201, made.text
            token = made.headers["funes-position"]
            path = f"/v1/teams/acme/memories/{made.json()['id']}"
            assert reader.get(path, headers=key).status_code == 404  # another process, no token: stale replica
            fresh = reader.get(path, headers={**key, "Funes-Read-After": token})
            assert fresh.status_code == 200 and fresh.json()["content"] == "acme moved to Porto"
            assert "funes-position" not in fresh.headers  # a read wrote nothing
            bad = reader.get(path, headers={**key, "Funes-Read-After": "yesterday"})
            assert bad.status_code == 400 and "Funes-Position" in bad.json()["error"]["hint"]
        finally:
            cluster.replay(True)
    cluster.wait_for_replay()
    other.close()


def test_a_forget_finds_what_another_process_wrote_while_the_replica_lags(cluster: Cluster, mem: funes.Funes) -> None:
    """The forget's plan must read the primary: a lagging replica does not hold a record another process wrote
    a moment before, and a forget planned from it would leave that record behind (and write it off as gone)."""
    writer = funes.open(cluster.url(cluster.primary_port, ROLE, "funes"), embedder=HashEmbedder(64), worker="off")
    with acting_for("initech"):
        first = writer.remember("alice's initech badge is quokkabrandt", tenant="initech", user="alice")
    cluster.wait_for_replay()
    cluster.replay(False)
    try:
        with acting_for("initech"):
            late = writer.remember("alice's initech vault code is zephyrwhistle42", tenant="initech", user="alice")
            with pytest.raises(funes.NotFound):  # this process reads the stale replica
                mem.get(late.id, tenant="initech")
            receipt = mem.forget_everywhere(user="alice", tenant="initech")
            assert {r["id"] for r in receipt["records"]} == {first.id, late.id}
            with pytest.raises(funes.NotFound):  # the writer reads the primary: gone there too
                writer.get(late.id, tenant="initech")
            report = mem.verify_forgotten(receipt["id"], tenant="initech")
            assert report["ok"], report["hits"]
    finally:
        cluster.replay(True)
    cluster.wait_for_replay()
    writer.close()


def test_an_unreachable_replica_leaves_reads_on_the_primary_with_one_warning(
    cluster: Cluster, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"postgresql://{ROLE}:{ROLE}@127.0.0.1:{free_port()}/funes"  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="funes.store.postgres"):
        service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off", db_read_url=dead)
        try:
            with acting_for("acme"):
                saved = service.remember("the replica is down today", tenant="acme")
                for _ in range(3):
                    assert service.get(saved.id, tenant="acme") is not None
                    assert service.search("replica down", tenant="acme")
        finally:
            service.close()
    warnings = [r for r in caplog.records if "read replica" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "cannot be reached" in warnings[0].getMessage() and ROLE + ":" + ROLE not in warnings[0].getMessage()


def test_a_replica_that_stops_mid_run_fails_over_to_the_primary(
    cluster: Cluster, mem: funes.Funes, caplog: pytest.LogCaptureFixture
) -> None:
    with acting_for("acme"):
        saved = mem.remember("failover keeps reads working", tenant="acme")
    cluster.wait_for_replay()
    with acting_for("acme"):
        assert _served_by_replica(mem)
    cluster.stop(cluster.replica_dir)
    try:
        with caplog.at_level(logging.WARNING, logger="funes.store.postgres"), acting_for("acme"):
            for _ in range(3):
                assert mem.get(saved.id, tenant="acme") is not None
                assert mem.search("failover reads", tenant="acme")
            assert not _served_by_replica(mem)
        warnings = [r for r in caplog.records if "read replica" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
    finally:
        cluster.start(cluster.replica_dir)


def test_statements_are_routed_by_what_they_do() -> None:
    assert is_pure_read("SELECT id FROM memories WHERE tenant = ?")
    assert is_pure_read("  WITH q AS (SELECT 1) SELECT * FROM q")
    assert is_pure_read("SELECT updated_at, last_update FROM memories")  # column names are not writes
    for sql in (
        "INSERT INTO memories (id) VALUES (?)",
        "WITH ev AS (SELECT 1), bump AS (UPDATE memories SET access_count = 1) INSERT INTO access_log SELECT 1",
        "SELECT * FROM jobs WHERE status = 'queued' FOR UPDATE SKIP LOCKED",
        "SELECT id FROM jobs FOR SHARE",
        "SELECT pg_advisory_xact_lock(1)",
        "SELECT nextval('memories_rowid_seq')",
        "VACUUM memories",
        "ANALYZE memories",
        "DELETE FROM memories",
        "SELECT COALESCE(SUM(n_dead_tup), 0) FROM pg_stat_user_tables",  # the primary's own counts
        "SELECT pg_database_size(current_database())",
        "SELECT current_setting('data_directory')",
    ):
        assert not is_pure_read(sql), sql
    assert wal_position("16/B374D848") == (0x16 << 32) + 0xB374D848 > wal_position("16/0") > wal_position(None) == 0
