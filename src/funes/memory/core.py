"""The core: records over a store and an embedder, and nothing else.

:class:`Core` owns the record operations (remember, get, update, forget,
list, search), embedding (batching, the cache, splitting long texts into
parts), the caller defaults (tenant, user, project) and the access log
(:mod:`funes.memory.access_log`); the ranking itself is :mod:`funes.memory.search`. It
knows nothing of documents, conversations, tools or any other feature: the
feature services (:mod:`funes.knowledge.documents`, :mod:`funes.conversations.sessions`,
:mod:`funes.agents.tools`, :mod:`funes.memory.transfer`, ...) each hold a Core, and
:class:`funes.service.Funes` composes them into the public API.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Unpack

import numpy as np

from ..errors import Conflict, EmbedderUnavailable, FunesError, InvalidInput, NotFound
from ..models import (
    DEFAULT_IMPORTANCE,
    ENTITY_SCOPES,
    KINDS,
    MEMORY_TYPES,
    ForgetResult,
    Job,
    Memory,
    Page,
    Reference,
    RememberResult,
    SearchPlan,
    SearchQuery,
    SearchResults,
    SourceRef,
    check_identity,
    content_hash,
    new_id,
    utcnow,
)
from ..models import config as config_mod
from ..providers.embed import Embedder
from ..store import AccessEvent, Store, vis_key
from .access_log import AccessLog
from .dates import DateWindow, find_events
from .embedding import Embedding
from .grouping import fetch_size, grouped
from .neighbours import with_turns
from .project_settings import ProjectSettings
from .record_input import (
    RecordFields,
    as_reference,
    as_time,
    check_choice,
    check_content,
    check_importance,
    check_labels,
    check_metadata,
    check_scope,
    check_search,
    remember_fields,
    search_filters,
    with_entity_filters,
)
from .relevance import CALIBRATED_MODELS, marked_weak
from .safety import flag_instruction_like
from .search import HybridSearch
from .timeline import as_of_time, at_time
from .turns import in_context
from .versioning import next_version, superseded

log = logging.getLogger("funes")

_UNSET: Any = object()


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
        self.embedding = Embedding(store, embedder, config, check_embedder=check_embedder)
        self.embedding.on_recovered = self._embedder_recovered
        self.projects = ProjectSettings(store, config)
        self.access = AccessLog(store)
        self.hybrid = HybridSearch(store, self.embedding, config, self._search_worker, self._queue_index_work)
        # Set by the job runner, so a job queued here wakes (or starts) the worker.
        self.on_job_queued: Callable[[], None] | None = None
        # Called inside each write's transaction with (tenant, records written); see funes.upkeep.
        self.write_observers: list[Callable[[str, int], None]] = []
        self._closed = False
        self._worker: ThreadPoolExecutor | None = None
        self._worker_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------
    def _search_worker(self) -> ThreadPoolExecutor:
        """The threads that run the keyword leg of searches (started on first use; a network store's wait, so 8)."""
        if self._worker is None:
            with self._worker_lock:
                if self._worker is None:
                    n = 8 if getattr(self.store, "remote", False) else 1
                    self._worker = ThreadPoolExecutor(max_workers=n, thread_name_prefix="funes-keyword")
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
        """Write access rows and counters now, before the read that caused them returns (funes.access_log)."""
        self.access.track(events)

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
        """Queue a durable job (in the caller's store transaction when there is one); see :mod:`funes.memory.jobs`."""
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

    def written(self, tenant: str, count: int) -> None:
        """Tell the write observers that ``count`` records of ``tenant`` were written (call inside the write's transaction)."""
        for observer in self.write_observers:
            observer(tenant, count)

    def _embedder_recovered(self) -> None:
        # It answers again: the vectors that waited for it need not wait out their backoff.
        if self.store.expedite_jobs("vectors", utcnow()) and self.on_job_queued is not None:
            self.on_job_queued()

    def _queue_index_work(self) -> None:
        """Queue the vector-index builds and catch-ups searches asked for (never done inside a search)."""
        for tenant in self.store.index_work():
            try:
                self.enqueue_job("ann-index", {"tenant": tenant}, tenant=tenant, dedupe_key=f"ann-index:{tenant}")
            except FunesError as exc:  # a read-only or busy store: the next search asks again
                log.info("vector index work for %s not queued: %s", tenant, exc)

    def index_job(self, job: Job) -> Callable[[], dict[str, str]]:
        """Handler of ``ann-index`` jobs: build or catch up the tenant's index files (idempotent)."""
        done = self.store.maintain_index(str(job.payload["tenant"]))
        return lambda: {"index": done}

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
        embedded = in_context(self.store, self.embedding, records, self.embedding.embed_memories(records, force=True))

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

    def remember(self, content: str, **fields: Unpack[RecordFields]) -> Memory:
        """Store a memory. The same content in the same scope returns the existing record.

        ``fields`` are those of :meth:`prepare`: type, importance, scope,
        project, session, tenant, user, kind, title, topic, entity_type,
        entity_id, source, pinned, expires_at, metadata, references.
        """
        memory = self.prepare(content, **fields)
        if memory.entity_type and memory.entity_id:
            return self._remember_entity(memory)[0]
        existing = self.store.find_by_hash(
            memory.tenant,
            vis_key(memory.scope, memory.project_id, memory.session_id),
            memory.content_hash,
            memory.kind,
            memory.user_id,
        )
        if existing is not None and not existing.is_expired():
            return existing  # fast path: no embedding for a known duplicate
        vectors = self._vectors_for_write(memory)
        # The store re-checks inside its write transaction (another process may
        # have stored the same text meanwhile); an expired duplicate is renewed.
        with self.store.transaction():
            stored = self.store.put_unique(memory, vectors)
            if vectors is None and stored.id == memory.id:
                self.defer_vectors([stored.id], stored.tenant)
            if stored.id == memory.id:
                self.written(stored.tenant, 1)
        return stored

    def _vectors_for_write(self, memory: Memory) -> list[np.ndarray] | None:
        """The record's vectors, or None while the embedder is down (the caller queues them as a job)."""
        try:
            return self.embedding.embed_memories([memory])[0]
        except EmbedderUnavailable as exc:
            log.warning("embedder unavailable, %s stored for keyword search; its vector is a job: %s", memory.id, exc)
            return None

    def _remember_entity(self, memory: Memory) -> tuple[Memory, bool]:
        """Write an entity's record: the first write creates it, a later one updates it as a new version.

        One record per (tenant, owner, project, entity type, entity id); the
        old text goes to the version history. Unchanged text embeds nothing.
        Returns the record that stands and whether this write changed it.
        """
        key = (memory.tenant, memory.user_id, memory.project_id, str(memory.entity_type), str(memory.entity_id))
        existing = self.store.find_entity(*key)
        same_text = existing is not None and superseded(existing, memory).content_hash == existing.content_hash
        if existing is not None and same_text and superseded(existing, memory).title == existing.title:
            if superseded(existing, memory).evolve(updated_at=existing.updated_at) == existing:
                return existing, False  # nothing changed: no embedding, no write
            vectors: list[np.ndarray] | None = None  # only fields beside the text changed: the vectors stand
        else:
            vectors = self._vectors_for_write(memory)
        with self.store.transaction():
            # Read again under the write lock: another writer may have created or changed it meanwhile.
            current = self.store.find_entity(*key)
            stored = memory if current is None else superseded(current, memory)
            self.store.put(stored, vectors)
            if vectors is None and (current is None or stored.content_hash != current.content_hash):
                self.defer_vectors([stored.id], stored.tenant)
            self.written(stored.tenant, 1)
        return stored, True

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
                content, fields = remember_fields(item, defaults)
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
        entities: list[tuple[int, Memory]] = []
        for index, memory in prepared:
            if memory.entity_type and memory.entity_id:
                entities.append((index, memory))  # one record per entity: written as an upsert below
                continue
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
                vectors = self.embedding.embed_memories([m for _, m in fresh])
            except EmbedderUnavailable as exc:
                log.warning(
                    "embedder unavailable, %d memories stored for keyword search; vectors are a job: %s",
                    len(fresh),
                    exc,
                )
                vectors = None
        with self.store.transaction():
            deferred: dict[str, list[str]] = {}
            batch = [(m, None if vectors is None else vectors[p]) for p, (_, m) in enumerate(fresh)]
            many = getattr(self.store, "put_unique_many", None)  # PostgreSQL: a few statements for the batch
            standing = many(batch) if many is not None else None
            for position, (index, memory) in enumerate(fresh):
                # put_unique re-checks inside the transaction: another process may have stored the same text.
                stored = standing[position] if standing is not None else self.store.put_unique(*batch[position])
                created = stored.id == memory.id or stored.updated_at == memory.updated_at
                results[index] = RememberResult(index, "created" if created else "duplicate", stored)
                if created and vectors is None:
                    deferred.setdefault(stored.tenant, []).append(stored.id)
            for tenant, ids in deferred.items():
                self.defer_vectors(ids, tenant)
            created_per_tenant: dict[str, int] = {}
            for result in results:
                if result is not None and result.status == "created" and result.memory is not None:
                    created_per_tenant[result.memory.tenant] = created_per_tenant.get(result.memory.tenant, 0) + 1
            for tenant, count in created_per_tenant.items():
                self.written(tenant, count)
        for index, memory in entities:
            stored, changed = self._remember_entity(memory)
            results[index] = RememberResult(index, "created" if changed else "duplicate", stored)
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
        text = check_content(content, self.config.max_content_bytes)
        check_labels(
            title=title, topic=topic, entity_type=entity_type, entity_id=entity_id, project=project, session=session
        )
        check_choice("memory type", type, MEMORY_TYPES)
        check_choice("kind", kind, KINDS)
        project = self.project_of(project)
        if scope is None and entity_type in ENTITY_SCOPES:
            scope = ENTITY_SCOPES[entity_type]
            if scope == "project" and not project:
                raise InvalidInput(
                    f"{entity_type} records belong to one file (project scope), and no project was given.",
                    hint="Pass project=FILE_ID (CLI: --project FILE_ID), or an explicit scope.",
                )
        scope = check_scope(scope, project, session)
        if scope == "project" and not self.projects.enabled(self.tenant_of(tenant), project):
            raise InvalidInput(
                f"Project {project!r} is disabled: it neither stores nor recalls memories.",
                hint=f"Enable it with `funes config set --project {project} enabled true`, or use another scope.",
            )
        # A record carries the ids of its own scope and of the scopes around it,
        # never narrower ones: a team memory written during a session of a
        # project belongs to neither (filters, clears and promotion read them).
        project_id = project if scope in ("project", "session") else None
        session_id = session if scope == "session" else None
        value = DEFAULT_IMPORTANCE[type] if importance is None else check_importance(importance)
        expiry = as_time(expires_at, "expires_at")
        refs = tuple(as_reference(r) for r in references)
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
            metadata=flag_instruction_like(text, check_metadata(metadata)),  # memory-poisoning defence (issue 4)
            references=refs,
        )

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
        author: str = "user",
        valid_from: datetime | None = None,
    ) -> Memory:
        """Change a record. New content is re-embedded and the old one kept (5 versions at most).

        New text supersedes the old (valid until ``valid_from``, default now) and is ``author``'s.
        """
        current = self.get(memory_id, tenant=tenant, user=user)
        changes: dict[str, Any] = {}
        vectors = None
        now = utcnow()
        if content is not None:
            text = check_content(content, self.config.max_content_bytes)
            if content_hash(text) != current.content_hash:
                changes.update(next_version(current, text, author=author, valid_from=valid_from or now))
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if type is not None:
            changes["memory_type"] = check_choice("memory type", type, MEMORY_TYPES)
        if pinned is not None:
            changes["pinned"] = bool(pinned)
        if expires_at is not _UNSET:
            changes["expires_at"] = as_time(expires_at, "expires_at")
        if title is not _UNSET:
            changes["title"] = title
        if topic is not _UNSET:
            changes["topic"] = topic
        asked = None if metadata is None else check_metadata(metadata)
        if asked is not None:
            changes["metadata"] = check_metadata({**current.metadata, **asked})
        if not changes:
            return current
        check_labels(title=changes.get("title"), topic=changes.get("topic"))
        updated = current.evolve(**changes, updated_at=now)
        deferred = False
        if "content" in changes or ("title" in changes and changes["title"] != current.title):
            try:
                vectors = self.embedding.embed_memories([updated])[0]
            except EmbedderUnavailable as exc:
                # The old vectors describe the old text: drop them, keep the
                # record keyword-searchable, and embed it when the server is back.
                log.warning(
                    "embedder unavailable, %s updated for keyword search; its vector is a job: %s", memory_id, exc
                )
                vectors, deferred = [], True
        with self.store.transaction():
            # Compare-and-swap under the write lock: the record read above may have been
            # deleted or edited since, and writing it back undid a delete (issue 31).
            stored = self.store.get_for_update(memory_id)
            if stored is None:
                raise Conflict(
                    f"Memory {memory_id!r} was deleted while it was being edited; this edit was not applied.",
                    hint="Create it again (create_memory / POST .../memories) if the edited text should be kept.",
                )
            if (stored.version, stored.updated_at) != (current.version, current.updated_at):
                if vectors is not None or deferred:  # new text (or title) was written against the old text
                    raise Conflict(
                        f"Memory {memory_id!r} changed while it was being edited; this edit was not applied.",
                        hint="Read the memory again and reapply the change to what it says now.",
                    )
            # Pin, importance, type, expiry and labels apply to the record as it is now; metadata merges into its own.
            if asked is not None:
                changes["metadata"] = check_metadata({**stored.metadata, **asked})
            updated = stored.evolve(**changes, updated_at=now)
            self.store.put(updated, vectors)
            if deferred:
                self.defer_vectors([updated.id], updated.tenant)
            self.written(updated.tenant, 1)
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
        entity_types: Sequence[str] | None = None,
        entity_ids: Sequence[str] | None = None,
        refs: Sequence[Reference | tuple[str, str] | dict[str, str] | str] | None = None,
    ) -> Page:
        """Records newest first; pass ``page.next_cursor`` back for the next page.

        ``entity_types``, ``entity_ids`` and ``refs`` (``"rfp:RFP-7"`` or
        ``("rfp", "RFP-7")``; a record must carry every one) narrow the listing.
        """
        if not 1 <= int(limit) <= 1000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
        filters = search_filters(
            self.tenant_of(tenant), self.user_of(user), types, kinds, scopes, project, session, source_types, source_ids
        )
        filters = with_entity_filters(filters, entity_types, entity_ids, refs)
        return self.store.list(
            filters, cursor=cursor, limit=int(limit), include_expired=include_expired, pinned=pinned, now=utcnow()
        )

    # -- search ----------------------------------------------------------------------
    def search(self, query: SearchQuery) -> SearchResults:
        """Hybrid search: BM25 and vector KNN fused (``fusion`` setting), boosted, explained.

        The query is one value (:class:`~funes.models.SearchQuery`; ``Funes.search(text,
        **options)`` builds it). ``project`` both restricts project-scope records to that
        project and boosts them; ``min_similarity`` drops weak vector matches but keeps
        strong keyword matches. Expired records are never returned. Each hit updates the
        record's access counters and the access log (unless ``track`` is false).
        ``entity_types``, ``entity_ids`` and ``refs`` narrow it as in :meth:`list`.

        Every hit carries a calibrated ``relevance`` (funes.memory.relevance); hits
        under ``min_relevance`` are dropped (default: the
        ``search_min_relevance`` setting; pass 0 to keep every ranked hit), so
        an empty result means nothing relevant was found.

        ``as_of`` searches as of that time, not the wall clock: records created
        later are left out, and recency and expiry are measured from it (so
        imported history from 2023 is not all "old"). Times the query names
        ("on May 3", "last week", "two weeks ago") are resolved against it too
        and lift records of that time (the ``date_boost`` setting; the
        explanation lists the windows under ``dates``); a span around an event
        ("two weeks before the trip") is dated by the memory's best hit for the event.

        ``roles`` keeps only chat messages said in those roles (inside both
        legs). ``group_by="session"`` groups session messages by conversation
        in ``.groups``, ``limit`` of them (see :mod:`funes.memory.grouping`).

        A hit that is a chat message carries the ``context_turns`` turns
        before and after it (default: the setting, 1) as ``hit.context``.
        """
        if not isinstance(query, SearchQuery):
            raise InvalidInput(
                f"Core.search takes a SearchQuery, got {type(query).__name__}.",
                hint="Build one with SearchQuery.of(text, **options), or call Funes.search(text, **options).",
            )
        plan = self.plan(query)
        hits = self.hybrid.search(plan, self._event_windows(plan))
        hits = at_time(self._recallable(hits, plan.filters.tenant), plan.as_of, query.include_superseded)
        floors = self.abstain_floor(), self.abstain_floor("context_unseen_name_relevance")  # under them: weak
        kept = marked_weak(hits, plan.min_relevance, *floors)  # hits automatic context leaves out are marked weak
        hits = SearchResults(kept, degraded=hits.degraded)
        grouped_hits = grouped(hits, query.group_by, plan.limit)
        hits = with_turns(self.store, plan.filters.tenant, grouped_hits, plan.context_turns, plan.as_of)
        if query.track:
            self.track(
                [
                    AccessEvent(
                        memory_id=h.memory.id,
                        tenant=plan.filters.tenant,
                        action="search",
                        query=query.text[:500],
                        score=h.score,
                        session_id=query.session,
                        agent_id=query.agent,
                    )
                    for h in hits
                ]
            )
        return hits

    def plan(self, query: SearchQuery) -> SearchPlan:
        """The query checked and resolved against the settings (every refusal says what to pass instead)."""
        limit = self.config.search_limit if query.limit is None else int(query.limit)
        check_search(query.text, int(self.config.max_query_chars), limit, query.min_relevance, query.min_similarity)
        width = self.config.context_turns if query.context_turns is None else int(query.context_turns)
        if not 0 <= width <= 10:
            raise InvalidInput(f"context_turns {width} is out of range.", hint="Use 0 (the message alone) to 10.")
        project = self.project_of(query.project)
        q = query
        filters = search_filters(
            self.tenant_of(q.tenant),
            self.user_of(q.user),
            q.types,
            q.kinds,
            q.scopes,
            project,
            q.session,
            q.source_types,
            q.source_ids,
            q.since,
            q.until,
            q.roles,
        )
        filters = with_entity_filters(filters, q.entity_types, q.entity_ids, q.refs)
        now = utcnow()
        when = as_of_time(q.as_of)
        if when is not None:
            before = filters.created_before
            filters = replace(filters, created_before=when if before is None else min(before, when))
            now = when
        floor = self.default_min_relevance() if q.min_relevance is None else float(q.min_relevance)
        return SearchPlan(
            query=q,
            filters=filters,
            now=now,
            limit=limit,
            fetch=fetch_size(q.group_by, limit),
            min_similarity=q.min_similarity,
            min_relevance=floor,
            project=project,
            context_turns=width,
            as_of=when,
        )

    def _recallable(self, hits: SearchResults, tenant: str) -> SearchResults:
        """The hits without those of a disabled project (a disabled project recalls nothing)."""
        disabled = self.projects.disabled_projects(tenant)
        if not disabled:
            return hits
        return SearchResults(
            (h for h in hits if not (h.memory.scope == "project" and h.memory.project_id in disabled)),
            degraded=hits.degraded,
        )

    def _event_windows(self, plan: SearchPlan) -> tuple[DateWindow, ...]:
        """Spans around events the query names ("two weeks before the trip"), each dated by the memory.

        The event's words are searched first, with the same filters and
        reference time; the best hit that passes the search floor dates the
        event (its record's time). An event the memory does not hold dates nothing.
        """
        if self.config.date_boost <= 0:
            return ()
        windows: list[DateWindow] = []
        for event in find_events(plan.text):
            sub = replace(plan, query=replace(plan.query, text=event.event), fetch=3, min_similarity=None)
            found = self._recallable(self.hybrid.search(sub), plan.filters.tenant)
            if not found or found[0].relevance < self.abstain_floor():
                continue
            try:
                windows.append(event.window(found[0].memory.created_at))
            except (ValueError, OverflowError):
                continue  # "999 years after" it: off the calendar (reading dates never fails a search)
        return tuple(windows)

    def relevance_calibrated(self) -> bool:
        """Whether the relevance constants were fitted for the store's embedding model (funes.relevance)."""
        ident = self.store.identity()
        return ident is not None and ident.model_id in CALIBRATED_MODELS

    def abstain_floor(self, name: str = "context_min_relevance") -> float:
        """The relevance automatic context needs: the setting ``name`` (0 when the embedder is not calibrated)."""
        return float(getattr(self.config, name)) if self.relevance_calibrated() else 0.0

    def default_min_relevance(self) -> float:
        """The relevance floor of explicit search: the setting, or 0 when the embedder is not calibrated."""
        # With another model's cosines the constants do not hold: rank, but drop nothing on them.
        return float(self.config.search_min_relevance) if self.relevance_calibrated() else 0.0
