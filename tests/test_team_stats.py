"""A team's stats count its own records only and never show the server's paths (issue 31), on a real `funes serve`.

On SQLite an empty team's /stats showed the whole store's vector, cache and
access-log counts, and /stats and the MCP ``funes://stats`` resource showed
the store's file-system path.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
from served import funes_serve

import funes


async def _mcp_stats(base: str, key: str) -> dict[str, object]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        result = await client.read_resource("funes://stats")
        return json.loads(result.contents[0].text)


def test_an_empty_team_sees_zeros_and_no_paths(store_url: str, tmp_path: Path) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as service:
        for i in range(3):
            service.remember(f"Team A fact {i}", tenant="a")
        service.search("Team A fact", tenant="a")
        key = service.keys.create("empty", "read")[0]
    with funes_serve(store_url, tmp_path / "home") as base:
        answer = httpx.get(f"{base}/v1/teams/empty/stats", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200, answer.text
        stats = answer.json()
        assert stats["records"] == 0 and stats["vectors"] == 0 and stats["access_log_rows"] == 0, stats
        assert not stats.get("cached_embeddings"), stats
        resource = anyio.run(_mcp_stats, base, key)
    for shown in (answer.text, json.dumps(resource)):
        assert str(tmp_path) not in shown and '"path"' not in shown, shown
    assert resource["records"] == 0 and resource["vectors"] == 0, resource
