"""Per-project settings and retention (issue 12): enabled, chunk_size, retrieval_k, eviction at 80%, global cap."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.interfaces.cli import main
from funes.memory.ranking import retention_score
from funes.memory.search import rank_settings
from funes.models import utcnow
from funes.providers.embed import HashEmbedder


def _open(tmp_path: Path, **settings) -> funes.Funes:  # type: ignore[no-untyped-def]
    return funes.open(str(tmp_path / "r.db"), embedder=HashEmbedder(64), worker="off", **settings)


def test_project_settings_default_to_the_store_wide_ones_and_validate(tmp_path: Path) -> None:
    mem = _open(tmp_path, chunk_tokens=120)
    try:
        data = mem.project_settings("acme")
        assert data["settings"] == {
            "enabled": True,
            "max_records": 10_000,
            "chunk_size": 120,
            "chunk_overlap": 40,
            "retrieval_k": 5,
        }
        assert data["own"] == []
        data = mem.configure_project("acme", {"retrieval_k": "3", "enabled": "false"})
        assert data["settings"]["retrieval_k"] == 3 and data["settings"]["enabled"] is False
        assert data["own"] == ["enabled", "retrieval_k"]
        assert mem.configure_project("acme", {"retrieval_k": None})["settings"]["retrieval_k"] == 5
        with pytest.raises(funes.InvalidInput, match="Unknown project setting"):
            mem.configure_project("acme", {"colour": "red"})
        with pytest.raises(funes.InvalidInput, match="whole number"):
            mem.configure_project("acme", {"max_records": "lots"})
        with pytest.raises(funes.InvalidInput, match="at least 1"):
            mem.configure_project("acme", {"max_records": 0})
        with pytest.raises(funes.InvalidInput, match="over half"):
            mem.configure_project("acme", {"chunk_size": 50, "chunk_overlap": 30})
        assert mem.project_settings("other")["settings"]["enabled"] is True
    finally:
        mem.close()


def test_a_disabled_project_neither_stores_nor_recalls(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    try:
        kept = mem.remember("the acme invoice total is 4200 euros", scope="project", project="acme")
        team = mem.remember("the acme invoice process is owned by finance")
        mem.configure_project("acme", {"enabled": False})
        with pytest.raises(funes.InvalidInput, match="disabled") as info:
            mem.remember("another acme fact", scope="project", project="acme")
        assert "enabled true" in (info.value.hint or "")
        ids = {h.memory.id for h in mem.search("acme invoice", min_relevance=0)}
        assert team.id in ids and kept.id not in ids
        ids = {h.memory.id for h in mem.search("acme invoice", project="acme", min_relevance=0)}
        assert kept.id not in ids
        doc = tmp_path / "acme.md"
        doc.write_text("# Acme\n\nInvoices are due in 30 days.\n", encoding="utf-8")
        with pytest.raises(funes.InvalidInput, match="disabled"):
            mem.ingest(str(doc), scope="project", project="acme")
        (result,) = mem.ingest_paths([str(doc)], scope="project", project="acme").results
        assert result.status == "skipped" and "disabled" in (result.error or "")
        mem.configure_project("acme", {"enabled": True})
        assert kept.id in {h.memory.id for h in mem.search("acme invoice", project="acme", min_relevance=0)}
    finally:
        mem.close()


def test_chunk_size_and_retrieval_k_apply_to_their_project(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    try:
        text = "# Notes\n\n" + " ".join(f"Sentence number {i} talks about topic {i}." for i in range(120)) + "\n"
        (tmp_path / "a.md").write_text(text, encoding="utf-8")
        (tmp_path / "b.md").write_text(text, encoding="utf-8")
        wide = mem.ingest(str(tmp_path / "a.md"), scope="project", project="wide")
        mem.configure_project("small", {"chunk_size": 40, "chunk_overlap": 0})
        small = mem.ingest(str(tmp_path / "b.md"), scope="project", project="small")
        assert small.document.chunk_count > 2 * wide.document.chunk_count
        mem.configure_project("small", {"retrieval_k": 2})
        assert mem.context_budget(project="small").retrieved_chunks == 2
        assert mem.context_budget(project="wide").retrieved_chunks == 5
        mem.session("chat", project="small")
        built = mem.build_context("chat", "what does topic 7 say?")
        assert built.budget.retrieved_chunks == 2
    finally:
        mem.close()


def test_retention_evicts_the_lowest_scoring_unpinned_down_to_80_percent(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        mem.configure_project("acme", {"max_records": 10})
        made = []
        for i in range(12):
            made.append(mem.remember(f"acme fact {i}", scope="project", project="acme", importance=0.1 + i * 0.07))
        pinned = mem.remember("acme pinned low fact", scope="project", project="acme", importance=0.05, pinned=True)
        other = mem.remember("beta fact", scope="project", project="beta", importance=0.05)
        plan = mem.maintain(dry_run=True)
        assert {e["tier"] for e in plan["evict"]} == {"project"}
        now = utcnow()
        settings = rank_settings(mem.config)
        expected = sorted(made, key=lambda m: retention_score(m, settings, now))[: 13 - 8]
        assert [e["id"] for e in plan["evict"]] == [m.id for m in expected]
        report = mem.maintain()
        assert report["removed"]["evicted"] == 5
        left = {m.id for m in mem.list(project="acme", scopes=["project"], limit=100).items}
        assert pinned.id in left and len(left) == 8
        assert mem.store.get(other.id) is not None
        log = mem.cleanup_log()
        assert log[0]["scope"] == "project" and log[0]["project_id"] == "acme" and log[0]["records_deleted"] == 5
    finally:
        mem.close()


def test_retention_evicts_what_a_machine_wrote_before_what_a_person_wrote(tmp_path: Path) -> None:
    """Issue 25: a person's records go last, whatever their score; pinned ones never."""
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        mem.configure_project("acme", {"max_records": 10})
        people = [mem.remember(f"acme note {i}", scope="project", project="acme", importance=0.05) for i in range(6)]
        machine = []
        for i in range(7):
            m = mem.remember(f"acme summary {i}", scope="project", project="acme", importance=0.9)
            stored = mem.store.get(m.id)
            assert stored is not None and stored.sovereign
            mem.store.put(stored.evolve(author="llm"), None)
            machine.append(m)
        assert not mem.store.get(machine[0].id).sovereign  # type: ignore[union-attr]
        report = mem.maintain()
        assert report["removed"]["evicted"] == 13 - 8
        left = {m.id for m in mem.list(project="acme", scopes=["project"], limit=100).items}
        assert {m.id for m in people} <= left  # lower importance, kept: a person wrote them
        assert len(left & {m.id for m in machine}) == 2
    finally:
        mem.close()


def test_recently_read_records_outscore_forgotten_ones(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        old = utcnow() - timedelta(days=200)
        a = mem.remember("first old fact", scope="project", project="p")
        b = mem.remember("second old fact", scope="project", project="p")
        for m in (a, b):
            stored = mem.store.get(m.id)
            assert stored is not None
            mem.store.put(stored.evolve(created_at=old, updated_at=old), None)
        assert mem.search("second old fact", limit=1)[0].memory.id == b.id  # a read
        mem.core.sync_access()
        settings = rank_settings(mem.config)
        now = utcnow()
        got_a, got_b = mem.store.get(a.id), mem.store.get(b.id)
        assert got_a is not None and got_b is not None
        assert retention_score(got_b, settings, now) > retention_score(got_a, settings, now)
    finally:
        mem.close()


def test_the_global_cap_applies_across_projects(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0, max_records_total=10)
    try:
        for p in ("a", "b", "c"):
            for i in range(4):
                mem.remember(f"{p} fact {i}", scope="project", project=p, importance=0.5)
        report = mem.maintain()
        assert report["removed"]["evicted"] == 12 - 8
        assert mem.stats()["records"] == 8
        assert mem.cleanup_log()[0]["scope"] == "global"
    finally:
        mem.close()


def test_lowering_max_records_queues_maintenance(tmp_path: Path) -> None:
    mem = _open(tmp_path, maintain_every_writes=0)
    try:
        for i in range(6):
            mem.remember(f"fact {i}", scope="project", project="p")
        mem.configure_project("p", {"max_records": 5})
        assert mem.run_jobs(kinds=["maintain"])["done"] == 1
        assert mem.project_settings("p")["records"] == 4
    finally:
        mem.close()


def test_cli_project_config(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    base = ["--db", db, "--embedder", "hash:64"]
    runner = CliRunner()
    set_ = runner.invoke(main, [*base, "config", "set", "--project", "acme", "max_records", "500", "--json"])
    assert set_.exit_code == 0, set_.output
    assert json.loads(set_.output)["settings"]["max_records"] == 500
    shown = runner.invoke(main, [*base, "config", "--project", "acme"])
    assert shown.exit_code == 0 and "max_records = 500  (project)" in shown.output
    got = runner.invoke(main, [*base, "config", "get", "--project", "acme", "retrieval_k"])
    assert got.exit_code == 0 and got.output.strip() == "5"
    bad = runner.invoke(main, [*base, "config", "set", "--project", "acme", "enabled", "maybe"])
    assert bad.exit_code == 1 and "true or false" in bad.output
    reset = runner.invoke(main, [*base, "config", "set", "--project", "acme", "max_records", "default", "--json"])
    assert json.loads(reset.output)["settings"]["max_records"] == 10_000
