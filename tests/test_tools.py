"""Agent tools: the four renderings against their SDKs' shapes, and the executor's behaviour."""

from __future__ import annotations

import copy
import json
import re
import time
from datetime import timedelta
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter

import funes
from funes.agents.specs import FORMATS, TOOLS, TOOLS_BY_NAME, render_tools
from funes.agents.tools import ToolResult
from funes.interfaces.cli import main
from funes.models import Caller, SourceRef, format_time, utcnow

ALICE = Caller(tenant="acme", user_id="alice", agent_id="procurement-agent", session_id="s1")
MALLORY = Caller(tenant="evil", user_id="mallory", agent_id="other-agent", session_id="s9")
RESULT_LINE = re.compile(r"^(\d+)\. \[([^\]]+)\] (.+)$")
RELEVANCE_LINE = re.compile(r"^   Relevance: (\d{1,3})%")

# Arguments each tool accepts, used to check that the schemas and the validator agree.
VALID_ARGS: dict[str, dict[str, Any]] = {
    "create_memory": {
        "content": "User prefers US-based vendors for procurement",
        "memory_type": "preference",
        "importance_score": 0.95,
        "reference_type": "rfp",
        "reference_id": "RFP-7",
        "expires_at": "2999-01-01",
        "scope": "team",
        "tags": ["procurement"],
    },
    "search_memories": {"query": "vendors", "memory_types": ["preference"], "scope": "team", "limit": 5},
    "update_memory": {
        "memory_id": "mem_X",
        "content": "new",
        "importance_score": 0.5,
        "expires_at": "never",
        "pinned": True,
    },
    "delete_memory": {"memory_id": "mem_X"},
    "get_memory_context": {"query": "vendors", "session_id": "s1"},
    "memory_search": {"query": "revenue", "source_filter": "sheets"},
    "list_scopes": {},
}


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every object-typed node of a schema."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


def _keywords(schema: Any) -> set[str]:
    """Every JSON Schema keyword used anywhere in a schema (property names excluded)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                for prop in value.values():
                    found |= _keywords(prop)
            else:
                found.add(key)
                found |= _keywords(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _keywords(value)
    return found


def _keys_allowed(typed_dict: Any, value: dict[str, Any]) -> None:
    allowed = set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)
    assert set(value) <= allowed, set(value) - allowed
    assert set(typed_dict.__required_keys__) <= set(value)


def _lines(result: ToolResult) -> list[tuple[int, str, str, int]]:
    """(number, source, content, relevance) of every numbered result in a tool's text."""
    rows = []
    lines = result.text.splitlines()
    for i, line in enumerate(lines):
        m = RESULT_LINE.match(line)
        if m:
            rel = RELEVANCE_LINE.match(lines[i + 1])
            assert rel, f"no Relevance line after {line!r}"
            rows.append((int(m.group(1)), m.group(2), m.group(3), int(rel.group(1))))
    return rows


def _wait_for_log(service: funes.Funes, predicate: Any) -> list[dict[str, Any]]:
    """Access-log rows are written by a background thread; poll until the expected rows appear."""
    deadline = time.monotonic() + 10
    while True:
        rows = service.store.access_log(limit=1000)
        if predicate(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.02)


# -- renderings -----------------------------------------------------------------------
def test_every_tool_has_a_description_and_documented_properties() -> None:
    assert [t.name for t in TOOLS] == [
        "create_memory",
        "search_memories",
        "update_memory",
        "delete_memory",
        "get_memory_context",
        "memory_search",
        "list_scopes",
        "list_memories",
    ]
    for spec in TOOLS:
        assert len(spec.description) > 80
        for name, prop in spec.input_schema()["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"


def test_anthropic_rendering_matches_the_sdk_tool_param() -> None:
    from anthropic.types import ToolParam

    adapter = TypeAdapter(ToolParam)
    for tool in render_tools("anthropic"):
        adapter.validate_python(tool)
        _keys_allowed(ToolParam, tool)
        schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
    create = render_tools("anthropic", ["create_memory"])[0]["input_schema"]
    assert create["required"] == ["content", "memory_type"]
    assert create["properties"]["memory_type"]["enum"] == ["preference", "fact", "decision", "context", "conversation"]
    assert create["properties"]["importance_score"] == {
        "type": "number",
        "minimum": 0.0,
        "maximum": 1.0,
        "description": create["properties"]["importance_score"]["description"],
    }


def test_openai_rendering_is_strict_and_matches_the_sdk() -> None:
    from openai.lib._pydantic import _ensure_strict_json_schema
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    adapter = TypeAdapter(ChatCompletionToolParam)
    for tool, spec in zip(render_tools("openai"), TOOLS, strict=True):
        adapter.validate_python(tool)
        _keys_allowed(ChatCompletionToolParam, tool)
        _keys_allowed(FunctionDefinition, tool["function"])
        assert tool["function"]["strict"] is True
        schema = tool["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        for node in _objects(schema):
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        assert not _keywords(schema) & {"default", "title", "minLength", "maxLength"}
        plain = spec.input_schema()
        for name, prop in schema["properties"].items():
            if name not in plain["required"]:
                assert {"type": "null"} in prop["anyOf"], f"{spec.name}.{name} is optional but not nullable"
            else:
                assert "anyOf" not in prop
        # The SDK's own strictifier has nothing left to change.
        assert _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root=copy.deepcopy(schema)) == schema


def test_responses_rendering_matches_the_sdk_function_tool() -> None:
    from openai.types.responses import FunctionToolParam

    adapter = TypeAdapter(FunctionToolParam)
    for tool, chat in zip(render_tools("responses"), render_tools("openai"), strict=True):
        adapter.validate_python(tool)
        _keys_allowed(FunctionToolParam, tool)
        assert tool["parameters"] == chat["function"]["parameters"]
        assert tool["strict"] is True and tool["type"] == "function"


def test_source_filter_choices_are_ingestions() -> None:
    from funes.models.sources import SOURCE_FILTERS

    enum = TOOLS_BY_NAME["memory_search"].input_schema()["properties"]["source_filter"]["enum"]
    assert set(enum) == set(SOURCE_FILTERS)


def test_mcp_rendering_has_annotations() -> None:
    import mcp_types

    hints = {t["name"]: t["annotations"] for t in render_tools("mcp")}
    for tool in render_tools("mcp"):
        parsed = mcp_types.Tool.model_validate(tool)
        assert parsed.input_schema == tool["inputSchema"]
        assert parsed.annotations is not None and parsed.annotations.open_world_hint is False
    for name in ("search_memories", "get_memory_context", "memory_search", "list_scopes"):
        assert hints[name]["readOnlyHint"] is True and hints[name]["destructiveHint"] is False
    assert hints["create_memory"] == {**hints["create_memory"], "readOnlyHint": False, "destructiveHint": False}
    for name in ("update_memory", "delete_memory"):
        assert hints[name]["readOnlyHint"] is False and hints[name]["destructiveHint"] is True
    assert all(h["idempotentHint"] for h in hints.values())


@pytest.mark.parametrize("name", list(VALID_ARGS))
def test_schemas_and_validator_agree(name: str) -> None:
    spec = TOOLS_BY_NAME[name]
    args = VALID_ARGS[name]
    jsonschema.validate(args, spec.input_schema())
    # A strict-mode model sends every key, null for the ones it leaves out.
    strict_args = {k: args.get(k) for k in spec.strict_schema()["properties"]}
    jsonschema.validate(strict_args, spec.strict_schema())
    required_only = {k: args[k] for k in spec.input_schema()["required"]}
    nulls = {k: required_only.get(k) for k in spec.strict_schema()["properties"]}
    jsonschema.validate(nulls, spec.strict_schema())
    from funes.agents.specs import parse_args

    assert parse_args(spec, strict_args) == parse_args(spec, args)
    if name != "update_memory":  # update_memory needs something to change
        parse_args(spec, nulls)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_prints_each_format(fmt: str) -> None:
    result = CliRunner().invoke(main, ["tools", "--format", fmt])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == render_tools(fmt)


def test_cli_rejects_an_unknown_tool_name() -> None:
    result = CliRunner().invoke(main, ["tools", "--name", "forget_everything"])
    assert result.exit_code == 1
    assert "Unknown tool" in result.output and "create_memory" in result.output


# -- create_memory ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("memory_type", "importance", "scope"),
    [
        ("preference", 0.9, "team"),
        ("fact", 0.6, "team"),
        ("decision", 0.7, "project"),
        ("context", 0.5, "project"),
        ("conversation", 0.3, "session"),
    ],
)
def test_create_defaults_by_type(mem: funes.Funes, memory_type: str, importance: float, scope: str) -> None:
    result = mem.execute_tool(
        "create_memory",
        {"content": f"A {memory_type} to keep", "memory_type": memory_type},
        caller=ALICE,
        project="rfp",
    )
    assert not result.is_error, result.text
    stored = mem.get(result.data["memory_id"], tenant="acme", user="alice")
    assert (stored.importance, stored.scope, stored.memory_type) == (importance, scope, memory_type)
    assert stored.user_id == "alice" and stored.attribution == "agent-created"
    assert result.data["duplicate"] is False
    assert f"importance {importance:.2f}" in result.text


def test_create_without_a_project_falls_back_to_team(mem: funes.Funes) -> None:
    result = mem.execute_tool(
        "create_memory", {"content": "Chose Postgres", "memory_type": "decision"}, caller=Caller(tenant="acme")
    )
    assert result.data["memory"]["scope"] == "team"


def test_create_stores_references_tags_and_expiry(mem: funes.Funes) -> None:
    args = VALID_ARGS["create_memory"]
    result = mem.execute_tool("create_memory", args, caller=ALICE, project="rfp")
    stored = mem.get(result.data["memory_id"], tenant="acme", user="alice")
    assert [(r.type, r.id) for r in stored.references] == [("rfp", "RFP-7")]
    assert stored.metadata["tags"] == ["procurement"]
    assert stored.metadata["agent_id"] == "procurement-agent"
    assert stored.importance == 0.95
    assert format_time(stored.expires_at) == "2999-01-01T00:00:00+00:00"


def test_exact_duplicate_returns_the_existing_id(mem: funes.Funes) -> None:
    args = {"content": "User prefers US-based vendors for procurement", "memory_type": "preference"}
    first = mem.execute_tool("create_memory", args, caller=ALICE)
    again = mem.execute_tool("create_memory", args, caller=ALICE)
    assert again.data["duplicate"] is True
    assert again.data["memory_id"] == first.data["memory_id"]
    assert "Already stored" in again.text
    # Same words, other case and end punctuation: still the same memory.
    echo = mem.execute_tool(
        "create_memory", {**args, "content": "user prefers US-based vendors for procurement."}, caller=ALICE
    )
    assert echo.data["duplicate"] is True and echo.data["memory_id"] == first.data["memory_id"]
    assert mem.stats(tenant="acme")["records"] == 1


def test_near_duplicate_is_reported_and_the_new_one_stored(mem: funes.Funes) -> None:
    first = mem.execute_tool(
        "create_memory",
        {"content": "User prefers US-based vendors for procurement", "memory_type": "preference"},
        caller=ALICE,
    )
    # The hash embedder sees the same words, so the cosine is 1.0; the text still differs.
    second = mem.execute_tool(
        "create_memory",
        {"content": "User prefers US based vendors, for procurement", "memory_type": "preference"},
        caller=ALICE,
    )
    assert second.data["duplicate"] is False
    assert second.data["memory_id"] != first.data["memory_id"]
    assert [s["id"] for s in second.data["similar"]] == [first.data["memory_id"]]
    assert second.data["similar"][0]["similarity"] >= 0.95
    assert "similar memory already exists" in second.text and first.data["memory_id"] in second.text
    assert mem.stats(tenant="acme")["records"] == 2
    # Another tenant's identical words are neither a duplicate nor similar.
    other = mem.execute_tool(
        "create_memory",
        {"content": "User prefers US-based vendors for procurement", "memory_type": "preference"},
        caller=MALLORY,
    )
    assert other.data["duplicate"] is False and other.data["similar"] == []


# -- search_memories -------------------------------------------------------------------
def _seed(mem: funes.Funes) -> dict[str, str]:
    ids = {}
    for key, content, kind in [
        ("vendors", "User prefers US-based vendors for procurement", "preference"),
        ("efficiency", "User requires at least 90% energy efficiency for lighting", "preference"),
        ("budget", "The procurement budget for 2026 is 2 million dollars", "fact"),
        ("standup", "Team standup is every Monday at nine", "decision"),
    ]:
        result = mem.execute_tool("create_memory", {"content": content, "memory_type": kind}, caller=ALICE)
        ids[key] = result.data["memory_id"]
    return ids


def test_search_results_read_like_seed_000(mem: funes.Funes) -> None:
    ids = _seed(mem)
    result = mem.execute_tool("search_memories", {"query": "procurement vendors"}, caller=ALICE)
    assert not result.is_error
    rows = _lines(result)
    assert [n for n, *_ in rows] == list(range(1, len(rows) + 1))
    _number, source, content, relevance = rows[0]
    assert content == "<memory>User prefers US-based vendors for procurement</memory>"  # fenced as data (issue 9)
    assert source == "preference · agent-created · team"
    assert 0 < relevance <= 100
    assert f"id: {ids['vendors']}" in result.text
    assert result.data["results"][0]["id"] == ids["vendors"]
    assert result.data["results"][0]["relevance"] == relevance / 100
    assert result.data["count"] == len(rows)


def test_search_filters_by_type_scope_and_limit(mem: funes.Funes) -> None:
    ids = _seed(mem)
    facts = mem.execute_tool("search_memories", {"query": "procurement", "memory_types": ["fact"]}, caller=ALICE)
    assert [r["id"] for r in facts.data["results"]] == [ids["budget"]]
    one = mem.execute_tool("search_memories", {"query": "procurement", "limit": 1}, caller=ALICE)
    assert one.data["count"] == 1
    project = mem.execute_tool("search_memories", {"query": "procurement", "scope": "project"}, caller=ALICE)
    assert project.data["count"] == 0 and "No memories match" in project.text
    # Null means "not given": what an OpenAI strict-mode model sends.
    strict = mem.execute_tool(
        "search_memories", {"query": "procurement", "memory_types": None, "scope": None, "limit": None}, caller=ALICE
    )
    assert strict.data["count"] >= 2


def test_search_never_shows_another_tenant_or_user(mem: funes.Funes) -> None:
    _seed(mem)
    assert mem.execute_tool("search_memories", {"query": "procurement vendors"}, caller=MALLORY).data["count"] == 0
    bob = Caller(tenant="acme", user_id="bob")
    assert mem.execute_tool("search_memories", {"query": "procurement vendors"}, caller=bob).data["count"] == 0


# -- update / delete ---------------------------------------------------------------------
def test_update_keeps_version_history(mem: funes.Funes) -> None:
    ids = _seed(mem)
    result = mem.execute_tool(
        "update_memory",
        {
            "memory_id": ids["budget"],
            "content": "The procurement budget for 2026 is 3 million dollars",
            "importance_score": 0.8,
            "pinned": True,
        },
        caller=ALICE,
    )
    assert not result.is_error, result.text
    assert "version 2" in result.text and "pinned" in result.text
    stored = mem.get(ids["budget"], tenant="acme", user="alice")
    assert stored.version == 2 and stored.pinned and stored.importance == 0.8
    assert stored.previous_versions[0].content == "The procurement budget for 2026 is 2 million dollars"
    same = mem.execute_tool("update_memory", {"memory_id": ids["budget"], "pinned": True}, caller=ALICE)
    assert same.data["changed"] is False and "already had" in same.text


def test_update_expiry_and_revive_an_expired_memory(mem: funes.Funes) -> None:
    ids = _seed(mem)
    mem.update(ids["standup"], expires_at=utcnow() - timedelta(days=1), tenant="acme", user="alice")
    refused = mem.execute_tool("update_memory", {"memory_id": ids["standup"], "importance_score": 0.9}, caller=ALICE)
    assert refused.is_error
    assert "expired" in refused.text and "expires_at" in refused.text and "'never'" in refused.text
    hidden = mem.execute_tool("search_memories", {"query": "standup Monday"}, caller=ALICE)
    assert ids["standup"] not in [r["id"] for r in hidden.data["results"]]
    revived = mem.execute_tool("update_memory", {"memory_id": ids["standup"], "expires_at": "never"}, caller=ALICE)
    assert not revived.is_error, revived.text
    assert mem.get(ids["standup"], tenant="acme", user="alice").expires_at is None
    found = mem.execute_tool("search_memories", {"query": "standup Monday"}, caller=ALICE)
    assert found.data["results"][0]["id"] == ids["standup"]


def test_delete_removes_the_memory(mem: funes.Funes) -> None:
    ids = _seed(mem)
    result = mem.execute_tool("delete_memory", {"memory_id": ids["vendors"]}, caller=ALICE)
    assert not result.is_error and result.data["deleted"] is True
    assert "US-based vendors" in result.text
    found = mem.execute_tool("search_memories", {"query": "vendors"}, caller=ALICE)
    assert ids["vendors"] not in [r["id"] for r in found.data["results"]]
    again = mem.execute_tool("delete_memory", {"memory_id": ids["vendors"]}, caller=ALICE)
    assert again.is_error and again.data["error"]["code"] == "not_found"


def test_another_tenants_record_reads_as_not_found(mem: funes.Funes) -> None:
    ids = _seed(mem)
    missing = "mem_01ZZZZZZZZZZZZZZZZZZZZZZZZ"
    for tool, extra in [("update_memory", {"pinned": True}), ("delete_memory", {})]:
        theirs = mem.execute_tool(tool, {"memory_id": ids["vendors"], **extra}, caller=MALLORY)
        unknown = mem.execute_tool(tool, {"memory_id": missing, **extra}, caller=MALLORY)
        assert theirs.is_error and unknown.is_error
        assert theirs.text.replace(ids["vendors"], "ID") == unknown.text.replace(missing, "ID")
        assert theirs.data["error"]["code"] == "not_found"
    assert mem.get(ids["vendors"], tenant="acme", user="alice").pinned is False


def test_document_chunks_are_not_changed_by_tools(mem: funes.Funes) -> None:
    chunk = mem.remember(
        "Revenue grew 12% in Q4",
        kind="document_chunk",
        tenant="acme",
        source=SourceRef(type="pdf", uri="/docs/AnnualReport.pdf", locator={"page": 12}),
    )
    result = mem.execute_tool("delete_memory", {"memory_id": chunk.id}, caller=Caller(tenant="acme"))
    assert result.is_error and "AnnualReport.pdf p.12" in result.text and "create_memory" in result.text
    assert mem.get(chunk.id, tenant="acme").content == "Revenue grew 12% in Q4"


# -- error results --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("create_memory", {"memory_type": "fact"}, "'content' is required"),
        ("create_memory", {"content": "x", "memory_type": "pref"}, "'memory_type'"),
        ("create_memory", {"content": "x", "memory_type": "fact", "importance_score": 1.5}, "less than or equal to 1"),
        ("create_memory", {"content": "x", "memory_type": "fact", "colour": "red"}, "'colour' is not an argument"),
        (
            "create_memory",
            {"content": "x", "memory_type": "fact", "reference_id": "R1"},
            "reference_type and reference_id",
        ),
        ("create_memory", {"content": "x", "memory_type": "fact", "expires_at": "2001-01-01"}, "in the past"),
        ("create_memory", {"content": "x", "memory_type": "fact", "expires_at": "next week"}, "ISO-8601"),
        ("create_memory", {"content": "   ", "memory_type": "fact"}, "'content'"),
        ("create_memory", {"content": "x", "memory_type": "fact", "scope": "project"}, "no current project"),
        ("search_memories", {"query": "x", "limit": 500}, "less than or equal to 50"),
        ("search_memories", {}, "'query' is required"),
        ("update_memory", {"memory_id": "mem_x"}, "nothing to change"),
        ("update_memory", {"memory_id": "mem_x", "pinned": True}, "No memory with id 'mem_x'"),
        ("memory_search", {"query": "x", "source_filter": "email"}, "'source_filter'"),
        ("list_scopes", {"project": "secret"}, "'project' is not an argument of list_scopes"),
        ("forget_everything", {}, "Unknown tool"),
    ],
)
def test_bad_calls_come_back_as_error_results(
    mem: funes.Funes, name: str, arguments: dict[str, Any], expected: str
) -> None:
    result = mem.execute_tool(name, arguments, caller=Caller(tenant="acme", session_id=None))
    assert result.is_error
    assert expected in result.text
    assert result.text.startswith("Error: ")
    assert result.data["error"]["message"]


def test_bad_argument_containers_are_error_results(mem: funes.Funes) -> None:
    assert "not valid JSON" in mem.execute_tool("search_memories", "{query: x}").text
    assert "must be a JSON object" in mem.execute_tool("search_memories", ["x"]).text  # type: ignore[arg-type]
    ok = mem.execute_tool("list_scopes", "{}")
    assert not ok.is_error


def test_an_internal_failure_is_an_error_result(mem: funes.Funes, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(mem.core, "search", broken)  # the tools call the core, not the facade
    result = mem.execute_tool("search_memories", {"query": "x"}, caller=ALICE)
    assert result.is_error and result.data["error"]["code"] == "internal_error"
    assert "disk on fire" in result.text and "retry" in result.text


# -- access log ------------------------------------------------------------------------------
def test_tool_calls_write_access_log_rows_with_session_and_agent(mem: funes.Funes) -> None:
    ids = _seed(mem)
    mem.execute_tool("search_memories", {"query": "procurement vendors"}, caller=ALICE)
    mem.execute_tool("update_memory", {"memory_id": ids["budget"], "importance_score": 0.7}, caller=ALICE)
    mem.execute_tool("delete_memory", {"memory_id": ids["standup"]}, caller=ALICE)
    wanted = {"create", "search", "update", "delete"}
    rows = _wait_for_log(mem, lambda rs: wanted <= {r["action"] for r in rs})
    assert wanted <= {r["action"] for r in rows}
    for row in rows:
        assert row["session_id"] == "s1" and row["agent_id"] == "procurement-agent" and row["tenant"] == "acme"
    search_rows = [r for r in rows if r["action"] == "search"]
    assert {r["memory_id"] for r in search_rows} >= {ids["vendors"]}
    assert all(r["query"] == "procurement vendors" for r in search_rows)


# -- context, memory_search, scopes -------------------------------------------------------
def test_get_memory_context_with_a_query_is_the_builders_block(mem: funes.Funes) -> None:
    ids = _seed(mem)
    mem.execute_tool("update_memory", {"memory_id": ids["standup"], "pinned": True}, caller=ALICE)
    result = mem.execute_tool("get_memory_context", {"query": "procurement vendors"}, caller=ALICE)
    assert not result.is_error, result.text
    assert result.text.startswith(result.data["context"])  # then the note that fenced text is data (issue 9)
    assert result.text.startswith("<project_facts>")
    facts = {i["id"] for i in result.data["sections"]["project_facts"]["included"]}
    assert {ids["standup"], ids["vendors"], ids["efficiency"]} <= facts  # pinned, and the 0.9 preferences
    assert ids["budget"] not in facts  # importance 0.6 is not a project fact
    assert f'id="{ids["standup"]}"' in result.text and 'pinned="true"' in result.text
    rows = _wait_for_log(mem, lambda rs: any(r["action"] == "context" for r in rs))
    context_rows = [r for r in rows if r["action"] == "context" and r["agent_id"] == "procurement-agent"]
    assert {r["memory_id"] for r in context_rows} >= {ids["standup"]}
    # Another tenant's view of the same question holds nothing of acme's.
    theirs = mem.execute_tool("get_memory_context", {"query": "procurement vendors"}, caller=MALLORY)
    assert "US-based" not in theirs.text and "nothing relevant" in theirs.text


def test_get_memory_context_checks_a_named_session(mem: funes.Funes) -> None:
    _seed(mem)
    missing = mem.execute_tool("get_memory_context", {"query": "vendors", "session_id": "nope"}, caller=ALICE)
    assert missing.is_error and "No session 'nope'" in missing.text
    mem.session("planning", tenant="acme", user="alice")
    named = mem.execute_tool("get_memory_context", {"query": "vendors", "session_id": "planning"}, caller=ALICE)
    assert not named.is_error and named.data["session_id"] == "planning"
    other = mem.execute_tool("get_memory_context", {"query": "vendors", "session_id": "planning"}, caller=MALLORY)
    assert other.is_error and other.data["error"]["code"] == "not_found"


def test_get_memory_context_without_a_query_ranks_by_importance(mem: funes.Funes) -> None:
    ids = _seed(mem)
    mem.execute_tool("update_memory", {"memory_id": ids["standup"], "pinned": True}, caller=ALICE)
    result = mem.execute_tool("get_memory_context", {}, caller=ALICE)
    text = result.text
    assert text.index("Pinned:") < text.index("Team standup") < text.index("Most important:")
    assert [m["id"] for m in result.data["pinned"]] == [ids["standup"]]
    order = [m["id"] for m in result.data["memories"]]
    assert set(order[:2]) == {ids["vendors"], ids["efficiency"]}  # the 0.9 preferences
    assert order[2:] == [ids["budget"]]  # then the 0.6 fact; the pinned one is not repeated
    empty = mem.execute_tool("get_memory_context", {}, caller=MALLORY)
    assert "nothing" in empty.text


def test_memory_search_filters_by_source(mem: funes.Funes) -> None:
    sources = {
        "pdf": SourceRef(type="pdf", uri="/d/AnnualReport.pdf", locator={"page": 12, "section": "Revenue"}),
        "sheet": SourceRef(type="sheet", uri="/d/Model.xlsx", locator={"sheet": "Sheet1", "range": "A1:F25"}),
        "chat": SourceRef(type="chat", locator={"timestamp": "2026-01-03T10:00:00Z", "role": "user"}),
        "markdown": SourceRef(type="markdown", uri="notes/2026-01-28.md", locator={"header_path": "## Revenue"}),
    }
    for kind, source in sources.items():
        mem.remember(f"Revenue figures from the {kind} source", kind="document_chunk", tenant="acme", source=source)
    mem.execute_tool("create_memory", {"content": "Revenue reports go to the CFO", "memory_type": "fact"}, caller=ALICE)
    pdf, sheet, chat, markdown = (
        "AnnualReport.pdf p.12 §Revenue",
        "Model.xlsx Sheet1!A1:F25",
        "chat 2026-01-03 user",
        "notes/2026-01-28.md ## Revenue",
    )
    # The grouping is ingestion's: documents are PDFs, text files and Markdown notes.
    expected = {"documents": {pdf, markdown}, "sheets": {sheet}, "chat": {chat}, "markdown": {markdown}}
    for source_filter, attributions in expected.items():
        result = mem.execute_tool("memory_search", {"query": "revenue", "source_filter": source_filter}, caller=ALICE)
        rows = _lines(result)
        assert {r[1] for r in rows} == attributions, result.text
        assert result.text.startswith("Found relevant information:")
        assert set(result.data["sources"]) == attributions and result.data["result_count"] == len(attributions)
    everything = mem.execute_tool("memory_search", {"query": "revenue"}, caller=ALICE)
    assert everything.data["result_count"] == 5


def test_list_scopes_counts_what_the_caller_can_see(mem: funes.Funes) -> None:
    caller = Caller(tenant="acme", user_id="alice", session_id="s1")
    for content, kind in [("Likes tea", "preference"), ("Chose SQLite", "decision"), ("Said hi", "conversation")]:
        mem.execute_tool("create_memory", {"content": content, "memory_type": kind}, caller=caller, project="funes")
    mem.execute_tool(
        "create_memory", {"content": "Other project", "memory_type": "decision"}, caller=caller, project="web"
    )
    mem.execute_tool("create_memory", {"content": "Hidden", "memory_type": "fact"}, caller=MALLORY, project="funes")
    result = mem.execute_tool("list_scopes", {}, caller=caller, project="funes")
    rows = {(r["scope"], r["id"]): (r["records"], r["current"]) for r in result.data["scopes"]}
    assert rows == {
        ("team", None): (1, True),
        ("project", "funes"): (1, True),
        ("project", "web"): (1, False),
        ("session", "s1"): (1, True),
    }
    assert "Current project: funes" in result.text
    assert "- project funes (current): 1 record" in result.text


# -- tool-use runners --------------------------------------------------------------------------
def test_runs_an_anthropic_tool_use_message(mem: funes.Funes) -> None:
    from anthropic.types import Message, ToolResultBlockParam

    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "text", "text": "Noted."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "create_memory",
                    "input": {"content": "User likes green tea", "memory_type": "preference"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "create_memory", "input": {"content": "oops"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )
    blocks = mem.run_tool_calls(message, caller=ALICE)
    adapter = TypeAdapter(ToolResultBlockParam)
    for block in blocks:
        adapter.validate_python(block)
    assert [b["tool_use_id"] for b in blocks] == ["toolu_1", "toolu_2"]
    assert "is_error" not in blocks[0] and blocks[1]["is_error"] is True
    assert "'memory_type' is required" in blocks[1]["content"]
    # The same turn as a plain dict gives the same replies (the duplicate is found).
    again = mem.run_tool_calls(message.model_dump(), caller=ALICE)
    assert "Already stored" in again[0]["content"]


def test_runs_an_openai_chat_completion(mem: funes.Funes) -> None:
    from openai.types.chat import ChatCompletion, ChatCompletionToolMessageParam

    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "create_memory",
                                    "arguments": json.dumps(
                                        {
                                            "content": "User likes jasmine tea",
                                            "memory_type": "preference",
                                            "importance_score": None,
                                            "reference_type": None,
                                            "reference_id": None,
                                            "expires_at": None,
                                            "scope": None,
                                            "tags": None,
                                        }
                                    ),
                                },
                            },
                            {"id": "call_2", "type": "function", "function": {"name": "list_scopes", "arguments": "{"}},
                        ],
                    },
                }
            ],
        }
    )
    messages = mem.run_tool_calls(completion, caller=ALICE)
    adapter = TypeAdapter(ChatCompletionToolMessageParam)
    for message in messages:
        adapter.validate_python(message)
    assert [m["tool_call_id"] for m in messages] == ["call_1", "call_2"]
    assert messages[0]["content"].startswith("Stored memory")
    assert "not valid JSON" in messages[1]["content"]
    assert mem.run_tool_calls(completion.choices[0].message, caller=ALICE)[0]["content"].startswith("Already stored")
    assert mem.run_tool_calls({"role": "assistant", "content": "Hello"}) == []


def test_runs_openai_responses_function_calls(mem: funes.Funes) -> None:
    from openai.types.responses.response_input_param import FunctionCallOutput

    output = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_9",
            "name": "search_memories",
            "arguments": json.dumps({"query": "tea", "memory_types": None, "scope": None, "limit": None}),
        },
    ]
    items = mem.run_tool_calls({"output": output}, caller=ALICE)
    assert len(items) == 1
    TypeAdapter(FunctionCallOutput).validate_python(items[0])
    assert items[0]["call_id"] == "call_9" and "No memories match" in items[0]["output"]


def test_an_unreadable_message_is_a_developer_error(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput, match="Cannot read tool calls"):
        mem.run_tool_calls(42)
    with pytest.raises(funes.InvalidInput, match="neither"):
        mem.run_tool_calls({"id": "x"})
