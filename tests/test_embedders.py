"""Embedders: the bundled local model, and any OpenAI-compatible server (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import funes
from funes.errors import BackendUnavailable, InvalidInput
from funes.providers.embed.openai import OpenAIEmbedder


class EmbeddingServer:
    """A tiny OpenAI-compatible embeddings server; ``script`` queues canned (status, body) answers."""

    def __init__(self, dims: int = 4) -> None:
        self.dims = dims
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                status, answer = server.script.pop(0) if server.script else (200, server.answer(body))
                raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                """Keep test output quiet."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Deterministic vectors (word lengths), listed in reverse index order to test sorting."""
        data = []
        for index, text in enumerate(body["input"]):
            vec = [0.0] * self.dims
            for word in text.split():
                vec[len(word) % self.dims] += 1.0
            vec[0] += 0.01
            data.append({"object": "embedding", "index": index, "embedding": vec})
        return {"object": "list", "model": body["model"], "data": list(reversed(data))}


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    """A running embeddings server on an ephemeral loopback port."""
    srv = EmbeddingServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def test_openai_embedder_success_and_ordering(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("my-model", base_url=server.url, api_key="sk-test", dimensions=4)
    vectors = emb.embed_batch(["a", "bb cc", "ddd ddd ddd"])
    assert vectors.shape == (3, 4) and vectors.dtype == np.float32
    assert vectors[0].tolist() == pytest.approx([0.01, 1, 0, 0])
    assert vectors[2].tolist() == pytest.approx([0.01, 0, 0, 3])
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings" and request["auth"] == "Bearer sk-test"
    assert request["body"] == {"model": "my-model", "input": ["a", "bb cc", "ddd ddd ddd"], "dimensions": 4}
    assert emb.model_id == "openai-compatible:my-model"


def test_openai_embedder_batches_requests(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("m", base_url=server.url, dimensions=4, batch_size=2)
    assert emb.embed_batch(["a", "b", "c", "d", "e"]).shape == (5, 4)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["auth"] is None


def test_unknown_model_size_is_probed_once(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("mystery-model", base_url=server.url)
    assert emb.dimensions == 4 and len(server.requests) == 1


def test_401_says_which_key_to_set(server: EmbeddingServer) -> None:
    server.script.append((401, {"error": {"message": "bad key"}}))
    emb = OpenAIEmbedder("m", base_url=server.url, api_key="wrong", dimensions=4)
    with pytest.raises(BackendUnavailable) as info:
        emb.embed_batch(["x"])
    assert "401" in info.value.message and "OPENAI_API_KEY" in (info.value.hint or "")
    assert len(server.requests) == 1


def test_500_is_retried(server: EmbeddingServer) -> None:
    server.script += [(500, {"error": "busy"}), (503, {"error": "busy"})]
    emb = OpenAIEmbedder("m", base_url=server.url, dimensions=4)
    assert emb.embed_batch(["retry me"]).shape == (1, 4)
    assert len(server.requests) == 3


def test_persistent_500_is_a_clear_error(server: EmbeddingServer) -> None:
    server.script += [(500, {"error": "down"})] * 3
    emb = OpenAIEmbedder("m", base_url=server.url, dimensions=4)
    with pytest.raises(BackendUnavailable) as info:
        emb.embed_batch(["x"])
    assert "500" in info.value.message and server.url in (info.value.hint or "")


@pytest.mark.parametrize(
    "answer",
    [
        b"this is not json",
        {"unexpected": True},
        {"data": [{"index": 0}]},
        {"data": [{"index": 0, "embedding": "nope"}]},
        {"data": []},
    ],
)
def test_malformed_answers_are_clear_errors(server: EmbeddingServer, answer: Any) -> None:
    server.script.append((200, answer))
    emb = OpenAIEmbedder("m", base_url=server.url, dimensions=4)
    with pytest.raises(BackendUnavailable) as info:
        emb.embed_batch(["x"])
    assert info.value.hint


def test_wrong_vector_size_names_the_setting(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("m", base_url=server.url, dimensions=8)
    with pytest.raises(InvalidInput) as info:
        emb.embed_batch(["x"])
    assert "embed_dimensions" in (info.value.hint or "")


def test_unreachable_server_is_a_clear_error() -> None:
    emb = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", dimensions=4, timeout=2)
    with pytest.raises(BackendUnavailable) as info:
        emb.embed_batch(["x"])
    assert "127.0.0.1:9" in (info.value.hint or "")


def test_service_end_to_end_with_an_openai_compatible_server(
    server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sk-env")
    with funes.open(
        str(tmp_path / "oa.db"),
        embedder="openai",
        embed_base_url=server.url,
        embed_model="nomic",
        embed_dimensions=4,
        embed_api_key_env="MY_EMBED_KEY",
    ) as service:
        memory = service.remember("vendors in Ohio")
        assert service.search("vendors")[0].memory.id == memory.id
        assert service.stats()["embedder"] == {"model_id": "openai-compatible:nomic", "dimensions": 4}
    assert {r["auth"] for r in server.requests} == {"Bearer sk-env"}


def test_openai_token_counts_use_cl100k() -> None:
    emb = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", dimensions=4)
    assert emb.count_tokens("hello world") == 2


@pytest.mark.slow
def test_local_embedder_matches_sentence_transformers(local_embedder: Any) -> None:
    from sentence_transformers import SentenceTransformer

    from funes.providers.embed.local import model_dir

    reference = SentenceTransformer(str(model_dir()), device="cpu")
    texts = [
        "I prefer US-based vendors with at least 90% energy efficiency",
        "hello",
        "Ünïcödé, emoji 🎉 and 東京",
        " ".join(["word"] * 250),
    ]
    expected = reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    got = local_embedder.embed_batch(texts)
    cosines = (expected * got).sum(axis=1) / np.linalg.norm(expected, axis=1) / np.linalg.norm(got, axis=1)
    assert np.all(np.abs(1.0 - cosines) < 1e-5), cosines
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    single = local_embedder.embed_batch([texts[0]], query=True)
    assert float(single[0] @ got[0]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_local_embedder_never_truncates(local_embedder: Any, real_mem: funes.Funes) -> None:
    long_text = " ".join(f"sentence {n} mentions topic{n}." for n in range(200))
    assert local_embedder.count_tokens(long_text) > local_embedder.max_tokens
    with pytest.raises(InvalidInput) as info:
        local_embedder.embed_batch([long_text])
    assert "limit" in info.value.message and info.value.hint
    memory = real_mem.remember(long_text)
    parts = real_mem.store.vectors_for([memory.id])[memory.id]
    assert len(parts) >= 4
    assert all(local_embedder.count_tokens(p) <= local_embedder.max_tokens for p in real_mem.parts(long_text))
    hit = real_mem.search("topic199")[0]
    assert hit.memory.id == memory.id


def test_single_queries_run_in_numpy_and_match_the_torch_pass(local_embedder: Any) -> None:
    from funes.providers.embed.local import LocalEmbedder

    texts = [
        "which vendors does the user prefer?",
        "a",
        "Ünïcödé, emoji 🎉 and 東京",
        " ".join(["word"] * 250),
    ]
    fresh = LocalEmbedder()
    numpy_vectors = np.stack([fresh.embed_batch([t], query=True)[0] for t in texts])
    assert fresh._weights is None  # no torch weights were loaded for them
    torch_vectors = local_embedder.embed_batch(texts)
    assert np.abs(numpy_vectors - torch_vectors).max() < 1e-5
    assert np.allclose(np.linalg.norm(numpy_vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_a_one_shot_cli_search_never_imports_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = str(tmp_path / "cold.db")
    with funes.open(db) as mem:
        mem.remember("The staging database lives in Frankfurt.")
    script = (
        "import sys\n"
        "from funes.interfaces.cli import run\n"
        f"code = run(['--db', {db!r}, 'search', 'where is staging?', '--json'])\n"
        "sys.stderr.write('TORCH=%s\\n' % ('torch' in sys.modules))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Frankfurt" in done.stdout
    assert "TORCH=False" in done.stderr
