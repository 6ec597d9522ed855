"""Embedding: the embedder's lifecycle, the embedding cache, long texts in parts, and outages.

:class:`Embedding` creates the configured embedder on first use (so
commands that never embed never touch it) and checks it against the
embedder the store's vectors came from. It embeds through the cache keyed by
(model id, sha256 of the text), normalises vectors, and splits a text longer
than the model reads into overlapping parts, never truncating it.

When the embedding server is unreachable, calls raise
:class:`~funes.errors.EmbedderUnavailable` and, for
``embedder_retry_seconds``, fail fast without trying it again, so searches
degrade to keywords at once instead of waiting out the client's retries.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import EmbedderMismatch, EmbedderUnavailable
from ..models import EmbedderIdentity, Memory
from ..models import config as config_mod
from ..providers.embed import Embedder, check_output, configured_identity
from ..store import Store
from ..store.consistency import read_since
from .chunking import split_text
from .windows import Window, sentence_windows

PART_TOKENS = 200
PART_OVERLAP = 40
LAYOUTS = 4096  # texts whose parts and windows search keeps (Embedding.layout)
UNWINDOWED = frozenset({"message"})  # record kinds that never get passage windows


class Embedding:
    """Texts to unit vectors, through the cache, with the embedder made on first use."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | Callable[[], Embedder],
        config: config_mod.Config,
        *,
        check_embedder: bool = True,
    ) -> None:
        self.store = store
        self.config = config
        self._check_embedder = check_embedder
        self._embedder: Embedder | None = None
        self._embedder_factory: Callable[[], Embedder] | None = None
        self._embedder_lock = threading.Lock()
        self._embedder_down_until = 0.0  # monotonic time before which the embedder is not tried again
        self._embedder_was_down = False
        # Called when the embedder answers again after an outage (the core expedites waiting vectors).
        self.on_recovered: Callable[[], None] | None = None
        self._query_vectors = QueryVectors()
        self._layouts: OrderedDict[bytes, tuple[int, list[Window]] | None] = OrderedDict()
        if isinstance(embedder, Embedder):
            self._embedder = embedder
            self._check_identity(EmbedderIdentity(embedder.model_id, embedder.dimensions))
        else:
            # Created on first use, so list, get, stats, export and doctor
            # work while an embedding server is down. A mismatch that the
            # settings alone reveal is still refused at open.
            self._embedder_factory = embedder
            configured = configured_identity(config, store.identity())
            if configured is not None and store.identity() is not None:
                self._check_identity(configured)

    @property
    def embedder(self) -> Embedder:
        """The embedder, created (and checked against the store) on first use."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    assert self._embedder_factory is not None
                    created = self._embedder_factory()
                    self._check_identity(EmbedderIdentity(created.model_id, created.dimensions))
                    self._embedder = created
        return self._embedder

    def _check_identity(self, ident: EmbedderIdentity) -> None:
        current = self.store.identity()
        if current is None:
            self.store.set_identity(ident)
        elif current != ident and self._check_embedder:
            raise EmbedderMismatch(
                f"The store {self.store.path} was built with {current.model_id} ({current.dimensions} dims), "
                f"but the configured embedder is {ident.model_id} ({ident.dimensions} dims).",
                hint="Run `funes reindex` to re-embed everything with the configured model, or set the embedder back.",
            )

    def configured_identity(self) -> EmbedderIdentity | None:
        """The configured embedder's identity, without creating it when it is not loaded yet."""
        if self._embedder is not None:
            return EmbedderIdentity(self._embedder.model_id, self._embedder.dimensions)
        return configured_identity(self.config, self.store.identity())

    def parts(self, text: str) -> list[str]:
        """The text split into pieces the embedder can read whole (one piece if it fits)."""
        limit = self.embedder.max_tokens
        if self.embedder.count_tokens(text) <= limit:
            return [text]
        return split_text(text, self.embedder.count_tokens, min(PART_TOKENS, limit), PART_OVERLAP)

    def windows(self, text: str) -> list[Window]:
        """The passage windows a record is also embedded as, after its parts (:mod:`funes.memory.windows`)."""
        embedder = self.embedder
        size, least = self.config.passage_window_sentences, self.config.passage_window_min_tokens
        return sentence_windows(text, embedder.count_tokens, size, least, embedder.max_tokens)

    def pieces(self, text: str, *, windows: bool = True) -> list[str]:
        """The texts a record's vectors are embedded from, in their stored order: its parts, then (``windows``) its
        passage windows."""
        return self.parts(text) + ([w.text for w in self.windows(text)] if windows else [])

    def layout(self, text: str) -> tuple[int, list[Window]] | None:
        """How many parts a text's vectors start with, and its passage windows (None without windows).

        Search asks this of every long candidate, so the answers of the newest texts are kept.
        """
        rule = f"{self.config.passage_window_sentences}:{self.config.passage_window_min_tokens}:".encode()
        key = hashlib.sha256(rule + text.encode("utf-8")).digest()
        with self._embedder_lock:
            if key in self._layouts:
                self._layouts.move_to_end(key)
                return self._layouts[key]
        windows = self.windows(text)
        found = (len(self.parts(text)), windows) if windows else None
        with self._embedder_lock:
            self._layouts[key] = found
            while len(self._layouts) > LAYOUTS:
                self._layouts.popitem(last=False)
        return found

    def embed(self, texts: Sequence[str], *, query: bool = False, force: bool = False) -> np.ndarray:
        """Embed texts through the cache; each text must fit the model (see :meth:`parts`).

        After the embedder was found unreachable, calls fail fast for
        ``embedder_retry_seconds`` (searches degrade at once instead of
        waiting out the client's retries each time); ``force`` (background
        jobs) tries anyway.
        """
        if not force and time.monotonic() < self._embedder_down_until:
            raise EmbedderUnavailable(
                "The embedding server was unreachable moments ago.",
                hint=f"Funes tries it again after {self.config.embedder_retry_seconds:g} s; "
                "`funes doctor` shows pending work.",
            )
        try:
            vectors = self._embed(texts, query)
        except EmbedderUnavailable:
            self._embedder_down_until = time.monotonic() + float(self.config.embedder_retry_seconds)
            self._embedder_was_down = True
            raise
        self._embedder_down_until = 0.0
        if self._embedder_was_down:
            self._embedder_was_down = False
            if self.on_recovered is not None:
                self.on_recovered()
        return vectors

    def _embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        model = self.embedder.model_id
        # A forget between reading these texts (a job's start, or now) and caching their vectors: none cached.
        read = read_since()
        since = time.time() if read is None else read
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        # A network store's cache costs a round trip per search: query vectors stay in this process there.
        in_process = query and getattr(self.store, "remote", False)
        cached = self._query_vectors.get(model, hashes) if in_process else self.store.cache_get(model, hashes)
        missing = [i for i, h in enumerate(hashes) if h not in cached]
        out = np.zeros((len(texts), self.embedder.dimensions), dtype=np.float32)
        if missing:
            unique: dict[str, str] = {}
            for i in missing:
                unique.setdefault(hashes[i], texts[i])
            # Texts of similar length share a batch: a batch is padded to its longest
            # text, and sorting cut a 300-text remember_many by a quarter (bench/bulk_bench.py).
            order = sorted(unique, key=lambda h: len(unique[h]))
            batch = self.config.embed_batch_size
            new: dict[str, np.ndarray] = {}
            for start in range(0, len(order), batch):
                chunk = order[start : start + batch]
                # Zero or NaN output is refused here, before the cache or the store sees it (issue 9).
                vectors = check_output(
                    self.embedder.embed_batch([unique[h] for h in chunk], query=query),
                    len(chunk),
                    self.embedder.dimensions,
                    model,
                )
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.where(norms == 0, 1.0, norms)
                new.update(zip(chunk, vectors, strict=True))
            if in_process:
                self._query_vectors.cache_put(model, list(new.items()))
            else:
                self.store.cache_put(model, list(new.items()), since=since)
            cached.update(new)
        for i, h in enumerate(hashes):
            out[i] = cached[h]
        return out

    def embed_records(
        self, texts: Sequence[str], *, force: bool = False, windows: Sequence[bool] | None = None
    ) -> list[list[np.ndarray]]:
        """Vectors of each text, split into parts where it is longer than the model reads, then its passage windows.

        ``windows``: per text, whether it may have passage windows (all may when None).
        """
        allowed = [True] * len(texts) if windows is None else windows
        split = [self.pieces(t, windows=ok) for t, ok in zip(texts, allowed, strict=True)]
        flat = [p for parts in split for p in parts]
        matrix = self.embed(flat, force=force) if flat else np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        out: list[list[np.ndarray]] = []
        pos = 0
        for parts in split:
            out.append([matrix[pos + j] for j in range(len(parts))])
            pos += len(parts)
        return out

    def embed_memories(self, memories: Sequence[Memory], *, force: bool = False) -> list[list[np.ndarray]]:
        """:meth:`embed_records` of records: their texts, with passage windows for the kinds that have them."""
        texts = [self.embed_text(m) for m in memories]
        return self.embed_records(texts, force=force, windows=[windowed(m) for m in memories])

    def embed_query(self, query: str) -> np.ndarray:
        """One vector for a query (a long query is the normalised mean of its parts)."""
        vectors = self.embed(self.parts(query), query=True)
        vector = vectors.mean(axis=0)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    @staticmethod
    def embed_text(memory: Memory) -> str:
        """The text a record is embedded as: its title, then its content."""
        return f"{memory.title}\n{memory.content}" if memory.title else memory.content


def windowed(memory: Memory) -> bool:
    """Whether a record may have passage windows: not a chat message, which is one utterance recalled whole
    with the turns around it (:mod:`funes.memory.windows`)."""
    return memory.kind not in UNWINDOWED


class QueryVectors:
    """Query vectors of a network store's searches, cached in the process (the newest ``size``)."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``hashes``, by hash (as ``Store.cache_get``)."""
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                vector = self._vectors.get((model, h))
                if vector is not None:
                    self._vectors.move_to_end((model, h))
                    out[h] = vector
        return out

    def cache_put(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Keep these vectors, forgetting the least recently used beyond ``size``."""
        with self._lock:
            for h, vector in items:
                self._vectors[(model, h)] = vector
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
