"""Entity reconciliation: fingerprints, skip / re-summarise / create / delete, FIFO summaries, jobs, CLI.

Every test runs the offline provider for real; its usage counter counts the calls.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import funes
from funes.curation.entities import fingerprint
from funes.errors import InvalidInput
from funes.interfaces.cli import main
from funes.providers.llm import OfflineLLM, Usage

PAYLOAD: list[dict[str, Any]] = [
    {
        "type": "FILE",
        "id": "model.grid",
        "fields": {"name": "Model", "sheet_names": ["Sheet1", "Data"], "code_cell_count": 1, "data_table_count": 1},
    },
    {
        "type": "CODE_CELL",
        "id": "Sheet1:A1",
        "fields": {
            "code": "# Revenue by region\nimport pandas as pd\ndef by_region(df):\n    return df.groupby('region').sum()",
            "language": "python",
            "output_shape": {"rows": 4, "cols": 2},
        },
    },
    {
        "type": "DATA_TABLE",
        "id": "orders",
        "fields": {"name": "orders", "columns": ["id", "region", "amount"], "bounds": "A1:C200"},
    },
    {
        "type": "SHEET_TABLE",
        "id": "Data:E1",
        "fields": {"columns": ["month", "total"], "bounds": "E1:F13", "rows": 12, "cols": 2},
    },
]


@pytest.fixture
def usage(mem: funes.Funes) -> Usage:
    """The offline provider's call counter, installed on the service."""
    counter = Usage()
    mem.entities.llm = OfflineLLM(counter)
    return counter


def _summaries(mem: funes.Funes) -> dict[str, Any]:
    return {m.entity_id: m for m in mem.list(kinds=["entity_summary"], project="f1").items}


def test_fingerprints_are_md5_of_the_defining_fields() -> None:
    def md5(*parts: str) -> str:
        return "md5:" + hashlib.md5("\x1f".join(parts).encode()).hexdigest()

    assert fingerprint("CODE_CELL", {"code": "x=1", "language": "python", "output_shape": [3, 2]}) == md5(
        "x=1", "python", "[3,2]"
    )
    # Column order does not matter for a data table, and fields outside the fingerprint change nothing.
    a = fingerprint("DATA_TABLE", {"name": "t", "columns": ["b", "a"], "bounds": "A1:B9", "note": "x"})
    assert a == fingerprint("DATA_TABLE", {"name": "t", "columns": ["a", "b"], "bounds": "A1:B9"})
    assert a == md5("t", '["a","b"]', '"A1:B9"')
    assert fingerprint("SHEET_TABLE", {"columns": ["m"], "bounds": "E1", "rows": 2, "cols": 1}) == md5(
        '["m"]', '"E1"', "2", "1"
    )
    assert fingerprint("FILE", {"sheet_names": ["S"], "code_cell_count": 2}) == md5('["S"]', "2", "0", "0")
    assert fingerprint("WIDGET", {"b": 1, "a": 2}) == md5('{"a":2,"b":1}')
    assert fingerprint("CODE_CELL", {"code": "ab", "language": "c"}) != fingerprint(
        "CODE_CELL", {"code": "a", "language": "bc"}
    )


def test_first_reconcile_creates_a_summary_per_entity(mem: funes.Funes, usage: Usage) -> None:
    counts = mem.reconcile("f1", PAYLOAD)
    assert counts == {"created": 4, "updated": 0, "skipped": 0, "deleted": 0, "llm_calls": 4}
    assert usage.calls == 4
    stored = _summaries(mem)
    assert set(stored) == {"model.grid", "Sheet1:A1", "orders", "Data:E1"}
    cell = stored["Sheet1:A1"]
    assert cell.scope == "project" and cell.project_id == "f1" and cell.version == 1
    assert "Revenue by region" in cell.content and "by_region" in cell.content
    assert cell.metadata["fingerprint"] == fingerprint("CODE_CELL", PAYLOAD[1]["fields"])
    assert "Table orders" in stored["orders"].content
    hit = mem.search("orders table columns region amount", project="f1", limit=1)[0]
    assert hit.memory.entity_id == "orders"


def test_an_unchanged_payload_makes_zero_llm_calls(mem: funes.Funes, usage: Usage) -> None:
    mem.reconcile("f1", PAYLOAD)
    before = {k: (m.version, m.updated_at) for k, m in _summaries(mem).items()}
    calls = usage.calls
    counts = mem.reconcile("f1", copy.deepcopy(PAYLOAD))
    assert counts == {"created": 0, "updated": 0, "skipped": 4, "deleted": 0, "llm_calls": 0}
    assert usage.calls == calls
    assert {k: (m.version, m.updated_at) for k, m in _summaries(mem).items()} == before


def test_one_changed_entity_gives_one_call_and_a_version_bump(mem: funes.Funes, usage: Usage) -> None:
    mem.reconcile("f1", PAYLOAD)
    old = _summaries(mem)["orders"]
    changed = copy.deepcopy(PAYLOAD)
    changed[2]["fields"]["columns"].append("currency")
    calls = usage.calls
    counts = mem.reconcile("f1", changed)
    assert counts == {"created": 0, "updated": 1, "skipped": 3, "deleted": 0, "llm_calls": 1}
    assert usage.calls == calls + 1
    new = _summaries(mem)["orders"]
    assert new.id == old.id and new.version == 2 and "currency" in new.content
    assert new.metadata["previous_summaries"] == [{"summary": old.content, "updated_at": old.updated_at.isoformat()}]
    assert new.previous_versions[-1].content == old.content  # also in the record's version history


def test_a_removed_entity_is_deleted(mem: funes.Funes, usage: Usage) -> None:
    mem.reconcile("f1", PAYLOAD)
    gone = _summaries(mem)["Data:E1"]
    mem.remember("A note about f1", project="f1")  # not an entity summary: never an orphan
    mem.reconcile("f2", PAYLOAD[:1])  # another file's summaries are its own
    counts = mem.reconcile("f1", PAYLOAD[:3])
    assert counts == {"created": 0, "updated": 0, "skipped": 3, "deleted": 1, "llm_calls": 0}
    assert set(_summaries(mem)) == {"model.grid", "Sheet1:A1", "orders"}
    assert mem.store.get(gone.id) is None
    assert len(mem.list(project="f1", kinds=["memory"]).items) == 1
    assert len(mem.list(project="f2", kinds=["entity_summary"]).items) == 1


def test_a_sixth_update_drops_the_oldest_previous_summary(mem: funes.Funes, usage: Usage) -> None:
    def cell(n: int) -> list[dict[str, Any]]:
        return [{"type": "CODE_CELL", "id": "A1", "fields": {"code": f"# step {n}\nx = {n}", "language": "python"}}]

    mem.reconcile("f1", cell(0))
    for n in range(1, 7):
        assert mem.reconcile("f1", cell(n))["updated"] == 1
    record = _summaries(mem)["A1"]
    assert record.version == 7
    previous = record.metadata["previous_summaries"]
    assert len(previous) == 5
    assert ["step 1" in p["summary"] for p in previous] == [True, False, False, False, False]
    assert "step 5" in previous[-1]["summary"] and "step 6" in record.content
    assert all(p["updated_at"] for p in previous)


def test_connections_are_team_scope(mem: funes.Funes, usage: Usage) -> None:
    conn = {"type": "CONNECTION", "id": "pg-1", "fields": {"kind": "postgres", "database": "sales"}}
    mem.reconcile("f1", [conn])
    record = mem.list(entity_types=["CONNECTION"]).items[0]
    assert record.scope == "team" and record.project_id is None
    assert mem.reconcile("f2", [conn])["skipped"] == 1  # the same team-wide record, seen from another file
    mem.reconcile("f1", [])
    assert mem.list(entity_types=["CONNECTION"]).items  # a team record is never a file's orphan


def test_bad_payloads_say_what_to_send(mem: funes.Funes) -> None:
    with pytest.raises(InvalidInput, match="sent twice"):
        mem.reconcile("f1", [PAYLOAD[0], PAYLOAD[0]])
    with pytest.raises(InvalidInput, match="needs a text 'type'") as err:
        mem.reconcile("f1", [{"id": "x"}])
    assert err.value.hint
    with pytest.raises(InvalidInput):
        mem.reconcile("", PAYLOAD)
    with pytest.raises(InvalidInput):
        mem.reconcile("f1", {"type": "FILE"})  # type: ignore[arg-type]


def test_reconcile_as_a_durable_job(tmp_path: Path) -> None:
    from funes.providers.embed import HashEmbedder

    service = funes.open(str(tmp_path / "jobs.db"), embedder=HashEmbedder(64), worker="off")
    try:
        service.entities.llm = OfflineLLM(Usage())
        queued = service.reconcile("f1", PAYLOAD, background=True)
        assert service.list(kinds=["entity_summary"]).items == ()  # nothing until the job runs
        assert service.run_jobs() == {"done": 1, "retrying": 0, "failed": 0, "taken_over": 0}
        job = service.jobs.get(queued["job_id"])
        assert job.status == "done" and job.result["created"] == 4
        assert len(service.list(kinds=["entity_summary"]).items) == 4
    finally:
        service.close()


def test_a_failure_before_the_commit_leaves_the_store_as_it_was(mem: funes.Funes, usage: Usage) -> None:
    mem.reconcile("f1", PAYLOAD)
    before = {k: (m.version, m.content) for k, m in _summaries(mem).items()}
    changed = copy.deepcopy(PAYLOAD)
    changed[1]["fields"]["code"] += "\n# more"
    original = mem.store.delete

    def crash(ids: Any) -> int:
        raise RuntimeError("power cut")  # after the update was written, inside the same transaction

    mem.store.delete = crash  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError):
            mem.reconcile("f1", changed[:3])
    finally:
        mem.store.delete = original  # type: ignore[method-assign]
    assert {k: (m.version, m.content) for k, m in _summaries(mem).items()} == before
    assert mem.reconcile("f1", changed[:3]) == {"created": 0, "updated": 1, "skipped": 2, "deleted": 1, "llm_calls": 1}


def test_cli_reconcile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"scope": "f1", "entities": PAYLOAD}))

    def run(*args: str) -> Any:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 0, result.output
        return result

    assert json.loads(run("reconcile", str(payload), "--json").stdout)["created"] == 4
    assert "0 created, 0 updated, 4 skipped, 0 deleted (0 LLM calls)" in run("reconcile", str(payload)).stdout
    payload.write_text(json.dumps({"scope": "f1"}))
    refused = CliRunner().invoke(main, ["reconcile", str(payload)])
    assert refused.exit_code == 2 and "entities" in refused.output


def test_reconcile_through_an_openai_compatible_server_and_its_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_servers import openai_answer, serve

    from funes.providers.embed import HashEmbedder

    with serve(openai_answer) as server:
        server.reply = {"title": "Orders", "summary": "Orders per region, with amounts."}
        service = funes.open(
            str(tmp_path / "llm.db"),
            embedder=HashEmbedder(64),
            llm="openai",
            llm_base_url=server.url + "/v1",
            llm_model="gpt-4o-mini",
            llm_max_retries=0,
        )
        try:
            assert service.reconcile("f1", PAYLOAD[2:3])["created"] == 1
            record = service.list(entity_ids=["orders"]).items[0]
            assert (record.title, record.content) == ("Orders", "Orders per region, with amounts.")
            assert server.requests[0][2]["response_format"]["type"] == "json_schema"
            usage = service.entities.llm.usage
            assert usage.by_provider == {"openai": 1} and usage.cost_usd > 0
            # The server fails: the changed entity is still re-summarised, offline, and nothing is lost.
            server.script = [(503, {"error": {"message": "down"}}, {})]
            changed = copy.deepcopy(PAYLOAD[2:3])
            changed[0]["fields"]["columns"].append("currency")
            assert service.reconcile("f1", changed)["updated"] == 1
            record = service.list(entity_ids=["orders"]).items[0]
            assert record.version == 2 and "currency" in record.content  # the offline summary
            assert usage.fallbacks == 1
        finally:
            service.close()
