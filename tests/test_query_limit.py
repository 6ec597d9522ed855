"""Query length is capped (issue 9): a huge query fails at once with a clear error, on every path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

import funes
from funes.errors import InvalidInput
from funes.interfaces.cli import main
from funes.providers.embed import HashEmbedder


def test_search_and_tools_refuse_an_over_long_query(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "q.db"), embedder=HashEmbedder(64), max_query_chars=100) as mem:
        mem.remember("Deploys happen on Tuesdays")
        with pytest.raises(InvalidInput, match="max_query_chars") as caught:
            mem.search("deploys " * 50)
        assert caught.value.hint and "key words" in caught.value.hint
        assert mem.search("deploys " * 12)  # 96 characters: fine
        for tool in ("search_memories", "memory_search"):
            result = mem.execute_tool(tool, {"query": "deploys " * 50})
            assert result.is_error and "max_query_chars" in result.text
        # A long user message still gets its context: the search uses its first max_query_chars characters.
        built = mem.build_context(
            mem.session("s").id, "When do deploys happen? " + "context " * 500, min_similarity=0.0
        )
        assert "Tuesdays" in str(built.request)
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "q.db"), "--embedder", "hash", "search", "x" * 5000])
    assert out.exit_code == 1 and "max_query_chars" in out.output


def test_a_megabyte_query_over_stdio_gets_an_error_answer(funes_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_EMBEDDER": "hash"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from funes.interfaces.cli import main; main()", "mcp", "--project", "p"],
        env=env,
        cwd=str(tmp_path),
    )

    async def main_() -> None:
        with anyio.fail_after(120):  # used to get no answer in 240 s
            async with Client(params) as client:
                result = await client.call_tool("search_memories", {"query": "vendor " * 150_000})
                assert result.is_error and "max_query_chars" in result.content[0].text

    anyio.run(main_)
