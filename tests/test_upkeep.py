"""Maintenance (issue 12): the write counter, purge, prune, dedupe, optimise, scheduled retention, find_* utilities."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.curation.upkeep import keeper, same_words
from funes.interfaces.cli import main
from funes.models import Memory, utcnow
from funes.providers.embed import HashEmbedder


def _open(tmp_path: Path, embedder=None, **settings) -> funes.Funes:  # type: ignore[no-untyped-def]
    return funes.open(str(tmp_path / "m.db"), embedder=embedder or HashEmbedder(64), worker="off", **settings)


def _age(mem: funes.Funes, memory_id: str, days: float, **changes) -> None:  # type: ignore[no-untyped-def]
    """Make a record look written ``days`` ago (the store keeps its vectors)."""
    old = utcnow() - timedelta(days=days)
    m = mem.store.get(memory_id)
    assert m is not None
    mem.store.put(m.evolve(created_at=old, updated_at=old, **changes), None)


def test_every_nth_write_queues_one_maintenance_job(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=5)
    try:
        for i in range(4):
            mem.remember(f"note number {i}")
        assert mem.jobs.list(kind="maintain") == []
        mem.remember("the fifth note")
        queued = mem.jobs.list(kind="maintain")
        assert len(queued) == 1 and queued[0].tenant == "default"
        # A batch that crosses the next multiple queues again, coalesced with the queued one.
        mem.remember_many([f"batch note {i}" for i in range(7)])
        assert len(mem.jobs.list(kind="maintain", status="queued")) == 1
        assert mem.store.bump_counter("default", "writes", 0) == 12
        # A duplicate is not a write.
        mem.remember("the fifth note")
        assert mem.store.bump_counter("default", "writes", 0) == 12
    finally:
        mem.close()


def test_maintenance_job_purges_expired_and_logs_it(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=3)
    try:
        gone = mem.remember("a short-lived note", expires_at=utcnow() + timedelta(seconds=1))
        pinned = mem.remember("a pinned short-lived note", expires_at=utcnow() + timedelta(seconds=1), pinned=True)
        kept = mem.remember("a lasting note")
        _age(mem, gone.id, 0, expires_at=utcnow() - timedelta(minutes=1))
        _age(mem, pinned.id, 0, expires_at=utcnow() - timedelta(minutes=1))
        counts = mem.run_jobs(kinds=["maintain", "optimize"])
        assert counts["done"] == 2  # maintain, then the optimize job it queued
        assert mem.store.get(gone.id) is None
        assert mem.store.get(pinned.id) is not None and mem.store.get(kept.id) is not None
        log = mem.cleanup_log()
        assert log and log[0]["records_deleted"] == 1 and "1 expired" in log[0]["reason"]
        optimize = mem.jobs.list(kind="optimize")[0]
        assert optimize.status == "done" and optimize.result["keyword_index"] == "optimized"
    finally:
        mem.close()


def test_prune_takes_only_old_unpinned_unedited_untouched_agent_memories(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        old = mem.remember("an old fact nobody looked at")
        edited = mem.remember("an old fact that was corrected")
        mem.update(edited.id, content="an old fact that was corrected twice")
        pinned = mem.remember("an old pinned fact", pinned=True)
        read = mem.remember("an old fact that is still read")
        recent = mem.remember("a recent fact")
        chunk = mem.remember("an old document chunk", kind="document_chunk")
        for m in (old, edited, pinned, read, chunk):
            _age(mem, m.id, 120)
        _age(mem, recent.id, 30)
        mem.get(read.id)  # a read is recorded (access tracking) ...
        mem.search("an old fact that is still read", limit=1)
        mem.core.sync_access()
        plan = mem.maintain(dry_run=True)
        assert set(plan["stale"]) == {old.id}
        report = mem.maintain()
        assert report["ids"]["stale"] == [old.id]
        for m in (edited, pinned, read, recent, chunk):
            assert mem.store.get(m.id) is not None
    finally:
        mem.close()


def test_a_record_changed_between_plan_and_apply_is_kept(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        old = mem.remember("an old fact")
        _age(mem, old.id, 200)
        plan = mem.upkeep._plan("default", utcnow())
        assert plan["stale"] == [old.id]
        mem.pin(old.id)  # the user pins it while the job computes
        with mem.store.transaction():
            report = mem.upkeep._apply("default", plan, utcnow())
        assert report["removed"]["stale"] == 0 and mem.store.get(old.id) is not None
    finally:
        mem.close()


@pytest.mark.slow
def test_dedupe_keeps_the_edited_or_pinned_or_more_read_twin(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = _open(tmp_path, embedder=local_embedder, maintain_every_writes=0)
    try:
        a = mem.remember("I prefer dark mode in every code editor I use.")
        b = mem.remember("I prefer dark mode in every code editor I use!")
        c = mem.remember("Our quarterly revenue grew by twelve percent.")
        d = mem.remember("Our quarterly revenue grew by 12 percent.", pinned=True)
        e = mem.remember("The staging database lives in Frankfurt.")
        f_ = mem.remember("The staging database lives in Frankfurt.", scope="project", project="acme")
        mem.update(b.id, importance=0.9, content="I prefer dark mode in every code editor I use!!")
        pairs = {(p.keep.id, p.drop.id) for p in mem.find_duplicates()}
        assert (b.id, a.id) in pairs  # the edited one (version 2) stays
        if any(c.id in pair for pair in pairs):
            assert (d.id, c.id) in pairs  # the pinned one stays
        assert not any({e.id, f_.id} == set(pair) for pair in pairs)  # another scope: not duplicates
        report = mem.maintain()
        assert a.id in report["ids"]["duplicates"]
        assert mem.store.get(b.id) is not None and mem.store.get(d.id) is not None
        assert mem.store.get(e.id) is not None and mem.store.get(f_.id) is not None
        assert mem.find_duplicates(threshold=0.999) == [] or all(
            p.similarity >= 0.999 for p in mem.find_duplicates(threshold=0.999)
        )
    finally:
        mem.close()


def test_facts_that_differ_in_one_word_or_number_are_never_duplicates() -> None:
    assert same_words("I prefer dark mode in every editor.", "i prefer dark mode in every editor!!")
    assert not same_words("Standup is at 9:00 every day.", "Standup is at 10:00 every day.")
    assert not same_words("The office is in Lyon", "The office is in Paris")
    assert not same_words("note 1 words words", "note 2 words words")


def test_two_pinned_twins_are_both_kept() -> None:
    a = Memory(id="mem_a", content="x", pinned=True, version=3)
    b = Memory(id="mem_b", content="x", pinned=True)
    c = Memory(id="mem_c", content="x", access_count=9)
    d = Memory(id="mem_d", content="x", version=2)
    assert keeper(a, b) is None
    assert keeper(c, a) == (a, c)  # pinned beats everything
    assert keeper(c, d) == (d, c)  # then the version
    e = Memory(id="mem_e", content="x")
    assert keeper(e, c) == (c, e)  # then how often it was read


def test_scheduled_session_retention_runs_and_reschedules(tmp_path: Path) -> None:
    mem = _open(tmp_path, session_retention_days=30, retention_interval_hours=6)
    try:
        mem.session("old-chat")
        mem.add_message("old-chat", "user", "hello from long ago")
        mem.remember("a note of the old chat", scope="session", session="old-chat")
        fresh = mem.remember("a note of a new chat", scope="session", session="new-chat")
        long_ago = utcnow() - timedelta(days=45)
        with mem.store.db.write() as conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE sessions SET last_activity = ? WHERE id = 'old-chat'", (long_ago.timestamp(),))
            conn.execute(
                "UPDATE memories SET updated_at = ?, created_at = ? WHERE session_id = 'old-chat'",
                (long_ago.timestamp(), long_ago.timestamp()),
            )
        assert mem.jobs.ensure_scheduled() == ["session-retention"]
        assert mem.jobs.ensure_scheduled() == []  # one at a time
        counts = mem.run_jobs(kinds=["session-retention"])
        assert counts["done"] == 1
        done = mem.jobs.list(kind="session-retention", status="done")[0]
        assert done.result["sessions_cleared"] == 1 and done.tenant == "*"
        assert mem.store.get_session("default", "old-chat") is None
        assert mem.store.get(fresh.id) is not None
        nxt = mem.jobs.list(kind="session-retention", status="queued")
        assert len(nxt) == 1
        assert nxt[0].run_after - utcnow() > timedelta(hours=5)
    finally:
        mem.close()


def test_retention_off_schedules_nothing(tmp_path: Path) -> None:
    mem = _open(tmp_path, session_retention_days=0)
    try:
        assert mem.jobs.ensure_scheduled() == []
    finally:
        mem.close()


def test_find_stale_lists_changed_and_missing_sources(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    try:
        docs = tmp_path / "docs"
        docs.mkdir()
        same, changed, gone = docs / "same.md", docs / "changed.md", docs / "gone.md"
        for p in (same, changed, gone):
            p.write_text(f"# {p.stem}\n\nSome text about {p.stem}.\n", encoding="utf-8")
        mem.ingest_paths([str(docs)])
        assert mem.find_stale() == []
        changed.write_text("# changed\n\nDifferent words now.\n", encoding="utf-8")
        gone.unlink()
        same.touch()  # touched, not changed
        found = {Path(d["uri"]).name: d["reason"] for d in mem.find_stale()}
        assert found == {
            "changed.md": "the source file changed after it was indexed",
            "gone.md": "the source file is gone",
        }
    finally:
        mem.close()


@pytest.mark.slow
def test_find_related_ranks_documents_by_content(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = _open(tmp_path, embedder=local_embedder)
    try:
        folder = tmp_path / "notes"
        folder.mkdir()
        (folder / "kubernetes.md").write_text(
            "# Cluster\n\nOur Kubernetes cluster runs the API pods; deployments roll out with Helm charts.\n"
        )
        (folder / "helm.md").write_text(
            "# Helm\n\nHelm charts describe the Kubernetes deployments of every service and its pods.\n"
        )
        (folder / "baking.md").write_text("# Bread\n\nSourdough bread needs a starter, flour, water and salt.\n")
        mem.ingest_paths([str(folder)])
        related = mem.find_related(str(folder / "kubernetes.md"))
        assert [Path(d["uri"]).name for d in related] == ["helm.md", "baking.md"]
        assert related[0]["similarity"] > related[1]["similarity"]
    finally:
        mem.close()


def test_cli_maintain_and_friends(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    mem = funes.open(db, embedder=HashEmbedder(64), worker="off")
    old = mem.remember("an ancient note")
    _age(mem, old.id, 365)
    mem.close()
    args = ["--db", db, "--embedder", "hash:64"]
    dry = runner.invoke(main, [*args, "maintain", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["stale"] == [old.id]
    done = runner.invoke(main, [*args, "maintain"])
    assert done.exit_code == 0, done.output
    assert "Removed 0 expired, 1 stale and 0 duplicate memories, evicted 0" in done.output
    for command in (["duplicates"], ["stale"]):
        result = runner.invoke(main, [*args, *command, "--json"])
        assert result.exit_code == 0, result.output
        json.loads(result.output)
    bad = runner.invoke(main, [*args, "duplicates", "--threshold", "2"])
    assert bad.exit_code == 2


def test_stats_storage_breaks_down_tiers_kinds_and_sources(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    mem = funes.open(db, embedder=HashEmbedder(64), worker="off")
    mem.remember("a team fact")
    mem.remember("a project fact", scope="project", project="acme")
    note = tmp_path / "n.md"
    note.write_text("# Note\n\nSome words for the index.\n", encoding="utf-8")
    mem.ingest(str(note))
    data = mem.stats(storage=True)
    mem.close()
    rows = {(r["tier"], r["kind"], r["source"]): r for r in data["storage"]["rows"]}
    assert rows[("team", "memory", "user")]["records"] == 1
    assert rows[("project", "memory", "user")]["records"] == 1
    chunk = next(r for k, r in rows.items() if k[2] == "markdown")
    assert chunk["vector_bytes"] == chunk["vectors"] * 64 * 4 > 0
    assert data["storage"]["tiers"]["team"]["records"] >= 2 and data["storage"]["database_bytes"] > 0
    assert data["by_source"]["markdown"] >= 1
    result = CliRunner().invoke(main, ["--db", db, "--embedder", "hash:64", "stats", "--storage"])
    assert result.exit_code == 0 and "database file:" in result.output and "markdown" in result.output


def test_the_background_run_only_checks_what_was_written_since_the_last_run(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        mem.core.enqueue_job("maintain", {"tenant": "default"}, tenant="default")
        assert mem.run_jobs(kinds=["maintain"])["done"] == 1
        a = mem.remember("The deploy window is Tuesday morning.")
        b = mem.remember("The deploy window is Tuesday morning!")
        for m in (a, b):  # written before the last run: a background run does not look at them again
            _age(mem, m.id, 1)
        mem.core.enqueue_job("maintain", {"tenant": "default"}, tenant="default")
        assert mem.run_jobs(kinds=["maintain"])["done"] == 1
        assert mem.store.get(a.id) is not None and mem.store.get(b.id) is not None
        c = mem.remember("the deploy window is tuesday morning")  # new: compared with every record
        mem.core.enqueue_job("maintain", {"tenant": "default"}, tenant="default")
        assert mem.run_jobs(kinds=["maintain"])["done"] == 1
        assert sum(mem.store.get(m.id) is not None for m in (a, b, c)) < 3
        mem.maintain()
        assert sum(mem.store.get(m.id) is not None for m in (a, b, c)) == 1  # one of the three stands
    finally:
        mem.close()


def test_every_fix_stale_suggests_runs_and_leaves_nothing_stale(tmp_path: Path) -> None:
    """`funes stale` names a fix per document; each one works, for a changed file and a deleted one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    changed, gone = docs / "changed.md", docs / "gone.md"
    for p in (changed, gone):
        p.write_text(f"# {p.stem}\n\nSome text about {p.stem}.\n", encoding="utf-8")
    runner = CliRunner()
    base = ["--db", str(tmp_path / "s.db"), "--embedder", "hash"]
    assert runner.invoke(main, [*base, "ingest", str(docs)]).exit_code == 0
    changed.write_text("# changed\n\nDifferent words now.\n", encoding="utf-8")
    gone.unlink()
    found = json.loads(runner.invoke(main, [*base, "stale", "--json"]).output)["stale"]
    assert len(found) == 2
    for doc in found:
        command = doc["fix"].split()
        assert command[0] == "funes"
        done = runner.invoke(main, [*base, *command[1:]])
        assert done.exit_code == 0, f"{doc['fix']}: {done.output}"
    assert runner.invoke(main, [*base, "stale"]).output.strip() == "Nothing is stale."
