"""Documents and Markdown notes get topics from their content (issue 26, item 5), and stores indexed before get them too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import funes
from funes.knowledge.topics import TOPICS_JOB

MARKERS = re.compile(r"#|\b(content|id|type|title|topic)\s*:", re.I)


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    return backend_mem


def _topics(mem: funes.Funes, name: str) -> dict[str, str | None]:
    """Each record of the document named ``name``: its title (or first words) and its topic."""
    items = [m for m in mem.list(limit=200).items if m.source and m.source.uri and m.source.uri.endswith(name)]
    return {(m.title or m.content[:30]): m.topic for m in items}


def _readable(topic: str | None) -> bool:
    return bool(topic and topic.strip()) and len(topic) < 80 and not MARKERS.search(topic) and topic == topic.lower()


def _files(tmp_path: Path) -> dict[str, Path]:
    from openpyxl import Workbook

    out = {
        "note": tmp_path / "ramen.md",
        "journal": tmp_path / "journal.md",
        "front": tmp_path / "2026-03-02.md",
        "csv": tmp_path / "vendor-audit.csv",
        "text": tmp_path / "notes.txt",
        "sheet": tmp_path / "q3.xlsx",
    }
    out["note"].write_text(
        "# Ramen bar visits\n\nWe went to Ichiran twice and Afuri once; the ramen at Afuri was the best ramen.\n\n"
        "## Ichiran\n\nTonkotsu broth, solo booths, a long queue.\n",
        encoding="utf-8",
    )
    out["journal"].write_text(
        "# Ramen\n\nIchiran twice this month, ramen every Friday.\n\n# Taxes\n\nFile the tax return by April; "
        "the tax forms are in the drawer.\n\n# 2026-01-02\n\nNothing much happened.\n",
        encoding="utf-8",
    )
    out["front"].write_text(
        "---\ntitle: Schema freeze\n---\n# Monday\n\nAna and Bo agreed to freeze the schema.\n\n# Tuesday\n\n"
        "The schema freeze holds until April.\n",
        encoding="utf-8",
    )
    out["csv"].write_text("vendor,status,audit_date\nAcme,probation,2026-03-01\nGlobex,probation,2026-03-02\n")
    out["text"].write_text("The pager rotates every Monday at 9am. The on-call pager goes to Ana this week.\n")
    wb = Workbook()
    ws = wb.active
    ws.title = "Revenue"
    ws.append(["Region", "Revenue", "Growth"])
    for region in ("North", "South", "East"):
        ws.append([region, 1.2, 0.1])
    wb.save(str(out["sheet"]))
    return out


def test_every_passage_and_section_gets_a_readable_topic_from_its_document(mem: funes.Funes, tmp_path: Path) -> None:
    files = _files(tmp_path)
    for path in files.values():
        mem.ingest(path)
    # A note's sections share the note's topic: its heading, ranked by what the note says most.
    assert set(_topics(mem, "ramen.md").values()) == {"ramen"}
    # Several top-level subjects: each heading labels its own sections; a date labels nothing (the file name does).
    assert _topics(mem, "journal.md") == {"# Ramen": "ramen", "# Taxes": "tax", "# 2026-01-02": "journal"}
    # A front-matter title speaks for the whole note, over its headings.
    assert set(_topics(mem, "2026-03-02.md").values()) == {"schema freeze"}
    assert set(_topics(mem, "vendor-audit.csv").values()) == {"vendor"}  # the file's name, ranked by its cells
    assert set(_topics(mem, "notes.txt").values()) == {"pager"}  # a generic name: the text decides
    assert set(_topics(mem, "q3.xlsx").values()) == {"revenue"}  # the sheet's name
    every = [m for m in mem.list(limit=200).items if m.kind in ("markdown", "document_chunk")]
    assert len(every) >= 9 and all(_readable(m.topic) for m in every), [(m.title, m.topic) for m in every]


def test_chat_exports_keep_their_messages_unlabelled(mem: funes.Funes, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        '[{"role": "user", "content": "Which vendors are on probation?"},'
        ' {"role": "assistant", "content": "Acme and Globex."}]'
    )
    mem.ingest(chat, kind="chat")
    messages = [m for m in mem.list(limit=20).items if m.kind == "message"]
    assert messages and all(m.topic is None for m in messages)


def test_a_topic_set_by_hand_is_not_replaced_and_an_edit_updates_the_label(mem: funes.Funes, tmp_path: Path) -> None:
    note = tmp_path / "deploys.md"
    note.write_text("# Deploy checklist\n\nDeploy on Tuesdays; every deploy needs the QA sign-off.\n", encoding="utf-8")
    mem.ingest(note)
    (before,) = [m for m in mem.list(limit=10).items if m.kind == "markdown"]
    assert before.topic == "deploy"
    # An edit of the text keeps the record (a new version) and its topic.
    note.write_text(
        "# Deploy checklist\n\nDeploy on Wednesdays; every deploy needs the QA sign-off.\n", encoding="utf-8"
    )
    mem.ingest(note)
    (kept,) = [m for m in mem.list(limit=10).items if m.kind == "markdown"]
    assert (kept.id, kept.version, kept.topic) == (before.id, 2, "deploy")
    # An edit that changes the subject changes the label.
    note.write_text(
        "# Deploy checklist\n\nRelease trains leave on Wednesdays; a release train waits.\n", encoding="utf-8"
    )
    mem.ingest(note)
    (moved,) = [m for m in mem.list(limit=10).items if m.kind == "markdown"]
    assert moved.id == before.id and moved.topic != "deploy" and _readable(moved.topic)


def _age(mem: funes.Funes) -> int:
    """Make the store look indexed before topics: no topic anywhere, the topics migration not applied."""
    version = next(v for v, name in mem.store.migrations() if "document_topics" in name)
    with mem.store.db.write() as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE memories SET topic = NULL")
        conn.execute("DELETE FROM migrations WHERE version = ?", (version,))
    return version


def test_a_store_indexed_before_topics_gets_them_from_one_job_per_tenant(store_url: str, tmp_path: Path) -> None:
    from funes.providers.embed import HashEmbedder

    files = _files(tmp_path)
    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        for path in files.values():
            mem.ingest(path)
        mem.ingest(files["note"], tenant="other")
        mem.remember("A memory of its own, with no document.")
        expected = {m.id: m.topic for m in mem.store.iter_records()}
        version = _age(mem)
        assert not any(m.topic for m in mem.store.iter_records())
    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        assert version in [v for v, _ in mem.store.migrations()]  # applied again on open
        queued = mem.store.list_jobs(None, kind=TOPICS_JOB)
        assert sorted(j.tenant for j in queued) == ["default", "other"]
        versions = {m.id: m.version for m in mem.store.iter_records()}
        assert mem.run_jobs()["done"] == 2
        after = {m.id: m.topic for m in mem.store.iter_records()}
        assert after == expected  # the same labels as at ingest, and none on the memory
        assert {m.id: m.version for m in mem.store.iter_records()} == versions  # no new versions
        # The label is in the keyword index: a word only the topic holds finds the section.
        hits = mem.search("journal", limit=5, min_relevance=0)
        assert any(h.memory.topic == "journal" for h in hits)
        assert mem.run_jobs()["done"] == 0  # nothing left queued
    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        assert mem.store.list_jobs(None, kind=TOPICS_JOB, status="queued") == []  # the migration ran once


def test_a_new_store_queues_no_topics_job(mem: funes.Funes) -> None:
    assert mem.store.list_jobs(None, kind=TOPICS_JOB) == []


def test_an_export_made_before_topics_is_labelled_after_import(tmp_path: Path) -> None:
    from funes.providers.embed import HashEmbedder

    files = _files(tmp_path)
    with funes.open(str(tmp_path / "old.db"), embedder=HashEmbedder(64), worker="off") as old:
        old.ingest(files["note"])
        labelled = {m.id: m.topic for m in old.list(limit=20).items}
        _age(old)
        with (tmp_path / "old.jsonl").open("w", encoding="utf-8") as out:
            old.export(out)
    with funes.open(str(tmp_path / "new.db"), embedder=HashEmbedder(64), worker="off") as new:
        new.import_((tmp_path / "old.jsonl").read_text(encoding="utf-8").splitlines())
        assert {m.id: m.topic for m in new.list(limit=20).items} == dict.fromkeys(labelled)
        assert new.run_jobs()["done"] == 1
        assert {m.id: m.topic for m in new.list(limit=20).items} == labelled == dict.fromkeys(labelled, "ramen")


def test_a_synced_memory_folders_notes_and_files_get_topics(mem: funes.Funes, tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "ramen.md").write_text("# Ramen bar visits\n\nIchiran twice; the ramen at Afuri once.\n")
    (folder / "vendor-audit.csv").write_text("vendor,status\nAcme,probation\nGlobex,probation\n")
    mem.add_folder(folder)
    mem.sync(folder)
    topics = {Path(m.source.uri).name: m.topic for m in mem.list(limit=20).items if m.source and m.source.uri}
    assert topics == {"ramen.md": "ramen", "vendor-audit.csv": "vendor"}
