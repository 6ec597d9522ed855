"""`funes mcp --http` needs a bearer token (issue 9): a real server process, real HTTP requests on 127.0.0.1."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(home: Path, port: int, token: str | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FUNES_HOME": str(home), "FUNES_EMBEDDER": "hash"}
    env.pop("FUNES_MCP_TOKEN", None)
    if token is not None:
        env["FUNES_MCP_TOKEN"] = token
    code = "from funes.interfaces.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "mcp", "--http", "--port", str(port), "--project", "web"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return err.decode()


@pytest.fixture
def server(funes_home: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    proc = _start(funes_home, port, "fixed-token-123")
    yield f"http://127.0.0.1:{port}/mcp", proc
    if proc.poll() is None:
        _stop(proc)


@pytest.mark.parametrize(
    "auth", [None, "Bearer wrong", "Bearer fixed-token-12", "fixed-token-123", "Basic Zm9vOmJhcg=="]
)
def test_requests_without_the_token_are_refused(server: tuple[str, subprocess.Popen[bytes]], auth: str | None) -> None:
    url, _ = server
    headers = dict(HEADERS)
    if auth is not None:
        headers["Authorization"] = auth
    reply = httpx.post(url, json=INIT, headers=headers, timeout=30)
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "unauthorized" and "FUNES_MCP_TOKEN" in reply.json()["error"]["hint"]


def test_the_token_lets_a_client_in_and_host_checks_still_apply(server: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = server
    good = {**HEADERS, "Authorization": "Bearer fixed-token-123"}
    assert httpx.post(url, json=INIT, headers=good, timeout=30).status_code == 200
    # DNS rebinding: a foreign Host or Origin is refused even with the token.
    assert httpx.post(url, json=INIT, headers={**good, "Host": "evil.example:80"}, timeout=30).status_code in (403, 421)
    assert httpx.post(url, json=INIT, headers={**good, "Origin": "http://evil.example"}, timeout=30).status_code == 403


def test_a_generated_token_is_printed_once_and_works(funes_home: Path) -> None:
    port = _free_port()
    proc = _start(funes_home, port, None)
    try:
        line = b""
        deadline = time.monotonic() + 30
        while b"Bearer token" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline() if proc.stderr else b""
        match = re.search(r": (\S+)$", line.decode().strip())
        assert match, line
        token = match.group(1)
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx.post(url, json=INIT, headers=HEADERS, timeout=30).status_code == 401
        ok = httpx.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token}"}, timeout=30)
        assert ok.status_code == 200
    finally:
        rest = _stop(proc)
    assert token not in rest  # printed once
