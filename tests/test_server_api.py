"""The team server's REST API through the ASGI test client: routes, keys, roles, isolation, 202 work."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import funes
from funes.interfaces.server import create_app
from funes.providers.embed import HashEmbedder


class Team:
    """A client and the keys of the teams the tests use."""

    def __init__(self, client: TestClient, service: funes.Funes) -> None:
        self.client = client
        self.funes = service
        self.keys: dict[str, str] = {}

    def key(self, team: str, role: str = "admin", user: str | None = None) -> dict[str, str]:
        name = f"{team}:{role}:{user}"
        if name not in self.keys:
            self.keys[name] = self.funes.keys.create(team, role, user=user)[0]
        return {"Authorization": f"Bearer {self.keys[name]}"}

    def wait(self, job_id: str, headers: dict[str, str], timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.client.get(f"/v1/jobs/{job_id}", headers=headers).json()
            if job["status"] in ("done", "failed") or time.monotonic() > deadline:
                return job
            time.sleep(0.05)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    path = tmp_path_factory.mktemp("server") / "team.db"
    service = funes.open(
        str(path), embedder=HashEmbedder(64), worker="on", generate_cooldown_seconds=60, job_poll_seconds=0.05
    )
    with TestClient(create_app(service)) as client:
        yield Team(client, service)
    service.close()


def test_health_needs_no_key_and_everything_else_does(api: Team) -> None:
    assert api.client.get("/v1/health").json() == {"status": "ok", "backend": "sqlite", "auth": True}
    for path in ("/v1/me", "/v1/teams/acme/memories", "/v1/jobs/job_x"):
        reply = api.client.get(path)
        assert reply.status_code == 401
        error = reply.json()["error"]
        assert error["code"] == "unauthorized" and "funes keys create" in error["hint"]
    bad = api.client.get("/v1/me", headers={"Authorization": "Bearer fk_not-a-key"})
    assert bad.status_code == 401 and "unknown or revoked" in bad.json()["error"]["message"]


def test_me_resolves_team_user_role_from_the_key_and_x_api_key_works(api: Team) -> None:
    key = api.funes.keys.create("acme", "write", user="ana")[0]
    me = api.client.get("/v1/me", headers={"X-API-Key": key}).json()
    assert me["team"] == "acme" and me["user_id"] == "ana" and me["role"] == "write" and me["key_id"].startswith("key_")


def test_without_a_replica_no_position_is_handed_out_and_a_malformed_one_is_refused(api: Team) -> None:
    # Read-your-writes across processes needs a token only with a read replica (tests/test_pg_replica.py).
    made = api.client.post("/v1/teams/acme/memories", json={"content": "one SQLite file"}, headers=api.key("acme"))
    assert made.status_code == 201 and "funes-position" not in made.headers
    path = f"/v1/teams/acme/memories/{made.json()['id']}"
    kept = api.client.get(path, headers={**api.key("acme"), "Funes-Read-After": "0/3A2F1C8"})
    assert kept.status_code == 200  # every read already sees every committed write
    bad = api.client.get(path, headers={**api.key("acme"), "Funes-Read-After": "0/3A2F1C8; DROP"})
    error = bad.json()["error"]
    assert bad.status_code == 400 and error["code"] == "invalid_input" and "Funes-Position" in error["hint"]


def test_revoked_keys_stop_working_and_only_hashes_are_stored(api: Team) -> None:
    key, row = api.funes.keys.create("acme", "read", name="temp")
    headers = {"Authorization": f"Bearer {key}"}
    assert api.client.get("/v1/me", headers=headers).status_code == 200
    listed = api.funes.keys.list("acme")
    assert all("key_hash" not in r for r in listed) and any(r["id"] == row["id"] for r in listed)
    stored = api.funes.store.find_api_key(__import__("funes.memory.keys").memory.keys.hash_key(key))
    assert stored is not None and key not in str(stored)
    api.funes.keys.revoke(row["id"])
    assert api.client.get("/v1/me", headers=headers).status_code == 401


def test_a_key_revoked_by_another_process_stops_working_here_once_its_cache_time_is_over(api: Team) -> None:
    """A resolved key is kept KEY_CACHE_SECONDS (issue 29); a revocation elsewhere reaches this server after it."""
    from funes.memory.keys import KEY_CACHE_SECONDS

    key, row = api.funes.keys.create("acme", "read", name="elsewhere")
    headers = {"Authorization": f"Bearer {key}"}
    assert api.client.get("/v1/me", headers=headers).status_code == 200
    with funes.open(str(api.funes.store.path), embedder=HashEmbedder(64), worker="off") as other:
        other.keys.revoke(row["id"])  # `funes keys revoke`, in another process
    assert api.funes.keys.cache_seconds == KEY_CACHE_SECONDS > 0
    assert api.client.get("/v1/me", headers=headers).status_code == 200  # kept: at most KEY_CACHE_SECONDS more
    api.funes.keys.cache_seconds = 0.0  # its time is over
    try:
        reply = api.client.get("/v1/me", headers=headers)
        assert reply.status_code == 401 and "unknown or revoked" in reply.json()["error"]["message"]
    finally:
        api.funes.keys.cache_seconds = KEY_CACHE_SECONDS
    assert api.client.get("/v1/me", headers=headers).status_code == 401  # a revoked key is never kept


def test_roles_are_enforced(api: Team) -> None:
    read = api.key("acme", "read")
    reply = api.client.post("/v1/teams/acme/memories", json={"content": "read keys cannot write"}, headers=read)
    assert reply.status_code == 403 and reply.json()["error"]["code"] == "forbidden"
    write = api.key("acme", "write")
    assert (
        api.client.post("/v1/teams/acme/memories", json={"content": "write keys can"}, headers=write).status_code == 201
    )
    put = api.client.put("/v1/teams/acme/projects/f/settings", json={"retrieval_k": 3}, headers=write)
    assert put.status_code == 403
    clear = api.client.post("/v1/teams/acme/clear", json={"file_id": "f", "confirm": "f"}, headers=write)
    assert clear.status_code == 403


def test_memory_crud_history_restore_and_has_file(api: Team) -> None:
    h = api.key("acme")
    created = api.client.post(
        "/v1/teams/acme/memories",
        json={"content": "Invoices are sent on the first Monday", "file_id": "billing", "title": "Invoices"},
        headers=h,
    )
    assert created.status_code == 201
    memory = created.json()
    assert memory["scope"] == "project" and memory["project_id"] == "billing"
    mid = memory["id"]
    again = api.client.post(
        "/v1/teams/acme/memories",
        json={"content": "Invoices are sent on the first Monday", "file_id": "billing"},
        headers=h,
    )
    assert again.json()["id"] == mid  # create_memory semantics: same text, same scope, one record
    assert api.client.get(f"/v1/teams/acme/memories/{mid}", headers=h).json()["content"].startswith("Invoices")
    patched = api.client.patch(
        f"/v1/teams/acme/memories/{mid}",
        json={"content": "Invoices are sent on the first Friday", "pinned": True},
        headers=h,
    ).json()
    assert patched["version"] == 2 and patched["pinned"] is True
    hits = api.client.get("/v1/teams/acme/memories/search", params={"q": "invoices friday"}, headers=h).json()
    assert hits["hits"][0]["memory"]["id"] == mid
    history = api.client.get(f"/v1/teams/acme/memories/{mid}/history", headers=h).json()
    assert [v["version"] for v in history["versions"]] == [2, 1] and history["current"]["id"] == mid
    restored = api.client.post(f"/v1/teams/acme/memories/{mid}/restore", json={"version": 1}, headers=h).json()
    assert "Monday" in restored["content"] and restored["version"] == 3
    assert api.client.get("/v1/teams/acme/memories/has-file/billing", headers=h).json() == {
        "file_id": "billing",
        "has_memories": True,
        "count": 1,
    }
    assert api.client.get("/v1/teams/acme/memories/has-file/nothing", headers=h).json()["has_memories"] is False
    assert api.client.delete(f"/v1/teams/acme/memories/{mid}", headers=h).status_code == 204
    gone = api.client.get(f"/v1/teams/acme/memories/{mid}", headers=h)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"


def test_listing_paginates_with_a_cursor_and_filters(api: Team) -> None:
    h = api.key("pager")
    for i in range(7):
        body = {"content": f"pagination fact number {i}", "file_id": "p1" if i % 2 else "p2", "pinned": i == 3}
        api.client.post("/v1/teams/pager/memories", json=body, headers=h)
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = api.client.get("/v1/teams/pager/memories", params=params, headers=h).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 7
    p1 = api.client.get("/v1/teams/pager/memories", params={"file_id": "p1", "scope": "project"}, headers=h).json()
    assert len(p1["items"]) == 3
    pinned = api.client.get("/v1/teams/pager/memories", params={"pinned": "true"}, headers=h).json()
    assert [m["content"] for m in pinned["items"]] == ["pagination fact number 3"]
    bad = api.client.get("/v1/teams/pager/memories", params={"memory_type": "nonsense"}, headers=h)
    assert bad.status_code == 400 and bad.json()["error"]["hint"]


def test_another_teams_resources_answer_404(api: Team) -> None:
    a, b = api.key("team-a"), api.key("team-b")
    mid = api.client.post(
        "/v1/teams/team-a/memories", json={"content": "Team A's launch code is 1234"}, headers=a
    ).json()["id"]
    assert api.client.get(f"/v1/teams/team-a/memories/{mid}", headers=b).status_code == 404  # not B's team path
    for call in (
        lambda: api.client.get(f"/v1/teams/team-b/memories/{mid}", headers=b),
        lambda: api.client.patch(f"/v1/teams/team-b/memories/{mid}", json={"content": "pwned"}, headers=b),
        lambda: api.client.delete(f"/v1/teams/team-b/memories/{mid}", headers=b),
        lambda: api.client.get(f"/v1/teams/team-b/memories/{mid}/history", headers=b),
    ):
        reply = call()
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"
    found = api.client.get("/v1/teams/team-b/memories/search", params={"q": "launch code"}, headers=b).json()
    assert found["hits"] == []
    listed = api.client.get("/v1/teams/team-b/memories", headers=b).json()["items"]
    assert all(m["id"] != mid for m in listed)
    assert (
        api.client.get(f"/v1/teams/team-a/memories/{mid}", headers=a).json()["content"]
        == "Team A's launch code is 1234"
    )
    job = api.client.post(
        "/v1/teams/team-a/memories/generate",
        json={"file_id": "fa", "entities": [{"entity_type": "FILE", "entity_id": "fa", "content": "x"}]},
        headers=a,
    ).json()["job_id"]
    assert api.client.get(f"/v1/jobs/{job}", headers=b).status_code == 404
    assert api.client.get(f"/v1/jobs/{job}", headers=a).status_code == 200


def test_personal_memories_are_visible_only_to_their_user(api: Team) -> None:
    ana, bob, team = api.key("people", "write", "ana"), api.key("people", "write", "bob"), api.key("people", "write")
    body = {"content": "Ana's personal reminder: dentist on Friday", "personal": True}
    mine = api.client.post("/v1/teams/people/memories", json=body, headers=ana).json()
    shared = api.client.post(
        "/v1/teams/people/memories", json={"content": "The team offsite is in May"}, headers=ana
    ).json()
    assert mine["user_id"] == "ana" and shared["user_id"] is None
    for other in (bob, team):
        assert api.client.get(f"/v1/teams/people/memories/{mine['id']}", headers=other).status_code == 404
        search = api.client.get("/v1/teams/people/memories/search", params={"q": "dentist Friday"}, headers=other)
        assert all(h["memory"]["id"] != mine["id"] for h in search.json()["hits"])
        assert api.client.get(f"/v1/teams/people/memories/{shared['id']}", headers=other).status_code == 200
    assert api.client.get(f"/v1/teams/people/memories/{mine['id']}", headers=ana).status_code == 200


def test_generate_returns_202_runs_in_the_background_and_coalesces_inside_the_cooldown(api: Team) -> None:
    h = api.key("gen")
    entities = [
        {"entity_type": "CODE_CELL", "entity_id": "A1", "content": "orders = load('orders.csv')"},
        {"entity_type": "DATA_TABLE", "entity_id": "orders", "content": "orders table", "columns": ["id", "total"]},
    ]
    first = api.client.post("/v1/teams/gen/memories/generate", json={"file_id": "nb", "entities": entities}, headers=h)
    assert first.status_code == 202 and first.json()["status"] == "queued"
    job = api.wait(first.json()["job_id"], h)
    assert job["status"] == "done" and job["result"]["created"] == 2
    # Inside the 60 s window: both requests wait for its end and coalesce into the newest.
    changed = [dict(entities[0], content="orders = load('orders_2024.csv')"), entities[1]]
    second = api.client.post("/v1/teams/gen/memories/generate", json={"file_id": "nb", "entities": changed}, headers=h)
    third = api.client.post("/v1/teams/gen/memories/generate", json={"file_id": "nb", "entities": changed}, headers=h)
    assert second.status_code == third.status_code == 202
    assert second.json()["cooldown_seconds"] > 30 and third.json()["coalesced"] is True
    queued = api.funes.jobs.get(second.json()["job_id"])
    assert queued.status == "queued"  # accepted and durable, not dropped, not run inside the window
    listed = api.client.get("/v1/teams/gen/memories", params={"entity_type": "CODE_CELL"}, headers=h).json()["items"]
    assert len(listed) == 1 and listed[0]["version"] == 1


def test_a_coalesced_request_runs_once_when_the_window_ends(tmp_path: Path) -> None:
    service = funes.open(str(tmp_path / "c.db"), embedder=HashEmbedder(64), worker="off", generate_cooldown_seconds=0.3)
    try:
        entity = {"entity_type": "CODE_CELL", "entity_id": "A1", "content": "v1"}
        service.generate("nb", [entity], tenant="t")
        assert service.run_jobs()["done"] == 1
        second = service.generate("nb", [dict(entity, content="v2")], tenant="t")
        third = service.generate("nb", [dict(entity, content="v3")], tenant="t")
        assert service.run_jobs()["done"] == 0  # inside the window
        time.sleep(0.4)
        assert service.run_jobs()["done"] == 2
        assert service.jobs.get(second["job_id"]).result["superseded_by"] == third["job_id"]
        assert service.jobs.get(third["job_id"]).result["updated"] == 1
        records = service.list(tenant="t", entity_types=["CODE_CELL"]).items
        assert len(records) == 1 and records[0].version == 2
        again = service.regenerate("nb", tenant="t")
        time.sleep(0.4)
        service.run_jobs()
        assert service.jobs.get(again["job_id"]).result["llm_calls"] == 1
    finally:
        service.close()


def test_generation_turned_off_for_a_file_is_a_clear_409(api: Team) -> None:
    h = api.key("settings")
    assert api.client.get("/v1/teams/settings/projects/f9/settings", headers=h).json()["enabled"] is True
    put = api.client.put(
        "/v1/teams/settings/projects/f9/settings", json={"enabled": False, "retrieval_k": 4}, headers=h
    )
    assert put.json() == {
        "enabled": False,
        "chunk_size": 200,
        "chunk_overlap": 40,
        "retrieval_k": 4,
        "max_records": 10_000,
    }
    body = {"file_id": "f9", "entities": [{"entity_type": "FILE", "entity_id": "f9", "content": "x"}]}
    refused = api.client.post("/v1/teams/settings/memories/generate", json=body, headers=h)
    assert refused.status_code == 409 and "enabled" in refused.json()["error"]["hint"]
    bad = api.client.put("/v1/teams/settings/projects/f9/settings", json={"retrieval_k": 0}, headers=h)
    assert bad.status_code == 400 and "retrieval_k" in bad.json()["error"]["message"]
    nothing = api.client.post("/v1/teams/settings/memories/regenerate", json={"file_id": "never"}, headers=h)
    assert nothing.status_code == 404 and "generate" in nothing.json()["error"]["hint"]


def test_the_map_shows_an_uploaded_notes_sections_under_the_notes_topic(api: Team) -> None:
    """Seen before: 11 of 12 cards under "No topic"; a note's sections had none (issue 26)."""
    h = api.key("topics")
    note = b"# Ramen bar visits\n\nIchiran twice, the ramen at Afuri once.\n\n## Afuri\n\nYuzu ramen, short queue.\n"
    up = api.client.post("/v1/teams/topics/documents", files={"file": ("ramen.md", note)}, headers=h)
    assert api.wait(up.json()["job_id"], h)["status"] == "done"
    api.client.post("/v1/teams/topics/memories", json={"content": "Lunch is at noon.", "scope": "team"}, headers=h)
    nodes = api.client.get("/v1/teams/topics/map", headers=h).json()["nodes"]
    assert sorted((n["kind"], n["topic"]) for n in nodes) == [
        ("markdown", "ramen"),
        ("markdown", "ramen"),
        ("memory", None),
    ]
    listed = api.client.get("/v1/teams/topics/memories", params={"scope": "team"}, headers=h).json()["items"]
    assert sorted(m["topic"] or "" for m in listed) == ["", "ramen", "ramen"]


def test_upload_is_accepted_then_indexed_and_failures_show_their_reason(api: Team) -> None:
    h = api.key("docs")
    text = b"# Handbook\n\nThe cafeteria opens at nine and closes at three.\n"
    up = api.client.post("/v1/teams/docs/documents", files={"file": ("handbook.md", text)}, headers=h)
    # The worker may have indexed it before the answer was written: accepted is all the 202 promises.
    assert up.status_code == 202 and up.json()["document"]["status"] in ("queued", "indexing", "indexed")
    job = api.wait(up.json()["job_id"], h)
    assert job["status"] == "done"
    doc_id = job["result"]["document_id"]
    items = api.client.get("/v1/teams/docs/documents", headers=h).json()["items"]
    assert [(d["id"], d["status"]) for d in items] == [(doc_id, "indexed")]
    assert api.client.get(f"/v1/teams/docs/documents/{up.json()['job_id']}", headers=h).json()["id"] == doc_id
    hits = api.client.get("/v1/teams/docs/memories/search", params={"q": "cafeteria opens"}, headers=h).json()["hits"]
    assert hits and "cafeteria" in hits[0]["memory"]["content"]
    reindex = api.client.post(f"/v1/teams/docs/documents/{doc_id}/reindex", headers=h)
    assert reindex.status_code == 202 and api.wait(reindex.json()["job_id"], h)["status"] == "done"
    broken = api.client.post("/v1/teams/docs/documents", files={"file": ("broken.pdf", b"not a pdf at all")}, headers=h)
    failed = api.wait(broken.json()["job_id"], h)
    assert failed["status"] == "failed"
    items = api.client.get("/v1/teams/docs/documents", headers=h).json()["items"]
    assert [d["name"] for d in items].count("broken.pdf") == 1  # listed once: as the failed document
    listed = {d["name"]: d for d in items}
    assert listed["broken.pdf"]["status"] == "failed" and listed["broken.pdf"]["error"]
    assert api.client.get(f"/v1/teams/other/documents/{doc_id}", headers=api.key("other")).status_code == 404
    assert api.client.get(f"/v1/teams/other/documents/{doc_id}", headers=h).status_code == 404
    assert api.client.delete(f"/v1/teams/docs/documents/{doc_id}", headers=h).status_code == 204
    empty = api.client.post("/v1/teams/docs/documents", files={"file": ("empty.txt", b"")}, headers=h)
    assert empty.status_code == 400 and empty.json()["error"]["hint"]


def test_sessions_messages_context_usage_and_clear(api: Team) -> None:
    h = api.key("chat")
    api.client.post("/v1/teams/chat/memories", json={"content": "The staging database is db-stage-3"}, headers=h)
    sent = api.client.post(
        "/v1/teams/chat/sessions/s1/messages", json={"role": "user", "content": "hi there"}, headers=h
    )
    assert sent.status_code == 201 and sent.json()["content"] == "hi there"
    assert [m["content"] for m in api.client.get("/v1/teams/chat/sessions/s1/messages", headers=h).json()["items"]] == [
        "hi there"
    ]
    assert [s["id"] for s in api.client.get("/v1/teams/chat/sessions", headers=h).json()["items"]] == ["s1"]
    built = api.client.post(
        "/v1/teams/chat/sessions/s1/context",
        json={"query": "which staging database?", "context_window": 8000},
        headers=h,
    ).json()
    assert built["usage"]["window"] == 8000 and built["usage"]["used"] > 0 and built["usage"]["sections"]
    as_is = api.client.post("/v1/teams/chat/sessions/s1/context", json={}, headers=h)  # the UI, opening a session
    assert as_is.status_code == 200 and as_is.json()["usage"]["used"] > 0
    assert api.client.get("/v1/teams/chat/sessions/s1/usage", headers=h).status_code == 200
    wrong = api.client.delete("/v1/teams/chat/sessions/s1", params={"confirm": "nope"}, headers=h)
    assert wrong.status_code == 400
    assert api.client.delete("/v1/teams/chat/sessions/s1", params={"confirm": "s1"}, headers=h).status_code == 200
    stats = api.client.get("/v1/teams/chat/stats", headers=h).json()
    assert isinstance(stats, dict) and stats
    # What the UI's memory-control view shows: per source type and tier, storage bytes and the database size.
    assert sum(stats["by_tier"].values()) == stats["records"] and stats["by_source_type"]
    assert 0 < stats["storage_bytes"] and stats["db_size_bytes"] == stats["size_bytes"] > 0


def test_internal_endpoint_needs_its_own_token(api: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"team": "machines", "entities": [{"entity_type": "FILE", "entity_id": "f1", "content": "a file"}]}
    off = api.client.post("/v1/internal/files/f1/memory", json=body)
    assert off.status_code == 401 and "FUNES_INTERNAL_TOKEN" in off.json()["error"]["hint"]
    monkeypatch.setenv("FUNES_INTERNAL_TOKEN", "s3cret-token")
    key = api.key("machines")
    assert api.client.post("/v1/internal/files/f1/memory", json=body, headers=key).status_code == 401  # a key is not it
    ok = api.client.post("/v1/internal/files/f1/memory", json=body, headers={"X-Internal-Token": "s3cret-token"})
    assert ok.status_code == 202
    assert api.wait(ok.json()["job_id"], key)["status"] == "done"


def test_errors_share_one_shape(api: Team) -> None:
    h = api.key("acme")
    for reply in (
        api.client.get("/v1/no-such-route", headers=h),
        api.client.post("/v1/teams/acme/memories", json={"nope": 1}, headers=h),
        api.client.post(
            "/v1/teams/acme/memories", content=b"{not json", headers={**h, "content-type": "application/json"}
        ),
        api.client.get("/v1/teams/acme/memories/mem_missing", headers=h),
    ):
        error = reply.json()["error"]
        assert reply.status_code in (400, 404, 422) and set(error) == {"code", "message", "hint"} and error["message"]


def test_openapi_is_served_and_lists_every_route(api: Team) -> None:
    spec = api.client.get("/openapi.json").json()
    paths = set(spec["paths"])
    team = "/v1/teams/{team}"
    expected = {
        "/v1/health",
        "/v1/me",
        f"{team}/memories",
        f"{team}/memories/search",
        f"{team}/memories/has-file/{{file}}",
        f"{team}/memories/{{memory_id}}",
        f"{team}/memories/{{memory_id}}/history",
        f"{team}/memories/{{memory_id}}/restore",
        f"{team}/memories/generate",
        f"{team}/memories/regenerate",
        f"{team}/documents",
        f"{team}/documents/{{document_id}}",
        f"{team}/documents/{{document_id}}/reindex",
        f"{team}/sessions",
        f"{team}/sessions/{{session_id}}/messages",
        f"{team}/sessions/{{session_id}}/context",
        f"{team}/sessions/{{session_id}}/usage",
        f"{team}/sessions/{{session_id}}",
        f"{team}/clear",
        f"{team}/stats",
        f"{team}/projects/{{file}}/settings",
        f"{team}/jobs",
        "/v1/jobs/{job_id}",
        "/v1/internal/files/{file}/memory",
    }
    assert expected <= paths, expected - paths
    assert set(spec["paths"][f"{team}/memories/{{memory_id}}"]) == {"get", "patch", "delete"}
    assert api.client.get("/docs").status_code == 200


def test_rest_records_tool_calls_and_token_usage_like_the_cli(api: Team) -> None:
    h = api.key("usage")
    call = {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    asked = api.client.post(
        "/v1/teams/usage/sessions/u1/messages",
        json={"role": "assistant", "content": "Let me check.", "tool_calls": [call], "usage": {"prompt_tokens": 900, "completion_tokens": 40, "model": "m1"}},
        headers=h,
    )  # fmt: skip
    assert asked.status_code == 201, asked.text
    assert asked.json()["tool_calls"] == [call]
    answer = api.client.post(
        "/v1/teams/usage/sessions/u1/messages",
        json={"role": "tool", "content": "-3 C, snow", "tool_call_id": "call_1"},
        headers=h,
    )
    assert answer.status_code == 201 and answer.json()["tool_call_id"] == "call_1"
    usage = api.client.post(
        "/v1/teams/usage/sessions/u1/usage",
        json={"prompt_tokens": 1200, "completion_tokens": 80, "model": "m1", "context_window": 200000},
        headers=h,
    )
    assert usage.status_code == 201, usage.text
    totals = api.client.get("/v1/teams/usage/sessions/u1/usage", headers=h).json()["totals"]
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (2100, 120)
    orphan = api.client.post(
        "/v1/teams/usage/sessions/u1/messages", json={"role": "tool", "content": "result"}, headers=h
    )
    assert orphan.status_code == 400 and orphan.json()["error"]["hint"]


def test_an_admin_clears_everything_of_a_team_with_its_name_as_confirmation(api: Team) -> None:
    admin = api.key("wipe")
    for text in ("one fact", "another fact"):
        api.client.post("/v1/teams/wipe/memories", json={"content": text}, headers=admin)
    api.client.post("/v1/teams/keep/memories", json={"content": "kept elsewhere"}, headers=api.key("keep"))
    wrong = api.client.post("/v1/teams/wipe/clear", json={"everything": True, "confirm": "yes"}, headers=admin)
    assert wrong.status_code == 400 and '"confirm": "wipe"' in wrong.json()["error"]["hint"]
    both = api.client.post(
        "/v1/teams/wipe/clear", json={"everything": True, "file_id": "f", "confirm": "wipe"}, headers=admin
    )
    assert both.status_code == 400
    writer = api.client.post(
        "/v1/teams/wipe/clear", json={"everything": True, "confirm": "wipe"}, headers=api.key("wipe", "write")
    )
    assert writer.status_code == 403
    done = api.client.post("/v1/teams/wipe/clear", json={"everything": True, "confirm": "wipe"}, headers=admin)
    assert done.status_code == 200, done.text
    assert api.client.get("/v1/teams/wipe/memories", headers=admin).json()["items"] == []
    assert len(api.client.get("/v1/teams/keep/memories", headers=api.key("keep")).json()["items"]) == 1


def test_the_map_places_every_memory_by_meaning_and_links_near_neighbours(api: Team) -> None:
    h = api.key("atlas")
    for text in ("Revenue grew in Q3.", "Revenue grew in Q3 again.", "Lunch is at noon.", "The pager rotates weekly."):
        api.client.post("/v1/teams/atlas/memories", json={"content": text, "scope": "team"}, headers=h)
    drawn = api.client.get("/v1/teams/atlas/map", params={"link_similarity": 0.0}, headers=h)
    assert drawn.status_code == 200, drawn.text
    data = drawn.json()
    ids = {n["id"] for n in data["nodes"]}
    assert len(ids) == 4 and data["unplaced"] == 0
    assert all(0.0 <= n["x"] <= 1.0 and 0.0 <= n["y"] <= 1.0 for n in data["nodes"])
    assert data["links"] and all(link["source"] in ids and link["target"] in ids for link in data["links"])
    assert data == api.client.get("/v1/teams/atlas/map", params={"link_similarity": 0.0}, headers=h).json()
    assert api.client.get("/v1/teams/atlas/map", params={"limit": 0}, headers=h).status_code == 422
    assert api.client.get("/v1/teams/other-atlas/map", headers=api.key("other-atlas")).json()["nodes"] == []
