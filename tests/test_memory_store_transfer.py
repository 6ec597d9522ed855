"""`funes export` / `funes import` carry the memory-store tables (issue 27), SQLite → PostgreSQL and back.

Ids, paths, versions, ``content_sha256`` and redactions survive the trip; an
import never brings back a redacted version's text or a forgotten memory.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput
from funes.interfaces.cli import main


def fill(mem: Any) -> dict[str, Any]:
    """A store with a created, modified, renamed, deleted and redacted history; an archived second store."""
    stores = mem.memory_stores
    store = stores.create_store("prefs", description="What ana prefers.", metadata={"user": "ana"}, tenant="t")["id"]
    key = {"type": "api_actor", "api_key_id": "key_1"}
    seat = stores.create_memory(store, "/travel/seat.md", "Aisle seats, secret-aisle-word.", tenant="t", actor=key)
    stores.update_memory(store, seat["id"], content="Window seats.", tenant="t", actor=key)
    stores.update_memory(store, seat["id"], path="/travel/seats.md", tenant="t")
    old = stores.list_versions(store, memory_id=seat["id"], operation="created", tenant="t")["data"][0]["id"]
    stores.redact_version(store, old, tenant="t", actor=key)
    empty = stores.create_memory(store, "/empty.md", "", tenant="t")
    gone = stores.create_memory(store, "/gone.md", "to be deleted", tenant="t")
    stores.delete_memory(store, gone["id"], tenant="t")
    archived = stores.create_store("old", tenant="t")["id"]
    stores.create_memory(archived, "/a.md", "kept", tenant="t", actor={"type": "session_actor", "session_id": "s1"})
    stores.archive_store(archived, tenant="t")
    return {"store": store, "seat": seat["id"], "redacted": old, "empty": empty["id"], "archived": archived}


def snapshot(mem: Any, ids: dict[str, Any]) -> Any:
    """Everything the memory-stores API shows of both stores."""
    s = mem.memory_stores
    out = [s.list_stores(include_archived=True, tenant="t")]
    for store in (ids["store"], ids["archived"]):
        out.append(s.list_memories(store, view="full", tenant="t"))
        out.append(s.list_versions(store, view="full", limit=20, tenant="t"))
        out += [s.get_version(store, v["id"], tenant="t") for v in out[-1]["data"]]
    return out


def export(mem: Any) -> str:
    out = io.StringIO()
    mem.export(out)
    return out.getvalue()


@pytest.mark.postgres
@pytest.mark.parametrize("start", ["sqlite", "postgres"])
def test_memory_stores_round_trip_between_backends(start: str, tmp_path: Path, pg_url: str) -> None:
    sqlite_db = str(tmp_path / "a.db")
    first, second = (sqlite_db, pg_url) if start == "sqlite" else (pg_url, sqlite_db)
    with funes.open(first, embedder="hash", worker="off") as mem:
        ids = fill(mem)
        before = snapshot(mem, ids)
        text = export(mem)
    lines = [json.loads(line) for line in text.splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds.count("memory_store") == 2 and kinds.count("memory_store_version") == 7
    assert "secret-aisle-word" not in text  # the redacted text is in no line, neither version row nor record
    redacted = next(line for line in lines if line.get("memory_store_version", {}).get("id") == ids["redacted"])
    assert redacted["memory_store_version"]["redacted_at"] and redacted["memory_store_version"]["content_sha256"]
    with funes.open(second, embedder="hash", worker="off") as mem:
        result = mem.import_(io.StringIO(text))
        assert result["memory_stores"] == 2 and result["memory_store_versions"] == 7
        assert snapshot(mem, ids) == before  # ids, paths, hashes, authors, times, redactions
        assert export(mem) == text  # and back: the same bytes
        # The archived store is still archived, and its versions still filter by author.
        s = mem.memory_stores
        assert [v["created_by"] for v in s.list_versions(ids["archived"], session_id="s1", tenant="t")["data"]] == [
            {"type": "session_actor", "session_id": "s1"}
        ]
        assert s.list_memories(ids["store"], path_prefix="/travel/", tenant="t")["data"][0]["path"] == (
            "/travel/seats.md"
        )
    with funes.open(first, embedder="hash", worker="off") as mem:
        mem.import_(io.StringIO(text))  # into the store it came from: nothing changes
        assert snapshot(mem, ids) == before and export(mem) == text


def test_an_import_never_brings_back_a_redaction_or_a_forget(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        s = mem.memory_stores
        store = s.create_store("s", tenant="t")["id"]
        note = s.create_memory(store, "/note.md", "first text, private-token-one", tenant="t")["id"]
        s.update_memory(store, note, content="second text", tenant="t")
        s.update_memory(store, note, content="third text", tenant="t")
        doomed = s.create_memory(store, "/doomed.md", "forget me, private-token-two", tenant="t")["id"]
        backup = export(mem)  # taken before the redaction and the forget
        first = s.list_versions(store, memory_id=note, operation="created", tenant="t")["data"][0]["id"]
        s.redact_version(store, first, tenant="t")
        mem.forget_everywhere([doomed], tenant="t", confirm=True)
        after = export(mem)
        assert "private-token-one" not in after and "private-token-two" not in after
        result = mem.import_(io.StringIO(backup))
        assert result["forgotten"] == 2  # the forgotten record and its created version were left out
        now = export(mem)
        assert "private-token-one" not in now and "private-token-two" not in now
        assert s.get_version(store, first, tenant="t")["redacted_at"] is not None
        assert s.get_memory(store, note, tenant="t")["content"] == "third text"
        assert all("private-token-one" not in str(v.to_dict()) for v in mem.versions(note, tenant="t"))


def test_a_bad_memory_store_line_imports_nothing(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "a.db"), embedder="hash", worker="off") as mem:
        ids = fill(mem)
        text = export(mem)
    lines = text.splitlines()
    where = next(i for i, line in enumerate(lines) if '"memory_store_version"' in line and "Window seats." in line)
    forged = json.loads(lines[where])
    forged["memory_store_version"]["content"] = "Middle seats."  # the hash no longer matches
    orphan = json.loads(lines[where])
    orphan["memory_store_version"] |= {"id": "memver_x", "store_id": "memstore_nowhere"}
    unredacted = next(json.loads(line) for line in lines if ids["redacted"] in line and "memory_store_version" in line)
    unredacted["memory_store_version"]["content"] = "planted"
    for bad, why in ((forged, "content_sha256"), (orphan, "neither in the file"), (unredacted, "redacted version")):
        with funes.open(str(tmp_path / "b.db"), embedder="hash", worker="off") as target:
            before = export(target)
            with pytest.raises(InvalidInput, match=why):
                target.import_(io.StringIO("\n".join([*lines[:where], json.dumps(bad), *lines[where + 1 :]])))
            assert export(target) == before
    # Another tenant's store id is refused too.
    with funes.open(str(tmp_path / "a.db"), embedder="hash", worker="off") as mem:
        with pytest.raises(InvalidInput, match="another tenant"):
            mem.import_(io.StringIO(text), tenant="u")


def test_the_cli_reports_memory_stores(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    with funes.open(str(source), embedder="hash", worker="off") as mem:
        fill(mem)
    runner = CliRunner()
    env = {"FUNES_EMBEDDER": "hash"}
    out = runner.invoke(main, ["--db", str(source), "export", "--all-tenants", str(tmp_path / "x.jsonl")], env=env)
    assert out.exit_code == 0, out.output
    done = runner.invoke(main, ["--db", str(target), "import", str(tmp_path / "x.jsonl"), "--json"], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["memory_stores"] == 2
    text = runner.invoke(main, ["--db", str(target), "import", str(tmp_path / "x.jsonl")], env=env)
    assert "2 memory stores with 7 versions" in text.output


def test_an_older_export_of_a_record_keeps_the_stores_redaction(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "a.db"), embedder="hash", worker="off") as mem:
        record = mem.remember("The door code is private-code-77.", tenant="t")
        old = export(mem)  # the record's current text is version 1 here
        mem.update(record.id, content="The door code changed.", tenant="t")
        middle = export(mem)  # version 1 kept, not yet redacted
        mem.update(record.id, content="The door code is gone.", tenant="t")
        mem.redact_version(record.id, 1, tenant="t")
        mem.import_(io.StringIO(old))  # its current text is the redacted version: the store's copy stays
        assert mem.get(record.id, tenant="t").content == "The door code is gone."
        assert "private-code-77" not in export(mem)
        mem.import_(io.StringIO(middle))  # an older state comes back, with version 1 still redacted
        assert mem.get(record.id, tenant="t").content == "The door code changed."
        assert "private-code-77" not in export(mem)
        assert [v.redacted_at is not None for v in mem.versions(record.id, tenant="t") if v.version == 1] == [True]


def test_the_folder_mirror_catches_up_after_a_new_folder_and_an_import(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "a.db"), embedder="hash", worker="off") as mem:
        ids = fill(mem)
        text = export(mem)
        folder = tmp_path / "notes"
        mem.add_folder(folder, tenant="t")  # registered after the memories were written: they appear at once
        mirror = folder / ".memory_stores" / ids["store"]
        assert (mirror / "travel" / "seats.md").read_text(encoding="utf-8") == "Window seats."
        assert (mirror / "empty.md").read_text(encoding="utf-8") == ""
        assert not (mirror / "gone.md").exists()
        assert mem.memory_stores.mirror_all(tenant="t") == 0  # nothing differs: nothing rewritten
    with funes.open(str(tmp_path / "b.db"), embedder="hash", worker="off") as target:
        other = tmp_path / "restored"
        target.add_folder(other, tenant="t")
        target.import_(io.StringIO(text))
        restored = other / ".memory_stores" / ids["archived"] / "a.md"
        assert restored.read_text(encoding="utf-8") == "kept"
