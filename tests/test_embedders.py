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


AGREEMENT_TEXTS = [
    "which vendors does the user prefer?",
    "a",
    "Ünïcödé, emoji 🎉 and 東京",
    "I prefer US-based vendors with at least 90% energy efficiency",
    " ".join(["word"] * 250),
    "The staging database lives in Frankfurt; production moved to Dublin in March.",
]


def _long_text_parts(mem: funes.Funes) -> list[str]:
    """A text over the model's limit, split into parts the way the service splits it before embedding."""
    long_text = " ".join(f"Meeting {n}: the team agreed to move service {n} to region eu-{n % 7}." for n in range(90))
    parts = mem.parts(long_text)
    assert len(parts) >= 3
    return parts


@pytest.mark.slow
def test_numpy_and_torch_backends_agree(local_embedder: Any, real_mem: funes.Funes) -> None:
    from funes.providers.embed.local import LocalEmbedder

    texts = AGREEMENT_TEXTS + _long_text_parts(real_mem)
    numpy_side = LocalEmbedder(backend="numpy")
    torch_side = LocalEmbedder(backend="torch")
    batched = numpy_side.embed_batch(texts)  # one padded, length-sorted batch
    one_by_one = np.stack([numpy_side.embed_batch([t], query=True)[0] for t in texts])  # unpadded
    reference = torch_side.embed_batch(texts)
    assert numpy_side._weights is None and torch_side._bert is None  # each ran its own backend only
    assert np.abs(batched - reference).max() < 1e-5
    assert np.abs(one_by_one - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    # The same vectors in another order and batch size: padding never leaks into a vector.
    small = LocalEmbedder(backend="numpy", batch_size=3)
    shuffled = small.embed_batch(texts[::-1])[::-1]
    assert np.abs(shuffled - reference).max() < 1e-5


def test_the_auto_backend_uses_torch_only_for_batches_once_torch_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from funes.errors import InvalidInput
    from funes.providers.embed import local

    embedder = local.LocalEmbedder()
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert embedder._backend_for(1) == "numpy"
    assert embedder._backend_for(local.TORCH_MIN_TEXTS) == "numpy"  # importing torch costs more than it wins
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    assert embedder._backend_for(local.TORCH_MIN_TEXTS - 1) == "numpy"
    assert embedder._backend_for(local.TORCH_MIN_TEXTS) == "torch"
    assert local.LocalEmbedder(backend="numpy")._backend_for(100) == "numpy"
    assert local.LocalEmbedder(backend="torch")._backend_for(1) == "torch"
    with pytest.raises(InvalidInput) as info:
        local.LocalEmbedder(backend="tensorflow")
    assert "numpy" in (info.value.hint or "")


@pytest.mark.slow
def test_the_local_extra_never_imports_torch(tmp_path: Path) -> None:
    """Without torch installed (imports of it fail here), remember, bulk writes and search all work."""
    import subprocess
    import sys

    script = f"""
import importlib.abc, sys

attempts = []

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}}")
        return None

sys.meta_path.insert(0, NoTorch())
import numpy as np
import funes
from funes.providers.embed.local import LocalEmbedder
with funes.open({str(tmp_path / "local.db")!r}) as mem:
    mem.remember("The staging database lives in Frankfurt.")
    mem.remember_many([f"Note {{n}}: vendor {{n}} ships from warehouse {{n % 5}}." for n in range(80)])
    mem.remember(" ".join(f"sentence {{n}} mentions topic{{n}}." for n in range(120)))  # split into parts
    hit = mem.search("where is staging?")[0]
    assert "Frankfurt" in hit.memory.content, hit
vectors = LocalEmbedder().embed_batch([f"text {{n}}" for n in range(100)])
assert vectors.shape == (100, 384)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "sentence_transformers"))
print("HEAVY", heavy)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


@pytest.mark.slow
def test_a_store_written_with_torch_is_searched_with_numpy_without_a_reindex(tmp_path: Path) -> None:
    from funes.providers.embed.local import LocalEmbedder

    db = str(tmp_path / "before.db")
    text = "The staging database lives in Frankfurt."
    with funes.open(db, embedder=LocalEmbedder(backend="torch")) as mem:  # how every store was written before
        memory = mem.remember(text)
        [stored] = mem.store.vectors_for([memory.id])[memory.id]
    with funes.open(db, embed_runtime="numpy") as mem:
        assert mem.stats()["embedder"] == {"model_id": "sentence-transformers/all-MiniLM-L6-v2", "dimensions": 384}
        assert mem.search("where is the staging database?")[0].memory.id == memory.id
        mem.remember("Production runs in Dublin.")
        assert mem.search("production region")[0].memory.content == "Production runs in Dublin."
    again = LocalEmbedder(backend="numpy").embed_batch([text])[0]
    assert np.abs(again - np.asarray(stored)).max() < 1e-5


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
