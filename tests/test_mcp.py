"""The MCP server through the SDK's own clients: in memory, and over streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import funes
from funes.agents.output_schemas import ERROR_SCHEMA, OUTPUT_SCHEMAS
from funes.agents.specs import TOOLS, TOOLS_BY_NAME, render_tools
from funes.conversations.prompts import load_prompt
from funes.interfaces.mcp_server import PROMPT_NAME, build_server, resolve_project

EXPECTED_HINTS = {
    # name: (readOnly, destructive, idempotent)
    "create_memory": (False, False, True),
    "search_memories": (True, False, True),
    "update_memory": (False, True, True),
    "delete_memory": (False, True, True),
    "get_memory_context": (True, False, True),
    "memory_search": (True, False, True),
    "list_scopes": (True, False, True),
    "list_memories": (True, False, True),
}


def _run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def server(mem: funes.Funes) -> Any:
    """An MCP server over the hash-embedder service, project 'funes', a fixed session."""
    return build_server(mem, project="funes", session_id="mcp-test", agent_id="pytest-agent")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_lists_tools_with_schemas_and_annotations(server: Any, mode: str) -> None:
    async def main() -> None:
        async with Client(server, mode=mode) as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == [t.name for t in TOOLS]
            rendered = {t["name"]: t for t in render_tools("mcp")}
            for tool in listed:
                assert tool.input_schema == rendered[tool.name]["inputSchema"]
                assert tool.output_schema == rendered[tool.name]["outputSchema"]
                jsonschema.Draft202012Validator.check_schema(tool.output_schema)
                assert tool.description == rendered[tool.name]["description"]
                hints = tool.annotations
                assert hints is not None
                assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == EXPECTED_HINTS[
                    tool.name
                ]
                assert hints.open_world_hint is False
            assert client.instructions == load_prompt("agent")

    _run(main)


def test_calls_every_tool(server: Any, mem: funes.Funes) -> None:
    async def main() -> None:
        async with Client(server) as client:
            created = await client.call_tool(
                "create_memory",
                {"content": "User prefers US-based vendors for procurement", "memory_type": "preference"},
            )
            assert not created.is_error, _text(created)
            memory_id = created.structured_content["memory_id"]
            assert memory_id in _text(created)
            decision = await client.call_tool(
                "create_memory", {"content": "We chose SQLite", "memory_type": "decision"}
            )
            assert decision.structured_content["memory"]["project_id"] == "funes"
            assert decision.structured_content["memory"]["scope"] == "project"

            found = await client.call_tool("search_memories", {"query": "procurement vendors"})
            assert not found.is_error
            assert _text(found).splitlines()[2] == (
                "1. [preference · agent-created · team] <memory>User prefers US-based vendors for procurement</memory>"
            )
            assert found.structured_content["results"][0]["id"] == memory_id

            updated = await client.call_tool("update_memory", {"memory_id": memory_id, "pinned": True})
            assert not updated.is_error and "pinned" in _text(updated)

            context = await client.call_tool("get_memory_context", {"query": "vendors"})
            assert _text(context).startswith("<project_facts>") and f'id="{memory_id}"' in _text(context)

            searched = await client.call_tool("memory_search", {"query": "vendors", "source_filter": "all"})
            assert _text(searched).startswith("Found relevant information:")

            scopes = await client.call_tool("list_scopes", {})
            assert "Current project: funes" in _text(scopes)
            assert "Current session: mcp-test" in _text(scopes)

            deleted = await client.call_tool("delete_memory", {"memory_id": memory_id})
            assert not deleted.is_error
            gone = await client.call_tool("search_memories", {"query": "procurement vendors"})
            assert memory_id not in [r["id"] for r in gone.structured_content["results"]]

    _run(main)
    rows = mem.store.access_log(limit=100)
    deadline = time.monotonic() + 10
    while not {"create", "update", "delete"} <= {r["action"] for r in rows} and time.monotonic() < deadline:
        time.sleep(0.02)
        rows = mem.store.access_log(limit=100)
    assert {"create", "update", "delete", "search"} <= {r["action"] for r in rows}
    assert {(r["session_id"], r["agent_id"]) for r in rows} == {("mcp-test", "pytest-agent")}


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("create_memory", {"content": "x"}, "'memory_type' is required"),
        ("search_memories", {"query": "x", "limit": 0}, "greater than or equal to 1"),
        ("update_memory", {"memory_id": "mem_nope", "pinned": True}, "No memory with id 'mem_nope'"),
        ("delete_memory", {}, "'memory_id' is required"),
        ("get_memory_context", {"query": 3}, "'query'"),
        ("memory_search", {"query": "x", "source_filter": "slides"}, "'source_filter'"),
        ("list_scopes", {"tenant": "other"}, "'tenant' is not an argument"),
        ("drop_database", {}, "Unknown tool"),
    ],
)
def test_error_paths_are_is_error_results(server: Any, name: str, arguments: dict[str, Any], expected: str) -> None:
    async def main() -> None:
        async with Client(server) as client:
            result = await client.call_tool(name, arguments)
            assert result.is_error
            assert expected in _text(result)
            assert result.structured_content["error"]["message"]

    _run(main)


def test_every_tool_output_matches_its_declared_schema(server: Any, mem: funes.Funes, tmp_path: Path) -> None:
    doc = tmp_path / "handbook.md"
    doc.write_text("# Handbook\n\n## Travel\n\nBook trains for trips under four hours.\n", encoding="utf-8")
    mem.ingest(doc)
    mem.add_messages(mem.session("mcp-test"), [{"role": "user", "content": "We ship on Thursdays."}])
    seen: dict[str, int] = {}

    async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        # The SDK's client checks structuredContent against outputSchema itself; this check does not depend on it.
        result = await client.call_tool(name, arguments)
        jsonschema.validate(result.structured_content, TOOLS_BY_NAME[name].output_schema())  # what it declares
        jsonschema.validate(result.structured_content, ERROR_SCHEMA if result.is_error else OUTPUT_SCHEMAS[name])
        if not result.is_error:
            seen[name] = seen.get(name, 0) + 1
        return dict(result.structured_content)

    async def main() -> None:
        async with Client(server) as client:
            first = await call(client, "create_memory", {"content": "User prefers trains", "memory_type": "preference"})
            await call(client, "create_memory", {"content": "User prefers trains", "memory_type": "preference"})
            await call(
                client,
                "create_memory",
                {
                    "content": "RFP-7 is due in March",
                    "memory_type": "context",
                    "reference_type": "rfp",
                    "reference_id": "RFP-7",
                    "tags": ["rfp"],
                    "expires_at": "2099-01-01",
                },
            )
            await call(client, "search_memories", {"query": "trains"})
            await call(client, "search_memories", {"query": "zzzz nothing", "memory_types": ["decision"]})
            await call(client, "update_memory", {"memory_id": first["memory_id"], "pinned": True})
            await call(client, "get_memory_context", {"query": "travel"})
            await call(client, "get_memory_context", {})
            await call(client, "memory_search", {"query": "trains for trips", "source_filter": "documents"})
            await call(client, "memory_search", {"query": "ship", "source_filter": "chat", "role": "user"})
            await call(client, "list_scopes", {})
            await call(client, "list_memories", {})
            await call(client, "list_memories", {"pinned": True, "reference_type": "rfp", "reference_id": "RFP-7"})
            await call(client, "delete_memory", {"memory_id": first["memory_id"]})
            await call(client, "update_memory", {"memory_id": first["memory_id"], "pinned": False})  # an error

    _run(main)
    assert set(seen) == {t.name for t in TOOLS}


def test_list_memories_filters_and_pages_with_a_cursor(server: Any, mem: funes.Funes) -> None:
    for i in range(5):
        mem.remember(f"Preference number {i}", type="preference")
    mem.remember("We chose PostgreSQL for the team server", type="decision", scope="team", pinned=True)
    mem.remember("Another tenant's note", tenant="other")

    async def main() -> None:
        async with Client(server) as client:
            pages: list[list[str]] = []
            cursor = None
            while True:
                arguments: dict[str, Any] = {"memory_types": ["preference"], "limit": 2}
                if cursor:
                    arguments["cursor"] = cursor
                result = await client.call_tool("list_memories", arguments)
                assert not result.is_error, _text(result)
                data = result.structured_content
                pages.append([m["content"] for m in data["memories"]])
                assert data["count"] == len(data["memories"])
                cursor = data["next_cursor"]
                if not cursor:
                    break
                assert f"cursor {cursor!r}" in _text(result)
            assert [len(p) for p in pages] == [2, 2, 1]
            assert sorted(c for p in pages for c in p) == [f"Preference number {i}" for i in range(5)]
            assert pages[0][0] == "Preference number 4"  # newest first
            pinned = await client.call_tool("list_memories", {"pinned": True})
            assert [m["content"] for m in pinned.structured_content["memories"]] == [
                "We chose PostgreSQL for the team server"
            ]
            everything = await client.call_tool("list_memories", {"limit": 100})
            assert "Another tenant's note" not in _text(everything) and everything.structured_content["count"] == 6
            assert "<memory>" in _text(everything)  # fenced like every recalled memory
            bad = await client.call_tool("list_memories", {"limit": 0})
            assert bad.is_error and "greater than or equal to 1" in _text(bad)

    _run(main)


def test_resources_never_show_file_system_paths(server: Any, mem: funes.Funes, tmp_path: Path) -> None:
    doc = tmp_path / "private-dir" / "plan.md"
    doc.parent.mkdir()
    doc.write_text("# Plan\n\nThe launch is in May.\n", encoding="utf-8")
    mem.ingest(doc)
    chunk = next(m for m in mem.list(kinds=["document_chunk", "markdown"]).items)
    note = mem.remember("/deploy runs the release script", type="fact")

    async def main() -> None:
        async with Client(server) as client:
            texts = [(await client.read_resource(uri)).contents[0].text for uri in ("funes://stats", "funes://scopes")]
            record = (await client.read_resource(f"funes://memory/{chunk.id}")).contents[0].text
            assert "plan.md" in record
            kept = json.loads((await client.read_resource(f"funes://memory/{note.id}")).contents[0].text)
            assert kept["content"] == "/deploy runs the release script"  # text, not a location
            for text in [*texts, record]:
                assert str(tmp_path) not in text and "private-dir" not in text
                assert str(Path(mem.config.db_location).parent) not in text

    _run(main)


def test_resources(server: Any, mem: funes.Funes) -> None:
    mine = mem.remember("User prefers tea", type="preference")
    theirs = mem.remember("Other tenant's secret", tenant="other")

    async def main() -> None:
        async with Client(server) as client:
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert listed == {"funes://stats", "funes://scopes"}
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["funes://memory/{id}"]

            stats = json.loads((await client.read_resource("funes://stats")).contents[0].text)
            assert stats["records"] == 1  # this tenant's records only
            scopes = json.loads((await client.read_resource("funes://scopes")).contents[0].text)
            assert scopes["project"] == "funes"
            assert {"scope": "team", "id": None, "records": 1, "current": True} in scopes["scopes"]

            record = json.loads((await client.read_resource(f"funes://memory/{mine.id}")).contents[0].text)
            assert record["content"] == "User prefers tea" and record["memory_type"] == "preference"

            messages = []
            for memory_id in (theirs.id, "mem_01ZZZZZZZZZZZZZZZZZZZZZZZZ"):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(f"funes://memory/{memory_id}")
                messages.append(caught.value.message.replace(memory_id, "ID"))
            assert messages[0] == messages[1]  # another tenant's record reads as not found
            with pytest.raises(MCPError, match="Unknown resource"):
                await client.read_resource("funes://everything")

    _run(main)


def test_prompt_is_the_agent_instructions(server: Any) -> None:
    async def main() -> None:
        async with Client(server) as client:
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == [PROMPT_NAME]
            got = await client.get_prompt(PROMPT_NAME)
            text = got.messages[0].content.text
            assert text == load_prompt("agent")
            for phrase in (
                "from now on",
                "for all future projects",
                "Don't just acknowledge it: store it",
                "search_memories",
                "preference",
                "0.9",
            ):
                assert phrase in text
            with pytest.raises(MCPError, match="Unknown prompt"):
                await client.get_prompt("jailbreak")

    _run(main)


def test_users_can_override_the_instructions(mem: funes.Funes, funes_home: Path) -> None:
    (funes_home / "prompts").mkdir(parents=True)
    (funes_home / "prompts" / "agent.md").write_text("Always store what the user likes.\n", encoding="utf-8")

    async def main() -> None:
        async with Client(build_server(mem, project="p")) as client:
            assert client.instructions == "Always store what the user likes."
            got = await client.get_prompt(PROMPT_NAME)
            assert got.messages[0].content.text == "Always store what the user likes."

    _run(main)


def test_default_project_resolution(tmp_path: Path) -> None:
    repo = tmp_path / "my-repo"
    (repo / ".git").mkdir(parents=True)
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)
    plain = tmp_path / "scratch"
    plain.mkdir()
    assert resolve_project("explicit", "configured", nested) == "explicit"
    assert resolve_project(None, "configured", nested) == "configured"
    assert resolve_project(None, None, nested) == "my-repo"
    assert resolve_project(None, "", plain) == "scratch"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _funes_command() -> list[str]:
    script = Path(sys.executable).with_name("funes")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from funes.interfaces.cli import main; main()"]


def test_streamable_http_round_trip(funes_home: Path) -> None:
    port = _free_port()
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_EMBEDDER": "hash", "FUNES_MCP_TOKEN": "s3cret-token"}
    proc = subprocess.Popen(
        [*_funes_command(), "mcp", "--http", "--port", str(port), "--project", "web"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)

        async def main() -> None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with (
                create_mcp_http_client(headers={"Authorization": "Bearer s3cret-token"}) as http,
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
            ):
                created = await client.call_tool(
                    "create_memory", {"content": "User deploys on Fridays", "memory_type": "decision"}
                )
                assert not created.is_error, _text(created)
                assert created.structured_content["memory"]["project_id"] == "web"
                found = await client.call_tool("search_memories", {"query": "deploys Fridays"})
                assert found.structured_content["results"][0]["id"] == created.structured_content["memory_id"]

        _run(main)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert out == b""
    assert f"http://127.0.0.1:{port}/mcp" in err.decode()
    with funes.open(embedder="hash") as service:
        assert [m.content for m in service.list().items] == ["User deploys on Fridays"]
