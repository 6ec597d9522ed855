"""Check `funes mcp` (stdio) and `funes serve`'s /mcp (streamable HTTP) with the official MCP Inspector CLI.

Issue 27 asks that each MCP change be checked against
``@modelcontextprotocol/inspector`` from npm. This runs its CLI mode against
a fresh store over both transports: ``tools/list`` in ``--strict`` mode (no
schema errors; portability warnings are counted), every tool's
``outputSchema`` present, the resources, and a ``create_memory`` and a
``list_memories`` call whose ``structuredContent`` must validate against the
tool's declared ``outputSchema``. It exits 1 on the first failure.

    npm install --prefix /tmp/inspector @modelcontextprotocol/inspector@2.12.0
    python scripts/mcp_inspector.py /tmp/inspector/node_modules/.bin/mcp-inspector

Needs Node 20+, the ``mcp`` extra and jsonschema; uses the hash embedder, so no model.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema

SRC = Path(__file__).resolve().parents[1] / "src"


def inspector(binary: str, target: list[str], *args: str, env: dict[str, str]) -> tuple[Any, str]:
    """One inspector CLI call: its JSON answer and its stderr."""
    done = subprocess.run(
        [binary, "--cli", *target, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"inspector {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout), done.stderr


def check(binary: str, target: list[str], env: dict[str, str], label: str) -> None:
    """Every check over one transport; prints one line per check."""
    listed, notes = inspector(binary, target, "--method", "tools/list", "--strict", env=env)
    tools = {t["name"]: t for t in listed["tools"]}
    missing = [name for name, t in tools.items() if "outputSchema" not in t]
    assert not missing, f"{label}: tools without an outputSchema: {missing}"
    assert re.search(r"(?<!\d)0 errors", notes), f"{label}: schema errors: {notes[-2000:]}"
    warnings = notes.count("Warning: tool")
    print(f"{label}: {len(tools)} tools, each with an outputSchema; strict schema check: 0 errors, {warnings} warnings")
    resources, _ = inspector(binary, target, "--method", "resources/list", env=env)
    shown = json.dumps(resources)
    assert "/" + "tmp" not in shown and str(Path.home()) not in shown, f"{label}: a resource shows a path"
    print(f"{label}: {len(resources['resources'])} resources, no file-system path in them")
    calls = [
        ("create_memory", ["content=The team prefers PostgreSQL for services.", "memory_type=preference"]),
        ("list_memories", ["limit=5"]),
    ]
    for name, arguments in calls:
        args = [a for pair in arguments for a in ("--tool-arg", pair)]
        result, _ = inspector(binary, target, "--method", "tools/call", "--tool-name", name, *args, env=env)
        assert not result.get("isError"), f"{label}: {name} failed: {result}"
        jsonschema.validate(result["structuredContent"], tools[name]["outputSchema"])
        print(f"{label}: {name} answered structuredContent that validates against its outputSchema")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    binary = sys.argv[1]
    sys.path.insert(0, str(SRC))
    import funes

    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "FUNES_HOME": home, "FUNES_EMBEDDER": "hash", "PYTHONPATH": str(SRC)}
        env.pop("FUNES_DB_URL", None)
        check(binary, ["-e", f"FUNES_HOME={home}", "-e", "FUNES_EMBEDDER=hash", "-e", f"PYTHONPATH={SRC}",
                       sys.executable, "-m", "funes", "mcp"], env, "stdio")  # fmt: skip
        db = str(Path(home) / "served.db")
        with funes.open(db, embedder="hash", worker="off") as service:
            key = service.keys.create("t", "write")[0]
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "funes", "serve", "--db", db, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("funes serve did not start")
                time.sleep(0.2)
            http = ["--transport", "http", "--server-url", f"http://127.0.0.1:{port}/mcp"]
            check(binary, [*http, "--header", f"Authorization: Bearer {key}"], env, "streamable HTTP")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
