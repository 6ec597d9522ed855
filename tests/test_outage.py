"""Memory that survives an embedder outage, against a real OpenAI-compatible server on 127.0.0.1.

The server is stopped and started again on the same port, as Ollama would
be. While it is down: commands that don't embed never touch it; searches
degrade to keywords and say so; writes are accepted, findable by keyword at
once, and their vectors wait as durable jobs that run when it is back.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

import funes
from funes.interfaces.cli import main
from funes.interfaces.mcp_server import build_server

DIMS = 16
TOPICS = ("cat", "dog", "bark", "night", "mat", "fridge", "wifi", "password")


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings: a vector per topic word, so meaning-free but deterministic."""

    requests = 0

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        type(self).requests += 1
        data = []
        for index, text in enumerate(body["input"]):
            vec = [0.01] * DIMS
            for word in text.lower().replace(".", " ").split():
                for n, topic in enumerate(TOPICS):
                    if word.startswith(topic):
                        vec[n] += 1.0
            data.append({"object": "embedding", "index": index, "embedding": vec})
        raw = json.dumps({"object": "list", "model": body["model"], "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


class Server:
    """A server that can be stopped and started again on the same port."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.httpd: ThreadingHTTPServer | None = None

    def start(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Embeddings)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.httpd is not None
        self.httpd.shutdown()
        self.httpd.server_close()
        self.httpd = None


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    srv.start()
    yield srv
    if srv.httpd is not None:
        srv.stop()


def settings(server: Server) -> dict[str, Any]:
    """An unknown model (no size on record), so only the server, or the store, knows its dimensions."""
    return {
        "embedder": "openai",
        "embed_base_url": server.url,
        "embed_model": "local-test-embed",
        "embed_dimensions": 0,
        "embed_timeout": 2.0,
        "embedder_retry_seconds": 0.0,
        "job_backoff_seconds": 0.01,
        "job_backoff_max_seconds": 0.05,
    }


def env(server: Server, db: str) -> dict[str, str]:
    return {
        "FUNES_DB_PATH": db,
        "FUNES_EMBEDDER": "openai",
        "FUNES_EMBED_BASE_URL": server.url,
        "FUNES_EMBED_MODEL": "local-test-embed",
        "FUNES_EMBED_TIMEOUT": "2",
        "FUNES_EMBEDDER_RETRY_SECONDS": "0",
        "FUNES_JOB_BACKOFF_MAX_SECONDS": "0.05",
    }


def test_an_outage_loses_nothing_and_search_degrades_to_keywords(tmp_path: Path, server: Server) -> None:
    db = str(tmp_path / "outage.db")
    with funes.open(db, worker="off", **settings(server)) as mem:
        cat = mem.remember("The cat sat on the mat")
    server.stop()

    # A new process on the stopped server: opening, reading and exporting never call it.
    Embeddings.requests = 0
    with funes.open(db, worker="off", **settings(server)) as mem:
        assert mem.get(cat.id).content == "The cat sat on the mat"
        assert [m.id for m in mem.list().items] == [cat.id]
        assert mem.stats()["embedder_configured"] == {
            "model_id": "openai-compatible:local-test-embed",
            "dimensions": DIMS,
        }
        assert mem.doctor() == []
        assert len(list(mem.export_lines())) == 2

        hits = mem.search("cat mat")
        assert hits.degraded == "keyword-only" and [h.memory.id for h in hits] == [cat.id]

        dog = mem.remember("The dog barks at night")
        assert mem.get(dog.id).content == "The dog barks at night"
        assert [h.memory.id for h in mem.search("barks")] == [dog.id]  # findable by keyword at once
        note = tmp_path / "notes.md"
        note.write_text("# Wifi\n\nThe wifi password is on the fridge.\n")
        result = mem.ingest(str(note))
        assert result.status == "indexed" and any("unreachable" in w for w in result.document.warnings)
        session = mem.session("s1")
        session.add_message("user", "Remind me to feed the dog at night")
        edited = mem.update(cat.id, content="The cat sleeps on the fridge")
        assert edited.version == 2

        stats = mem.stats()
        pending = stats["pending_vectors"]
        assert pending == 4 + result.chunks - 1  # dog, the message, the edit, and the note's chunks
        health = mem.health()
        assert health["problems"] == [] and "wait for their vectors" in health["notes"][0]
        for _ in range(12):  # more attempts than job_max_attempts: an outage never fails them for good
            mem.run_jobs()
        assert {j.status for j in mem.jobs.list()} == {"queued"}
    assert Embeddings.requests == 0

    server.start()
    with funes.open(db, worker="off", **settings(server)) as mem:
        import time

        deadline = time.monotonic() + 10
        while mem.stats()["pending_vectors"] and time.monotonic() < deadline:
            mem.run_jobs()
            time.sleep(0.02)
        assert mem.stats()["pending_vectors"] == 0
        assert mem.doctor() == []
        hits = mem.search("dog night")
        assert hits.degraded is None
        assert hits[0].memory.id == dog.id and hits[0].explanation.vector_rank is not None
        fridge = mem.search("fridge", min_similarity=0.5)
        assert {h.memory.id for h in fridge} >= {cat.id}  # the edit was embedded with its new text


def test_cli_commands_that_do_not_embed_work_while_the_server_is_down(tmp_path: Path, server: Server) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner(env=env(server, db))
    added = runner.invoke(main, ["add", "The cat sat on the mat", "--json"])
    assert added.exit_code == 0, added.output
    cat = json.loads(added.output)["id"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe wifi password is on the fridge.\n")
    assert runner.invoke(main, ["ingest", str(tmp_path / "docs")]).exit_code == 0
    server.stop()
    Embeddings.requests = 0
    for args in (
        ["list", "--json"],
        ["get", cat],
        ["stats", "--json"],
        ["export", str(tmp_path / "backup.jsonl")],
        ["doctor"],
        ["docs", "list"],
        ["jobs", "list"],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    assert (tmp_path / "backup.jsonl").read_text().count("\n") >= 3

    searched = runner.invoke(main, ["search", "cat", "--json"])
    assert searched.exit_code == 0, searched.output
    assert "degraded" in searched.stderr
    assert [h["degraded"] for h in json.loads(searched.stdout)] == ["keyword-only"]

    added = runner.invoke(main, ["add", "The dog barks at night", "--json"])
    assert added.exit_code == 0, added.output
    doctor = runner.invoke(main, ["doctor", "--json"])
    assert doctor.exit_code == 0 and json.loads(doctor.output)["pending_vectors"] == 1
    assert runner.invoke(main, ["rm", cat]).exit_code == 0
    assert Embeddings.requests == 0  # only search and add tried it

    server.start()
    ran = runner.invoke(main, ["jobs", "run", "--json"])
    # The vectors job, and the scheduled session retention that `jobs run` queues.
    assert ran.exit_code == 0 and json.loads(ran.output)["done"] == 2
    assert json.loads(runner.invoke(main, ["doctor", "--json"]).output)["pending_vectors"] == 0


def test_tools_and_mcp_say_when_search_is_keyword_only(tmp_path: Path, server: Server) -> None:
    db = str(tmp_path / "tools.db")
    with funes.open(db, worker="off", **settings(server)) as mem:
        mem.remember("The user prefers the cat named Mat", type="preference")
        server.stop()
        result = mem.execute_tool("search_memories", {"query": "cat"})
        assert not result.is_error and result.data["degraded"] == "keyword-only"
        assert result.text.startswith("Note: search is degraded (keyword-only)")
        assert mem.execute_tool("memory_search", {"query": "cat"}).data["degraded"] == "keyword-only"
        created = mem.execute_tool("create_memory", {"content": "The dog barks at night", "memory_type": "fact"})
        assert not created.is_error

        async def over_mcp() -> None:
            async with Client(build_server(mem, project="p")) as client:
                answer = await client.call_tool("search_memories", {"query": "dog"})
                assert not answer.is_error
                assert answer.structured_content["degraded"] == "keyword-only"
                assert "degraded" in answer.content[0].text

        anyio.run(over_mcp)
