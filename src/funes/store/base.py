"""The storage protocol and the values it trades in (kept apart from the factory in ``__init__``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np

from ..models import EmbedderIdentity, Job, Memory, Page, RankFields, SearchFilters, Turn

F = TypeVar("F", bound=Callable[..., Any])


def own_transaction(method: F) -> F:
    """A store write that is a transaction of its own, so it can be run again whole: when the database
    rolls it back for crossing a concurrent write (a PostgreSQL deadlock), ``db.retrying`` runs it again
    rather than hand the caller an error for work nobody did wrong."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self.db.retrying(lambda: method(self, *args, **kwargs))

    return run  # type: ignore[return-value]


def refuse_other_embedder(current: EmbedderIdentity | None, identity: EmbedderIdentity, reset: bool) -> None:
    """Raise EmbedderMismatch when a store's vectors came from another model and no reset was asked for."""
    if current is not None and current != identity and not reset:
        from ..errors import EmbedderMismatch

        raise EmbedderMismatch(
            f"This store's vectors were made by {current.model_id} ({current.dimensions} dims), "
            f"not {identity.model_id} ({identity.dimensions} dims).",
            hint="Run `funes reindex` to re-embed everything with the configured model.",
        )


def vector_problem(vector: np.ndarray) -> str | None:
    """Why a vector cannot be stored (NaN or infinite values, all zeros), or None when it can.

    One such vector makes every cosine in its tenant NaN and broke all searches
    there (issue 9), so every entry (embedder output, import, reindex) refuses it.
    """
    array = np.asarray(vector, dtype=np.float32)
    square = float(np.dot(array, array))
    if math.isfinite(square) and square > 0.0:
        return None  # every value finite and one not zero (the common case: one dot product, no scans)
    if not np.all(np.isfinite(array)):
        return "has NaN or infinite values"
    if not np.any(array):
        return "is all zeros"
    return None


def refuse_other_tenant(memory: Memory, owner: str) -> None:
    """Refuse (nothing written) a write of a record id that another tenant's record holds.

    Record ids are the store's, not a tenant's: one tenant can never
    overwrite, move or shadow another's record by naming its id.
    """
    if owner != memory.tenant:
        from ..errors import InvalidInput

        raise InvalidInput(
            f"Record id {memory.id} belongs to another tenant in this store; nothing was written.",
            hint="Write it under a new id (leave the id out), or as the tenant that holds it.",
        )


def checked_vectors(memory_id: str, vectors: Sequence[np.ndarray], dims: int) -> list[np.ndarray]:
    """A record's vectors as float32 arrays, or a clear error (nothing written) when one does not fit the store."""
    from ..errors import EmbedderMismatch, InvalidInput

    out = []
    for part, vector in enumerate(vectors):
        if len(vector) != dims:
            raise EmbedderMismatch(
                f"A vector of {len(vector)} dimensions does not fit this store ({dims}).",
                hint="Run `funes reindex` after changing the embedding model.",
            )
        problem = vector_problem(vector)
        if problem is not None:
            raise InvalidInput(
                f"The vector of record {memory_id} (part {part + 1}) {problem}; nothing was written.",
                hint="Check the embedding server or the import file; `funes reindex` re-embeds from the text.",
            )
        out.append(np.asarray(vector, dtype=np.float32))
    return out


@dataclass(frozen=True)
class AccessEvent:
    """One retrieval of a record, for access counters and the access log."""

    memory_id: str
    tenant: str
    action: str
    query: str | None = None
    score: float | None = None
    session_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True)
class Visibility:
    """Which records a search or listing may see inside one tenant.

    A given project or session id restricts its scope to that id; a missing
    one leaves the scope open across the tenant.
    """

    scopes: tuple[str, ...] = ("session", "project", "team")
    project_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None

    @classmethod
    def from_filters(cls, filters: SearchFilters) -> Visibility:
        """The visibility a set of search filters implies."""
        return cls(
            scopes=tuple(filters.scopes or ("session", "project", "team")),
            project_id=filters.project_id,
            session_id=filters.session_id,
            user_id=filters.user_id,
        )

    def clauses(self) -> list[tuple[str, tuple[str, ...]]]:
        """The visibility as at most two alternatives: ('scope', open) and ('vis', keys)."""
        open_scopes: list[str] = []
        keys: list[str] = []
        for scope in self.scopes:
            if scope == "team":
                keys.append("team")
            elif scope == "project" and self.project_id:
                keys.append(vis_key("project", self.project_id, None))
            elif scope == "session" and self.session_id:
                keys.append(vis_key("session", None, self.session_id))
            else:
                open_scopes.append(scope)
        out: list[tuple[str, tuple[str, ...]]] = []
        if open_scopes:
            out.append(("scope", tuple(open_scopes)))
        if keys:
            out.append(("vis", tuple(keys)))
        return out


def vis_key(scope: str, project_id: str | None, session_id: str | None) -> str:
    """The visibility key of a record: ``team``, ``project:<id>`` or ``session:<id>``."""
    if scope == "team":
        return "team"
    if scope == "project":
        return f"project:{project_id or ''}"
    return f"session:{session_id or ''}"


class Store(Protocol):
    """What the service needs from storage."""

    path: str

    def identity(self) -> EmbedderIdentity | None:
        """The embedder identity the vectors were made with (None if unset)."""
        ...

    def set_identity(self, identity: EmbedderIdentity, *, reset: bool = False) -> None:
        """Record the embedder identity; ``reset`` drops every vector first."""
        ...

    def put(self, memory: Memory, vectors: Sequence[np.ndarray] | None) -> Memory:
        """Insert or replace a record and its vectors in one transaction."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """Group several writes into one transaction."""
        ...

    def put_unique(self, memory: Memory, vectors: Sequence[np.ndarray] | None) -> Memory:
        """Write unless a live record with the same content, scope, kind and owner exists; return the one that stands."""
        ...

    def put_many(self, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]) -> int:
        """Insert or replace many records in one transaction."""
        ...

    def get(self, memory_id: str) -> Memory | None:
        """A record by id, or None."""
        ...

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """Records by id (missing ids are left out)."""
        ...

    def get_for_update(self, memory_id: str) -> Memory | None:
        """A record by id, read in a write transaction that no other writer can change it under until it ends."""
        ...

    def rank_fields(self, memory_ids: Sequence[str]) -> dict[str, RankFields]:
        """What ranking reads of each record, by id (missing ids are left out)."""
        ...

    def find_by_hash(
        self, tenant: str, vis: str, content_hash: str, kind: str, user_id: str | None = None
    ) -> Memory | None:
        """The record with this exact content in this tenant, visibility, kind and owner (None: tenant-wide)."""
        ...

    def find_entity(
        self, tenant: str, user_id: str | None, project_id: str | None, entity_type: str, entity_id: str
    ) -> Memory | None:
        """The record of this entity in this tenant, owner and project (None: none yet)."""
        ...

    def lock_identity(self, key: str, *, shared: bool = False) -> None:
        """Inside a write transaction: hold ``key`` until it ends, so writers of one identity take turns
        (``shared``: with each other, not with an exclusive holder)."""
        ...

    def with_proposals(self, tenant: str, user_id: str | None, limit: int) -> list[Memory]:
        """Records holding a machine's proposal (a user sees theirs and the shared ones)."""
        ...

    def delete(self, memory_ids: Sequence[str]) -> int:
        """Delete records with their vectors and keyword entries; returns how many."""
        ...

    def list(
        self,
        filters: SearchFilters,
        *,
        cursor: str | None,
        limit: int,
        include_expired: bool,
        pinned: bool | None,
        now: datetime,
    ) -> Page:
        """Records newest first, cursor-paginated."""
        ...

    def reference_counts(
        self, filters: SearchFilters, ref_type: str, *, now: datetime, include_expired: bool = False
    ) -> dict[str, int]:
        """Per reference id of ``ref_type``: how many of the records the filters keep carry it."""
        ...

    def keyword_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        limit: int,
        scan_cap: int,
        now: datetime,
        common_ratio: float = 0.1,
        fields: dict[str, RankFields] | None = None,
    ) -> list[tuple[str, float]]:
        """(memory id, BM25 score, higher is better), best first.

        ``fields``, when given, receives the :class:`RankFields` of those hits
        whose records the search read anyway (any, all or none of them): a
        caller asks ``rank_fields`` only for the rest.
        """
        ...

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime
    ) -> list[tuple[str, float]]:
        """(memory id, cosine similarity), best first; exact KNN inside the filters."""
        ...

    def vector_search_many(
        self,
        queries: Sequence[tuple[np.ndarray, SearchFilters]],
        *,
        k: int,
        now: datetime,
        floor: float | None = None,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`vector_search` of each (vector, filters), in order (PostgreSQL: one statement per filter set);
        ``floor``: only neighbours at least this similar are wanted (PostgreSQL then searches its index narrower)."""
        ...

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Rows in the keyword index and how many contain each term (the IDF inputs of BM25)."""
        ...

    def term_presence(self, terms: Sequence[str], filters: SearchFilters, now: datetime | None = None) -> set[str]:
        """The terms found in at least one record the filters admit (a relevance signal; unknown counts as found)."""
        ...

    def index_work(self) -> list[str]:
        """Tenants whose vector index wants a build or a catch-up (a store without one returns [])."""
        ...

    def maintain_index(self, tenant: str) -> str:
        """Build or catch up a tenant's vector index (slow; the ``ann-index`` job runs it)."""
        ...

    def index_away(self) -> bool:
        """Whether a load took the vector index away and its rebuild is pending: large tenants' nearest-neighbour
        searches are exact scans until it is back (work that searches once per record should wait)."""
        ...

    def vectors_for(self, memory_ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        """Stored vectors of the given records."""
        ...

    def record_access(self, events: Sequence[AccessEvent], at: datetime) -> None:
        """Bump access counters and write access-log rows."""
        ...

    def cache_get(self, model_id: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached embeddings by text hash."""
        ...

    def cache_put(self, model_id: str, items: Sequence[tuple[str, np.ndarray]], *, since: float | None = None) -> None:
        """Store embeddings in the cache; none when a forget ran at or after ``since`` (when the texts were read)."""
        ...

    def iter_records(self, tenant: str | None = None) -> Iterator[Memory]:
        """Every record (of one tenant, or all), oldest first."""
        ...

    def stats(self, tenant: str | None) -> dict[str, Any]:
        """Counts and sizes."""
        ...

    def replace_index(
        self, identity: EmbedderIdentity, items: Iterable[tuple[Memory, Sequence[np.ndarray] | None]]
    ) -> int:
        """Swap in a new embedder identity, every record's vectors and a rebuilt keyword index, atomically."""
        ...

    def check(self) -> list[str]:
        """Integrity problems found (empty when healthy)."""
        ...

    def pending_vectors(self, tenant: str | None = None) -> int:
        """Records whose vectors a queued or running job will make."""
        ...

    # -- durable jobs (see funes.jobs) ---------------------------------------------
    def enqueue_job(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        tenant: str,
        now: datetime,
        run_after: datetime | None = None,
        max_attempts: int = 5,
        dedupe_key: str | None = None,
    ) -> str:
        """Queue a job inside the caller's transaction; a queued job with the same dedupe key absorbs it."""
        ...

    def claim_job(
        self,
        worker: str,
        *,
        now: datetime,
        lease_seconds: float,
        kinds: Sequence[str] | None = None,
        dead_workers: Sequence[str] = (),
        exclude: Sequence[str] = (),
    ) -> Job | None:
        """Atomically take the next ready job under a lease (never one of ``exclude``)."""
        ...

    def extend_job_lease(self, job_id: str, worker: str, until: datetime) -> bool:
        """Keep a running job's lease; False when the worker lost it."""
        ...

    def finish_job(self, job_id: str, worker: str, result: Any, *, now: datetime) -> bool:
        """Mark a job done inside the transaction applying its effect; False when the worker lost it."""
        ...

    def forgets_held(self, tenant: str) -> AbstractContextManager[None]:
        """Around a forget's plan and purge: writes derived from earlier reads commit before the plan, or find its
        receipt (:meth:`unforgotten_write`)."""
        ...

    def unforgotten_write(self, tenant: str, since: float, what: str) -> AbstractContextManager[None]:
        """One write transaction of what was derived from reads made since ``since`` (epoch seconds): no forget of
        the tenant commits while it is open (the tenant's forget lock, taken first), and when one committed since
        ``since`` it raises :class:`~funes.errors.ForgetCrossed` (naming ``what``) and nothing of it is written."""
        ...

    def fail_job(
        self, job_id: str, worker: str, error: str, *, now: datetime, retry_at: datetime | None, counted: bool = True
    ) -> None:
        """Record a failed attempt: retried at ``retry_at``, or failed for good (``counted=False``: given back)."""
        ...

    def retry_job(self, job_id: str, *, now: datetime) -> Job | None:
        """Queue a finished job again."""
        ...

    def expedite_jobs(self, kind: str, now: datetime) -> int:
        """Make the queued jobs of a kind due now."""
        ...

    def get_job(self, job_id: str) -> Job | None:
        """A job by id."""
        ...

    def list_jobs(
        self, tenant: str | None = None, *, status: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[Job]:
        """Jobs, newest first."""
        ...

    def job_counts(self, tenant: str | None = None) -> dict[str, int]:
        """Jobs per status."""
        ...

    def next_job_due(self) -> datetime | None:
        """When the earliest queued job may run (None: nothing is queued)."""
        ...

    def running_workers(self) -> list[str]:
        """Workers that hold running jobs."""
        ...

    def trim_jobs(self, before: datetime) -> int:
        """Delete jobs that finished before ``before``."""
        ...

    # -- conversations and cleanup (each joins the caller's transaction when there is one) --------
    def append_message(
        self,
        tenant: str,
        session_id: str,
        message_id: str,
        role: str,
        content: str,
        tool_calls: Sequence[Any],
        tool_call_id: str | None,
        at: datetime,
        record_ids: Sequence[str],
    ) -> int:
        """Append a message to a session; returns its sequence number."""
        ...

    def append_messages(
        self,
        tenant: str,
        session_id: str,
        rows: Sequence[tuple[str, str, str, Sequence[Any], str | None, datetime, Sequence[str]]],
    ) -> list[int]:
        """Append messages (message id, role, content, tool calls, tool call id, time, record ids); their seqs."""
        ...

    def turns_near(self, tenant: str, anchors: Sequence[tuple[str, int]], width: int) -> list[Turn]:
        """The messages with content within ``width`` places of each (session id, seq) anchor (anchors too), oldest first."""
        ...

    def add_usage(
        self,
        tenant: str,
        session_id: str,
        message_id: str | None,
        at: datetime,
        model: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        context_window: int | None,
    ) -> None:
        """Record one model call's token usage."""
        ...

    def clear_session(self, tenant: str, session_id: str, at: datetime, reason: str) -> dict[str, Any]:
        """Remove a session's unpinned records, messages, usage and row; logged."""
        ...

    def delete_last_message(self, tenant: str, session_id: str) -> Any | None:
        """Delete a session's newest message with its records and usage; returns the message (None if empty)."""
        ...

    def clear(
        self,
        tenant: str,
        *,
        session_id: str | None = None,
        project_id: str | None = None,
        user_id: str | None = None,
        at: datetime,
        reason: str,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Remove a session's, a project's or the tenant's data in one transaction, logged; returns counts."""
        ...

    def reclaim_space(self) -> tuple[int, int]:
        """Give free pages back to the file system; (bytes before, after)."""
        ...

    def record_reclaimed(self, log_id: int, reclaimed: int) -> None:
        """Set the bytes a cleanup freed on its log row."""
        ...

    def cleanup_log(self, tenant: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest cleanup-log rows."""
        ...

    # -- maintenance (see funes.upkeep) ------------------------------------------------
    def bump_counter(self, tenant: str, name: str, by: int = 1) -> int:
        """Add to a tenant's counter (in the caller's transaction if any); returns the new value."""
        ...

    def bump_counter_queueing(self, tenant: str, name: str, by: int, *, every: int, job: dict[str, Any]) -> bool | None:
        """Add to a counter and queue ``job`` (``enqueue_job``'s arguments) when it crosses a multiple of ``every``,
        in the caller's transaction; whether it queued (None: known only at the commit)."""
        ...

    def expired_ids(self, tenant: str, now: datetime, *, limit: int) -> list[str]:
        """Unpinned records whose expiry has passed, oldest expiry first."""
        ...

    def prune_candidates(self, tenant: str, before: datetime, kinds: Sequence[str], *, limit: int) -> list[str]:
        """Unpinned version-1 records of these kinds neither written nor read since ``before``."""
        ...

    def tenant_ids(self, tenant: str, kinds: Sequence[str], *, limit: int, since: datetime | None = None) -> list[str]:
        """Ids of the tenant's records of these kinds (written after ``since``), newest first."""
        ...

    def log_cleanup(
        self,
        tenant: str,
        *,
        at: datetime,
        reason: str,
        scope: str | None,
        records_deleted: int,
        project_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Write a cleanup-log row (in the caller's transaction if any); returns its id."""
        ...

    def storage_breakdown(self, tenant: str | None) -> list[dict[str, Any]]:
        """Records and bytes per (tier, kind, source)."""
        ...

    def get_project_settings(self, tenant: str, project_id: str) -> dict[str, Any] | None:
        """A project's stored settings (only those set), or None."""
        ...

    def save_project_settings(self, tenant: str, project_id: str, settings: dict[str, Any], at: datetime) -> None:
        """Replace a project's stored settings."""
        ...

    def list_project_settings(self, tenant: str) -> dict[str, dict[str, Any]]:
        """Every project of the tenant with stored settings."""
        ...

    def record_counts(self, tenant: str, exclude_kinds: Sequence[str]) -> dict[str | None, int]:
        """Records per project (None: outside any project), leaving out some kinds."""
        ...

    def eviction_candidates(self, tenant: str, project_id: str | None, kinds: Sequence[str]) -> list[Memory]:
        """Unpinned records of these kinds that retention may evict (one project's, or the tenant's)."""
        ...

    def optimize(self, *, vacuum_free_ratio: float) -> dict[str, Any]:
        """Optimize the keyword index; reclaim space when free pages exceed the ratio."""

    # -- team server: API keys and project settings (not tenant-filtered: a key is how a tenant is found) ----
    def save_api_key(self, row: dict[str, Any]) -> None:
        """Insert an API key row (id, team, user_id, role, name, prefix, key_hash, created_at)."""
        ...

    def find_api_key(self, key_hash: str) -> dict[str, Any] | None:
        """The key row with this hash, revoked or not (the caller checks ``revoked_at``)."""
        ...

    def list_api_keys(self, team: str | None) -> list[dict[str, Any]]:
        """Key rows newest first (of one team, or all), never with their hash."""
        ...

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        """Revoke a key; False when there is no such live key."""
        ...

    def touch_api_key(self, key_id: str, at: datetime) -> None:
        """Record a key's last use."""
        ...

    def close(self) -> None:
        """Close every connection."""
        ...
