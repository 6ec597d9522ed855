"""Memory folders: registration, reconcile by path and hash, status, and a real watchdog watcher."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import funes
from funes.errors import InvalidInput, NotFound
from funes.models import Job


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    """The service on each backend (SQLite and PostgreSQL): these behaviours are the store contract's too."""
    return backend_mem


def wait_for(check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    """Poll until ``check`` holds (a deadline, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def found(mem: funes.Funes, query: str, word: str) -> bool:
    return any(word in h.memory.content for h in mem.search(query, limit=20))


def test_sync_reconciles_new_changed_removed_and_renamed(mem: funes.Funes, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    folder = mem.add_folder(root)
    assert mem.add_folder(root).id == folder.id  # registering twice is a no-op
    (root / "a.md").write_text("# A\n\nThe axolotl regrows limbs.\n")
    (root / "b.md").write_text("# B\n\nThe bonobo shares food.\n")
    (root / "skip.png").write_bytes(b"\x89PNG not a type funes reads")  # .txt is read now (issue 26)
    (root / ".hidden.md").write_text("# H\n\nscratch\n")
    [status] = mem.folder_status()
    assert status.folder.last_sync_at is None and status.exists
    assert len(status.drift.new) == 2 and status.drift.total == 2
    [first] = mem.sync()
    assert len(first.drift.new) == 2 and not first.ingest.failed
    ids = {m.id for d in mem.documents() for m in mem.document_chunks(d.id)}
    (root / "a.md").rename(root / "renamed.md")
    (root / "b.md").write_text("# B\n\nThe bonobo shares fruit.\n")
    (root / "c.md").write_text("# C\n\nThe caracal leaps.\n")
    drift = mem.folder_status()[0].drift
    assert [Path(p).name for p in drift.new] == ["c.md"] and [Path(p).name for p in drift.changed] == ["b.md"]
    assert [(Path(a).name, Path(b).name) for a, b in drift.renamed] == [("a.md", "renamed.md")]
    [second] = mem.sync(root)
    assert second.drift.total == 3
    axolotl = mem.search("axolotl")[0].memory
    assert axolotl.id in ids and axolotl.source.uri == str(root / "renamed.md")  # moved, same record
    assert found(mem, "bonobo fruit", "fruit") and not found(mem, "bonobo food", "food")
    (root / "c.md").unlink()
    (root / "b.md").write_text("   \n")  # emptied: nothing left to index
    mem.sync()
    assert not found(mem, "caracal", "caracal") and not found(mem, "bonobo", "bonobo")
    [after] = mem.folder_status()
    assert after.drift.total == 0 and after.folder.last_sync_at is not None
    assert after.folder.last_sync["removed"] == 2


def test_registration_errors_and_removal(mem: funes.Funes, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    mem.add_folder(root, project="acme")
    with pytest.raises(InvalidInput, match="overlaps"):
        mem.add_folder(root / "inner")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(InvalidInput, match="not a folder"):
        mem.add_folder(tmp_path / "file.md")
    with pytest.raises(NotFound) as missing:
        mem.sync(tmp_path / "elsewhere")
    assert "funes folders add" in (missing.value.hint or "")
    (root / "n.md").write_text("# N\n\nThe narwhal tusk.\n")
    mem.sync()
    assert mem.documents()[0].project_id == "acme"
    mem.remove_folder(root, forget_documents=True)
    assert mem.folders() == [] and mem.documents() == []


@pytest.fixture
def watching(
    mem: funes.Funes, tmp_path: Path
) -> Iterator[tuple[Path, list[str], Callable[[], None], Callable[[], None]]]:
    """A real watchdog watcher on a temp folder, in a thread of the test; yields (root, reasons, start, stop)."""
    root = tmp_path / "watched"
    mem.add_folder(root)
    reasons: list[str] = []
    state: dict[str, object] = {}

    def start() -> None:
        stop = threading.Event()
        thread = threading.Thread(
            target=mem.watch, kwargs={"stop": stop, "debounce": 0.3, "on_batch": lambda f, r: reasons.append(r)}
        )
        thread.start()
        state["stop"], state["thread"] = stop, thread
        wait_for(lambda: "start" in reasons, "the watcher to start")

    def stop() -> None:
        if "stop" in state:
            state.pop("stop").set()  # type: ignore[attr-defined]
            state.pop("thread").join(10)  # type: ignore[attr-defined]

    yield root, reasons, start, stop
    stop()


def _sync_jobs(mem: funes.Funes) -> list[Job]:
    return mem.jobs.list(kind="folder-sync", limit=1000)


def test_watcher_create_edit_rename_delete(mem: funes.Funes, watching) -> None:  # type: ignore[no-untyped-def]
    root, _, start, _ = watching
    start()
    (root / "w.md").write_text("# W\n\nThe wombat digs burrows.\n")
    wait_for(lambda: found(mem, "wombat", "wombat"), "a created file to be searchable")
    (root / "w.md").write_text("# W\n\nThe wombat leaves cubic droppings.\n")
    wait_for(lambda: found(mem, "wombat cubic", "cubic"), "an edit to be searchable")
    assert not found(mem, "wombat burrows", "burrows")  # the old chunks were replaced
    record = mem.search("wombat cubic")[0].memory
    (root / "sub").mkdir()
    (root / "w.md").rename(root / "sub" / "moved.md")
    wait_for(lambda: mem.search("wombat cubic")[0].memory.source.uri.endswith("moved.md"), "a rename")
    assert mem.search("wombat cubic")[0].memory.id == record.id  # same record: no re-embedding
    (root / "sub" / "moved.md").unlink()
    wait_for(lambda: not found(mem, "wombat", "wombat"), "a deleted file to leave the index")
    assert all(j.status in ("done", "queued", "running") for j in _sync_jobs(mem))


def test_watcher_batches_a_bulk_change(mem: funes.Funes, watching) -> None:  # type: ignore[no-untyped-def]
    root, _, start, _ = watching
    start()
    wait_for(lambda: all(j.status == "done" for j in _sync_jobs(mem)), "the start-up reconcile")
    before = len(_sync_jobs(mem))
    for n in range(40):  # like a git checkout: many files at once
        (root / f"bulk{n:02d}.md").write_text(f"# Bulk {n}\n\nLemur number {n} of the bulk change.\n")
    wait_for(lambda: len(mem.documents()) == 40, "the bulk change to be indexed")
    batches = _sync_jobs(mem)[: len(_sync_jobs(mem)) - before]
    assert 1 <= len(batches) <= 2  # settled into one batch (two if the writes straddled a debounce)
    assert any(j.result and j.result.get("new", 0) >= 20 for j in batches)


def test_watcher_reconciles_drift_on_restart(mem: funes.Funes, watching) -> None:  # type: ignore[no-untyped-def]
    root, _, start, stop = watching
    (root / "keep.md").write_text("# Keep\n\nThe kiwi is flightless.\n")
    (root / "drop.md").write_text("# Drop\n\nThe dingo howls.\n")
    start()
    wait_for(lambda: found(mem, "kiwi", "kiwi") and found(mem, "dingo", "dingo"), "the first reconcile")
    stop()
    (root / "drop.md").unlink()  # changed while nobody watched
    (root / "new.md").write_text("# New\n\nThe numbat eats termites.\n")
    assert mem.folder_status()[0].drift.total == 2
    start()
    wait_for(lambda: found(mem, "numbat", "numbat") and not found(mem, "dingo", "dingo"), "the restart reconcile")
    assert mem.folder_status()[0].drift.total == 0


def test_watcher_survives_folder_deletion_and_recreation(mem: funes.Funes, watching) -> None:  # type: ignore[no-untyped-def]
    root, reasons, start, _ = watching
    (root / "first.md").write_text("# First\n\nThe tapir has a trunk.\n")
    start()
    wait_for(lambda: found(mem, "tapir", "tapir"), "the first file")
    shutil.rmtree(root)
    wait_for(lambda: not found(mem, "tapir", "tapir"), "the deleted folder's notes to leave the index")
    root.mkdir()
    (root / "second.md").write_text("# Second\n\nThe serval jumps high.\n")
    wait_for(lambda: found(mem, "serval", "serval"), "a file in the recreated folder")
    (root / "third.md").write_text("# Third\n\nThe tarsier has big eyes.\n")
    wait_for(lambda: found(mem, "tarsier", "tarsier"), "a later file in the recreated folder (watched again)")
    assert "deleted" in reasons and "recreated" in reasons


def test_sync_survives_another_process_syncing_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stores on one file: the other one indexes the note between our scan and our write."""
    from funes.providers.embed import HashEmbedder

    db, root = tmp_path / "shared.db", tmp_path / "notes"
    with (
        funes.open(str(db), embedder=HashEmbedder(64), worker="off") as ours,
        funes.open(str(db), embedder=HashEmbedder(64), worker="off") as theirs,
    ):
        ours.add_folder(root)
        (root / "x.md").write_text("# X\n\nThe xerus is a ground squirrel.\n")
        prepare = ours.memory_folders._prepare
        raced: list[int] = []

        def racing(folder):  # type: ignore[no-untyped-def]
            planned = prepare(folder)
            if not raced:
                raced.append(1)
                theirs.sync(root)
            return planned

        monkeypatch.setattr(ours.memory_folders, "_prepare", racing)
        [report] = ours.sync(root)
        assert raced and report.drift.total == 0  # the second scan found their work
        assert len(ours.documents()) == 1 and found(ours, "xerus", "xerus")


def test_sync_of_removed_notes_survives_their_documents_removed_meanwhile(
    mem: funes.Funes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer (a memory-tool delete's own sync) removes a document after each of our scans."""
    root = tmp_path / "notes"
    mem.add_folder(root)
    for name in ("gone1", "gone2", "kept"):
        (root / f"{name}.md").write_text(f"# {name}\n\nThe {name} note about the gharial.\n")
    mem.sync(root)
    (root / "gone1.md").unlink()
    (root / "gone2.md").unlink()
    scan = mem.memory_folders.scan
    raced: list[str] = []

    def racing(folder, *rest):  # type: ignore[no-untyped-def]
        drift = scan(folder, *rest)
        docs = [d for d in mem.documents() if d.name.startswith("gone")]
        if docs:
            raced.append(docs[0].name)
            mem.remove_document(docs[0].id)
        return drift

    monkeypatch.setattr(mem.memory_folders, "scan", racing)
    [report] = mem.sync(root)
    assert raced == ["gone1.md", "gone2.md"] and report.drift.total == 0
    monkeypatch.undo()
    assert [d.name for d in mem.documents()] == ["kept.md"] and mem.folder_status()[0].drift.total == 0
    assert mem.doctor() == []


def test_a_watched_folder_indexes_every_type_ingest_reads(mem: funes.Funes, watching) -> None:  # type: ignore[no-untyped-def]
    """PDFs, spreadsheets, text and chat exports copied into a watched folder are searchable, as Markdown is."""
    import json

    import openpyxl
    from fpdf import FPDF

    root, _, start, _ = watching
    start()
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "The okapi reserve opens in spring.")
    pdf.output(str(root / "reserve.pdf"))
    book = openpyxl.Workbook()
    book.active.append(["animal", "keeper"])
    book.active.append(["quokka", "Ana"])
    book.save(root / "keepers.xlsx")
    (root / "feeding.csv").write_text("animal,meal\nnumbat,termites\n", encoding="utf-8")
    (root / "log.txt").write_text("The tapir was weighed on Monday.\n", encoding="utf-8")
    chat = [{"role": "user", "content": "Where does the axolotl live?"}, {"role": "assistant", "content": "In lakes."}]
    (root / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    for word in ("okapi", "quokka", "numbat", "tapir", "axolotl"):
        wait_for(lambda word=word: found(mem, word, word), f"the {word} file to be searchable", 30)
    status = mem.folder_status(str(root))[0]
    assert status.drift.total == 0  # "in sync" means every file, not only the Markdown ones


def test_an_edited_section_becomes_the_next_version_of_its_record(mem: funes.Funes, tmp_path: Path) -> None:
    """Issue 25: a Markdown edit picked up by sync supersedes the section's text instead of replacing the record."""
    root = tmp_path / "notes"
    mem.add_folder(root)
    note = root / "travel.md"
    note.write_text("# Travel\n\n## Seats\n\nAna prefers aisle seats.\n\n## Food\n\nAna is vegetarian.\n")
    mem.sync()
    [doc] = mem.documents()
    before = {m.title: m for m in mem.document_chunks(doc.id)}
    seats = next(m for title, m in before.items() if title and "Seats" in title)
    # A line added above moves every section down: the sections are still the same records.
    note.write_text(
        "# Travel\n\nUpdated in May.\n\n## Seats\n\nAna prefers window seats.\n\n## Food\n\nAna is vegetarian.\n"
    )
    mem.sync()
    after = {m.id: m for m in mem.document_chunks(doc.id)}
    assert seats.id in after
    changed = after[seats.id]
    assert "window" in changed.content and changed.version == seats.version + 1
    [old] = changed.history
    assert "aisle" in old.content and old.valid_to is not None and old.valid_to >= seats.created_at
    assert changed.created_at == seats.created_at
    food = next(m for m in before.values() if "vegetarian" in m.content)
    assert food.id in after and after[food.id].version == food.version  # unchanged text, no new version
    assert mem.search("window seats", limit=3)[0].memory.id == seats.id
    assert not any("aisle" in h.memory.content for h in mem.search("aisle seats", limit=10))


def test_a_sync_overtaken_on_every_scan_takes_the_folder_for_its_last_one(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under churn another process's sync lands between each scan and write; the last attempt holds the folder."""
    from funes.providers.embed import HashEmbedder

    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        root = tmp_path / "notes"
        root.mkdir()
        target = root / "new.md"
        (root / "old.md").write_text("# Old\n\nThe okapi note.\n")
        mem.add_folder(root)
        mem.sync(root)
        target.write_text("# New\n\nThe user likes quolls.\n")
        scan = mem.memory_folders.scan
        others: list[threading.Thread] = []
        landed: list[bool] = []

        def overtaken(folder, *rest):  # type: ignore[no-untyped-def]
            drift = scan(folder, *rest)
            if threading.current_thread() is not threading.main_thread() or len(others) == 5:
                return drift
            # Another writer, in a thread of its own: its version of the file, its own sync, then ours again.
            ours = target.read_text()
            target.write_text(f"# New\n\nAnother writer's version {len(others)}.\n")
            other = threading.Thread(target=mem.sync, args=(root,))
            others.append(other)
            other.start()
            other.join(1.0)  # it lands at once unless this sync holds the folder
            landed.append(not other.is_alive())
            target.write_text(ours)
            return drift

        monkeypatch.setattr(mem.memory_folders, "scan", overtaken)
        (report,) = mem.sync(root)
        monkeypatch.undo()
        for other in others:
            other.join()
        assert landed == [True, True, True, True, False]  # the fifth waited for this sync's whole run
        assert report.drift.changed == (str(target),)
        hits = [h.memory.content for h in mem.search("quolls") if h.memory.source.uri == str(target)]
        assert any("quolls" in text for text in hits) and mem.doctor() == []


def test_a_sync_is_not_overtaken_by_another_writer_s_change_to_files_it_does_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the files a sync writes are compared under its lock: another writer's unrelated change lets it land."""
    from funes.providers.embed import HashEmbedder

    with funes.open(str(tmp_path / "f.db"), embedder=HashEmbedder(64), worker="off") as mem:
        root = tmp_path / "notes"
        root.mkdir()
        for n in range(3):
            (root / f"old{n}.md").write_text(f"# Old {n}\n\nThe okapi note number {n}.\n")
        mem.add_folder(root)
        mem.sync(root)
        (root / "new.md").write_text("# New\n\nThe user likes quolls.\n")
        scan = mem.memory_folders.scan
        scans: list[int] = []

        def then_another_writer(folder, *rest):  # type: ignore[no-untyped-def]
            drift = scan(folder, *rest)
            scans.append(1)
            old = next(d for d in mem.documents() if d.name == "old0.md")
            mem.remove_document(old.id)  # a file this sync does not write
            return drift

        monkeypatch.setattr(mem.memory_folders, "scan", then_another_writer)
        (report,) = mem.sync(root)
        monkeypatch.undo()
        assert len(scans) == 1 and report.drift.new == (str(root / "new.md"),)
        assert sorted(d.name for d in mem.documents()) == ["new.md", "old1.md", "old2.md"]
