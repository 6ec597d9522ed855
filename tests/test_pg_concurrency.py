"""Writers of one process on PostgreSQL: no process-wide lock across round trips, yet no lost or doubled write (issue 29).

Thread A opens a write transaction and waits (an Event) after its first
statement; thread B's write of another record must commit meanwhile. With
the old writer lock B waited for A: the assertion is about order (B done
before A is released), never about time. Concurrent edits of one record
keep a consistent version history; concurrent creates of one text dedupe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import funes
from funes.errors import BackendUnavailable, Conflict, WriteCrossed
from funes.providers.embed import HashEmbedder
from funes.store.pg_connection import CROSSED_ATTEMPTS
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def mem(pg_url: str) -> Iterator[funes.Funes]:
    with funes.open(pg_url, embedder=HashEmbedder(32), worker="off") as opened:
        yield opened


def test_a_write_commits_while_another_threads_transaction_waits_mid_way(mem: funes.Funes) -> None:
    first = mem.remember("Thread A's record before the edit")
    store = mem.core.store
    a_inside, release_a, b_done = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def writer_a() -> None:
        try:
            with store.transaction():
                assert store.get_for_update(first.id) is not None  # one statement, its row locked
                a_inside.set()
                release_a.wait(timeout=60)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def writer_b() -> None:
        try:
            mem.remember("Thread B's unrelated record")
            b_done.set()
        except BaseException as exc:
            errors.append(exc)

    a = threading.Thread(target=writer_a)
    a.start()
    assert a_inside.wait(timeout=60)
    b = threading.Thread(target=writer_b)
    b.start()
    finished_first = b_done.wait(timeout=30)  # with a process-wide lock B waits until A is released
    release_a.set()
    a.join()
    b.join()
    assert errors == []
    assert finished_first, "B's write waited for A's open transaction: a lock is held across round trips"
    assert {m.content for m in mem.core.store.iter_records()} >= {"Thread B's unrelated record"}


def test_eight_threads_editing_one_record_leave_a_consistent_version_history(mem: funes.Funes) -> None:
    record = mem.remember("Version one of the shared note")
    applied: list[int] = []
    conflicts: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def edit(n: int) -> None:
        start.wait()
        for attempt in range(20):  # an edit that lost the race is re-read and reapplied, as the error says
            try:
                updated = mem.update(record.id, content=f"Edit {n} of the shared note, try {attempt}")
                applied.append(updated.version)
                return
            except Conflict as exc:
                conflicts.append(str(exc))
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(applied) == list(range(2, 10)), "every edit landed once, each with its own version"
    final = mem.get(record.id)
    assert final.version == 9
    kept = [v.version for v in final.history]
    assert kept == sorted(set(kept)) == list(range(9 - len(kept), 9)), "history has no duplicate or gap"
    assert all("changed while it was being edited" in c for c in conflicts)


def test_concurrent_creates_of_one_text_in_one_tenant_dedupe_to_one_record(mem: funes.Funes) -> None:
    start = threading.Barrier(8)
    ids: list[str] = []
    errors: list[BaseException] = []

    def create() -> None:
        start.wait()
        try:
            ids.append(mem.remember("The staging database moved to eu-west-3", tenant="acme").id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 1
    with acting_for("acme"):
        assert [m.id for m in mem.core.store.iter_records()] == ids[:1]


def test_a_deadlock_between_two_writers_is_a_clear_retry_error_and_the_other_commits(mem: funes.Funes) -> None:
    store = mem.core.store
    both_hold = threading.Barrier(2)
    outcomes: dict[str, BaseException | None] = {}

    def writer(name: str, first: str, second: str) -> None:
        try:
            with store.transaction():
                store.lock_identity(first)
                both_hold.wait(timeout=60)
                store.lock_identity(second)  # the opposite order to the other writer's: a deadlock
            outcomes[name] = None
        except BaseException as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=writer, args=("a", "key-1", "key-2")),
        threading.Thread(target=writer, args=("b", "key-2", "key-1")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [exc for exc in outcomes.values() if exc is not None]
    assert len(outcomes) == 2 and len(failed) == 1
    assert isinstance(failed[0], BackendUnavailable)
    assert "rolled it back" in str(failed[0]) and "Retry" in (failed[0].hint or "")


def test_eight_threads_adding_messages_to_one_session_get_distinct_consecutive_seqs(mem: funes.Funes) -> None:
    session = mem.session("shared-chat")
    session.add_message("user", "opening line")
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def add(n: int) -> None:
        start.wait()
        try:
            for i in range(3):
                session.add_message("user", f"thread {n} message {i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seqs = [m.seq for m in mem.session("shared-chat").history()]
    assert seqs == list(range(1, 26))


def test_a_write_rolled_back_for_a_deadlock_runs_again_and_both_writers_finish(mem: funes.Funes) -> None:
    """Two writers lock two records in opposite orders: PostgreSQL aborts one, and ``retrying`` runs it again."""
    first, second = mem.remember("Deadlock row A"), mem.remember("Deadlock row B")
    db = mem.core.store.db
    both_hold_one = threading.Barrier(2)
    runs: dict[str, int] = {"x": 0, "y": 0}

    def writer(name: str, one: str, other: str) -> str:
        def body() -> str:
            runs[name] += 1
            with acting_for("default"), db.write() as conn:
                conn.execute("UPDATE memories SET importance = importance WHERE id = ?", (one,))
                if runs[name] == 1:
                    both_hold_one.wait(30)
                conn.execute("UPDATE memories SET importance = importance WHERE id = ?", (other,))
            return name

        return db.retrying(body)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = [pool.submit(writer, "x", first.id, second.id), pool.submit(writer, "y", second.id, first.id)]
        assert [f.result(timeout=60) for f in done] == ["x", "y"]
    assert sorted(runs.values()) == [1, 2], "the deadlock's victim ran once more, the other once"


def test_retrying_gives_up_after_its_attempts_and_never_inside_a_callers_transaction(mem: funes.Funes) -> None:
    db = mem.core.store.db
    calls: list[int] = []

    def crossing() -> None:
        calls.append(1)
        raise WriteCrossed("crossed", hint="retry")

    with pytest.raises(WriteCrossed):
        db.retrying(crossing)
    assert len(calls) == CROSSED_ATTEMPTS
    calls.clear()
    with pytest.raises(WriteCrossed), acting_for("default"), db.write():
        db.retrying(crossing)  # the caller's transaction is rolled back whole: the caller's to run again
    assert len(calls) == 1


def test_two_syncs_of_one_folder_writing_its_notes_in_opposite_orders_both_finish(
    mem: funes.Funes, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sync A saw a.md edited and b.md deleted; sync B, scanning later, saw a.md deleted and b.md rewritten.

    A replaces a.md's document then deletes b.md's; B replaces b.md's then deletes a.md's. Both are held
    (a Barrier) at their delete until the other got there too: without the folder lock each held the
    document the other wanted next, and PostgreSQL rolled one back for a deadlock.
    """
    root = tmp_path / "notes"
    mem.add_folder(root)
    (root / "a.md").write_text("# A\n\nThe aardvark digs.\n")
    (root / "b.md").write_text("# B\n\nThe bison grazes.\n")
    mem.sync(root)
    folders, store = mem.memory_folders, mem.core.store
    prepare, delete = folders._prepare, store.delete_document
    prepared = {"A": threading.Event(), "B": threading.Event()}
    go, at_delete = threading.Event(), threading.Barrier(2, timeout=3)
    crossed: list[BaseException] = []

    def pausing(folder):  # type: ignore[no-untyped-def]
        planned = prepare(folder)
        name = threading.current_thread().name
        if not prepared[name].is_set():
            prepared[name].set()
            go.wait(timeout=60)
        return planned

    def meeting(doc_id: str) -> int:
        try:
            at_delete.wait()
        except threading.BrokenBarrierError:  # the other sync waits on the folder: this one goes on alone
            pass
        try:
            return delete(doc_id)
        except WriteCrossed as exc:
            crossed.append(exc)
            raise

    monkeypatch.setattr(folders, "_prepare", pausing)
    monkeypatch.setattr(store, "delete_document", meeting)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            mem.sync(root)
        except BaseException as exc:  # reported below
            failures.append(exc)

    (root / "a.md").write_text("# A\n\nThe aardvark digs at night.\n")
    (root / "b.md").unlink()
    a = threading.Thread(target=run, name="A")
    a.start()
    assert prepared["A"].wait(timeout=60)
    (root / "a.md").unlink()
    (root / "b.md").write_text("# B\n\nThe bison grazes the prairie.\n")
    b = threading.Thread(target=run, name="B")
    b.start()
    assert prepared["B"].wait(timeout=60)
    go.set()
    a.join()
    b.join()
    monkeypatch.undo()
    assert crossed == [] and failures == []
    assert [d.name for d in mem.documents()] == ["b.md"] and mem.folder_status()[0].drift.total == 0
    assert mem.doctor() == []


def test_an_upload_accepted_by_one_server_is_indexed_by_another_servers_worker(
    pg_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers on one store, each with its own Funes home: either worker may claim the upload's job."""
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "server-a"))
    with funes.open(pg_url, embedder=HashEmbedder(32), worker="off") as a:
        accepted = a.upload("plan.md", b"# Plan\n\nThe okapi exhibit opens in May.\n")
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "server-b"))
    with funes.open(pg_url, embedder=HashEmbedder(32), worker="off") as b:
        assert b.run_jobs()["done"] >= 1
        job = b.jobs.get(accepted["job_id"])
        assert job.status == "done", job.last_error
        assert [d.name for d in b.documents()] == ["plan.md"] and b.search("okapi exhibit")
        assert b.uploads.reindex(job.result["document_id"])["job_id"]
        assert b.run_jobs()["failed"] == 0 and b.doctor() == []
