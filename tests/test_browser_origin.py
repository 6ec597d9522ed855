"""/v1 checks Host and Origin as /mcp does, and a keyless server takes no write from another site (issue 31).

A real `funes serve` on 127.0.0.1. Without keys, a web page could reach it by
DNS rebinding (its own name resolving to 127.0.0.1) or post to it cross-site;
with keys, a page of another origin is refused even with a key.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from served import funes_serve

import funes

BODY = {"content": "planted by a web page"}


def _contents(base: str, headers: dict[str, str] | None = None) -> list[str]:
    items = httpx.get(f"{base}/v1/teams/default/memories", headers=headers or {}).json()["items"]
    return [m["content"] for m in items]


def test_a_keyless_server_refuses_rebinding_and_cross_site_writes(tmp_path: Path) -> None:
    with funes_serve(str(tmp_path / "solo.db"), tmp_path / "home") as base:
        path = f"{base}/v1/teams/default/memories"
        port = base.rsplit(":", 1)[1]
        rebound = httpx.get(path, headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 421 and rebound.json()["error"]["hint"], rebound.text
        refused = [
            httpx.post(path, json=BODY, headers={"Origin": "http://evil.example"}),
            httpx.post(path, json=BODY, headers={"Origin": "null"}),
            httpx.post(path, json=BODY, headers={"Sec-Fetch-Site": "cross-site"}),
            httpx.delete(f"{path}/mem_x", headers={"Origin": f"http://evil.example:{port}"}),
        ]
        for answer in refused:
            assert answer.status_code == 403 and answer.json()["error"]["hint"], answer.text
        assert "planted by a web page" not in _contents(base)
        # Its own pages and programs (no Origin) still write.
        own = httpx.post(
            path, json={"content": "from the UI"}, headers={"Origin": base, "Sec-Fetch-Site": "same-origin"}
        )
        assert own.status_code == 201, own.text
        assert httpx.post(path, json={"content": "from curl"}).status_code == 201
        assert {"from the UI", "from curl"} <= set(_contents(base))


def test_with_keys_a_foreign_origin_is_refused_even_with_a_key(tmp_path: Path) -> None:
    db = str(tmp_path / "team.db")
    with funes.open(db, embedder="hash", worker="off") as service:
        key = service.keys.create("default", "write")[0]
    with funes_serve(db, tmp_path / "home") as base:
        headers = {"Authorization": f"Bearer {key}"}
        path = f"{base}/v1/teams/default/memories"
        answer = httpx.post(path, json=BODY, headers={**headers, "Origin": "http://evil.example"})
        assert answer.status_code == 403, answer.text
        assert httpx.post(path, json={"content": "ok"}, headers=headers).status_code == 201
        assert "planted by a web page" not in _contents(base, headers)
