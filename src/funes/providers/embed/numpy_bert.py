"""A BERT encoder with mean pooling in numpy: all-MiniLM-L6-v2 without torch.

The forward pass of sentence-transformers' ``BertModel`` + ``Pooling(mean)`` +
``Normalize``, over the weights that ``safetensors.numpy`` reads from the
packaged ``model.safetensors``. A padded batch carries an attention mask: a
padded word piece is never pooled and all but never attended to (its key
scores are -inf, floored at 80 below the row's best before the softmax: a
weight under 2e-35), as in sentence-transformers. Every matrix product
runs in the BLAS numpy links (OpenBLAS in numpy's wheels), with its threads.

The weights are laid out once for numpy: transposed to (in, out), the query,
key and value projections fused into one product, and the query's 1/sqrt(64)
scale folded into its weights (a power of two: exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # Abramowitz & Stegun 7.1.26
_P = 0.3275911
_SQRT_HALF = np.float32(np.sqrt(0.5))
# exp() of anything lower is a denormal float32, slow in every product that follows; exp(-80) is
# 1.8e-35, far below float32's resolution of 1, so flooring there changes no result.
_EXP_FLOOR = np.float32(-80.0)
_FFN_ROWS = 256  # word pieces per feed-forward block: 256 x 1536 float32 activations are 1.5 MB


class NumpyBert:
    """The encoder's weights, laid out for numpy, and its forward pass."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict[str, Any]) -> None:
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = np.float32(config["layer_norm_eps"])
        scale = np.float32(1.0 / np.sqrt(self.head_dim))

        def f32(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.word = f32("embeddings.word_embeddings.weight")
        # Token type 0 for every word piece, as sentence-transformers passes: folded into the positions.
        self.position = f32("embeddings.position_embeddings.weight") + f32("embeddings.token_type_embeddings.weight")[0]
        self.embed_norm = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        self.layers: list[dict[str, np.ndarray]] = []
        for layer in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{layer}."
            qkv = np.concatenate(
                [
                    f32(p + "attention.self.query.weight") * scale,
                    f32(p + "attention.self.key.weight"),
                    f32(p + "attention.self.value.weight"),
                ]
            )
            qkv_bias = np.concatenate(
                [
                    f32(p + "attention.self.query.bias") * scale,
                    f32(p + "attention.self.key.bias"),
                    f32(p + "attention.self.value.bias"),
                ]
            )
            self.layers.append(
                {
                    "qkv": np.ascontiguousarray(qkv.T),
                    "qkv_b": qkv_bias,
                    "out": np.ascontiguousarray(f32(p + "attention.output.dense.weight").T),
                    "out_b": f32(p + "attention.output.dense.bias"),
                    "norm1": f32(p + "attention.output.LayerNorm.weight"),
                    "norm1_b": f32(p + "attention.output.LayerNorm.bias"),
                    "up": np.ascontiguousarray(f32(p + "intermediate.dense.weight").T),
                    "up_b": f32(p + "intermediate.dense.bias"),
                    "down": np.ascontiguousarray(f32(p + "output.dense.weight").T),
                    "down_b": f32(p + "output.dense.bias"),
                    "norm2": f32(p + "output.LayerNorm.weight"),
                    "norm2_b": f32(p + "output.LayerNorm.bias"),
                }
            )

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit vectors, one per row of ``ids`` (batch, width); ``mask`` marks the real word pieces."""
        batch, width = ids.shape
        hidden, heads, head_dim = self.hidden, self.heads, self.head_dim
        x = self.word[ids.reshape(-1)].reshape(batch, width, hidden)
        x += self.position[:width][None, :, :]
        x = _layer_norm(x.reshape(batch * width, hidden), *self.embed_norm, self.eps)
        padded = not bool(mask.all())
        # -inf on the padded keys: softmax gives them exactly zero weight.
        key_bias = np.where(mask, np.float32(0.0), np.float32(-np.inf))[:, None, None, :] if padded else None
        for w in self.layers:
            qkv = x @ w["qkv"]
            qkv += w["qkv_b"]
            qkv = qkv.reshape(batch, width, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            scores = qkv[0] @ qkv[1].transpose(0, 1, 3, 2)  # (batch, heads, width, width)
            if key_bias is not None:
                scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.maximum(scores, _EXP_FLOOR, out=scores)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * width, hidden)
            attended = context @ w["out"]
            attended += w["out_b"]
            attended += x
            x = _layer_norm(attended, w["norm1"], w["norm1_b"], self.eps)
            out = np.empty_like(x)
            for start in range(0, len(x), _FFN_ROWS):  # the 4x wider activations stay in cache
                rows = slice(start, start + _FFN_ROWS)
                h = x[rows] @ w["up"]
                h += w["up_b"]
                _gelu(h)
                np.matmul(h, w["down"], out=out[rows])
            out += w["down_b"]
            out += x
            x = _layer_norm(out, w["norm2"], w["norm2_b"], self.eps)
        x = x.reshape(batch, width, hidden)
        if padded:
            weights = mask.astype(np.float32)
            pooled = np.einsum("bwh,bw->bh", x, weights) / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
        else:
            pooled = x.mean(axis=1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: np.float32) -> np.ndarray:
    """LayerNorm over the last axis of a 2-D array, in place where it can."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var /= np.float32(x.shape[-1])
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= weight
    x += bias
    return x


def _gelu(x: np.ndarray) -> None:
    """BERT's exact GELU, x * (1 + erf(x / sqrt 2)) / 2, in place; erf to within 1.5e-7 (numpy has no erf)."""
    z = np.abs(x)
    z *= _SQRT_HALF
    t = z * np.float32(_P)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    erf = t * np.float32(_A[4])
    for a in (_A[3], _A[2], _A[1], _A[0]):
        erf += np.float32(a)
        erf *= t
    np.square(z, out=z)
    np.minimum(z, -_EXP_FLOOR, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    erf *= z  # erfc(|x| / sqrt 2)
    np.subtract(np.float32(1.0), erf, out=erf)  # erf(|x| / sqrt 2)
    np.copysign(erf, x, out=erf)  # no branch per element: np.where() here was 8x slower
    erf += np.float32(1.0)
    erf *= np.float32(0.5)
    x *= erf
