"""The core: records over a store and an embedder, and nothing else.

:class:`Core` owns the record operations (remember, get, update, forget,
list, search), embedding (batching, the cache, splitting long texts into
parts), the caller defaults (tenant, user, project) and the access log. It
knows nothing of documents, conversations, tools or any other feature: the
feature services (:mod:`funes.documents`, :mod:`funes.sessions`,
:mod:`funes.tools`, :mod:`funes.transfer`, ...) each hold a Core, and
:class:`funes.service.Funes` composes them into the public API.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

import numpy as np

from . import config as config_mod
from .embed import Embedder, check_output, configured_identity
from .errors import BackendUnavailable, EmbedderMismatch, EmbedderUnavailable, FunesError, InvalidInput, NotFound
from .ingest.chunking import split_text
from .models import (
    DEFAULT_IMPORTANCE,
    KEYWORD_ONLY,
    KINDS,
    MAX_PREVIOUS_VERSIONS,
    MEMORY_TYPES,
    SCOPES,
    EmbedderIdentity,
    ForgetResult,
    Job,
    Memory,
    Page,
    PreviousVersion,
    Reference,
    RememberResult,
    SearchFilters,
    SearchHit,
    SearchResults,
    SourceRef,
    check_identity,
    content_hash,
    new_id,
    parse_time,
    utcnow,
)
from .retrieval import RankSettings, query_terms, rank_scored
from .safety import flag_instruction_like
from .store import AccessEvent, Store, vis_key

log = logging.getLogger("funes")

_UNSET: Any = object()
PART_TOKENS = 200
PART_OVERLAP = 40


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InvalidInput(f"Invalid {name} {value!r}.", hint=f"Use one of: {', '.join(allowed)}.")
    return value


def _check_importance(value: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"Importance must be a number, got {value!r}.", hint="Use a value from 0 to 1.") from exc
    if not 0.0 <= number <= 1.0 or number != number:
        raise InvalidInput(f"Importance {value!r} is out of range.", hint="Use a value from 0 to 1, e.g. 0.7.")
    return number


def _as_time(value: datetime | str | None, name: str) -> datetime | None:
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidInput(
            f"{name} {value!r} is not a date.", hint="Use ISO-8601, e.g. 2026-12-31 or 2026-12-31T18:00:00Z."
        ) from exc


class RecordFields(TypedDict, total=False):
    """Optional fields of a new record (see :meth:`Funes.prepare`)."""

    type: str
    importance: float | None
    scope: str | None
    project: str | None
    session: str | None
    tenant: str | None
    user: str | None
    kind: str
    title: str | None
    topic: str | None
    entity_type: str | None
    entity_id: str | None
    source: SourceRef | None
    pinned: bool
    expires_at: datetime | str | None
    metadata: dict[str, Any] | None
    references: Iterable[Reference | tuple[str, str] | dict[str, str]]


class Core:
    """Records: remember, recall, update and forget them over a store and an embedder."""

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
        self._unwritten_access: list[tuple[AccessEvent, datetime]] = []
        # Set by the job runner, so a job queued here wakes (or starts) the worker.
        self.on_job_queued: Callable[[], None] | None = None
        self._access_lock = threading.Lock()
        self._closed = False
        self._worker: ThreadPoolExecutor | None = None
        self._worker_lock = threading.Lock()

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

    # -- lifecycle -------------------------------------------------------------
    def _search_worker(self) -> ThreadPoolExecutor:
        """The thread that runs the keyword leg of searches (one, started on first use)."""
        if self._worker is None:
            with self._worker_lock:
                if self._worker is None:
                    self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="funes-keyword")
        return self._worker

    def close(self) -> None:
        """Write any access rows a locked store held back, and close the store."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.shutdown(wait=True)
        self.track([])
        self.store.close()

    # -- access log ----------------------------------------------------------------
    def track(self, events: Sequence[AccessEvent]) -> None:
        """Write access rows and counters now, before the read that caused them returns.

        Written synchronously so a crash after a search returned never loses
        its rows (issue 8). A store that cannot take the write (another
        process holds the lock past busy_timeout_ms, or it is read-only)
        must not fail the read: the rows wait in memory and go with the next
        write that succeeds, or at close.
        """
        if getattr(self.store, "read_only", False):
            return  # a read-only store keeps no access log; reads must still work (issue 9)
        now = utcnow()
        with self._access_lock:
            batch = [*self._unwritten_access, *((e, now) for e in events)]
            self._unwritten_access = []
            if not batch:
                return
            try:
                with self.store.transaction():
                    for at, group in _by_time(batch):
                        self.store.record_access(group, at)
            except FunesError as exc:
                log.warning("access log held back (%d rows): %s", len(batch), exc)
                self._unwritten_access = batch[-10_000:]

    def sync_access(self) -> None:
        """Write access rows held back by a busy store (exports call this so counters are current)."""
        self.track([])

    # -- durable jobs ------------------------------------------------------------------
    def enqueue_job(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        tenant: str | None = None,
        delay: float = 0.0,
        dedupe_key: str | None = None,
        max_attempts: int | None = None,
    ) -> str:
        """Queue a durable job (in the caller's store transaction when there is one); see :mod:`funes.jobs`."""
        now = utcnow()
        job_id = self.store.enqueue_job(
            kind,
            payload,
            tenant=self.tenant_of(tenant),
            now=now,
            run_after=now + timedelta(seconds=delay) if delay else None,
            max_attempts=int(max_attempts or self.config.job_max_attempts),
            dedupe_key=dedupe_key,
        )
        if self.on_job_queued is not None:
            self.on_job_queued()
        return job_id

    def defer_vectors(self, memory_ids: Sequence[str], tenant: str) -> str:
        """Queue the embedding of records stored without vectors; call it in the transaction that stored them.

        The records are keyword-searchable at once; the job embeds them when
        the embedder answers again (retried with backoff), so an outage never
        loses an accepted write.
        """
        return self.enqueue_job("vectors", {"ids": list(memory_ids)}, tenant=tenant)

    def vectors_job(self, job: Job) -> Callable[[], dict[str, int]]:
        """Handler of ``vectors`` jobs: embed the records now, write the vectors with the job's completion."""
        ids = [str(i) for i in job.payload.get("ids", [])]
        records = list(self.store.get_many(ids).values())
        embedded = self.embed_records([self.embed_text(m) for m in records], force=True) if records else []

        def apply() -> dict[str, int]:
            current = self.store.get_many([m.id for m in records])
            written = 0
            for memory, vectors in zip(records, embedded, strict=True):
                now = current.get(memory.id)
                # A record deleted, or changed again (its own job covers the new text), is skipped.
                if now is None or now.content_hash != memory.content_hash or now.title != memory.title:
                    continue
                self.store.put(now, vectors)
                written += 1
            return {"embedded": written, "skipped": len(ids) - written}

        return apply

    def __enter__(self) -> Core:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- defaults ----------------------------------------------------------------
    def tenant_of(self, tenant: str | None) -> str:
        """The caller's tenant, or the configured one; an empty or blank one is invalid input (issue 9)."""
        return check_identity(self.config.tenant if tenant is None else tenant, "tenant")

    def user_of(self, user: str | None) -> str | None:
        """The caller's user, or the configured one (None: no user); an empty or blank one is invalid input."""
        if user is None:
            return self.config.user or None
        return check_identity(user, "user")

    def project_of(self, project: str | None) -> str | None:
        """The caller's project, or the configured one."""
        return project if project is not None else (self.config.project or None)

    # -- embedding -----------------------------------------------------------------
    def parts(self, text: str) -> list[str]:
        """The text split into pieces the embedder can read whole (one piece if it fits)."""
        limit = self.embedder.max_tokens
        if self.embedder.count_tokens(text) <= limit:
            return [text]
        return split_text(text, self.embedder.count_tokens, min(PART_TOKENS, limit), PART_OVERLAP)

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
            # It answers again: the vectors that waited for it need not wait out their backoff.
            self._embedder_was_down = False
            if self.store.expedite_jobs("vectors", utcnow()) and self.on_job_queued is not None:
                self.on_job_queued()
        return vectors

    def _embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        model = self.embedder.model_id
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        cached = self.store.cache_get(model, hashes)
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
                vectors = check_output(
                    self.embedder.embed_batch([unique[h] for h in chunk], query=query),
                    len(chunk),
                    self.embedder.dimensions,
                    model,
                )
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.where(norms == 0, 1.0, norms)
                new.update(zip(chunk, vectors, strict=True))
            self.store.cache_put(model, list(new.items()))
            cached.update(new)
        for i, h in enumerate(hashes):
            out[i] = cached[h]
        return out

    def embed_records(self, texts: Sequence[str], *, force: bool = False) -> list[list[np.ndarray]]:
        """Vectors of each text, split into parts where it is longer than the model reads."""
        split = [self.parts(t) for t in texts]
        flat = [p for parts in split for p in parts]
        matrix = self.embed(flat, force=force) if flat else np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        out: list[list[np.ndarray]] = []
        pos = 0
        for parts in split:
            out.append([matrix[pos + j] for j in range(len(parts))])
            pos += len(parts)
        return out

    def embed_query(self, query: str) -> np.ndarray:
        """One vector for a query (a long query is the normalised mean of its parts)."""
        vectors = self.embed(self.parts(query), query=True)
        vector = vectors.mean(axis=0)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    # -- validation ----------------------------------------------------------------
    def check_content(self, content: Any) -> str:
        if not isinstance(content, str):
            raise InvalidInput(f"Content must be text, got {type(content).__name__}.", hint="Pass a string.")
        if not content.strip():
            raise InvalidInput("Content is empty.", hint="Pass the text to remember.")
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                "Content is not valid Unicode text (it has a lone surrogate).",
                hint="Decode the text properly (e.g. with errors='replace') before remembering it.",
            ) from exc
        if size > self.config.max_content_bytes:
            raise InvalidInput(
                f"Content is {size:,} bytes, over the limit of {self.config.max_content_bytes:,}.",
                hint="Ingest large texts as documents (`funes ingest FILE`), or raise max_content_bytes.",
            )
        return content.strip()

    def check_scope(self, scope: str | None, project: str | None, session: str | None) -> str:
        if scope is None:
            scope = "session" if session and not project else ("project" if project else "team")
        _check_choice("scope", scope, SCOPES)
        if scope == "project" and not project:
            raise InvalidInput(
                "Scope 'project' needs a project.", hint="Pass project=... (CLI: --project NAME) or use scope 'team'."
            )
        if scope == "session" and not session:
            raise InvalidInput("Scope 'session' needs a session id.", hint="Pass session=... (CLI: --session ID).")
        return scope

    # -- records -------------------------------------------------------------------
    def remember(self, content: str, **fields: Unpack[RecordFields]) -> Memory:
        """Store a memory. The same content in the same scope returns the existing record.

        ``fields`` are those of :meth:`prepare`: type, importance, scope,
        project, session, tenant, user, kind, title, topic, entity_type,
        entity_id, source, pinned, expires_at, metadata, references.
        """
        memory = self.prepare(content, **fields)
        existing = self.store.find_by_hash(
            memory.tenant,
            vis_key(memory.scope, memory.project_id, memory.session_id),
            memory.content_hash,
            memory.kind,
            memory.user_id,
        )
        if existing is not None and not existing.is_expired():
            return existing  # fast path: no embedding for a known duplicate
        try:
            vectors: list[np.ndarray] | None = self.embed_records([self.embed_text(memory)])[0]
        except EmbedderUnavailable as exc:
            log.warning("embedder unavailable, %s stored for keyword search; its vector is a job: %s", memory.id, exc)
            vectors = None
        # The store re-checks inside its write transaction (another process may
        # have stored the same text meanwhile); an expired duplicate is renewed.
        with self.store.transaction():
            stored = self.store.put_unique(memory, vectors)
            if vectors is None and stored.id == memory.id:
                self.defer_vectors([stored.id], stored.tenant)
        return stored

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        atomic: bool = False,
        **defaults: Unpack[RecordFields],
    ) -> list[RememberResult]:
        """Store many memories with :meth:`remember`'s checks and dedupe: one embedding call, one transaction.

        Each item is a string or a dict of ``content`` and :meth:`remember`'s
        fields; ``defaults`` apply to every item (an item's own fields win).
        Returns one :class:`RememberResult` per item, in order: ``created``,
        ``duplicate`` (of a stored record or of an earlier item) or ``error``.
        An invalid item does not stop the valid ones; with ``atomic=True`` it
        raises :class:`InvalidInput` naming the item, and nothing is stored.
        Hold a batch to about 10,000 items: its vectors wait in memory and
        its transaction holds the write lock until the whole batch is in.
        """
        results: list[RememberResult | None] = []
        prepared: list[tuple[int, Memory]] = []
        for index, item in enumerate(items):
            try:
                content, fields = _remember_fields(item, defaults)
                memory = self.prepare(content, **fields)
            except FunesError as exc:
                if atomic:
                    raise InvalidInput(f"Item {index}: {exc.message}", hint=exc.hint) from exc
                results.append(RememberResult(index, "error", error=exc))
                continue
            results.append(None)
            prepared.append((index, memory))
        # Exact dedupe as in remember(): within the batch, then against the store; neither embeds.
        first: dict[tuple[str, str, str, str, str], int] = {}
        twins: dict[int, int] = {}
        fresh: list[tuple[int, Memory]] = []
        for index, memory in prepared:
            vis = vis_key(memory.scope, memory.project_id, memory.session_id)
            key = (memory.tenant, vis, memory.content_hash, memory.kind, memory.user_id or "")
            if key in first:
                twins[index] = first[key]
                continue
            first[key] = index
            existing = self.store.find_by_hash(memory.tenant, vis, memory.content_hash, memory.kind, memory.user_id)
            if existing is not None and not existing.is_expired():
                results[index] = RememberResult(index, "duplicate", existing)
                continue
            if existing is not None:
                memory = memory.evolve(id=existing.id, created_at=existing.created_at)  # renewed, as remember()
            fresh.append((index, memory))
        vectors: list[list[np.ndarray]] | None = []
        if fresh:
            try:
                vectors = self.embed_records([self.embed_text(m) for _, m in fresh])
            except EmbedderUnavailable as exc:
                log.warning(
                    "embedder unavailable, %d memories stored for keyword search; vectors are a job: %s",
                    len(fresh),
                    exc,
                )
                vectors = None
        with self.store.transaction():
            deferred: dict[str, list[str]] = {}
            for position, (index, memory) in enumerate(fresh):
                # put_unique re-checks inside the transaction: another process may have stored the same text.
                stored = self.store.put_unique(memory, None if vectors is None else vectors[position])
                created = stored.id == memory.id or stored.updated_at == memory.updated_at
                results[index] = RememberResult(index, "created" if created else "duplicate", stored)
                if created and vectors is None:
                    deferred.setdefault(stored.tenant, []).append(stored.id)
            for tenant, ids in deferred.items():
                self.defer_vectors(ids, tenant)
        for index, twin in twins.items():
            standing = results[twin]
            assert standing is not None
            results[index] = RememberResult(index, "duplicate", standing.memory)
        return [r for r in results if r is not None]

    def prepare(
        self,
        content: str,
        *,
        type: str = "fact",
        importance: float | None = None,
        scope: str | None = None,
        project: str | None = None,
        session: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
        kind: str = "memory",
        title: str | None = None,
        topic: str | None = None,
        entity_type: str | None = None,
        entity_id: str | None = None,
        source: SourceRef | None = None,
        pinned: bool = False,
        expires_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        references: Iterable[Reference | tuple[str, str] | dict[str, str]] = (),
        id: str | None = None,
    ) -> Memory:
        """Validate and build a record without storing it (ingestion stores many at once)."""
        text = self.check_content(content)
        _check_choice("memory type", type, MEMORY_TYPES)
        _check_choice("kind", kind, KINDS)
        project = self.project_of(project)
        scope = self.check_scope(scope, project, session)
        # A record carries the ids of its own scope and of the scopes around it,
        # never narrower ones: a team memory written during a session of a
        # project belongs to neither (filters, clears and promotion read them).
        project_id = project if scope in ("project", "session") else None
        session_id = session if scope == "session" else None
        value = DEFAULT_IMPORTANCE[type] if importance is None else _check_importance(importance)
        expiry = _as_time(expires_at, "expires_at")
        refs = tuple(_as_reference(r) for r in references)
        now = utcnow()
        return Memory(
            id=id or new_id(),
            content=text,
            tenant=self.tenant_of(tenant),
            user_id=self.user_of(user),
            scope=scope,
            session_id=session_id,
            project_id=project_id,
            kind=kind,
            memory_type=type,
            entity_type=entity_type,
            entity_id=entity_id,
            topic=topic,
            title=title,
            source=source or SourceRef(type="user"),
            importance=value,
            pinned=bool(pinned),
            expires_at=expiry,
            content_hash=content_hash(text),
            created_at=now,
            updated_at=now,
            metadata=flag_instruction_like(text, metadata),  # memory-poisoning defence (issue 4)
            references=refs,
        )

    @staticmethod
    def embed_text(memory: Memory) -> str:
        return f"{memory.title}\n{memory.content}" if memory.title else memory.content

    def visible(self, memory: Memory | None, tenant: str | None, user: str | None) -> bool:
        if memory is None or memory.tenant != self.tenant_of(tenant):
            return False
        caller_user = self.user_of(user)
        return not (caller_user and memory.user_id and memory.user_id != caller_user)

    def get(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> Memory:
        """A record by id; another tenant's record reads as not found."""
        memory = self.store.get(memory_id)
        if not self.visible(memory, tenant, user):
            raise NotFound(f"No memory with id {memory_id!r}.", hint="`funes list` or `funes search` shows ids.")
        assert memory is not None
        return memory

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        type: str | None = None,
        pinned: bool | None = None,
        expires_at: datetime | str | None = _UNSET,
        title: str | None = _UNSET,
        topic: str | None = _UNSET,
        metadata: dict[str, Any] | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> Memory:
        """Change a record. New content is re-embedded and the old one kept (5 versions at most)."""
        current = self.get(memory_id, tenant=tenant, user=user)
        changes: dict[str, Any] = {}
        vectors = None
        now = utcnow()
        if content is not None:
            text = self.check_content(content)
            if content_hash(text) != current.content_hash:
                previous = PreviousVersion(
                    version=current.version,
                    content=current.content,
                    content_hash=current.content_hash,
                    importance=current.importance,
                    updated_at=current.updated_at,
                )
                history = (*current.previous_versions, previous)[-MAX_PREVIOUS_VERSIONS:]
                changes.update(
                    content=text,
                    content_hash=content_hash(text),
                    previous_versions=history,
                    version=current.version + 1,
                )
        if importance is not None:
            changes["importance"] = _check_importance(importance)
        if type is not None:
            changes["memory_type"] = _check_choice("memory type", type, MEMORY_TYPES)
        if pinned is not None:
            changes["pinned"] = bool(pinned)
        if expires_at is not _UNSET:
            changes["expires_at"] = _as_time(expires_at, "expires_at")
        if title is not _UNSET:
            changes["title"] = title
        if topic is not _UNSET:
            changes["topic"] = topic
        if metadata is not None:
            changes["metadata"] = {**current.metadata, **metadata}
        if not changes:
            return current
        updated = current.evolve(**changes, updated_at=now)
        deferred = False
        if "content" in changes or ("title" in changes and changes["title"] != current.title):
            try:
                vectors = self.embed_records([self.embed_text(updated)])[0]
            except EmbedderUnavailable as exc:
                # The old vectors describe the old text: drop them, keep the
                # record keyword-searchable, and embed it when the server is back.
                log.warning(
                    "embedder unavailable, %s updated for keyword search; its vector is a job: %s", memory_id, exc
                )
                vectors, deferred = [], True
        with self.store.transaction():
            self.store.put(updated, vectors)
            if deferred:
                self.defer_vectors([updated.id], updated.tenant)
        return updated

    def pin(self, memory_id: str, **caller: Any) -> Memory:
        """Pin a record: it survives retention policies and is always in project facts."""
        return self.update(memory_id, pinned=True, **caller)

    def unpin(self, memory_id: str, **caller: Any) -> Memory:
        """Unpin a record."""
        return self.update(memory_id, pinned=False, **caller)

    def forget(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> Memory:
        """Delete a record with its vectors and keyword entry; returns what was deleted."""
        memory = self.get(memory_id, tenant=tenant, user=user)
        self.store.delete([memory.id])
        return memory

    def forget_many(
        self,
        memory_ids: Iterable[str],
        *,
        tenant: str | None = None,
        user: str | None = None,
        atomic: bool = False,
    ) -> ForgetResult:
        """Delete many records in one transaction; ids the caller cannot see are reported as not found, never deleted.

        With ``atomic=True`` nothing is deleted unless every id is found
        (:class:`NotFound` names the missing ones).
        """
        if isinstance(memory_ids, str):
            memory_ids = [memory_ids]
        ids = list(dict.fromkeys(i.strip() for i in memory_ids if isinstance(i, str) and i.strip()))
        if not ids:
            raise InvalidInput("There are no ids to forget.", hint="Pass memory ids (`funes list` shows them).")
        with self.store.transaction():
            # Read under the write lock, so nothing read here changes before the delete.
            found = self.store.get_many(ids)
            doomed = tuple(found[i] for i in ids if self.visible(found.get(i), tenant, user))
            kept = {m.id for m in doomed}
            missing = tuple(i for i in ids if i not in kept)
            if atomic and missing:
                shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
                raise NotFound(
                    f"No memory with id {shown}; nothing was forgotten.",
                    hint="`funes list` shows ids; to forget the ids that exist, pass them alone "
                    "(CLI: `funes rm --ignore-missing`).",
                )
            self.store.delete([m.id for m in doomed])
        return ForgetResult(deleted=doomed, not_found=missing)

    def clear(
        self,
        *,
        session: str | None = None,
        project: str | None = None,
        all: bool = False,
        tenant: str | None = None,
        user: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Remove everything of one session, one project, or the whole tenant, then reclaim the space.

        That is the records (pinned ones too: pinning protects from retention,
        not from an explicit clear), their vectors and keyword entries, the
        sessions with their messages and usage, and the documents. A project
        takes its project-scope records and its sessions; team records stay.
        The removal is one transaction and writes a cleanup-log row; then the
        file is vacuumed. Returns the counts, and ``bytes_before`` /
        ``bytes_after`` of the database. ``dry_run`` only counts.
        """
        chosen = [name for name, value in (("session", session), ("project", project), ("all", all)) if value]
        if len(chosen) != 1:
            raise InvalidInput(
                "Say what to clear: exactly one of session=, project= or all=True.",
                hint="CLI: `funes clear --session ID`, `funes clear --project NAME` or `funes clear --all`.",
            )
        tenant_id = self.tenant_of(tenant)
        report = self.store.clear(
            tenant_id,
            session_id=session,
            project_id=project,
            user_id=self.user_of(user),
            at=utcnow(),
            reason="cleared by request",
            dry_run=dry_run,
        )
        if not all and not any(report[k] for k in ("records", "messages", "documents", "sessions")):
            what = f"session {session!r}" if session else f"project {project!r}"
            raise NotFound(
                f"There is nothing to clear in {what}.",
                hint="`funes sessions list` shows sessions; `funes list --json` shows the projects of records.",
            )
        if dry_run:
            return report
        log_id = report.pop("log_id")
        try:
            before, after = self.store.reclaim_space()
        except BackendUnavailable as exc:
            # The removal is committed and logged; only the file has not shrunk yet.
            log.warning("space not reclaimed after clear: %s", exc)
            report.update(bytes_before=None, bytes_after=None, reclaim_error=exc.to_dict())
        else:
            report.update(bytes_before=before, bytes_after=after)
            self.store.record_reclaimed(log_id, max(0, before - after))
        return report

    def cleanup_log(self, *, tenant: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The newest cleanup-log rows: retention runs, cleared sessions and `clear` calls."""
        if not 1 <= int(limit) <= 10_000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 10000.")
        return self.store.cleanup_log(self.tenant_of(tenant), int(limit))

    def list(
        self,
        *,
        tenant: str | None = None,
        user: str | None = None,
        types: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
        project: str | None = None,
        session: str | None = None,
        source_types: Sequence[str] | None = None,
        source_ids: Sequence[str] | None = None,
        pinned: bool | None = None,
        include_expired: bool = False,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page:
        """Records newest first; pass ``page.next_cursor`` back for the next page."""
        if not 1 <= int(limit) <= 1000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
        filters = self._filters(tenant, user, types, kinds, scopes, project, session, source_types, source_ids)
        return self.store.list(
            filters, cursor=cursor, limit=int(limit), include_expired=include_expired, pinned=pinned, now=utcnow()
        )

    def _filters(
        self,
        tenant: str | None,
        user: str | None,
        types: Sequence[str] | None,
        kinds: Sequence[str] | None,
        scopes: Sequence[str] | None,
        project: str | None,
        session: str | None,
        source_types: Sequence[str] | None = None,
        source_ids: Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> SearchFilters:
        for t in types or ():
            _check_choice("memory type", t, MEMORY_TYPES)
        for k in kinds or ():
            _check_choice("kind", k, KINDS)
        for s in scopes or ():
            _check_choice("scope", s, SCOPES)
        return SearchFilters(
            tenant=self.tenant_of(tenant),
            user_id=self.user_of(user),
            scopes=tuple(scopes) if scopes else None,
            project_id=project,
            session_id=session,
            memory_types=tuple(types) if types else None,
            kinds=tuple(kinds) if kinds else None,
            source_types=_expand_source_types(source_types),
            source_ids=tuple(source_ids) if source_ids else None,
            created_after=_as_time(since, "since"),
            created_before=_as_time(until, "until"),
        )

    # -- search ----------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        tenant: str | None = None,
        user: str | None = None,
        scopes: Sequence[str] | None = None,
        project: str | None = None,
        session: str | None = None,
        types: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        source_types: Sequence[str] | None = None,
        source_ids: Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        min_similarity: float | None = None,
        limit: int | None = None,
        track: bool = True,
        agent: str | None = None,
    ) -> SearchResults:
        """Hybrid search: BM25 and vector KNN fused (``fusion`` setting), boosted, explained.

        ``project`` both restricts project-scope records to that project and
        boosts them; ``min_similarity`` drops weak vector matches but keeps
        strong keyword matches. Expired records are never returned. Each hit
        updates the record's access counters and the access log.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("The search query is empty.", hint="Pass the words or question to search for.")
        cap = int(self.config.max_query_chars)
        if cap > 0 and len(query) > cap:
            # A 1 MB query took 63 s and a 10 MB one never answered over stdio (issue 9).
            raise InvalidInput(
                f"The search query is {len(query):,} characters, over the {cap:,} limit (max_query_chars).",
                hint="Search with the key words or a short question; raise the limit with "
                "`funes config set max_query_chars N` if you really need longer queries.",
            )
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                "The search query is not valid Unicode text (it has a lone surrogate).",
                hint="Decode the text properly before searching.",
            ) from exc
        limit = self.config.search_limit if limit is None else int(limit)
        if not 1 <= limit <= 1000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
        if min_similarity is not None and not -1.0 <= float(min_similarity) <= 1.0:
            raise InvalidInput(
                f"min_similarity {min_similarity} is out of range.", hint="Use a cosine value from -1 to 1, e.g. 0.4."
            )
        project = self.project_of(project)
        filters = self._filters(
            tenant, user, types, kinds, scopes, project, session, source_types, source_ids, since, until
        )
        now = utcnow()
        hits = self._search(query, filters, now, limit, min_similarity, project)
        if track:
            self.track(
                [
                    AccessEvent(
                        memory_id=h.memory.id,
                        tenant=filters.tenant,
                        action="search",
                        query=query[:500],
                        score=h.score,
                        session_id=session,
                        agent_id=agent,
                    )
                    for h in hits
                ]
            )
        return hits

    def _search(
        self,
        query: str,
        filters: SearchFilters,
        now: datetime,
        limit: int,
        min_similarity: float | None,
        project: str | None,
    ) -> SearchResults:
        candidates = max(self.config.candidates, limit * 2)
        # The keyword leg runs beside the query embedding and the vector leg:
        # SQLite, torch and numpy all release the GIL, so on two cores the
        # search costs the slower leg, not the sum.
        pending = self._search_worker().submit(
            self.store.keyword_search,
            query_terms(query),
            filters,
            limit=candidates,
            scan_cap=self.config.keyword_scan_cap,
            common_ratio=self.config.keyword_common_ratio,
            now=now,
        )
        degraded = None
        vector: np.ndarray | None = None
        nearest: list[tuple[str, float]] = []
        try:
            vector = self.embed_query(query)
            nearest = self.store.vector_search(vector, filters, k=candidates, now=now)
        except EmbedderUnavailable as exc:
            # Keywords still find things: answer with them and say so, rather than fail.
            log.warning("embedder unavailable, searching by keyword only: %s", exc)
            degraded, vector, min_similarity = KEYWORD_ONLY, None, None
        finally:
            keyword = pending.result()
        sims = dict(nearest)
        missing = [i for i, _ in keyword if i not in sims]
        if vector is not None:
            for memory_id, vectors in self.store.vectors_for(missing).items():
                sims[memory_id] = max(float(np.dot(v, vector)) for v in vectors)
        # Rank on light rows; decode whole records only for the winners.
        fields = self.store.rank_fields([i for i, _ in keyword] + [i for i, _ in nearest])
        try:
            settings = RankSettings(
                fusion=self.config.fusion,
                keyword_weight=self.config.keyword_weight,
                vector_weight=self.config.vector_weight,
                rrf_k=self.config.rrf_k,
                boost_project=self.config.boost_project,
                boost_team=self.config.boost_team,
                importance_weight=self.config.importance_weight,
                recency_weight=self.config.recency_weight,
                recency_half_life_days=self.config.recency_half_life_days,
                min_similarity=min_similarity,
                strong_keyword_rank=self.config.strong_keyword_rank,
                vector_floor=self.config.vector_floor if self.config.vector_floor > -1 else None,
                current_project=project,
            )
        except ValueError as exc:
            raise InvalidInput(
                f"The fusion settings are invalid: {exc}.",
                hint="Set fusion to 'convex' or 'rrf' and keyword_weight / vector_weight to numbers >= 0, "
                "e.g. `funes config set fusion convex`.",
            ) from exc
        scored = rank_scored(keyword, nearest, sims, fields, settings, now, limit)
        records = self.store.get_many([s.id for s in scored])
        # A record deleted between the two reads is left out, not half-shown.
        return SearchResults(
            (
                SearchHit(memory=records[s.id], score=s.score, explanation=s.explanation)
                for s in scored
                if s.id in records
            ),
            degraded=degraded,
        )

    # -- maintenance -----------------------------------------------------------------
    def stats(self, *, tenant: str | None = None) -> dict[str, Any]:
        """Counts by kind, type and scope, sizes, pending vectors and jobs, and the configured embedder.

        Never creates the embedder: stats work while an embedding server is down.
        """
        out = self.store.stats(tenant)
        configured = self.configured_identity()
        out["embedder_configured"] = {
            "model_id": configured.model_id if configured else f"{self.config.embedder}:{self.config.embed_model}",
            "dimensions": configured.dimensions if configured else None,  # None: only the server knows
        }
        return out

    def backup(self, dest: str | os.PathLike[str]) -> dict[str, Any]:
        """A consistent copy of the store at ``dest`` (SQLite's online backup API), safe while writers run."""
        method = getattr(self.store, "backup", None)
        if method is None:
            raise InvalidInput("This store has no file backup.", hint="Use `funes export FILE` instead.")
        return dict(method(dest))

    def repair(self, dest: str | os.PathLike[str]) -> dict[str, Any]:
        """Salvage every readable row into a new store at ``dest`` (the damaged store is left as it is)."""
        method = getattr(self.store, "salvage", None)
        if method is None:
            raise InvalidInput("This store cannot be salvaged to a file.", hint="Use `funes export FILE` instead.")
        return dict(method(dest))

    def doctor(self) -> list[str]:
        """Integrity problems of the store (empty when healthy); see :meth:`health` for notes too."""
        return list(self.health()["problems"])

    def health(self) -> dict[str, Any]:
        """Problems (to fix), notes (work in progress, e.g. pending vectors) and counts; never embeds."""
        problems = self.store.check()
        current = self.store.identity()
        configured = self.configured_identity()
        if current is not None and configured is not None and current != configured:
            problems.append(
                f"The store's vectors come from {current.model_id} ({current.dimensions} dims) but the configured "
                f"embedder is {configured.model_id} ({configured.dimensions} dims); run `funes reindex`."
            )
        notes: list[str] = []
        pending = self.store.pending_vectors()
        if pending:
            notes.append(
                f"{pending} records wait for their vectors (the embedder was unreachable when they were written); "
                "they are keyword-searchable now. A long-running process embeds them when it answers, or run "
                "`funes jobs run`."
            )
        jobs = self.store.job_counts()
        if jobs.get("failed"):
            problems.append(
                f"{jobs['failed']} background jobs failed for good; `funes jobs list --status failed` shows why, "
                "`funes jobs retry ID` runs one again."
            )
        return {"problems": problems, "notes": notes, "pending_vectors": pending, "jobs": jobs}

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every record with the configured embedder and rebuild the keyword index.

        Vectors are computed first (through the cache), then swapped in with
        one transaction, so a crash leaves the old index intact.
        """
        records = list(self.store.iter_records())
        vectors: list[list[np.ndarray]] = []
        step = 256
        for start in range(0, len(records), step):
            batch = records[start : start + step]
            vectors.extend(self.embed_records([self.embed_text(m) for m in batch]))
            if progress:
                progress(min(start + step, len(records)), len(records))
        ident = EmbedderIdentity(self.embedder.model_id, self.embedder.dimensions)
        self.store.replace_index(ident, zip(records, vectors, strict=True))
        return len(records)


def _by_time(batch: Sequence[tuple[AccessEvent, datetime]]) -> Iterator[tuple[datetime, list[AccessEvent]]]:
    """Access events grouped by the time they happened, in order."""
    for at, group in itertools.groupby(batch, key=lambda item: item[1]):
        yield at, [event for event, _ in group]


def _expand_source_types(names: Sequence[str] | None) -> tuple[str, ...] | None:
    """Source filter names (documents, sheets, chat, markdown, all) or raw types as source types."""
    if not names:
        return None
    from .ingest import source_types_for

    out: list[str] = []
    for name in names:
        types = source_types_for(name)
        if types is None:
            return None
        out.extend(t for t in types if t not in out)
    return tuple(out)


def _as_reference(value: Reference | tuple[str, str] | dict[str, str]) -> Reference:
    if isinstance(value, Reference):
        return value
    if isinstance(value, dict):
        try:
            return Reference(type=str(value["type"]), id=str(value["id"]))
        except KeyError as exc:
            raise InvalidInput(
                "A reference needs 'type' and 'id'.", hint='Use {"type": "vendor", "id": "V-12"}.'
            ) from exc
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Reference(type=str(value[0]), id=str(value[1]))
    raise InvalidInput(f"Cannot read reference {value!r}.", hint="Use (type, id), e.g. ('vendor', 'V-12').")


_ITEM_FIELDS = frozenset(RecordFields.__optional_keys__) | {"content"}


def _remember_fields(item: Any, defaults: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(content, fields) of one remember_many item: a string, or a dict of content and remember's fields."""
    if isinstance(item, str):
        return item, dict(defaults)
    if not isinstance(item, Mapping):
        raise InvalidInput(
            f"An item must be text or a dict, got {type(item).__name__}.",
            hint='Pass "text" or {"content": "text", "type": "fact"}.',
        )
    unknown = sorted(set(item) - _ITEM_FIELDS)
    if unknown:
        raise InvalidInput(
            f"Unknown field(s) {', '.join(map(str, unknown))}.", hint=f"Use: {', '.join(sorted(_ITEM_FIELDS))}."
        )
    if "content" not in item:
        raise InvalidInput("The item has no content.", hint='Give it a "content" key with the text to remember.')
    fields = {**defaults, **{k: v for k, v in item.items() if k != "content"}}
    # Items often come from files: a wrong type is that item's error, not a crash of the batch.
    for name, value in fields.items():
        allowed = _FIELD_TYPES.get(name)
        if value is not None and allowed is not None and not isinstance(value, allowed):
            expected = " or ".join(t.__name__ for t in allowed)
            raise InvalidInput(
                f"{name} must be {expected}, got {type(value).__name__} {value!r:.40}.",
                hint=f"Pass {name} as {expected}, or leave it out.",
            )
    return item["content"], fields


_TEXT_FIELDS = (
    "type",
    "scope",
    "project",
    "session",
    "tenant",
    "user",
    "kind",
    "title",
    "topic",
    "entity_type",
    "entity_id",
)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(_TEXT_FIELDS, (str,)),
    "importance": (int, float),
    "pinned": (bool,),
    "expires_at": (str, datetime),
    "metadata": (Mapping,),
    "source": (SourceRef,),
    "references": (list, tuple),
}
