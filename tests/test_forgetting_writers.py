"""Writes derived from stored text, made outside the job runner, do not cross a forget (issue 25).

A direct ``ingest`` of a changed file and a direct ``reconcile`` read stored records (an edited section, a changed
entity becomes the next version of its stored record, the old text kept as a version), then write. A forget that
commits in between must not be undone by a version that holds its words: the write goes through the store's one
guard (``store.unforgotten_write``) and raises ForgetCrossed (a Conflict: run it again) instead. A write-back to
Markdown (a file, which the folder sync indexes) holds the same guard around its read and its append.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from test_forgetting import OTHER, _Beside, _files, _meanwhile, _open, _scan

import funes
from funes.errors import Conflict, ForgetCrossed, NotFound
from funes.models import to_epoch, utcnow

NOTE = "# Notes\n\n## Passcode\n\n{passcode}\n\n## Lunch\n\nTeam lunch is on Fridays at the ramen bar.\n"
SECRET = "My quokkabrandt passcode is zephyrwhistle42."


def _texts(mem: funes.Funes) -> list[str]:
    """Every text the store's records hold: their content, kept versions and entity-summary history."""
    out = []
    for m in mem.store.iter_records(None):
        out += [m.content, *(v.content for v in m.previous_versions)]
        out += [str(s.get("summary")) for s in m.metadata.get("previous_summaries") or ()]
    return out


def _leaks(mem: funes.Funes) -> list[str]:
    return [t for t in _texts(mem) if "quokkabrandt" in t.lower()]


def test_reindexing_a_file_while_one_of_its_chunks_is_forgotten_brings_none_of_it_back(
    tmp_path: Path, store_url: str
) -> None:
    """`ingest` of a changed file (a request in another process) reads the document's stored chunks, embeds the
    new ones, then swaps them in: the edited section becomes the next version of its stored chunk. The chunk is
    forgotten while the new text is embedded: the swap writes nothing (no version holding the forgotten words),
    and records no failure over the forgotten document row either."""
    note = tmp_path / "notes.md"
    note.write_text(NOTE.format(passcode=SECRET), encoding="utf-8")
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        mem.ingest(str(note))
        secret = next(c for c in mem.document_chunks(str(note)) if "quokkabrandt" in c.content)
        note.write_text(NOTE.format(passcode="The passcode moved to the team vault."), encoding="utf-8")
        receipts: list[dict[str, Any]] = []
        beside.during = lambda: receipts.append(mem.forget_everywhere([secret.id]))
        refused: Conflict | None = None
        try:
            other.ingest(str(note))
        except ForgetCrossed as exc:
            refused = exc
        assert receipts and _leaks(mem) == [], _leaks(mem)
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]
        assert refused is not None and "run it again" in (refused.hint or "").lower(), refused
        assert [d.uri for d in mem.documents()] == []  # its one chunk went with its row: no failure brings it back
        again = other.ingest(str(note))  # run again: it reads what remains
        assert again.status == "indexed", again
        assert [c.content for c in mem.document_chunks(str(note)) if "vault" in c.content]
        assert _leaks(mem) == []


def test_a_reconcile_that_read_a_summary_before_its_forget_writes_no_version_of_it(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A direct `reconcile` (another process) reads a file's entity summaries inside its transaction and writes
    a changed entity as the next version of its summary. A forget of that summary that plans and purges after
    the read and before the write (PostgreSQL: nothing held the forget back) must not get it back as a version."""
    with _open(store_url) as mem, _open(store_url) as other:
        cell = {"type": "CODE_CELL", "id": "Sheet1:A1", "fields": {"code": "SELECT 1 -- quokkabrandt vault"}}
        mem.reconcile("book.xlsx", [cell])
        summary = next(m for m in mem.store.iter_records(None) if m.kind == "entity_summary")
        assert "quokkabrandt" in summary.content.lower(), summary.content
        put = other.store.put
        receipts: list[dict[str, Any]] = []
        forget = threading.Thread(target=lambda: receipts.append(mem.forget_everywhere([summary.id])))

        def after_the_read(*args: Any, **kwargs: Any) -> Any:
            if not forget.is_alive() and not receipts:
                forget.start()  # the summary was read; the forget plans and purges now (or waits for this write)
                forget.join(timeout=3)
            return put(*args, **kwargs)

        monkeypatch.setattr(other.store, "put", after_the_read)
        changed = {**cell, "fields": {"code": "SELECT 2"}}
        refused: Conflict | None = None
        try:
            other.reconcile("book.xlsx", [changed])
        except ForgetCrossed as exc:
            refused = exc
        forget.join()
        monkeypatch.undo()
        assert receipts and _leaks(mem) == [], _leaks(mem)
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]
        assert refused is None or "run it again" in (refused.hint or "").lower()
        other.reconcile("book.xlsx", [changed])  # again: from what remains
        assert _leaks(mem) == []


def test_a_write_back_that_reads_its_record_while_the_forget_runs_writes_nothing(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process writes a record back to Markdown while a forget of it runs. It reads the record again
    first; read between the forget's plan (which found no section to cut) and its purge, the section would stay
    in the file and the sync would index it as a note. The read and the append wait for the forget instead."""
    monkeypatch.chdir(tmp_path)  # the default memory folder lives under the working directory
    with _open(store_url) as mem, _open(store_url) as other:
        held = mem.remember(SECRET, user="alice")
        kept = mem.remember(OTHER)
        # After the plan, before the purge:
        with _meanwhile(monkeypatch, mem.store, "purge", lambda: other.write_back(held), NotFound) as outcome:
            receipt = mem.forget_everywhere([held.id])
        assert _scan(_files(Path(mem.memory_folders.folder().path))) == []
        assert _leaks(mem) == [], _leaks(mem)
        assert len(outcome) == 1 and isinstance(outcome[0], NotFound), outcome
        assert mem.verify_forgotten(receipt["id"])["ok"]
        assert OTHER in mem.write_back(kept).read_text(encoding="utf-8")  # a standing record is written back


def test_a_message_added_while_its_users_forget_plans_is_refused_and_leaves_nothing(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process adds a message to Alice's chat while ``forget --user alice`` is planning. On PostgreSQL the
    message and its record used to commit during the plan, and the purge then deleted the session around them:
    Alice's words stayed behind in a session that no longer exists, and the receipt did not know them. The append
    now waits for the forget (the tenant's forget lock, as on SQLite's one writer) and finds its session gone."""
    with _open(store_url) as mem, _open(store_url) as other:
        mem.session("s1", user="alice")
        mem.add_message("s1", "user", "I prefer window seats on long flights.")
        # The add finds the session, then writes while the forget still plans.
        with _meanwhile(
            monkeypatch,
            mem.forgetting,
            "_mirrors",
            lambda: other.add_message("s1", "user", SECRET, user="alice"),
            NotFound,
        ) as outcome:
            receipt = mem.forget_everywhere(user="alice", confirm=True)
        assert len(outcome) == 1 and isinstance(outcome[0], NotFound), outcome
        assert "deleted" in str(outcome[0])
        assert not [m.id for m in mem.store.iter_records(None) if m.session_id == "s1"]
        assert not mem.store.messages(mem.core.tenant_of(None), "s1")
        assert mem.verify_forgotten(receipt["id"])["ok"]


def test_a_guard_inside_a_guard_checks_from_the_earlier_reads(store_url: str) -> None:
    """A write derived from reads that began before its enclosing guard's (a file read, then a sync's transaction
    opened) still finds a forget that came in between; one inside a guard whose reads began first leaves the check
    to it, and the forget is found there."""
    with _open(store_url) as mem:
        tenant = mem.core.tenant_of(None)
        store = mem.store
        doomed = mem.remember(SECRET)
        read_at = to_epoch(utcnow())
        receipt = mem.forget_everywhere([doomed.id])
        later = float(receipt["at_epoch"]) + 1e-3
        with pytest.raises(ForgetCrossed, match="the inner write"):
            with store.unforgotten_write(tenant, later, "the outer write"):
                with store.unforgotten_write(tenant, read_at, "the inner write"):
                    mem.remember(OTHER)
        with pytest.raises(ForgetCrossed, match="the outer write"):
            with store.unforgotten_write(tenant, read_at, "the outer write"):
                with store.unforgotten_write(tenant, later, "the inner write"):
                    mem.remember(OTHER)
        assert not [m for m in store.iter_records(None) if m.content == OTHER]


@pytest.mark.postgres
def test_a_guard_inside_a_guard_takes_the_lock_and_checks_once(pg_url: str) -> None:
    """A folder sync's or a job's guard around each file's swap: the inner guards send neither the lock nor the
    receipts check again (two round trips a file on PostgreSQL)."""
    with _open(pg_url) as mem:
        tenant = mem.core.tenant_of(None)
        counter = mem.store.db.counter
        counter.log = []
        started = to_epoch(utcnow())
        with mem.store.unforgotten_write(tenant, started, "a sync"):
            for n in range(3):
                with mem.store.unforgotten_write(tenant, started + n, f"file {n}"):
                    mem.remember(f"note {n}")
        sent, counter.log = [q for _, q in counter.log], None
        assert sum("advisory_xact_lock_shared" in q for q in sent) == 1, sent
        assert sum(q.startswith("SELECT 1 FROM forget_receipts WHERE tenant") for q in sent) == 1, sent
