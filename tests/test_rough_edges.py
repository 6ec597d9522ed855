"""Rough edges found while trying Funes as a new user (issue 8), each pinned by a regression test."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.agents.specs import TOOLS_BY_NAME
from funes.interfaces.cli import main
from funes.models import Caller
from funes.models.sources import SOURCE_FILTER_LABELS, SOURCE_FILTERS, describe_source_filters
from funes.providers.embed import HashEmbedder


# -- the documents source filter: name, description and behaviour agree ---------------------
def test_every_source_filter_description_names_what_it_selects() -> None:
    names = {"pdf": "PDF", "text": "text", "markdown": "Markdown", "sheet": "spreadsheet", "chat": "chat"}
    for name, types in SOURCE_FILTERS.items():
        for source_type in types or ():
            assert names[source_type] in SOURCE_FILTER_LABELS[name], (name, source_type)
    schema = TOOLS_BY_NAME["memory_search"].input_schema()["properties"]["source_filter"]
    assert describe_source_filters() in schema["description"]
    assert "documents (PDF, text and Markdown files)" in schema["description"]
    assert "Markdown files" in TOOLS_BY_NAME["memory_search"].description
    help_text = CliRunner().invoke(main, ["search", "--help"]).output
    assert "Markdown files" in " ".join(help_text.split())


def test_the_documents_filter_returns_markdown_as_described(mem: funes.Funes, tmp_path: Path) -> None:
    note = tmp_path / "ops.md"
    note.write_text("# Ops\n\nThe pager rotation changes every Monday.\n")
    plain = tmp_path / "ops.txt"
    plain.write_text("The pager rotation is documented in the wiki.\n")
    mem.ingest(str(note))
    mem.ingest(str(plain))
    mem.remember("The pager rotation was discussed at lunch")
    hits = mem.search("pager rotation", source_types=["documents"])
    assert {h.memory.source.type for h in hits if h.memory.source} == {"markdown", "text"}


# -- a team memory created by an agent belongs to no session or project ------------------------
def test_a_team_memory_from_the_tools_carries_no_session_or_project(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "t.db"), embedder=HashEmbedder(32), project="acme") as mem:
        caller = Caller(tenant="default", user_id="alice", agent_id="agent-1", session_id="ses-42")
        result = mem.execute_tool(
            "create_memory",
            {"content": "Invoices go out on the 1st", "memory_type": "fact", "scope": "team"},
            caller=caller,
        )
        memory = mem.get(result.data["memory_id"], user="alice")
        assert (memory.scope, memory.project_id, memory.session_id) == ("team", None, None)
        assert memory.source is not None and "session" not in memory.source.locator
        assert memory.source.locator["agent"] == "agent-1"
        # The project and session records of the same run keep their ids.
        project = mem.execute_tool(
            "create_memory", {"content": "Acme pays late", "memory_type": "fact", "scope": "project"}, caller=caller
        )
        session = mem.execute_tool(
            "create_memory", {"content": "Draft is v3", "memory_type": "fact", "scope": "session"}, caller=caller
        )
        p, s = (mem.get(r.data["memory_id"], user="alice") for r in (project, session))
        assert (p.project_id, p.session_id) == ("acme", None)
        assert (s.project_id, s.session_id) == ("acme", "ses-42")


def test_a_promoted_record_drops_the_ids_narrower_than_its_new_scope(mem: funes.Funes) -> None:
    record_id = mem.session("s1", project="acme").add_message("user", "We invoice in EUR").record_ids[0]
    mem.promote([record_id])
    assert (mem.get(record_id).project_id, mem.get(record_id).session_id) == ("acme", None)
    mem.promote([record_id])
    team = mem.get(record_id)
    assert (team.scope, team.project_id, team.session_id) == ("team", None, None)
    assert [(p["session_id"], p["project_id"]) for p in team.metadata["promotion_history"]] == [
        ("s1", "acme"),
        (None, "acme"),
    ]


def test_remember_in_team_scope_drops_the_configured_project(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "r.db"), embedder=HashEmbedder(32), project="acme") as mem:
        memory = mem.remember("Company holiday is May 1st", scope="team", session="ses-1")
        assert (memory.project_id, memory.session_id) == (None, None)
        assert mem.remember("Acme detail").project_id == "acme"  # project scope by default, as before


# -- funes get shows the previous texts --------------------------------------------------------
def test_get_in_text_mode_shows_previous_versions_with_numbers_and_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")
    runner = CliRunner()
    added = json.loads(runner.invoke(main, ["add", "I prefer US vendors", "--json"]).stdout)
    runner.invoke(main, ["edit", added["id"], "I prefer EU vendors"])
    runner.invoke(main, ["edit", added["id"], "I prefer Nordic vendors"])
    text = runner.invoke(main, ["get", added["id"]]).stdout
    assert "version:      3  (2 previous)" in text
    history = text.split("previous versions:")[1]
    assert history.index("version 2") < history.index("version 1")  # newest first
    assert "I prefer EU vendors" in history and "I prefer US vendors" in history
    assert "I prefer Nordic vendors" not in history
    stamp = history.split("version 2", 1)[1].split()[0]
    assert datetime.fromisoformat(stamp).year >= 2026


# -- chat hits name their file and date ----------------------------------------------------------
def test_transcript_hits_name_the_file_and_its_date(mem: funes.Funes, tmp_path: Path) -> None:
    transcript = tmp_path / "standup.txt"
    transcript.write_text("Alice: the release slips to Thursday\nBob: then QA starts Friday\n")
    day = datetime(2026, 3, 4, 12, tzinfo=UTC).timestamp()
    os.utime(transcript, (day, day))
    mem.ingest(str(transcript), kind="chat")
    (hit, *_) = mem.search("release slips Thursday", source_types=["chat"])
    assert hit.attribution == "chat standup.txt 2026-03-04 Alice"


def test_chat_export_hits_name_the_file_and_the_message_date(mem: funes.Funes, tmp_path: Path) -> None:
    export = tmp_path / "support.json"
    export.write_text(
        json.dumps(
            [
                {"role": "user", "content": "My invoice total is wrong", "timestamp": "2026-02-01T09:00:00Z"},
                {"role": "assistant", "content": "I will correct the invoice", "timestamp": "2026-02-01T09:01:00Z"},
            ]
        )
    )
    mem.ingest(str(export))
    (hit, *_) = mem.search("invoice total wrong", source_types=["chat"])
    assert hit.attribution == "chat support.json 2026-02-01 user"


def test_session_message_attribution_is_unchanged(mem: funes.Funes) -> None:
    session = mem.session("s1", title="Planning")
    session.add_message("user", "Let us plan the offsite", at="2026-05-06T10:00:00Z")
    (hit, *_) = mem.search("plan the offsite", session="s1")
    assert hit.attribution == "chat Planning 2026-05-06 user"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[funes.Funes]:
    service = funes.open(str(tmp_path / "edges.db"), embedder=HashEmbedder(64))
    yield service
    service.close()


def test_folder_ingest_lists_unsupported_files_as_skipped_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe platypus lays eggs.\n")
    (folder / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0 not text")
    (folder / "Makefile").write_text("all:\n\techo hi\n")
    (folder / ".hidden.md").write_text("# Hidden\n")
    with funes.open(str(tmp_path / "s.db"), embedder="hash") as mem:
        report = mem.ingest_paths([folder])
        assert [r.name for r in report.indexed] == ["notes/a.md"]
        skipped = {r.name: r.error for r in report.skipped}
        assert set(skipped) == {"notes/photo.jpg", "notes/Makefile"}
        assert "unsupported type (.jpg)" in str(skipped["notes/photo.jpg"])
        assert "no extension" in str(skipped["notes/Makefile"]) and "--kind text" in str(skipped["notes/Makefile"])
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "s.db"), "--embedder", "hash", "ingest", str(folder)])
    assert result.exit_code == 0, result.output
    assert "notes/photo.jpg has an unsupported type (.jpg)" in result.output and "2 skipped" in result.output
