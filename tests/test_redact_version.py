"""Redacting a version (issue 25): its text is erased for good, its number, time and hash kept; on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import funes
from funes.errors import Conflict, InvalidInput, NotFound
from funes.interfaces.cli import main


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    return backend_mem


def test_a_redacted_version_keeps_its_metadata_and_loses_its_text(mem: funes.Funes) -> None:
    m = mem.remember("The door code is 4471", type="fact")
    mem.update(m.id, content="The door code is 9902")
    before = {v.version: v for v in mem.versions(m.id)}
    gone = mem.redact_version(m.id, 1)
    assert gone.version == 1 and gone.content == "" and gone.redacted_at is not None
    assert (gone.content_hash, gone.updated_at) == (before[1].content_hash, before[1].updated_at)
    after = {v.version: v for v in mem.versions(m.id)}
    assert after[2] == before[2]  # the current text is untouched
    assert after[1].redacted_at == gone.redacted_at and after[1].to_dict()["redacted"] is True
    # It stays redacted through reads, exports and the REST shape, and the erased text is nowhere in the record.
    record = mem.get(m.id)
    assert "4471" not in json.dumps(record.to_dict()) and record.previous_versions[0].redacted_at is not None
    assert [h.memory.id for h in mem.search("door code 4471")] == [m.id]  # found by its current text only
    # Redacting again changes nothing; restoring it is refused with a hint.
    assert mem.redact_version(m.id, 1).redacted_at == gone.redacted_at
    with pytest.raises(InvalidInput, match="redacted"):
        mem.restore(m.id, 1)


def test_bad_redactions_are_refused_and_change_nothing(mem: funes.Funes) -> None:
    m = mem.remember("Payroll runs on the 25th", type="fact")
    mem.update(m.id, content="Payroll runs on the 28th")
    before = mem.get(m.id)
    with pytest.raises(Conflict, match="current"):
        mem.redact_version(m.id, 2)  # the current text is the record: update or forget it instead
    with pytest.raises(NotFound, match="no version 7"):
        mem.redact_version(m.id, 7)
    with pytest.raises(NotFound):
        mem.redact_version("mem_unknown", 1)
    with pytest.raises(NotFound):
        mem.redact_version(m.id, 1, tenant="someone-else")
    with pytest.raises(InvalidInput):
        mem.redact_version(m.id, "1")  # type: ignore[arg-type]
    assert mem.get(m.id) == before


def test_cli_redact(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")

    def run(*args: str) -> Any:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 0, result.output
        return result

    created = json.loads(run("add", "The safe opens with 3141", "--json").stdout)
    run("edit", created["id"], "The safe opens with 2718")
    out = run("redact", created["id"], "--version", "1").stdout
    assert "Redacted version 1" in out and "sha256:" in out
    history = run("history", created["id"]).stdout
    assert "3141" not in history and "[redacted" in history and "2718" in history
    shown = json.loads(run("history", created["id"], "--json").stdout)
    assert [(v["version"], v["redacted"]) for v in shown] == [(2, False), (1, True)]
    refused = CliRunner().invoke(main, ["redact", created["id"], "--version", "2"])
    assert refused.exit_code == 1 and "Hint:" in refused.stderr
