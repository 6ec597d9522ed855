"""`funes serve` as a real process on 127.0.0.1: MCP for teams with the official client, and SIGKILL durability."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from llm_servers import WireServer, openai_answer
from llm_servers import serve as serve_llm
from mcp import Client

import funes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(db: Path, port: int, **env_extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FUNES_EMBEDDER": "hash", "FUNES_JOB_POLL_SECONDS": "0.05", **env_extra}
    code = "from funes.interfaces.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--db", str(db), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "funes serve did not start"
        time.sleep(0.1)


def _keys(db: Path, *specs: tuple[str, str]) -> list[str]:
    with funes.open(str(db), embedder="hash", worker="off") as service:
        # The first write records the store's embedder identity (two processes opening a store
        # that has none yet would each have to record it).
        service.remember("setup", tenant="setup")
        return [service.keys.create(team, role)[0] for team, role in specs]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[str], subprocess.Popen[bytes]]]:
    db = tmp_path / "team.db"
    keys = _keys(db, ("team-a", "write"), ("team-b", "admin"))
    port = _free_port()
    proc = _start(db, port)
    yield f"http://127.0.0.1:{port}", keys, proc
    if proc.poll() is None:
        proc.terminate()
        proc.communicate(timeout=30)


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_mcp_over_http_uses_the_key_s_team_and_never_crosses_tenants(
    server: tuple[str, list[str], subprocess.Popen[bytes]],
) -> None:
    url, (key_a, key_b), _ = server

    async def main() -> None:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {key_a}"}) as http_a,
            Client(streamable_http_client(f"{url}/mcp", http_client=http_a)) as a,
            create_mcp_http_client(headers={"Authorization": f"Bearer {key_b}"}) as http_b,
            Client(streamable_http_client(f"{url}/mcp", http_client=http_b)) as b,
        ):
            created = await a.call_tool(
                "create_memory", {"content": "Team A's vault code is 8812", "memory_type": "fact"}
            )
            assert not created.is_error, _text(created)
            memory_id = created.structured_content["memory_id"]
            found = await a.call_tool("search_memories", {"query": "vault code"})
            assert found.structured_content["results"][0]["id"] == memory_id
            # Team B: cannot find, read, update or delete A's memory; the id answers "not found".
            search = await b.call_tool("search_memories", {"query": "vault code"})
            assert memory_id not in str(search.structured_content)
            for name, args in (
                ("update_memory", {"memory_id": memory_id, "content": "overwritten by B"}),
                ("delete_memory", {"memory_id": memory_id}),
            ):
                result = await b.call_tool(name, args)
                text = _text(result).lower()
                assert result.is_error and ("not found" in text or "no memory" in text), text
            read = await b.call_tool("get_memory_context", {"query": "vault code 8812"})
            assert "8812" not in _text(read)
            # Tool arguments cannot pick the tenant.
            sneaky = await b.call_tool("search_memories", {"query": "vault code", "tenant": "team-a"})
            assert "8812" not in str(sneaky.structured_content)

    anyio.run(main)
    a_headers = {"Authorization": f"Bearer {key_a}"}
    items = httpx.get(f"{url}/v1/teams/team-a/memories", headers=a_headers).json()["items"]
    assert [m["content"] for m in items] == ["Team A's vault code is 8812"]


def test_mcp_needs_a_key_and_checks_host_and_origin(server: tuple[str, list[str], subprocess.Popen[bytes]]) -> None:
    url, (key_a, _), _ = server
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(f"{url}/mcp/", json=init, headers=headers).status_code == 401
    good = {**headers, "Authorization": f"Bearer {key_a}"}
    assert httpx.post(f"{url}/mcp/", json=init, headers=good).status_code == 200
    assert httpx.post(f"{url}/mcp/", json=init, headers={**good, "Host": "evil.example"}).status_code in (403, 421)
    assert httpx.post(f"{url}/mcp/", json=init, headers={**good, "Origin": "http://evil.example"}).status_code == 403


def _slow_llm(server: WireServer, path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    time.sleep(0.15)  # a summary takes a while, so the kill finds generations pending
    return openai_answer(server, path, headers, body)


@pytest.fixture
def slow_llm() -> Iterator[dict[str, str]]:
    with serve_llm(_slow_llm) as server:
        yield {"FUNES_LLM": "openai", "FUNES_LLM_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "test-key"}


def test_sigkill_with_pending_jobs_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, slow_llm: dict[str, str]
) -> None:
    db = tmp_path / "team.db"
    (key,) = _keys(db, ("acme", "admin"))
    headers = {"Authorization": f"Bearer {key}"}
    port = _free_port()
    proc = _start(db, port, FUNES_GENERATE_COOLDOWN_SECONDS="0", **slow_llm)
    url = f"http://127.0.0.1:{port}/v1/teams/acme"
    files, uploads, accepted = 15, 8, []
    with httpx.Client(timeout=30) as http:
        for i in range(files):
            entities = [
                {"entity_type": "CODE_CELL", "entity_id": f"cell-{j}", "content": f"file {i} cell {j} computes totals"}
                for j in range(3)
            ]
            reply = http.post(
                f"{url}/memories/generate", json={"file_id": f"nb-{i}", "entities": entities}, headers=headers
            )
            assert reply.status_code == 202
            accepted.append(reply.json()["job_id"])
        for i in range(uploads):
            body = f"# Note {i}\n\nMeeting room {i} has a projector and {i + 3} chairs.\n".encode()
            reply = http.post(f"{url}/documents", files={"file": (f"note-{i}.md", body)}, headers=headers)
            assert reply.status_code == 202
            accepted.append(reply.json()["job_id"])
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    with funes.open(str(db), embedder="hash", worker="off") as service:
        unfinished = [j for j in (service.jobs.get(i) for i in accepted) if j.status != "done"]
    assert len(unfinished) >= files // 2  # the kill really interrupted accepted work
    proc = _start(db, port, **slow_llm)
    try:
        deadline = time.monotonic() + 120
        with httpx.Client(timeout=30) as http:
            while True:
                jobs = [http.get(f"http://127.0.0.1:{port}/v1/jobs/{i}", headers=headers).json() for i in accepted]
                if all(j["status"] in ("done", "failed") for j in jobs) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert [j["status"] for j in jobs] == ["done"] * len(accepted), [j["last_error"] for j in jobs]
            for i in range(files):
                page = http.get(f"{url}/memories", params={"file_id": f"nb-{i}", "limit": 100}, headers=headers).json()
                cells = sorted(m["entity_id"] for m in page["items"])
                assert cells == ["cell-0", "cell-1", "cell-2"], (i, cells)  # every effect, exactly once
            docs = http.get(f"{url}/documents", headers=headers).json()["items"]
            assert sorted(d["name"] for d in docs) == sorted(f"note-{i}.md" for i in range(uploads))
            assert all(d["status"] == "indexed" and d["version"] == 1 for d in docs)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    # Tell the reader how much work the kill interrupted (the test holds either way).
    print(f"{len(unfinished)} of {len(accepted)} accepted jobs were unfinished at SIGKILL")


def test_two_servers_on_one_store_share_the_work_and_run_each_job_once(
    tmp_path: Path, slow_llm: dict[str, str]
) -> None:
    db = tmp_path / "team.db"
    (key,) = _keys(db, ("acme", "admin"))
    headers = {"Authorization": f"Bearer {key}"}
    ports = [_free_port(), _free_port()]
    procs = [_start(db, port, FUNES_GENERATE_COOLDOWN_SECONDS="0", **slow_llm) for port in ports]
    try:
        accepted = []
        with httpx.Client(timeout=30) as http:
            for i in range(12):
                port = ports[i % 2]
                entities = [{"entity_type": "FILE", "entity_id": f"f{i}", "content": f"file {i} of the shared queue"}]
                reply = http.post(
                    f"http://127.0.0.1:{port}/v1/teams/acme/memories/generate",
                    json={"file_id": f"f{i}", "entities": entities},
                    headers=headers,
                )
                assert reply.status_code == 202
                accepted.append(reply.json()["job_id"])
            deadline = time.monotonic() + 120
            while True:
                jobs = [http.get(f"http://127.0.0.1:{ports[0]}/v1/jobs/{j}", headers=headers).json() for j in accepted]
                if all(j["status"] == "done" for j in jobs) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert all(j["status"] == "done" and j["attempts"] == 1 for j in jobs), [
                (j["status"], j["attempts"], j["last_error"], j["locked_by"]) for j in jobs
            ]
            items = http.get(
                f"http://127.0.0.1:{ports[1]}/v1/teams/acme/memories",
                params={"entity_type": "FILE", "limit": 100},
                headers=headers,
            ).json()["items"]
            assert sorted(m["entity_id"] for m in items) == sorted(f"f{i}" for i in range(12))
    finally:
        for proc in procs:
            proc.terminate()
            proc.communicate(timeout=30)


def test_a_keyless_sqlite_store_on_loopback_serves_single_user_and_says_so(tmp_path: Path) -> None:
    port = _free_port()
    proc = _start(tmp_path / "solo.db", port)
    try:
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/v1/health").json()["auth"] is False
        me = httpx.get(f"{base}/v1/me").json()
        assert me["role"] == "admin" and me["key_id"] is None
        assert httpx.get(f"{base}/v1/me", headers={"Authorization": "Bearer fk_wrong"}).status_code == 401
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Single-user mode" in err.decode()


def test_a_busy_port_is_a_clear_error_before_any_announcement(tmp_path: Path) -> None:
    """`funes serve` on a port another process holds says so and how to pick another, and prints no URL."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {**os.environ, "FUNES_EMBEDDER": "hash"}
        code = "from funes.interfaces.cli import main; main()"
        done = subprocess.run(
            [sys.executable, "-c", code, "serve", "--db", str(tmp_path / "t.db"), "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode != 0
    assert f"Cannot listen on 127.0.0.1:{port}: the port is in use." in done.stderr
    assert "--port" in done.stderr and "Hint" in done.stderr
    assert "Funes team server:" not in done.stderr and "http://" not in done.stderr


def test_the_servers_connections_send_without_waiting_for_the_clients_ack() -> None:
    """Every connection `funes serve` accepts has TCP_NODELAY, as asyncio gives it to the sockets it makes itself.

    Without it (the listening socket's proto is 0, so asyncio skipped it), Nagle held each answer
    on a kept-alive connection until the client's delayed ACK: 40 ms on every request after the first.
    """
    import asyncio

    from funes.interfaces.server.app import _listen

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = _listen("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        try:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            flag = await asyncio.wait_for(seen, 30)
            writer.close()
            return flag
        finally:
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0


def _uncounted(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its access counters (a REST search counts its own reads)."""
    return {k: v for k, v in record.items() if k not in ("access_count", "last_accessed")}


def test_search_and_create_answer_what_the_library_answers(tmp_path: Path) -> None:
    """A REST search answers the library's search of the same store (same hits, order and numbers), a create its record.

    ``as_of`` pins the clock both searches measure recency from; access counters, which the REST search bumps,
    are left out. bench/server_ab_bench.py makes the same comparison between two checkouts' servers.
    """
    db = tmp_path / "answers.db"
    (key,) = _keys(db, ("acme", "write"))
    with funes.open(str(db), embedder="hash", worker="off") as service:
        service.remember_many(
            [f"Note {i}: the {('budget', 'roadmap', 'vendor', 'audit')[i % 4]} review of week {i}" for i in range(30)],
            tenant="acme",
            scope="team",
        )
    port = _free_port()
    proc = _start(db, port)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1/teams/acme", headers=headers) as http:
            created = http.post("/memories", json={"content": "The review of the budget moved to Friday"})
            time.sleep(0.01)
            as_of = datetime.now(UTC).isoformat()
            found = http.get("/memories/search", params={"q": "budget review", "as_of": as_of, "limit": 8})
            missing = http.get("/memories/search", params={"q": ""})
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert created.status_code == 201 and created.headers["content-type"] == "application/json"
    assert found.status_code == 200 and found.headers["content-type"] == "application/json"
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "invalid_input"
    with funes.open(str(db), embedder="hash", worker="off") as service:
        record = service.get(created.json()["id"], tenant="acme").to_dict()
        hits = service.search("budget review", tenant="acme", as_of=as_of, limit=8, track=False)
    assert _uncounted(created.json()) == _uncounted(json.loads(json.dumps(record)))
    answer = found.json()
    assert record["id"] in [h["memory"]["id"] for h in answer["hits"]] and len(answer["hits"]) > 1
    library = json.loads(json.dumps({"query": "budget review", "hits": [h.to_dict() for h in hits], "degraded": None}))
    assert hits.degraded is None and answer["degraded"] is None and answer["query"] == library["query"]
    assert [{**h, "memory": _uncounted(h["memory"])} for h in answer["hits"]] == [
        {**h, "memory": _uncounted(h["memory"])} for h in library["hits"]
    ]
