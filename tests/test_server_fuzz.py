"""schemathesis against the served OpenAPI document, on both backends (bounded examples; bench/schemathesis_run.py runs longer).

No generated input may cause a 5xx, and every answer must be one the document
declares (status, content type, body). Stateful scenarios follow the
document's links from a created memory or upload (issue 31).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from api_fuzz import TEAM, links, open_service, run_operations, run_stateful, server_schema
from fastapi.testclient import TestClient

from funes.interfaces.server import create_app


@pytest.fixture
def fuzzed(store_url: str) -> Iterator[tuple[Any, str]]:
    service = open_service(store_url)
    yield server_schema(service)
    service.close()


def test_no_input_causes_a_server_error_or_an_undocumented_answer(fuzzed: tuple[Any, str]) -> None:
    schema, key = fuzzed
    assert run_operations(schema, key, examples=8) == []


def test_linked_scenarios_hold(fuzzed: tuple[Any, str]) -> None:
    schema, key = fuzzed
    assert run_stateful(schema, key, scenarios=12, steps=6) == []


def test_a_created_memory_links_to_every_call_on_its_id(fuzzed: tuple[Any, str]) -> None:
    schema, _ = fuzzed
    found = links(schema)
    for name in ("GetMemory", "PatchMemory", "DeleteMemory", "MemoryHistory", "RestoreMemory"):
        assert ("POST /v1/teams/{team}/memories", name) in found
    for name in ("GetDocument", "DeleteDocument", "GetJob"):
        assert ("POST /v1/teams/{team}/documents", name) in found


def test_error_answers_are_the_documented_error_shape(tmp_path: Any) -> None:
    # Before: every 404 and 409 was undocumented, and the 422 documented FastAPI's {"detail": [...]},
    # not the {"error": ...} the server sends.
    service = open_service(str(tmp_path / "s.db"))
    key = service.keys.create(TEAM, "write")[0]
    with TestClient(create_app(service, mcp=False)) as client:
        document = client.get("/openapi.json").json()
        auth = {"Authorization": f"Bearer {key}"}
        missing = client.get(f"/v1/teams/{TEAM}/memories/mem_nope", headers=auth)
        invalid = client.post(f"/v1/teams/{TEAM}/memories", json={"content": ""}, headers=auth)
    service.close()
    get = document["paths"]["/v1/teams/{team}/memories/{memory_id}"]["get"]["responses"]
    post = document["paths"]["/v1/teams/{team}/memories"]["post"]["responses"]
    error = {"$ref": "#/components/schemas/Error"}
    assert missing.status_code == 404 and get["404"]["content"]["application/json"]["schema"] == error
    assert invalid.status_code == 422 and post["422"]["content"]["application/json"]["schema"] == error
    for body in (missing.json(), invalid.json()):
        assert set(body["error"]) == {"code", "message", "hint"}
    assert post["201"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Memory"}


def test_restoring_a_version_not_kept_is_bad_input_not_a_missing_memory(tmp_path: Any) -> None:
    # Before: 404, which told a client (schemathesis' stateful run on PostgreSQL) the memory was gone.
    service = open_service(str(tmp_path / "s.db"))
    key = service.keys.create(TEAM, "write")[0]
    memory = service.remember("Restorable", tenant=TEAM)
    with TestClient(create_app(service, mcp=False)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        answer = client.post(f"/v1/teams/{TEAM}/memories/{memory.id}/restore", json={"version": 1223}, headers=auth)
        after = client.get(f"/v1/teams/{TEAM}/memories/{memory.id}", headers=auth)
    service.close()
    assert answer.status_code == 400 and "history" in answer.json()["error"]["hint"]
    assert after.status_code == 200


def test_a_store_error_body_names_no_server_path(tmp_path: Any) -> None:
    # Before: a write to a store that turned read-only answered "The store /tmp/.../s.db is read-only ...".
    service = open_service(str(tmp_path / "s.db"))
    key = service.keys.create(TEAM, "write")[0]
    service.store.db.read_only = True  # what opening it on a read-only disk sets
    answers = []
    try:
        # With a key the key check's write fails first; keyless, the route's own write does.
        with TestClient(create_app(service, mcp=False)) as client:
            auth = {"Authorization": f"Bearer {key}"}
            answers.append(client.post(f"/v1/teams/{TEAM}/memories", json={"content": "refused"}, headers=auth))
        keyless = create_app(service, mcp=False, require_keys=False)
        with TestClient(keyless, base_url="http://127.0.0.1") as client:
            team = service.config.tenant
            answers.append(client.post(f"/v1/teams/{team}/memories", json={"content": "refused"}))
    finally:
        service.store.db.read_only = False
        service.close()
    for answer in answers:
        assert answer.status_code >= 400 and "read-only" in answer.text, answer.text
        assert str(tmp_path) not in answer.text and "The store <server path> is read-only" in answer.text, answer.text


def test_team_mcp_error_texts_name_no_server_path(tmp_path: Any) -> None:
    # The team server's /mcp builds its server with public=path_scrubber; a tool error names the store's file.
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from funes.interfaces.mcp_server import build_server
    from funes.interfaces.server.auth import path_scrubber

    service = open_service(str(tmp_path / "s.db"))
    server = build_server(service, project=None, public=path_scrubber(service))
    service.store.db.read_only = True
    shown: list[str] = []

    async def main() -> None:
        async with Client(server) as client:
            result = await client.call_tool("create_memory", {"content": "refused", "memory_type": "fact"})
            assert result.is_error
            shown.append(result.content[0].text)
            shown.append(str(result.structured_content))
            try:
                await client.read_resource("funes://memory/mem_01ZZZZZZZZZZZZZZZZZZZZZZZZ")
            except MCPError as exc:
                shown.append(str(exc))

    try:
        anyio.run(main)
    finally:
        service.store.db.read_only = False
        service.close()
    assert "read-only" in shown[0] and "<server path>" in shown[0], shown
    assert not any(str(tmp_path) in text for text in shown), shown
