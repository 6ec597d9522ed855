"""A read key changes nothing: every REST route and every MCP tool of a real `funes serve`, on both backends.

Issue 31: on PostgreSQL, MCP ``delete_memory`` with a read key deleted the
record, and REST writes checked the role only after validating the body. The
walk below covers every route the server's OpenAPI lists (a new route without
a case here fails the test) and every tool the MCP server lists, then compares
the team's whole state with what it was before.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from served import funes_serve

import funes

TEAM = "/v1/teams/t"
ROUTE = "/v1/teams/{team}"
STORES = "/v1/memory_stores"
STORE = STORES + "/{memory_store_id}"


@pytest.fixture
def served(store_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str], dict[str, str], dict[str, str]]]:
    """A server with a seeded team: (base URL, read headers, admin headers, ids)."""
    with funes.open(store_url, embedder="hash", worker="off") as service:
        service.remember("setup", tenant="setup")
        read_key = service.keys.create("t", "read", user="ana")[0]
        admin_key = service.keys.create("t", "admin", user="ana")[0]
    with funes_serve(store_url, tmp_path / "home") as base:
        yield from _seeded(base, read_key, admin_key)


def _seeded(
    base: str, read_key: str, admin_key: str
) -> Iterator[tuple[str, dict[str, str], dict[str, str], dict[str, str]]]:
    deadline = time.monotonic() + 60
    admin = {"Authorization": f"Bearer {admin_key}"}
    memory = httpx.post(
        f"{base}{TEAM}/memories", json={"content": "The vault code is 8812", "file_id": "f1"}, headers=admin
    ).json()
    httpx.patch(f"{base}{TEAM}/memories/{memory['id']}", json={"content": "The vault code is 8813"}, headers=admin)
    httpx.post(f"{base}{TEAM}/sessions/s1/messages", json={"role": "user", "content": "hello"}, headers=admin)
    upload = httpx.post(
        f"{base}{TEAM}/documents",
        files={"file": ("notes.md", b"# Notes\n\nThe boiler is in the cellar.\n")},
        headers=admin,
    ).json()
    job_id = upload["job_id"]
    while httpx.get(f"{base}/v1/jobs/{job_id}", headers=admin).json()["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, "the upload was not indexed"
        time.sleep(0.1)
    document = httpx.get(f"{base}/v1/jobs/{job_id}", headers=admin).json()["result"]["document_id"]
    store = httpx.post(f"{base}{STORES}", json={"name": "notes"}, headers=admin).json()["id"]
    note = httpx.post(f"{base}{STORES}/{store}/memories", json={"path": "/a.md", "content": "one"}, headers=admin)
    httpx.post(f"{base}{STORES}/{store}/memories/{note.json()['id']}", json={"content": "two"}, headers=admin)
    versions = httpx.get(f"{base}{STORES}/{store}/memory_versions", headers=admin).json()["data"]
    ids = {
        "memory": memory["id"],
        "document": document,
        "job": job_id,
        "store": store,
        "note": note.json()["id"],
        "version": versions[-1]["id"],
    }
    yield base, {"Authorization": f"Bearer {read_key}"}, admin, ids


def _state(base: str, admin: dict[str, str]) -> dict[str, Any]:
    """Everything of the team a write could change."""

    def get(path: str) -> Any:
        response = httpx.get(base + path, headers=admin)
        assert response.status_code == 200, response.text
        return response.json()

    memories = [
        {k: m.get(k) for k in ("id", "content", "title", "version", "pinned", "importance", "topic", "updated_at")}
        for m in get(f"{TEAM}/memories?limit=1000")["items"]
    ]
    store = get(STORES)["data"][0]["id"]
    return {
        "stores": get(STORES + "?include_archived=true"),
        "notes": get(f"{STORES}/{store}/memories?view=full"),
        "note_versions": get(f"{STORES}/{store}/memory_versions?view=full"),
        "memories": sorted(memories, key=lambda m: m["id"]),
        "sessions": [(s["id"], s.get("message_count")) for s in get(f"{TEAM}/sessions")["items"]],
        "messages": [m["content"] for m in get(f"{TEAM}/sessions/s1/messages")["items"]],
        "documents": sorted(d["id"] for d in get(f"{TEAM}/documents")["items"]),
        "jobs": sorted(j["id"] for j in get(f"{TEAM}/jobs?limit=1000")["items"]),
        "settings": get(f"{TEAM}/projects/f1/settings"),
    }


def _requests(ids: dict[str, str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """For each (method, OpenAPI path): the requests a read key sends, each a valid write when it is one."""
    m, d, st = ids["memory"], ids["document"], {"memory_store_id": ids["store"]}
    entities = [{"entity_type": "row", "entity_id": "1", "content": "Row one"}]
    return {
        ("GET", "/v1/health"): [{}],
        ("GET", "/v1/me"): [{}],
        ("POST", ROUTE + "/memories"): [{"json": {"content": "planted by a read key"}}, {"json": {}}],
        ("GET", ROUTE + "/memories"): [{}],
        ("GET", ROUTE + "/memories/search"): [{"params": {"q": "vault"}}],
        ("GET", ROUTE + "/memories/has-file/{file}"): [{"path": {"file": "f1"}}],
        ("GET", ROUTE + "/memories/{memory_id}"): [{"path": {"memory_id": m}}],
        ("PATCH", ROUTE + "/memories/{memory_id}"): [{"path": {"memory_id": m}, "json": {"content": "overwritten"}}],
        ("DELETE", ROUTE + "/memories/{memory_id}"): [{"path": {"memory_id": m}}],
        ("GET", ROUTE + "/memories/{memory_id}/history"): [{"path": {"memory_id": m}}],
        ("POST", ROUTE + "/memories/{memory_id}/restore"): [{"path": {"memory_id": m}, "json": {"version": 1}}],
        ("POST", ROUTE + "/memories/{memory_id}/versions/{version}/redact"): [{"path": {"memory_id": m, "version": 1}}],
        ("GET", ROUTE + "/memories/{memory_id}/why"): [{"path": {"memory_id": m}}],
        ("POST", ROUTE + "/forget/preview"): [{"json": {"matching": "vault code"}}],
        ("POST", ROUTE + "/forget"): [{"json": {"ids": [m]}}, {"json": {"matching": "vault code", "confirm": True}}],
        ("GET", ROUTE + "/forget/{receipt_id}/verify"): [{"path": {"receipt_id": "fgt_none"}}],
        ("GET", ROUTE + "/proposals"): [{}],
        ("POST", ROUTE + "/memories/{memory_id}/proposal/accept"): [{"path": {"memory_id": m}}],
        ("POST", ROUTE + "/memories/{memory_id}/proposal/dismiss"): [{"path": {"memory_id": m}}],
        ("POST", ROUTE + "/memories/generate"): [{"json": {"file_id": "f1", "entities": entities}}, {"json": {}}],
        ("POST", ROUTE + "/memories/regenerate"): [{"json": {"file_id": "f1"}}],
        ("POST", ROUTE + "/documents"): [{"files": {"file": ("planted.md", b"# Planted\n")}}],
        ("GET", ROUTE + "/documents"): [{}],
        ("GET", ROUTE + "/documents/{document_id}"): [{"path": {"document_id": d}}],
        ("DELETE", ROUTE + "/documents/{document_id}"): [{"path": {"document_id": d}}],
        ("POST", ROUTE + "/documents/{document_id}/reindex"): [{"path": {"document_id": d}}],
        ("GET", ROUTE + "/sessions"): [{}],
        ("POST", ROUTE + "/sessions/{session_id}/messages"): [
            {"path": {"session_id": "s1"}, "json": {"role": "user", "content": "planted"}},
            {"path": {"session_id": "s2"}, "json": {"role": "user", "content": "planted"}},
        ],
        ("GET", ROUTE + "/sessions/{session_id}/messages"): [{"path": {"session_id": "s1"}}],
        ("POST", ROUTE + "/sessions/{session_id}/context"): [{"path": {"session_id": "s1"}, "json": {"query": "x"}}],
        ("GET", ROUTE + "/sessions/{session_id}/usage"): [{"path": {"session_id": "s1"}}],
        ("POST", ROUTE + "/sessions/{session_id}/usage"): [
            {"path": {"session_id": "s1"}, "json": {"prompt_tokens": 10, "completion_tokens": 2}}
        ],
        ("DELETE", ROUTE + "/sessions/{session_id}"): [{"path": {"session_id": "s1"}, "params": {"confirm": "s1"}}],
        ("POST", ROUTE + "/clear"): [
            {"json": {"file_id": "f1", "confirm": "f1"}},
            {"json": {"everything": True, "confirm": "t"}},
        ],
        ("GET", ROUTE + "/stats"): [{}],
        ("GET", ROUTE + "/map"): [{}],
        ("GET", ROUTE + "/projects/{file}/settings"): [{"path": {"file": "f1"}}],
        ("PUT", ROUTE + "/projects/{file}/settings"): [{"path": {"file": "f1"}, "json": {"enabled": False}}],
        ("GET", ROUTE + "/jobs"): [{}],
        ("GET", "/v1/jobs/{job_id}"): [{"path": {"job_id": ids["job"]}}],
        ("POST", STORES): [{"json": {"name": "planted"}}],
        ("GET", STORES): [{}],
        ("GET", STORE): [{"path": st}],
        ("POST", STORE): [{"path": st, "json": {"name": "renamed"}}],
        ("DELETE", STORE): [{"path": st}],
        ("POST", STORE + "/archive"): [{"path": st}],
        ("POST", STORE + "/memories"): [{"path": st, "json": {"path": "/planted.md", "content": "planted"}}],
        ("GET", STORE + "/memories"): [{"path": st}, {"path": st, "params": {"view": "full", "depth": 1}}],
        ("GET", STORE + "/memories/{memory_id}"): [{"path": {**st, "memory_id": ids["note"]}}],
        ("POST", STORE + "/memories/{memory_id}"): [
            {"path": {**st, "memory_id": ids["note"]}, "json": {"content": "overwritten"}}
        ],
        ("DELETE", STORE + "/memories/{memory_id}"): [{"path": {**st, "memory_id": ids["note"]}}],
        ("GET", STORE + "/memory_versions"): [{"path": st}],
        ("GET", STORE + "/memory_versions/{memory_version_id}"): [
            {"path": {**st, "memory_version_id": ids["version"]}}
        ],
        ("POST", STORE + "/memory_versions/{memory_version_id}/redact"): [
            {"path": {**st, "memory_version_id": ids["version"]}}
        ],
        # Not an API-key route: its own token, which this server does not have.
        ("POST", "/v1/internal/files/{file}/memory"): [
            {"path": {"file": "f1"}, "json": {"team": "t", "entities": entities}}
        ],
    }


async def _walk_mcp(base: str, headers: dict[str, str], memory_id: str) -> list[str]:
    """Call every listed tool with valid arguments; the names of the tools that answered without an error."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    arguments = {
        "create_memory": {"content": "planted through MCP", "memory_type": "fact"},
        "update_memory": {"memory_id": memory_id, "content": "overwritten through MCP"},
        "delete_memory": {"memory_id": memory_id},
        "search_memories": {"query": "vault"},
        "get_memory_context": {"query": "vault"},
        "memory_search": {"query": "vault"},
        "list_scopes": {},
        "list_memories": {"memory_types": ["fact"]},
    }
    answered = []
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        tools = (await client.list_tools()).tools
        assert sorted(t.name for t in tools) == sorted(arguments), "a new tool needs a case here"
        for tool in tools:
            result = await client.call_tool(tool.name, arguments[tool.name])
            if tool.annotations is not None and tool.annotations.read_only_hint:
                assert not result.is_error, (tool.name, result.content)
            else:
                text = " ".join(getattr(c, "text", "") for c in result.content)
                assert result.is_error and "'read' role" in text, (tool.name, text)
            if not result.is_error:
                answered.append(tool.name)
        # A second read: the resources and a missing argument change nothing either.
        await client.read_resource("funes://stats")
        refused = await client.call_tool("create_memory", {})
        text = " ".join(getattr(c, "text", "") for c in refused.content)
        assert refused.is_error and "'read' role" in text, text
    return answered


def test_a_read_key_changes_nothing_through_any_route_or_tool(
    served: tuple[str, dict[str, str], dict[str, str], dict[str, str]],
) -> None:
    base, read, admin, ids = served
    before = _state(base, admin)
    assert before["memories"] and before["messages"] and before["documents"]
    spec = httpx.get(f"{base}/openapi.json").json()
    listed = {(method.upper(), path) for path, item in spec["paths"].items() for method in item}
    cases = _requests(ids)
    assert listed == set(cases), f"routes without a case: {listed - set(cases)}"
    for (method, path), requests in cases.items():
        operation = spec["paths"][path][method.lower()]
        role = operation.get("x-funes-role", "read")
        for request in requests:
            url = base + path.format(team="t", **request.get("path", {}))
            response = httpx.request(
                method,
                url,
                headers=read,
                params=request.get("params"),
                json=request.get("json"),
                files=request.get("files"),
            )
            if path.startswith("/v1/internal/"):
                assert response.status_code == 401, response.text
            elif role == "read":
                assert response.status_code < 300, (method, path, response.text)
            else:
                assert response.status_code == 403, (method, path, response.status_code, response.text)
                assert response.json()["error"]["hint"]
    anyio.run(_walk_mcp, base, read, ids["memory"])
    assert _state(base, admin) == before
