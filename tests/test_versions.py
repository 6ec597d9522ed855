"""Version history and restore: through the API and the CLI, with the 5-version FIFO and re-embedding."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.cli import main


def test_versions_lists_current_then_previous_with_timestamps(mem: funes.Funes) -> None:
    m = mem.remember("The office is in Lyon", type="fact")
    mem.update(m.id, content="The office is in Paris")
    mem.update(m.id, content="The office is in Berlin", importance=0.8)
    versions = mem.versions(m.id)
    assert [(v.version, v.content, v.current) for v in versions] == [
        (3, "The office is in Berlin", True),
        (2, "The office is in Paris", False),
        (1, "The office is in Lyon", False),
    ]
    assert versions[0].updated_at >= versions[1].updated_at >= versions[2].updated_at
    assert versions[0].importance == 0.8


def test_restore_makes_a_new_version_and_keeps_the_current_one(mem: funes.Funes) -> None:
    m = mem.remember("Deploys happen on Tuesday", type="decision", importance=0.4)
    mem.update(m.id, content="Deploys happen on Friday", importance=0.9)
    restored = mem.restore(m.id, 1)
    assert restored.version == 3
    assert restored.content == "Deploys happen on Tuesday"
    assert restored.importance == 0.4  # the restored version's importance comes back with it
    assert restored.metadata["restored_from_version"] == 1
    assert [v.content for v in restored.previous_versions] == ["Deploys happen on Tuesday", "Deploys happen on Friday"]
    # Restoring is itself undoable: version 2 is still there.
    again = mem.restore(m.id, 2)
    assert (again.version, again.content) == (4, "Deploys happen on Friday")


def test_restore_re_embeds_the_restored_text(mem: funes.Funes) -> None:
    m = mem.remember("Quarterly revenue grew strongly", type="fact")
    mem.update(m.id, content="The cafeteria serves pizza on Mondays")
    restored = mem.restore(m.id, 1)
    stored = mem.store.vectors_for([restored.id])[restored.id]
    expected = mem.embed_records([mem.embedding.embed_text(restored)])[0]
    assert len(stored) == len(expected)
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(stored, expected, strict=True))
    hits = mem.search("Quarterly revenue grew strongly", limit=1)
    assert hits[0].memory.id == m.id and hits[0].explanation.vector_similarity == pytest.approx(1.0, abs=1e-5)


def test_restore_respects_the_five_version_fifo(mem: funes.Funes) -> None:
    m = mem.remember("v1 text", type="fact")
    for n in range(2, 8):
        mem.update(m.id, content=f"v{n} text")
    current = mem.get(m.id)
    assert current.version == 7
    assert [v.version for v in current.previous_versions] == [2, 3, 4, 5, 6]
    with pytest.raises(NotFound) as err:
        mem.restore(m.id, 1)  # dropped by the FIFO
    assert "history" in (err.value.hint or "")
    restored = mem.restore(m.id, 2)
    assert restored.version == 8 and restored.content == "v2 text"
    assert [v.version for v in restored.previous_versions] == [3, 4, 5, 6, 7]


def test_restore_of_the_current_version_changes_nothing(mem: funes.Funes) -> None:
    m = mem.remember("Only version", type="fact")
    assert mem.restore(m.id, 1) == mem.get(m.id)
    with pytest.raises(InvalidInput):
        mem.restore(m.id, "1")  # type: ignore[arg-type]


def test_versions_of_another_tenants_record_read_as_not_found(mem: funes.Funes) -> None:
    m = mem.remember("Tenant A secret", tenant="a")
    with pytest.raises(NotFound):
        mem.versions(m.id, tenant="b")
    with pytest.raises(NotFound):
        mem.restore(m.id, 1, tenant="b")


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")


def _run(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_cli_history_and_restore(cli_env: None) -> None:
    created = json.loads(_run("add", "Standup is at 9:30", "--json").stdout)
    _run("edit", created["id"], "Standup is at 10:00")
    text = _run("history", created["id"]).stdout
    assert "version 2" in text and "(current)" in text and "Standup is at 9:30" in text
    listed = json.loads(_run("history", created["id"], "--json").stdout)
    assert [v["version"] for v in listed] == [2, 1] and listed[1]["updated_at"]
    out = _run("restore", created["id"], "--version", "1").stdout
    assert "as version 3" in out
    shown = json.loads(_run("get", created["id"], "--json").stdout)
    assert shown["content"] == "Standup is at 9:30" and shown["version"] == 3
    missing = CliRunner().invoke(main, ["restore", created["id"], "--version", "9"])
    assert missing.exit_code == 1 and "Hint:" in missing.stderr
