"""Claude's memory tool (memory_20250818) over a memory folder: every command, every path escape, indexing."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import funes
from funes.errors import Conflict, InvalidInput, NotFound


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    """The service on each backend (SQLite and PostgreSQL): these behaviours are the store contract's too."""
    return backend_mem


@pytest.fixture
def folder(mem: funes.Funes, tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    mem.add_folder(root)
    return root


def run(mem: funes.Funes, folder: Path, **command: object) -> str:
    return mem.memory_tool(command, folder=folder)


def test_create_view_and_search(mem: funes.Funes, folder: Path) -> None:
    out = run(mem, folder, command="create", path="/memories/prefs.md", file_text="# Prefs\n\nThe user likes okapis.\n")
    assert out == "File created successfully at: /memories/prefs.md"
    assert (folder / "prefs.md").read_text() == "# Prefs\n\nThe user likes okapis.\n"
    assert any("okapis" in h.memory.content for h in mem.search("okapis"))  # indexed at once
    view = run(mem, folder, command="view", path="/memories/prefs.md")
    assert view.startswith("Here's the content of /memories/prefs.md with line numbers:\n")
    assert "     1\t# Prefs" in view and "     3\tThe user likes okapis." in view
    ranged = run(mem, folder, command="view", path="/memories/prefs.md", view_range=[3, -1])
    assert "     3\tThe user likes okapis." in ranged and "# Prefs" not in ranged
    bad = run(mem, folder, command="view", path="/memories/prefs.md", view_range=[9, 12])
    assert bad.startswith("Error: Invalid `view_range`") and "from 1 to 4" in bad
    again = run(mem, folder, command="create", path="/memories/prefs.md", file_text="x")
    assert again.startswith("Error: File /memories/prefs.md already exists.")


def test_view_directory_lists_two_levels_without_hidden_items(mem: funes.Funes, folder: Path) -> None:
    (folder / "a" / "b" / "c").mkdir(parents=True)
    (folder / "top.md").write_text("top")
    (folder / "a" / "one.md").write_text("one")
    (folder / "a" / "b" / "c" / "deep.md").write_text("deep")
    (folder / ".secret.md").write_text("hidden")
    out = run(mem, folder, command="view", path="/memories")
    assert out.startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert "/memories/top.md" in out and "/memories/a/one.md" in out and "/memories/a/b/" in out
    assert "deep.md" not in out and ".secret" not in out
    assert run(mem, folder, command="view", path="/memories/missing.md").startswith(
        "Error: The path /memories/missing.md does not exist."
    )


def test_str_replace_needs_exactly_one_match(mem: funes.Funes, folder: Path) -> None:
    (folder / "n.md").write_text("# N\n\ncolour: blue\nsize: blue\n")
    none = run(mem, folder, command="str_replace", path="/memories/n.md", old_str="green", new_str="red")
    assert none.startswith("Error: No replacement was performed: old_str did not appear verbatim")
    many = run(mem, folder, command="str_replace", path="/memories/n.md", old_str="blue", new_str="red")
    assert "occurs 2 times" in many and "lines [3, 4]" in many and "matches exactly once" in many
    ok = run(mem, folder, command="str_replace", path="/memories/n.md", old_str="colour: blue", new_str="colour: teal")
    assert ok.startswith("The memory file has been edited.") and "colour: teal" in ok
    assert (folder / "n.md").read_text() == "# N\n\ncolour: teal\nsize: blue\n"
    assert any("teal" in h.memory.content for h in mem.search("colour teal"))
    with pytest.raises(InvalidInput):
        mem.memory_tool(
            {"command": "str_replace", "path": "/memories/n.md", "old_str": "zzz"}, folder=folder, strict=True
        )


def test_insert_at_top_middle_and_end(mem: funes.Funes, folder: Path) -> None:
    (folder / "list.md").write_text("b\nd")
    assert run(mem, folder, command="insert", path="/memories/list.md", insert_line=0, insert_text="a\n") == (
        "The file /memories/list.md has been edited."
    )
    run(mem, folder, command="insert", path="/memories/list.md", insert_line=2, insert_text="c")
    run(mem, folder, command="insert", path="/memories/list.md", insert_line=4, insert_text="e")
    assert (folder / "list.md").read_text() == "a\nb\nc\nd\ne"
    bad = run(mem, folder, command="insert", path="/memories/list.md", insert_line=9, insert_text="z")
    assert bad.startswith("Error: Invalid `insert_line` 9") and "from 0 (the top) to 5" in bad


def test_delete_and_rename_keep_the_index_in_step(mem: funes.Funes, folder: Path) -> None:
    run(mem, folder, command="create", path="/memories/old.md", file_text="# Old\n\nThe quokka smiles.\n")
    [before] = mem.documents()
    chunk_ids = {m.id for m in mem.document_chunks(before.id)}
    out = run(mem, folder, command="rename", old_path="/memories/old.md", new_path="/memories/sub/new.md")
    assert out == "Successfully renamed /memories/old.md to /memories/sub/new.md"
    [after] = mem.documents()
    assert after.id == before.id and after.uri == str(folder / "sub" / "new.md")
    assert {m.id for m in mem.document_chunks(after.id)} == chunk_ids  # moved, not re-embedded
    assert mem.search("quokka")[0].memory.source.uri == str(folder / "sub" / "new.md")
    (folder / "taken.md").write_text("taken")
    clash = run(mem, folder, command="rename", old_path="/memories/sub/new.md", new_path="/memories/taken.md")
    assert clash.startswith("Error: /memories/taken.md already exists.")
    assert run(mem, folder, command="delete", path="/memories/sub") == "Successfully deleted /memories/sub"
    assert not (folder / "sub").exists()
    assert not any("quokka" in h.memory.content for h in mem.search("quokka"))
    assert run(mem, folder, command="delete", path="/memories/sub").startswith("Error: The path /memories/sub")
    assert run(mem, folder, command="delete", path="/memories").startswith("Error: /memories itself cannot")


def test_unknown_command_and_missing_fields(mem: funes.Funes, folder: Path) -> None:
    assert run(mem, folder, command="format").startswith("Error: Unknown memory command 'format'. Use one of: view")
    assert run(mem, folder, command="create", path="/memories/x.md").startswith("Error: `file_text` is required")
    assert run(mem, folder, command="view").startswith("Error: `path` is required.")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/../secret.md", "leaves the memory folder"),
        ("../secret.md", "leaves the memory folder"),
        ("/memories/a/../../secret.md", "leaves the memory folder"),
        ("/memories/%2e%2e/secret.md", "leaves the memory folder"),
        ("/etc/passwd.md", "absolute path outside /memories"),
        ("~/notes.md", "absolute path outside /memories"),
        ("C:\\notes.md", "absolute path outside /memories"),
        ("/memories/evil\x00.md", "NUL byte"),
        ("/memories/link/secret.md", "resolves outside the memory folder"),
        ("/memories/notes.txt", "not a Markdown file"),
        ("/memories/script.py", "not a Markdown file"),
    ],
)
def test_every_path_escape_is_refused(mem: funes.Funes, folder: Path, tmp_path: Path, path: str, reason: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("do not touch")
    (folder / "link").symlink_to(outside, target_is_directory=True)
    for command in (
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "view", "path": path},
        {"command": "str_replace", "path": path, "old_str": "do", "new_str": "pwned"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/x.md"},
        {"command": "rename", "old_path": "/memories/ok.md", "new_path": path},
    ):
        (folder / "ok.md").write_text("fine")
        out = mem.memory_tool(command, folder=folder)
        assert out.startswith("Error: "), (command, out)
        if command["command"] not in ("view", "delete") or reason != "not a Markdown file":
            assert reason in out or "does not exist" in out, (command, out)
    assert (outside / "secret.md").read_text() == "do not touch"
    assert not any(p.name == "passwd.md" for p in Path("/etc").iterdir())
    assert not (tmp_path / "secret.md").exists()


def test_files_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    from funes.providers.embed import HashEmbedder

    with funes.open(str(tmp_path / "m.db"), embedder=HashEmbedder(64), memory_file_kb=1) as small:
        root = tmp_path / "memory"
        small.add_folder(root)
        big = "x" * 2000
        out = small.memory_tool({"command": "create", "path": "/memories/big.md", "file_text": big}, folder=root)
        assert out.startswith("Error: The new content of /memories/big.md is over the 1,024-byte limit")
        assert not (root / "big.md").exists()
        (root / "big.md").write_text(big)
        view = small.memory_tool({"command": "view", "path": "/memories/big.md"}, folder=root)
        assert "over the 1,024-byte limit" in view and "memory_file_kb" in view
        with pytest.raises(InvalidInput):
            small.memory_tool(
                {"command": "str_replace", "path": "/memories/big.md", "old_str": "x", "new_str": "y"},
                folder=root,
                strict=True,
            )


def test_errors_are_typed_with_hints_when_strict(mem: funes.Funes, folder: Path) -> None:
    with pytest.raises(NotFound) as missing:
        mem.memory_tool({"command": "view", "path": "/memories/none.md"}, folder=folder, strict=True)
    assert missing.value.hint and "view" in missing.value.hint
    (folder / "a.md").write_text("a")
    with pytest.raises(Conflict):
        mem.memory_tool({"command": "create", "path": "/memories/a.md", "file_text": "b"}, folder=folder, strict=True)


def test_default_folder_is_under_the_project_root(
    mem: funes.Funes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    assert mem.memory_tool({"command": "create", "path": "/memories/n.md", "file_text": "hello"}).startswith("File")
    assert (project / ".funes" / "memory" / "n.md").read_text() == "hello"
    assert [f.path for f in mem.folders()] == [str(project / ".funes" / "memory")]
    assert os.path.isdir(mem.default_folder())


def test_a_write_stands_while_other_writers_keep_moving_the_folder_index(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each scan of the tool's own sync is overtaken by another writer's: the file is written all the same.

    Four times another process syncs its own version of the file in between; the last scan holds the
    folder, so there another writer can only remove the document. On PostgreSQL that lands and a job
    indexes the file; SQLite's one writer makes the removal wait for the sync.
    """
    from funes.providers.embed import HashEmbedder

    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        root = tmp_path / "memory"
        mem.add_folder(root)
        for n in range(6):
            (root / f"old{n}.md").write_text(f"# Old {n}\n\nThe okapi note number {n}.\n")
        mem.sync(root)
        (root / "new.md").write_text("# New\n\nA draft.\n")
        mem.sync(root)
        scan = mem.memory_folders.scan
        target = root / "new.md"
        others: list[threading.Thread] = []
        landed: list[bool] = []

        def other_writer() -> None:
            if len(others) < 5:
                target.write_text(f"# New\n\nAnother writer's version {len(others)}.\n")
                mem.sync(root)
            else:
                mem.remove_document(next(d.id for d in mem.documents() if d.name == "new.md"))

        def overtaking(folder, *rest):  # type: ignore[no-untyped-def]
            drift = scan(folder, *rest)
            if threading.current_thread() is not threading.main_thread() or len(others) == 5:
                return drift
            ours = target.read_text()
            other = threading.Thread(target=other_writer)
            others.append(other)
            other.start()
            other.join(1.0)  # it lands at once unless this sync's writer holds it off
            landed.append(not other.is_alive())
            target.write_text(ours)
            return drift

        monkeypatch.setattr(mem.memory_folders, "scan", overtaking)
        out = run(
            mem,
            root,
            command="str_replace",
            path="/memories/new.md",
            old_str="A draft.",
            new_str="The user likes quolls.",
        )
        monkeypatch.undo()
        for other in others:
            other.join()
        assert (
            out.startswith("The memory file has been edited.")
            and target.read_text() == "# New\n\nThe user likes quolls.\n"
        )
        postgres = store_url.startswith("postgresql")
        assert landed == [True, True, True, True, postgres]
        assert [j.kind for j in mem.jobs.list(status="queued")] == (["folder-sync"] if postgres else [])
        mem.run_jobs()
        mem.sync(root)  # on SQLite the removal landed after the tool's sync
        assert sorted(d.name for d in mem.documents()) == ["new.md", *(f"old{n}.md" for n in range(6))]
        assert any("quolls" in h.memory.content for h in mem.search("quolls")) and mem.doctor() == []
