"""Real `funes mcp` subprocesses over stdio, driven by the SDK's client, with the real local model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters


def _params(home: Path, cwd: Path) -> StdioServerParameters:
    script = Path(sys.executable).with_name("funes")
    command, args = (
        (str(script), ["mcp"])
        if script.exists()
        else (sys.executable, ["-c", "from funes.interfaces.cli import main; main()", "mcp"])
    )
    env = {**os.environ, "FUNES_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))


@pytest.mark.slow
def test_a_memory_created_in_one_server_is_found_by_the_next(funes_home: Path, tmp_path: Path) -> None:
    project_dir = tmp_path / "rfp-tool"
    (project_dir / ".git").mkdir(parents=True)  # the default project comes from the git root's name
    params = _params(funes_home, project_dir)
    created: dict[str, str] = {}

    async def first_session() -> None:
        # Handshake-era protocol, as Claude Desktop and most stdio hosts speak it.
        async with Client(params, mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "funes"
            result = await client.call_tool(
                "create_memory",
                {"content": "User prefers US-based vendors for all procurement projects", "memory_type": "preference"},
            )
            assert not result.is_error, result.content
            created["id"] = result.structured_content["memory_id"]
            scopes = await client.call_tool("list_scopes", {})
            assert "Current project: rfp-tool" in scopes.content[0].text

    async def second_session() -> None:
        async with Client(params) as client:
            result = await client.call_tool("search_memories", {"query": "new RFP for office supplies"})
            assert not result.is_error
            assert result.structured_content["results"][0]["id"] == created["id"]
            assert (
                "1. [preference · agent-created · team] <memory>User prefers US-based vendors" in result.content[0].text
            )

    anyio.run(first_session)
    anyio.run(second_session)
