"""Write-back to the day's Markdown file and <save_memory> capture: round trips without duplicates."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.interfaces.cli import main


def copies(mem: funes.Funes, word: str) -> int:
    return sum(word in h.memory.content for h in mem.search(word, limit=50))


def today(root: Path) -> Path:
    return root / f"{datetime.now().astimezone():%Y-%m-%d}.md"


def test_remember_to_markdown_appends_a_readable_section_once(mem: funes.Funes, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    mem.add_folder(root)
    first = mem.remember(
        "I prefer EU-based vendors for the gondola order.",
        type="preference",
        importance=0.9,
        tags=["vendors", "gondola"],
        to_markdown=True,
        folder=root,
    )
    text = today(root).read_text()
    assert text.startswith(f"# {datetime.now().astimezone():%Y-%m-%d}\n")
    assert "preference (importance 0.90)" in text and f"<!-- funes:{first.id} -->" in text
    assert "I prefer EU-based vendors for the gondola order." in text and "- tags: vendors, gondola" in text
    assert first.metadata["tags"] == ["vendors", "gondola"]
    assert copies(mem, "gondola") == 1  # the file's section is not a second copy
    again = mem.remember(
        "I prefer EU-based vendors for the gondola order.", type="preference", to_markdown=True, folder=root
    )
    assert again.id == first.id and today(root).read_text().count("gondola order") == 1
    (today(root)).write_text(today(root).read_text() + "\n## Notes\n\nThe gondola needs new oars.\n")  # a hand edit
    mem.remember("Standup moves to 9:30 for the gondola team.", to_markdown=True, folder=root)
    final = today(root).read_text()
    assert "new oars" in final and "Standup moves" in final  # appended, never overwritten
    mem.sync(root)
    assert copies(mem, "gondola") == 3 and mem.folder_status(root)[0].drift.total == 0


def test_a_section_edited_by_hand_becomes_its_own_note(mem: funes.Funes, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    mem.add_folder(root)
    mem.remember("The office plant is a ficus.", to_markdown=True, folder=root)
    path = today(root)
    path.write_text(path.read_text().replace("a ficus", "a monstera"))
    mem.sync(root)
    assert copies(mem, "monstera") == 1 and copies(mem, "ficus") == 1


def test_the_watcher_does_not_copy_a_written_back_memory(mem: funes.Funes, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    mem.add_folder(root)
    stop = threading.Event()
    batches: list[str] = []
    watcher = threading.Thread(
        target=mem.watch, kwargs={"stop": stop, "debounce": 0.2, "on_batch": lambda f, r: batches.append(r)}
    )
    watcher.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "start" not in batches:
            time.sleep(0.05)
        mem.remember("The zeppelin hangar opens at dawn.", to_markdown=True, folder=root)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "change" not in batches:
            time.sleep(0.05)
        assert "change" in batches, "the watcher never saw the write-back"
        while time.monotonic() < deadline and any(
            j.status in ("queued", "running") for j in mem.jobs.list(kind="folder-sync")
        ):
            time.sleep(0.05)
        assert copies(mem, "zeppelin") == 1
    finally:
        stop.set()
        watcher.join(10)


def test_capture_save_memory_tags(mem: funes.Funes, tmp_path: Path) -> None:
    text = """Sure, noted.
    <save_memory type="preference" importance="0.9" tags="diet">The user is vegetarian.</save_memory>
    Also <save memory>The user's cat is called Miso.</save memory> and
    <SAVE_MEMORY importance='high'>bad importance</SAVE_MEMORY>
    <save_memory colour="red">unknown attribute</save_memory>"""
    results = mem.capture(text)
    assert [r.status for r in results] == ["created", "created", "error", "error"]
    veg = results[0].memory
    assert veg is not None and veg.memory_type == "preference" and veg.importance == 0.9
    assert veg.metadata["tags"] == ["diet"]
    assert results[1].memory is not None and results[1].memory.content == "The user's cat is called Miso."
    assert "0 to 1" in (results[2].error.hint or "") and "unknown attribute" in results[3].error.message
    assert mem.capture("no tags here") == []
    root = tmp_path / "memory"
    mem.add_folder(root)
    written = mem.capture("<save_memory>The lift code is 4711.</save_memory>", to_markdown=True, folder=str(root))
    assert written[0].status == "created" and "The lift code is 4711." in today(root).read_text()
    assert copies(mem, "4711") == 1


@pytest.mark.parametrize("piped", [True, False])
def test_cli_capture_and_add_to_markdown(tmp_path: Path, piped: bool) -> None:
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.db"), "--embedder", "hash"]
    root = tmp_path / "memory"
    assert runner.invoke(main, [*base, "folders", "add", str(root)]).exit_code == 0
    text = '<save_memory type="decision">Ship on Fridays is banned.</save_memory>'
    args = [*base, "capture", "--to-markdown", "--folder", str(root)]
    out = runner.invoke(main, args, input=text) if piped else runner.invoke(main, [*args, text])
    assert out.exit_code == 0 and "created" in out.output, out.output
    assert "Ship on Fridays is banned." in today(root).read_text()
    added = runner.invoke(main, [*base, "add", "Backups run at 02:00.", "--to-markdown", "--folder", str(root)])
    assert added.exit_code == 0, added.output
    assert "Backups run at 02:00." in today(root).read_text()
    found = runner.invoke(main, [*base, "search", "backups", "--json"]).output
    assert found.count("Backups run at 02:00.") == 1


def test_create_memory_tool_with_to_markdown(mem: funes.Funes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    result = mem.execute_tool(
        "create_memory",
        {"content": "The staging database is read-only on Sundays.", "memory_type": "fact", "to_markdown": True},
    )
    assert not result.is_error, result.content
    assert "read-only on Sundays" in today(project / ".funes" / "memory").read_text()
    assert copies(mem, "Sundays") == 1
    plain = mem.execute_tool("create_memory", {"content": "Lunch is at noon.", "memory_type": "fact"})
    assert not plain.is_error and "Lunch" not in today(project / ".funes" / "memory").read_text()


def test_a_line_typed_under_a_written_back_section_is_indexed(mem: funes.Funes, tmp_path: Path) -> None:
    """Seen before: the hand-typed line stayed unsearchable, because its section held a written-back copy."""
    root = tmp_path / "memory"
    mem.add_folder(root)
    mem.remember("The boiler is serviced in October.", to_markdown=True, folder=root, tags=["house"])
    path = today(root)
    path.write_text(path.read_text() + "Also ask the plumber about the kestrel-shaped valve.\n")
    mem.sync(root)
    assert copies(mem, "kestrel") == 1
    assert copies(mem, "boiler") >= 1
