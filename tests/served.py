"""`funes serve` as a real process on 127.0.0.1 for tests: start it on a store, stop it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

SERVE = "from funes.interfaces.cli import main; main()"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def funes_serve(store: str, home: Path, *args: str, **env_extra: str) -> Iterator[str]:
    """Run `funes serve --db store` (hash embedder, fast job polling) and yield its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUNES_")}
    env.update(FUNES_HOME=str(home), FUNES_EMBEDDER="hash", FUNES_JOB_POLL_SECONDS="0.05", **env_extra)
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--db", store, "--port", str(port), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "funes serve did not start"
            time.sleep(0.1)
        yield base
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)
