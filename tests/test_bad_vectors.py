"""Zero and NaN vectors (issue 9): refused at every entry, and found by doctor if one is already stored."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import funes
from funes.errors import BackendUnavailable, InvalidInput
from funes.providers.embed import HashEmbedder
from funes.store.connection import driver

DIMS = 8


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings that answers with ``mode`` vectors: good, zero or nan."""

    mode = "good"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        data = []
        for index, text in enumerate(body["input"]):
            vec: list[Any] = [float(len(text) % 7 + 1)] + [0.5] * (DIMS - 1)
            if type(self).mode == "zero":
                vec = [0.0] * DIMS
            raw_vec = json.dumps(vec).replace("0.5", "NaN") if type(self).mode == "nan" else json.dumps(vec)
            data.append(f'{{"object": "embedding", "index": {index}, "embedding": {raw_vec}}}')
        raw = ('{"object": "list", "model": "m", "data": [' + ", ".join(data) + "]}").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def server_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Embeddings.mode = "good"
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("mode", ["zero", "nan"])
def test_an_embedding_server_returning_bad_vectors_is_refused(tmp_path: Path, server_url: str, mode: str) -> None:
    options = {"embedder": "openai", "embed_base_url": server_url, "embed_model": "m", "embed_dimensions": DIMS}
    with funes.open(str(tmp_path / "m.db"), worker="off", **options) as mem:
        good = mem.remember("The invoice run is on Fridays")
        Embeddings.mode = mode
        with pytest.raises(BackendUnavailable, match="all zeros or hold NaN") as caught:
            mem.remember("The standup is at nine")
        assert caught.value.hint and "embedding server" in caught.value.hint
        Embeddings.mode = "good"
        assert [m.id for m in mem.list().items] == [good.id]  # nothing half-written
        assert mem.search("invoice run")[0].memory.id == good.id
        assert mem.doctor() == []


def _b64(values: list[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()


def _export(tmp_path: Path) -> list[dict[str, Any]]:
    with funes.open(str(tmp_path / "src.db"), embedder=HashEmbedder(DIMS)) as mem:
        mem.remember("Deploys happen on Tuesdays")
        mem.remember("Rollbacks need two approvals")
        return [json.loads(line) for line in mem.export_lines()]


@pytest.mark.parametrize(
    "vectors, message",
    [
        ([_b64([0.0] * DIMS)], "all zeros"),
        ([_b64([float("nan")] * DIMS)], "NaN or infinite"),
        ([_b64([float("inf")] + [1.0] * (DIMS - 1))], "NaN or infinite"),
        (["not base64!"], "not base64"),
        ([base64.b64encode(b"abc").decode()], "not base64 float32"),  # 3 bytes: not a whole float
        ("AAAA", "not a list"),
        ([12], "not a list"),
    ],
)
def test_import_refuses_malformed_vectors_and_imports_nothing(tmp_path: Path, vectors: object, message: str) -> None:
    lines = _export(tmp_path)
    lines[-1]["vectors"] = vectors
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with funes.open(str(tmp_path / "dst.db"), embedder=HashEmbedder(DIMS)) as mem:
        with pytest.raises(InvalidInput, match=message):
            mem.import_(path.read_text(encoding="utf-8").splitlines())
        assert not mem.list().items
    # The CLI: a message and exit 1, never a traceback.
    env = {**os.environ, "FUNES_HOME": str(tmp_path / "home"), "FUNES_EMBEDDER": f"hash:{DIMS}"}
    code = "import sys; from funes.interfaces.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, "--db", str(tmp_path / "cli.db"), "import", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "Line" in proc.stderr


def test_doctor_finds_a_zero_vector_already_stored_and_search_survives_it(tmp_path: Path) -> None:
    db = str(tmp_path / "old.db")
    with funes.open(db, embedder=HashEmbedder(DIMS)) as mem:
        bad = mem.remember("Deploys happen on Tuesdays")
        mem.remember("Rollbacks need two approvals on Tuesdays")
    # A store written before issue 9: plant a zero vector the way an old import did.
    conn = driver().connect(db)
    conn.enable_load_extension(True)
    import sqlite_vec

    sqlite_vec.load(conn)
    cols = "vector_id, tenant, scope, vis, user_id, kind, memory_type, source_type, source_id, created_at, expires_at"
    (vector_id,) = conn.execute(
        "SELECT v.vector_id FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid WHERE m.id = ?",
        (bad.id,),
    ).fetchone()
    row = conn.execute(f"SELECT {cols} FROM vec_memories WHERE vector_id = ?", (vector_id,)).fetchone()
    conn.execute("DELETE FROM vec_memories WHERE vector_id = ?", (vector_id,))
    conn.execute(
        f"INSERT INTO vec_memories ({cols}, embedding) VALUES ({', '.join('?' * 12)})",
        (*row, np.zeros(DIMS, dtype=np.float32).tobytes()),
    )
    conn.commit()
    conn.close()
    with funes.open(db, embedder=HashEmbedder(DIMS)) as mem:
        problems = mem.doctor()
        assert any("zero or have NaN" in p and "funes reindex" in p for p in problems), problems
        hits = mem.search("Tuesdays")  # used to raise TypeError for the whole tenant
        assert {h.memory.content for h in hits} >= {"Rollbacks need two approvals on Tuesdays"}
        mem.reindex()
        assert mem.doctor() == []
