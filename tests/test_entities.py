"""Entities as first-class records: one record per (tenant, owner, project, type, id), updated with history,
default scopes per type, and filters by entity type, entity id and reference in list, search, tools and CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import funes
from funes.errors import InvalidInput
from funes.interfaces.cli import main
from funes.models import Caller


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    """The service on each backend (SQLite and PostgreSQL): these behaviours are the store contract's too."""
    return backend_mem


def test_the_same_entity_written_twice_is_one_record_with_history(mem: funes.Funes) -> None:
    first = mem.remember("Sums revenue by region", entity_type="CODE_CELL", entity_id="Sheet1:A1", project="f1")
    second = mem.remember(
        "Sums revenue by region and quarter", entity_type="CODE_CELL", entity_id="Sheet1:A1", project="f1"
    )
    assert second.id == first.id and second.version == 2
    assert [v.content for v in second.previous_versions] == ["Sums revenue by region"]
    assert mem.versions(first.id)[1].content == "Sums revenue by region"
    page = mem.list(entity_types=["CODE_CELL"], entity_ids=["Sheet1:A1"])
    assert [m.id for m in page.items] == [first.id]
    # Searching finds the new text, through the new vector.
    hit = mem.search("Sums revenue by region and quarter", limit=1)[0]
    assert hit.memory.id == first.id and hit.similarity == pytest.approx(1.0, abs=1e-5)


def test_an_unchanged_write_changes_nothing_and_a_metadata_change_keeps_the_version(mem: funes.Funes) -> None:
    first = mem.remember("Orders table", entity_type="DATA_TABLE", entity_id="orders", project="f1")
    again = mem.remember("Orders table", entity_type="DATA_TABLE", entity_id="orders", project="f1")
    assert again == first
    titled = mem.remember(
        "Orders table", entity_type="DATA_TABLE", entity_id="orders", project="f1", title="Orders", metadata={"k": 1}
    )
    assert titled.id == first.id and titled.version == 1 and titled.title == "Orders" and titled.metadata["k"] == 1


def test_entities_are_distinct_per_project_tenant_and_owner(mem: funes.Funes) -> None:
    a = mem.remember("Cell text", entity_type="CODE_CELL", entity_id="A1", project="f1")
    b = mem.remember("Cell text", entity_type="CODE_CELL", entity_id="A1", project="f2")
    c = mem.remember("Cell text", entity_type="CODE_CELL", entity_id="A1", project="f1", tenant="other")
    d = mem.remember("Cell text", entity_type="CODE_CELL", entity_id="A1", project="f1", user="bob")
    assert len({a.id, b.id, c.id, d.id}) == 4


def test_default_scope_per_entity_type(mem: funes.Funes) -> None:
    conn = mem.remember("Postgres warehouse, read-only", entity_type="CONNECTION", entity_id="c-1", project="f1")
    assert conn.scope == "team" and conn.project_id is None
    cell = mem.remember("x = 1", entity_type="CODE_CELL", entity_id="A1", project="f1")
    assert cell.scope == "project" and cell.project_id == "f1"
    with pytest.raises(InvalidInput) as err:
        mem.remember("y = 2", entity_type="SHEET_TABLE", entity_id="B2")
    assert "project" in (err.value.hint or "")
    insight = mem.remember("Users like pivot tables", entity_type="CHAT_INSIGHT", entity_id="topic:1", scope="team")
    assert insight.scope == "team"
    # A connection written again from another file is the same team-wide record.
    again = mem.remember("Postgres warehouse, read-write", entity_type="CONNECTION", entity_id="c-1", project="f2")
    assert again.id == conn.id and again.version == 2


def test_remember_many_upserts_entities(mem: funes.Funes) -> None:
    mem.remember("old summary", entity_type="FILE", entity_id="f1", project="f1")
    results = mem.remember_many(
        [
            {"content": "new summary", "entity_type": "FILE", "entity_id": "f1"},
            {"content": "a new table", "entity_type": "DATA_TABLE", "entity_id": "t1"},
            "plain note",
        ],
        project="f1",
    )
    assert [r.status for r in results] == ["created", "created", "created"]
    assert results[0].memory is not None and results[0].memory.version == 2
    unchanged = mem.remember_many([{"content": "new summary", "entity_type": "FILE", "entity_id": "f1"}], project="f1")
    assert unchanged[0].status == "duplicate"
    assert len(mem.list(entity_types=["FILE"]).items) == 1


def test_list_and_search_filter_by_entity_and_reference(mem: funes.Funes) -> None:
    rfp = mem.remember("Vendor must be US-based", references=[("rfp", "RFP-7")], type="decision")
    mem.remember("Vendor must be EU-based", references=[("rfp", "RFP-8")], type="decision")
    table = mem.remember("Vendor table with ratings", entity_type="DATA_TABLE", entity_id="vendors", project="p")
    assert [m.id for m in mem.list(refs=["rfp:RFP-7"]).items] == [rfp.id]
    assert [m.id for m in mem.list(refs=[("rfp", "RFP-7")], types=["decision"]).items] == [rfp.id]
    assert mem.list(refs=["rfp:RFP-9"]).items == ()
    assert [h.memory.id for h in mem.search("vendor", refs=["rfp:RFP-7"])] == [rfp.id]
    assert [h.memory.id for h in mem.search("vendor", entity_types=["DATA_TABLE"])] == [table.id]
    assert [h.memory.id for h in mem.search("ratings", entity_ids=["vendors"], project="p")] == [table.id]
    # The vector leg alone (no keyword in common) respects the filters too.
    hits = mem.search("zzz qqq", entity_types=["DATA_TABLE"])
    assert [h.memory.id for h in hits] == [table.id] and hits[0].explanation.keyword_rank is None
    with pytest.raises(InvalidInput):
        mem.list(refs=["no-colon"])


def test_the_search_tool_filters_by_entity_and_reference(mem: funes.Funes) -> None:
    caller = Caller(tenant="default")
    mem.remember("Budget cap is 50k", references=[("rfp", "RFP-7")], type="decision")
    mem.remember("Budget cap is 80k", references=[("rfp", "RFP-8")], type="decision")
    result = mem.execute_tool(
        "search_memories", {"query": "budget cap", "reference_type": "rfp", "reference_id": "RFP-7"}, caller=caller
    )
    assert not result.is_error, result.text
    assert [r["content"] for r in result.data["results"]] == ["Budget cap is 50k"]
    bad = mem.execute_tool("search_memories", {"query": "budget", "reference_type": "rfp"}, caller=caller)
    assert bad.is_error


def test_cli_entity_writes_and_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    args = ("--entity-type", "CODE_CELL", "--entity-id", "A1", "--project", "f1", "--json")
    first = json.loads(run("add", "Loads sales.csv", *args))
    second = json.loads(run("add", "Loads sales.csv and cleans it", *args))
    assert second["id"] == first["id"] and second["version"] == 2
    run("add", "Budget is 50k", "--ref", "rfp:RFP-7")
    run("add", "Budget is 80k", "--ref", "rfp:RFP-8")
    listed = json.loads(run("list", "--ref", "rfp:RFP-7", "--json"))
    assert [m["content"] for m in listed["items"]] == ["Budget is 50k"]
    cells = json.loads(run("list", "--entity-type", "CODE_CELL", "--json"))
    assert [m["id"] for m in cells["items"]] == [first["id"]]
    hits = json.loads(run("search", "sales", "--entity-id", "A1", "--project", "f1", "--json"))
    assert [h["memory"]["id"] for h in hits] == [first["id"]]


def test_a_metadata_only_write_updates_the_entity_without_a_new_version(mem: funes.Funes) -> None:
    first = mem.remember("Orders table", entity_type="DATA_TABLE", entity_id="orders", project="f1")
    vectors = mem.store.vectors_for([first.id])[first.id]
    again = mem.remember(
        "Orders table", entity_type="DATA_TABLE", entity_id="orders", project="f1", metadata={"rows": 40}
    )
    assert again.id == first.id and again.version == 1 and again.metadata["rows"] == 40
    assert mem.get(first.id).metadata["rows"] == 40
    assert all((a == b).all() for a, b in zip(mem.store.vectors_for([first.id])[first.id], vectors, strict=True))
