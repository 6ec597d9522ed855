"""Issue 11: a folder's deleted files stop turning up in searches (`ingest --sync`, `docs reindex --all`)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import funes
from funes.interfaces.cli import main


def _notes(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gone.md").write_text("# Gone\n\nThe platypus lays eggs and hunts by electroreception.\n")
    (folder / "kept.md").write_text("# Kept\n\nThe echidna is the other monotreme.\n")


def _search(runner: CliRunner, base: list[str], query: str) -> str:
    result = runner.invoke(main, [*base, "search", query])
    assert result.exit_code == 0, result.output
    return result.output


def test_docs_reindex_all_forgets_a_deleted_file(tmp_path: Path) -> None:
    """The new user's example: after `rm gone.md; funes docs reindex --all`, platypus is not found."""
    notes = tmp_path / "notes"
    _notes(notes)
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    assert runner.invoke(main, [*base, "ingest", str(notes)]).exit_code == 0
    assert "Gone" in _search(runner, base, "platypus")
    (notes / "gone.md").unlink()
    reindexed = runner.invoke(main, [*base, "docs", "reindex", "--all"])
    assert reindexed.exit_code == 0, reindexed.output
    assert "1 removed (file gone)" in reindexed.output and "removed" in reindexed.output
    assert "platypus" not in _search(runner, base, "platypus")
    listed = json.loads(runner.invoke(main, [*base, "docs", "list", "--json"]).output)
    assert [Path(d["uri"]).name for d in listed] == ["kept.md"]


def test_ingest_sync_removes_only_what_is_gone_from_that_folder(mem: funes.Funes, tmp_path: Path) -> None:
    notes, other = tmp_path / "notes", tmp_path / "other"
    _notes(notes)
    other.mkdir()
    (other / "elsewhere.md").write_text("# Elsewhere\n\nThe platypus also appears in another folder.\n")
    mem.ingest_paths([notes, other])
    (notes / "gone.md").unlink()
    (other / "elsewhere.md").unlink()
    plain = mem.ingest_paths([notes])
    assert not plain.removed  # without sync an ingest never deletes
    synced = mem.ingest_paths([notes], sync=True)
    assert [Path(r.uri).name for r in synced.removed] == ["gone.md"] and synced.removed[0].document.chunk_count >= 1
    assert synced.to_dict()["removed"] == 1
    uris = {Path(d.uri).name for d in mem.documents()}
    assert uris == {"kept.md", "elsewhere.md"}  # another folder is left to its own sync
    assert not any("electroreception" in h.memory.content for h in mem.search("platypus electroreception"))


def test_cli_ingest_sync(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    _notes(notes)
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    assert runner.invoke(main, [*base, "ingest", str(notes)]).exit_code == 0
    (notes / "gone.md").unlink()
    out = runner.invoke(main, [*base, "ingest", "--sync", str(notes), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["removed"] == 1 and {r["status"] for r in data["results"]} == {"unchanged", "removed"}
    assert "platypus" not in _search(runner, base, "platypus")


def test_reindex_of_a_named_missing_document_still_fails(mem: funes.Funes, tmp_path: Path) -> None:
    """Only --all prunes: a document named explicitly reports that its file is gone."""
    notes = tmp_path / "notes"
    _notes(notes)
    mem.ingest_paths([notes])
    (notes / "gone.md").unlink()
    result = mem.reindex_document(str(notes / "gone.md"))
    assert result.status == "failed" and len(mem.documents()) == 2
