"""Documents are managed sources: unchanged, changed, removed, reindexed, failed; bad input never half-indexed."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.cli import main
from funes.models.sources import SOURCE_FILTERS, source_types_for
from funes.providers.embed import HashEmbedder


def small_pdf(path: Path, text: str = "The warehouse in Rotterdam ships 1,200 pallets a week.", pages: int = 1) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for page in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 8, f"{text} Page {page + 1} of the logistics memo.")
    pdf.output(str(path))
    return path


def encrypted_pdf(path: Path, password: str) -> Path:
    from pypdf import PdfReader, PdfWriter

    plain = small_pdf(path.with_name("plain-" + path.name), "The vault combination is stored offline.")
    writer = PdfWriter()
    for page in PdfReader(str(plain)).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    with path.open("wb") as handle:
        writer.write(handle)
    plain.unlink()
    return path


def chunk_count(mem: funes.Funes, doc_id: str) -> int:
    return len(mem.store.document_chunk_ids(doc_id))  # type: ignore[attr-defined]


# -- managed sources ----------------------------------------------------------------


def test_unchanged_reingest_does_nothing(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Deploys happen on Tuesdays. Rollbacks need two approvals.", encoding="utf-8")
    first = mem.ingest(path)
    ids = mem.store.document_chunk_ids(first.document.id)  # type: ignore[attr-defined]
    again = mem.ingest(path)
    assert first.status == "indexed" and again.status == "unchanged"
    assert again.document.version == 1 and again.document.id == first.document.id
    assert mem.store.document_chunk_ids(first.document.id) == ids  # type: ignore[attr-defined]
    forced = mem.ingest(path, force=True)
    assert forced.status == "updated" and forced.document.version == 2


def test_changed_file_replaces_its_chunks_and_bumps_the_version(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "policy.md"
    path.write_text("# Policy\n\n## Travel\n\nEconomy class for flights under six hours.\n", encoding="utf-8")
    first = mem.ingest(path)
    path.write_text(
        "# Policy\n\n## Travel\n\nBusiness class is allowed for flights over eight hours.\n\n## Meals\n\nUp to 40 euros a day.\n",
        encoding="utf-8",
    )
    second = mem.ingest(path)
    assert second.status == "updated" and second.document.version == 2 and second.document.id == first.document.id
    chunks = mem.document_chunks(second.document.id)
    assert [c.source.locator["header_path"] for c in chunks] == ["# Policy > ## Travel", "# Policy > ## Meals"]
    assert all(c.metadata["document_version"] == 2 for c in chunks)
    assert not any("Economy" in h.memory.content for h in mem.search("economy class"))
    assert mem.doctor() == []


def test_readers_never_see_two_versions_or_half_a_document(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("\n\n".join(f"Version one paragraph {i} about topic {i}." for i in range(300)), encoding="utf-8")
    doc = mem.ingest(path).document
    sizes = {1: doc.chunk_count}
    seen: list[tuple[set[int], int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            page = mem.list(source_ids=[doc.id], limit=1000)
            seen.append(({m.metadata["document_version"] for m in page.items}, len(page.items)))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for version in (2, 3, 4):
            path.write_text(
                "\n\n".join(
                    f"Version {version} paragraph {i} about subject {i * version}." for i in range(100 * version)
                ),
                encoding="utf-8",
            )
            sizes[version] = mem.ingest(path).document.chunk_count
    finally:
        stop.set()
        watcher.join()
    assert seen
    for versions, count in seen:
        assert len(versions) == 1, versions
        assert count == sizes[versions.pop()]


def test_a_failed_write_leaves_the_old_version_intact(
    mem: funes.Funes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("Item,Price\nApple,1.10\nPear,0.90\n", encoding="utf-8")
    doc = mem.ingest(path).document
    before = mem.document_chunks(doc.id)
    path.write_text("Item,Price\n" + "".join(f"Fruit {i},{i}.00\n" for i in range(400)), encoding="utf-8")
    original = type(mem.store)._put
    calls = {"n": 0}

    def flaky(self, conn, memory, vectors):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        return original(self, conn, memory, vectors)

    monkeypatch.setattr(type(mem.store), "_put", flaky)
    result = mem.ingest_paths([path]).results[0]
    monkeypatch.setattr(type(mem.store), "_put", original)
    assert result.status == "failed" and "disk full" in result.error
    assert [m.id for m in mem.document_chunks(doc.id)] == [m.id for m in before]
    current = mem.document(doc.id)
    assert current.status == "failed" and current.version == 1 and current.chunk_count == len(before)
    assert mem.doctor() == []
    # Fixing the cause and ingesting again indexes the new version.
    assert mem.ingest(path).status == "updated"
    assert mem.document(doc.id).status == "indexed"


def test_docs_rm_removes_chunks_and_vectors(mem: funes.Funes, tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("Keep this note about the quarterly audit.", encoding="utf-8")
    drop = tmp_path / "drop.txt"
    drop.write_text("Drop this note about the office plants.", encoding="utf-8")
    mem.ingest(keep)
    doc = mem.ingest(drop).document
    vectors_before = mem.stats()["vectors"]
    removed = mem.remove_document(str(drop))
    assert removed.id == doc.id and removed.chunk_count == 1
    assert mem.stats()["vectors"] == vectors_before - 1
    assert not mem.search("office plants", source_ids=[doc.id])
    assert [d.name for d in mem.documents()] == ["keep.txt"]
    assert mem.doctor() == []
    with pytest.raises(NotFound):
        mem.document(doc.id)


def test_reindex_reads_the_file_again(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("Alpha fact.", encoding="utf-8")
    doc = mem.ingest(path).document
    path.write_text("Alpha fact, revised.", encoding="utf-8")
    result = mem.reindex_document(doc.id)
    assert result.status == "updated" and result.document.version == 2
    path.unlink()
    gone = mem.reindex_document(doc.id)
    assert gone.status == "failed" and "no longer" in gone.error and f"funes docs rm {doc.id}" in gone.hint
    still = mem.document(doc.id)
    assert still.status == "failed" and still.chunk_count == 1  # the indexed version stays searchable


def test_bytes_need_a_name_and_are_managed_by_it(mem: funes.Funes) -> None:
    first = mem.ingest(b"Standup moved to 9:30 from next week.", name="memo.txt")
    assert first.document.uri == "memo.txt" and first.status == "indexed"
    assert mem.ingest(b"Standup moved to 9:30 from next week.", name="memo.txt").status == "unchanged"
    assert mem.ingest(b"Standup moved to 10:00.", name="memo.txt").document.version == 2
    hit = mem.search("standup")[0]
    assert hit.attribution == "memo.txt"


def test_scope_and_project_apply_to_chunks(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("# Spec\n\nThe API returns JSON.\n", encoding="utf-8")
    doc = mem.ingest(path, project="apollo").document
    assert doc.scope == "project" and doc.project_id == "apollo"
    chunk = mem.document_chunks(doc.id)[0]
    assert chunk.scope == "project" and chunk.project_id == "apollo"
    assert mem.search("API JSON", project="apollo")
    # The same file in another project is another document.
    other = mem.ingest(path, project="zeus").document
    assert other.id != doc.id and len(mem.documents()) == 2


# -- bad input ---------------------------------------------------------------------


def test_bad_inputs_fail_alone_and_index_nothing(tmp_path: Path) -> None:
    mem = funes.open(str(tmp_path / "bad.db"), embedder=HashEmbedder(64), max_file_mb=1)
    tmp_path = tmp_path / "in"
    tmp_path.mkdir()
    try:
        _check_bad_inputs(mem, tmp_path)
    finally:
        mem.close()


def _check_bad_inputs(mem: funes.Funes, tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("The good file mentions the harbour crane.", encoding="utf-8")
    pdf = small_pdf(tmp_path / "whole.pdf").read_bytes()
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 8 + b"\n%%EOF\n")
    (tmp_path / "truncated.pdf").write_bytes(pdf[: len(pdf) // 2])
    encrypted_pdf(tmp_path / "locked.pdf", "s3cret")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "latin1.txt").write_bytes("Le café coûte 3 €, à emporter ou sur place, déjà payé.".encode("cp1252"))
    (tmp_path / "huge.txt").write_bytes(b"word " * (1024 * 1024 // 5 + 10))
    (tmp_path / "whole.pdf").unlink()
    paths = [*sorted(tmp_path.iterdir()), tmp_path / "missing.txt"]
    report = mem.ingest_paths(paths)
    by_name = {Path(r.uri).name: r for r in report.results}
    assert by_name["good.txt"].status == "indexed"
    assert by_name["latin1.txt"].status == "indexed" and "cp1252" in by_name["latin1.txt"].warnings[0]
    expected = {
        "corrupt.pdf": "corrupt PDF",
        "truncated.pdf": "truncated PDF",
        "locked.pdf": "password-protected",
        "empty.md": "empty",
        "binary.txt": "binary file",
        "huge.txt": "over the 1 MB limit",
        "missing.txt": "No such file",
    }
    for name, phrase in expected.items():
        result = by_name[name]
        assert result.status == "failed", name
        assert phrase in result.error, (name, result.error)
        assert result.hint, name
        assert result.chunks == 0
    assert "--password" in by_name["locked.pdf"].hint
    assert "max_file_mb" in by_name["huge.txt"].hint
    # Failed files are recorded with their reason and own no records.
    failed = {d.name: d for d in mem.documents(status="failed")}
    assert set(failed) == {n for n in expected if n != "missing.txt"}
    for doc in failed.values():
        assert doc.chunk_count == 0 and chunk_count(mem, doc.id) == 0 and doc.error
    assert "café" in mem.search("café emporter")[0].memory.content


def test_encrypted_pdf_opens_with_its_password(mem: funes.Funes, tmp_path: Path) -> None:
    path = encrypted_pdf(tmp_path / "locked.pdf", "s3cret")
    with pytest.raises(InvalidInput, match="password-protected and the password is wrong"):
        mem.ingest(path, password="nope")
    result = mem.ingest(path, password="s3cret")
    assert result.status == "indexed"
    assert "vault combination" in mem.search("vault combination")[0].memory.content


def test_unknown_encoding_says_which_flag_to_pass(mem: funes.Funes) -> None:
    with pytest.raises(InvalidInput) as info:
        mem.ingest("Grüße".encode("utf-16-le") * 3, name="x.txt", encoding="ascii")
    assert "--encoding" in (info.value.hint or "")


def test_json_that_is_not_a_chat_export(mem: funes.Funes) -> None:
    with pytest.raises(InvalidInput, match="not a chat export") as info:
        mem.ingest(b'{"name": "config", "debug": true}', name="settings.json")
    assert "--kind text" in (info.value.hint or "")
    assert mem.ingest(b'{"name": "config", "debug": true}', name="settings.json", kind="text").status == "indexed"


def test_source_filter_names_map_to_source_types() -> None:
    assert source_types_for("all") is None
    assert source_types_for("sheets") == ("sheet",)
    assert source_types_for("chat") == ("chat",)
    assert set(source_types_for("documents") or ()) == {"pdf", "text", "markdown"}
    assert source_types_for("markdown") == ("markdown",)
    assert source_types_for("pdf") == ("pdf",)
    assert set(SOURCE_FILTERS) == {"all", "documents", "sheets", "chat", "markdown"}
    with pytest.raises(InvalidInput, match="Unknown source filter"):
        source_types_for("emails")


def test_search_filters_by_source_type_and_id(mem: funes.Funes, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Boats\n\nThe ferry leaves at noon.\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("Vessel,Departure\nFerry,noon\n", encoding="utf-8")
    report = mem.ingest_paths([tmp_path])
    docs = {Path(r.uri).name: r.document for r in report.results}
    sheets = mem.search("ferry noon", source_types=source_types_for("sheets"))
    assert sheets and all(h.memory.source.type == "sheet" for h in sheets)
    md = mem.search("ferry noon", source_types=source_types_for("markdown"))
    assert md and all(h.memory.source.type == "markdown" for h in md)
    only_a = mem.search("ferry noon", source_ids=[docs["a.md"].id])
    assert {h.memory.source.source_id for h in only_a} == {docs["a.md"].id}


# -- export and import ----------------------------------------------------------------


def test_export_import_keeps_documents(mem: funes.Funes, tmp_path: Path) -> None:
    path = tmp_path / "faq.md"
    path.write_text("# FAQ\n\n## Refunds\n\nRefunds take five working days.\n", encoding="utf-8")
    doc = mem.ingest(path).document
    out = io.StringIO()
    assert mem.export(out) == 1
    lines = out.getvalue().splitlines()
    assert json.loads(lines[1])["type"] == "document"
    other = funes.open(str(tmp_path / "other.db"), embedder=HashEmbedder(64))
    try:
        assert other.import_(lines)["imported"] == 1
        [copy] = other.documents()
        assert copy.id == doc.id and copy.version == 1 and copy.status == "indexed"
        assert other.ingest(path).status == "unchanged"
        again = io.StringIO()
        other.export(again)
        assert again.getvalue() == out.getvalue()
    finally:
        other.close()


# -- CLI ---------------------------------------------------------------------------------


def test_cli_ingest_and_docs(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ops.md").write_text(
        "# Ops\n\n## On call\n\nThe pager rotates every Monday.\n", encoding="utf-8"
    )
    (tmp_path / "in" / "bad.pdf").write_bytes(b"not a pdf at all")
    runner = CliRunner()
    base = ["--db", db, "--embedder", "hash"]
    result = runner.invoke(main, [*base, "ingest", str(tmp_path / "in")])
    assert result.exit_code == 1, result.output
    assert "Indexed 1 file(s)" in result.output and "0 unchanged, 1 failed" in result.output
    assert "failed     in/bad.pdf" in result.output or "bad.pdf" in result.output
    assert "Hint:" in result.output
    again = runner.invoke(main, [*base, "ingest", "--json", str(tmp_path / "in" / "ops.md")])
    assert again.exit_code == 0
    data = json.loads(again.output)
    assert data["unchanged"] == 1 and data["results"][0]["status"] == "unchanged"
    listing = json.loads(runner.invoke(main, [*base, "docs", "list", "--json"]).output)
    assert {d["name"].rsplit("/", 1)[-1]: d["status"] for d in listing} == {"ops.md": "indexed", "bad.pdf": "failed"}
    ops = next(d for d in listing if d["name"].endswith("ops.md"))
    shown = runner.invoke(main, [*base, "docs", "show", ops["id"], "--chunks"])
    assert shown.exit_code == 0 and "## On call" in shown.output and "version:     1" in shown.output
    search = runner.invoke(main, [*base, "search", "pager rotation", "--source-type", "markdown"])
    assert "ops.md # Ops > ## On call" in search.output
    stdin = runner.invoke(main, [*base, "ingest", "-", "--name", "pasted.txt"], input="Pasted note about the boiler.")
    assert stdin.exit_code == 0 and "pasted.txt" in stdin.output
    reindexed = runner.invoke(main, [*base, "docs", "reindex", ops["id"]])
    assert reindexed.exit_code == 0 and "updated" in reindexed.output
    assert runner.invoke(main, [*base, "docs", "reindex"]).exit_code == 2
    removed = runner.invoke(main, [*base, "docs", "rm", ops["id"], "--json"])
    assert json.loads(removed.output)["removed"][0]["id"] == ops["id"]
    missing = runner.invoke(main, [*base, "docs", "show", ops["id"]])
    assert missing.exit_code == 1 and "docs list" in missing.output


def test_cli_progress_bar_draws_on_stderr_only() -> None:
    from funes.interfaces.cli.docs import progress_printer
    from funes.knowledge.documents import IngestProgress

    stream = io.StringIO()
    show, clear = progress_printer(stream)
    show(
        IngestProgress(
            files_done=1, files_total=4, chunks_done=120, bytes_done=50, bytes_total=200, current="a.pdf", elapsed=5.0
        )
    )
    line = stream.getvalue()
    assert "1/4 files" in line and "120 chunks" in line and "ETA 00:15" in line and "[######" in line
    clear()
    assert stream.getvalue().endswith("\r")


def test_cli_ingest_takes_project_after_the_command_as_the_docs_show(tmp_path: Path) -> None:
    """docs/ingestion.md: `funes ingest --project acme FILE` files the chunks under that project."""
    db = str(tmp_path / "cli.db")
    (tmp_path / "plan.md").write_text("# Plan\n\nThe migration starts in March.\n", encoding="utf-8")
    runner = CliRunner()
    base = ["--db", db, "--embedder", "hash"]
    result = runner.invoke(main, [*base, "ingest", "--project", "acme", str(tmp_path / "plan.md")])
    assert result.exit_code == 0, result.output
    with funes.open(db, embedder=HashEmbedder(64)) as mem:
        chunks = mem.list().items
    assert chunks and {(c.scope, c.project_id) for c in chunks} == {("project", "acme")}
