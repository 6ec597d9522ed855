"""Maintenance: keep a store healthy without anyone asking (seed 001's maintenance, seed 002's lifecycle).

A per-tenant **write counter** (``counters`` table, bumped inside each
write's transaction) queues a ``maintain`` job every
``maintain_every_writes`` writes; ``funes maintain`` runs the same work on
demand. One run, for one tenant:

* **purges expired records**: past their ``expires_at`` (searches already
  hide them; this deletes them), pinned ones excepted;
* **prunes stale records**: unpinned, never edited (version 1), neither
  written nor read for ``prune_after_days`` (90) days, of the agent kinds
  (memories and insights: document chunks follow their documents, messages
  their sessions);
* **deduplicates near-duplicates**: agent records of the same visibility,
  owner and kind whose vectors have a cosine above ``dedupe_similarity``
  (0.95) AND whose words are nearly the same (:func:`same_words`: the same
  numbers, 80% of the words), so two facts that differ in one word, a time
  or a place are never merged. The one kept is the pinned one, else the one a person wrote, else
  the higher version, else the more accessed, else the newer; two pinned records, or two a
  person edited, are both kept;
* **optimises the indexes**: a follow-up ``optimize`` job merges the keyword
  index and VACUUMs when free pages exceed ``vacuum_free_ratio``.

The job has the runner's two phases: candidates are found outside any
transaction, then every deletion is re-checked and applied in ONE
transaction with its cleanup-log row. A record pinned, edited or read
between the phases is left alone.

Utilities beside it: :meth:`Upkeep.find_duplicates`, :meth:`Upkeep.find_stale`
(documents whose source file changed or vanished after it was indexed) and
:meth:`Upkeep.find_related` (documents near one document by embedding).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from ..memory.ranking import retention_score
from ..memory.search import rank_settings
from ..models import Job, Memory, SearchFilters, format_time, utcnow
from ..store import vis_key

if TYPE_CHECKING:
    from ..knowledge.documents import Documents
    from ..memory.core import Core
    from ..memory.jobs import Jobs

log = logging.getLogger("funes")

UPKEEP_KINDS: tuple[str, ...] = ("memory", "insight")  # what prune and dedupe touch
_NEIGHBOURS = 6  # vector neighbours looked at per record when deduplicating
#: Seconds before a maintenance run deferred by a vector index rebuild looks again.
_INDEX_AWAY_RETRY = 60.0
RETENTION_TRIGGER = 0.8  # share of max_records from which retention evicts (seed 002)
MIN_WORD_OVERLAP = 0.8  # Jaccard of the word sets two near-duplicates share at least


@dataclass(frozen=True)
class DuplicatePair:
    """Two records whose vectors are nearly the same, and which one maintenance would keep."""

    keep: Memory
    drop: Memory
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        """The pair as plain data."""
        return {
            "keep": self.keep.id,
            "drop": self.drop.id,
            "similarity": round(self.similarity, 4),
            "keep_content": self.keep.content[:200],
            "drop_content": self.drop.content[:200],
        }


def same_words(a: str, b: str) -> bool:
    """Whether two texts say the same thing in (nearly) the same words: the textual half of "near-duplicate".

    A cosine above 0.95 alone also joins "Standup is at 9:00" and "Standup is
    at 10:00", or "The office is in Lyon" and "... in Paris": facts that
    differ in one word. So the texts must hold the same numbers and share at
    least 80% of their words (Jaccard), case and punctuation aside.
    """
    words_a, words_b = re.findall(r"\w+", a.lower()), re.findall(r"\w+", b.lower())
    numbers_a = {w for w in words_a if any(c.isdigit() for c in w)}
    numbers_b = {w for w in words_b if any(c.isdigit() for c in w)}
    if numbers_a != numbers_b:
        return False
    set_a, set_b = set(words_a), set(words_b)
    if not set_a or not set_b:
        return a.strip() == b.strip()
    return len(set_a & set_b) / len(set_a | set_b) >= MIN_WORD_OVERLAP


def keeper(a: Memory, b: Memory) -> tuple[Memory, Memory] | None:
    """(kept, dropped) of two near-duplicates, or None when both are pinned or both edited by a person.

    Pinning is never overridden, and a person's text wins over a machine's
    near copy (issue 25); two texts a person edited are both kept.
    """

    def edited(m: Memory) -> bool:
        return m.pinned or (m.sovereign and m.version > 1)

    if (a.pinned and b.pinned) or (edited(a) and edited(b)):
        return None

    def rank(m: Memory) -> tuple[int, int, int, int, datetime]:
        return (int(m.pinned), int(m.sovereign), m.version, m.access_count, m.updated_at)

    return (a, b) if rank(a) >= rank(b) else (b, a)


class Upkeep:
    """Maintenance runs, the write counter that triggers them, scheduled session retention, and the find_* utilities."""

    def __init__(self, core: Core, jobs: Jobs, docs: Documents, prune_sessions: Callable[..., dict[str, Any]]) -> None:
        self.core = core
        self.store = core.store
        self.config = core.config
        self.jobs = jobs
        self.docs = docs
        self._prune_sessions = prune_sessions
        core.write_observers.append(self._count_writes)
        jobs.register("maintain", self._maintain_job)
        jobs.register("optimize", self._optimize_job)
        jobs.schedule("session-retention", self._retention_every, self._retention_job)

    # -- the write counter -------------------------------------------------------------
    def _count_writes(self, tenant: str, count: int) -> None:
        every = int(self.config.maintain_every_writes)
        if every <= 0 or count <= 0:
            return
        # Queued when the count crosses a multiple of `every` (PostgreSQL: decided in the commit's round trip).
        job = {
            "kind": "maintain",
            "payload": {"tenant": tenant},
            "tenant": tenant,
            "now": utcnow(),
            "max_attempts": int(self.config.job_max_attempts),
            "dedupe_key": f"maintain:{tenant}",
        }
        if self.store.bump_counter_queueing(tenant, "writes", count, every=every, job=job) and self.core.on_job_queued:
            self.core.on_job_queued()  # (unknown yet: the worker finds it at its next look, job_poll_seconds)

    # -- maintenance ---------------------------------------------------------------------
    def maintain(
        self, *, tenant: str | None = None, dry_run: bool = False, now: datetime | None = None
    ) -> dict[str, Any]:
        """Purge expired records, prune stale ones, deduplicate near-duplicates and optimise the indexes, now.

        Returns what was (or, with ``dry_run``, would be) removed, with the ids.
        """
        tenant_id = self.core.tenant_of(tenant)
        plan = self._plan(tenant_id, now or utcnow())
        if dry_run:
            return {**plan, "dry_run": True}
        with self.store.transaction():
            report = self._apply(tenant_id, plan, now or utcnow())
        report["optimize"] = self.store.optimize(vacuum_free_ratio=float(self.config.vacuum_free_ratio))
        return report

    def _plan(self, tenant: str, now: datetime, *, since: datetime | None = None) -> dict[str, Any]:
        """What one run removes. ``since``: only records written after it are checked for duplicates
        (the background run passes its previous run's time, so each run costs what was written since)."""
        limit = int(self.config.maintain_batch)
        expired = self.store.expired_ids(tenant, now, limit=limit)
        days = float(self.config.prune_after_days)
        stale = (
            self.store.prune_candidates(tenant, now - timedelta(days=days), UPKEEP_KINDS, limit=limit)
            if days > 0
            else []
        )
        gone = set(expired) | set(stale)
        pairs = [p for p in self.find_duplicates(tenant=tenant, scan=limit, since=since) if p.drop.id not in gone]
        dropped: dict[str, DuplicatePair] = {}
        for pair in pairs:
            if pair.keep.id not in dropped and pair.drop.id not in dropped:
                dropped[pair.drop.id] = pair
        gone |= set(dropped)
        evict = self._plan_retention(tenant, now, gone)
        return {
            "tenant": tenant,
            "expired": expired,
            "stale": stale,
            "duplicates": [p.to_dict() for p in dropped.values()],
            "evict": evict,
            "stamps": {
                m.id: [m.version, m.pinned, m.access_count]
                for m in self.store.get_many([*stale, *dropped, *(e["id"] for e in evict)]).values()
            },
        }

    def _plan_retention(self, tenant: str, now: datetime, gone: set[str]) -> list[dict[str, Any]]:
        """The records retention evicts: per project over 80% of its max_records, then over 80% of the tenant cap.

        Lowest :func:`funes.memory.ranking.retention_score` first (ties: least
        read, then oldest), records a person wrote after every machine-written
        one; pinned records, document chunks and messages are never evicted.
        Each project (or the tenant) is brought back to 80%.
        """
        settings = rank_settings(self.config)
        counts = self.store.record_counts(tenant, exclude_kinds=("message",))
        out: list[dict[str, Any]] = []
        taken = set(gone)

        def lowest(candidates: Sequence[Memory], excess: int, tier: str, project: str | None) -> None:
            # What a person wrote goes only after everything a machine wrote (issue 25); pin it to keep it.
            ranked = sorted(
                (m for m in candidates if m.id not in taken),
                key=lambda m: (m.sovereign, retention_score(m, settings, now), m.access_count, m.updated_at),
            )
            for m in ranked[:excess]:
                taken.add(m.id)
                out.append({"id": m.id, "tier": tier, "project_id": project})

        for project, count in sorted(counts.items(), key=lambda kv: str(kv[0])):
            if project is None:
                continue
            limit = int(self.core.projects.effective(tenant, project)["max_records"])
            high = int(limit * RETENTION_TRIGGER)
            if count > high:
                lowest(self.store.eviction_candidates(tenant, project, UPKEEP_KINDS), count - high, "project", project)
        total_limit = int(int(self.config.max_records_total) * RETENTION_TRIGGER)
        total = sum(counts.values()) - len(taken)
        if total > total_limit:
            lowest(self.store.eviction_candidates(tenant, None, UPKEEP_KINDS), total - total_limit, "global", None)
        return out

    def _apply(self, tenant: str, plan: dict[str, Any], now: datetime) -> dict[str, Any]:
        """Delete the planned records that still qualify (inside the caller's transaction) and log it."""
        evictions = plan.get("evict", [])
        wanted = [
            *plan["expired"],
            *plan["stale"],
            *(d["drop"] for d in plan["duplicates"]),
            *(e["id"] for e in evictions),
        ]
        current = self.store.get_many(wanted)
        stamps = plan["stamps"]
        removed: dict[str, list[str]] = {"expired": [], "stale": [], "duplicates": [], "evicted": []}
        for reason, ids in (
            ("expired", plan["expired"]),
            ("stale", plan["stale"]),
            ("duplicates", [d["drop"] for d in plan["duplicates"]]),
            ("evicted", [e["id"] for e in evictions]),
        ):
            for memory_id in ids:
                memory = current.get(memory_id)
                if memory is None or memory.pinned:
                    continue
                if reason == "expired" and not memory.is_expired(now):
                    continue  # renewed meanwhile
                if reason != "expired" and stamps.get(memory_id) != [
                    memory.version,
                    memory.pinned,
                    memory.access_count,
                ]:
                    continue  # edited, pinned or read since the plan: keep it
                removed[reason].append(memory_id)
        evicted = set(removed["evicted"])
        ids = [i for group in removed.values() for i in group]
        if ids:
            self.store.delete(ids)
        groups: dict[tuple[str, str | None], int] = {}
        for e in evictions:
            if e["id"] in evicted:
                groups[(e["tier"], e["project_id"])] = groups.get((e["tier"], e["project_id"]), 0) + 1
        for (tier, project), n in groups.items():
            limit = (
                self.core.projects.effective(tenant, project)["max_records"]
                if tier == "project"
                else self.config.max_records_total
            )
            where = f"project {project}" if tier == "project" else "the tenant"
            self.store.log_cleanup(
                tenant,
                at=now,
                reason=f"retention: {where} was over 80% of its {limit:,} records; evicted the lowest-scoring",
                scope=tier,
                project_id=project,
                records_deleted=n,
            )
        others = len(ids) - len(evicted)
        if others:
            self.store.log_cleanup(
                tenant,
                at=now,
                reason=(
                    f"maintenance: {len(removed['expired'])} expired, {len(removed['stale'])} stale, "
                    f"{len(removed['duplicates'])} duplicates"
                ),
                scope="maintenance",
                records_deleted=others,
            )
        return {"tenant": tenant, "removed": {k: len(v) for k, v in removed.items()}, "ids": removed}

    def _maintain_job(self, job: Job) -> Callable[[], dict[str, Any]]:
        tenant = str(job.payload.get("tenant") or job.tenant)
        if self.store.index_away():
            # Dedupe searches once per record: with the vector index away after a load, each would be an exact
            # scan of the tenant (minutes at 100k). Run again once the ann-index job has built it.
            self.core.enqueue_job(
                "maintain", {"tenant": tenant}, tenant=tenant, delay=_INDEX_AWAY_RETRY, dedupe_key=f"maintain:{tenant}"
            )
            return lambda: {"deferred": "the vector index is being rebuilt after a load; maintenance runs after it"}
        done = self.store.list_jobs(tenant, status="done", kind="maintain", limit=20)
        previous = [j for j in done if not (j.result or {}).get("deferred")]  # a deferred run scanned nothing
        since = previous[0].finished_at if previous else None
        plan = self._plan(tenant, utcnow(), since=since)

        def apply() -> dict[str, Any]:
            report = self._apply(tenant, plan, utcnow())
            self.core.enqueue_job("optimize", {}, tenant=tenant, dedupe_key="optimize")
            return {"removed": report["removed"]}

        return apply

    def _optimize_job(self, job: Job) -> Callable[[], dict[str, Any]]:
        # VACUUM cannot run inside the apply transaction: the work is done here, the apply only records it.
        report = self.store.optimize(vacuum_free_ratio=float(self.config.vacuum_free_ratio))
        return lambda: report

    # -- scheduled session retention --------------------------------------------------------
    def _retention_every(self) -> float:
        if int(self.config.session_retention_days) <= 0:
            return 0.0
        return float(self.config.retention_interval_hours) * 3600.0

    def _retention_job(self, job: Job) -> Callable[[], dict[str, Any]]:
        # Clearing sessions is one transaction of its own; the apply only records the outcome.
        report = self._prune_sessions(all_tenants=True)
        cleared = len(report.get("sessions") or [])
        return lambda: {"sessions_cleared": cleared, "retention_days": report.get("retention_days")}

    # -- per-project settings ------------------------------------------------------------------
    def project_settings(self, project: str, *, tenant: str | None = None) -> dict[str, Any]:
        """A project's effective settings, which of them are its own, and how many records it holds."""
        tenant_id = self.core.tenant_of(tenant)
        stored = self.core.projects.stored(tenant_id, project)
        counts = self.store.record_counts(tenant_id, exclude_kinds=("message",))
        return {
            "project": project,
            "settings": self.core.projects.effective(tenant_id, project),
            "own": sorted(stored),
            "records": counts.get(project, 0),
        }

    def configure_project(self, project: str, values: dict[str, Any], *, tenant: str | None = None) -> dict[str, Any]:
        """Set a project's settings (enabled, max_records, chunk_size, chunk_overlap, retrieval_k; None resets one).

        Lowering ``max_records`` under the project's size queues a maintenance
        run, which evicts down to 80% of it.
        """
        tenant_id = self.core.tenant_of(tenant)
        with self.store.transaction():
            self.core.projects.update(tenant_id, project, values)
            if "max_records" in values:
                self.core.enqueue_job(
                    "maintain", {"tenant": tenant_id}, tenant=tenant_id, dedupe_key=f"maintain:{tenant_id}"
                )
        return self.project_settings(project, tenant=tenant_id)

    # -- utilities ---------------------------------------------------------------------------
    def find_duplicates(
        self,
        *,
        threshold: float | None = None,
        tenant: str | None = None,
        scan: int | None = None,
        since: datetime | None = None,
    ) -> list[DuplicatePair]:
        """Pairs of agent records (same visibility, owner and kind) with cosine >= ``threshold`` (default 0.95).

        Looks at the ``scan`` most recently updated records (``maintain_batch``
        by default; only those written after ``since`` when given) and each
        one's nearest vectors, among all the tenant's records.
        """
        limit = float(self.config.dedupe_similarity if threshold is None else threshold)
        if not 0.5 <= limit <= 1.0:
            raise InvalidInput(f"Threshold {limit} is out of range.", hint="Use a cosine from 0.5 to 1.0, e.g. 0.95.")
        tenant_id = self.core.tenant_of(tenant)
        ids = self.store.tenant_ids(tenant_id, UPKEEP_KINDS, limit=int(scan or self.config.maintain_batch), since=since)
        records = self.store.get_many(ids)
        vectors = self.store.vectors_for(ids)
        asked = [(m, v) for m in (records.get(i) for i in ids) if m is not None for v in vectors.get(m.id, ())]
        # All the searches at once: PostgreSQL answers a hundred of them per statement (vector_search_many).
        found = self.store.vector_search_many(
            [(v, SearchFilters(tenant=tenant_id, kinds=(m.kind,))) for m, v in asked],
            k=_NEIGHBOURS,
            now=utcnow(),
            floor=limit,
        )
        seen: set[tuple[str, str]] = set()
        pairs: list[DuplicatePair] = []
        for (memory, _vector), neighbours in zip(asked, found, strict=True):
            memory_id = memory.id
            for other_id, similarity in neighbours:
                if other_id == memory_id or similarity < limit:
                    continue
                key = (min(memory_id, other_id), max(memory_id, other_id))
                if key in seen:
                    continue
                other = records.get(other_id) or self.store.get(other_id)
                if other is None or not _same_place(memory, other) or not same_words(memory.content, other.content):
                    continue
                seen.add(key)
                chosen = keeper(memory, other)
                if chosen is not None:
                    pairs.append(DuplicatePair(chosen[0], chosen[1], float(similarity)))
        return sorted(pairs, key=lambda p: -p.similarity)

    def find_stale(self, *, project: str | None = None, tenant: str | None = None) -> list[dict[str, Any]]:
        """Documents whose source file changed, or vanished, after they were indexed (``project``: one file's)."""
        out = []
        for doc in self.docs.documents(tenant=tenant):
            if project is not None and doc.project_id != project:
                continue
            path = Path(doc.uri)
            if doc.uri.startswith("stdin") or not path.is_absolute():
                continue
            indexed = doc.indexed_at or doc.updated_at
            fix = f"funes docs reindex {doc.id}"
            if not path.exists():
                # Reindexing reads the file, so a vanished file is removed (or restored and reindexed).
                reason, fix = "the source file is gone", f"funes docs rm {doc.id}"
            else:
                mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=indexed.tzinfo if indexed else None)
                if indexed is not None and mtime <= indexed:
                    continue
                digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
                if digest == doc.content_hash:
                    continue  # touched, not changed
                reason = "the source file changed after it was indexed"
            out.append(
                {
                    "document": doc.id,
                    "uri": doc.uri,
                    "project_id": doc.project_id,
                    "indexed_at": format_time(indexed),
                    "records": doc.chunk_count,
                    "reason": reason,
                    "fix": fix,
                }
            )
        return out

    def find_related(self, document: str, *, limit: int = 10, tenant: str | None = None) -> list[dict[str, Any]]:
        """Documents whose content is nearest to one document's: cosine of their mean chunk vectors, best first."""
        target = self.docs.document(document, tenant=tenant)
        centroid = self._centroid(target.id)
        if centroid is None:
            raise InvalidInput(
                f"Document {target.name} has no vectors yet.",
                hint="Wait for its vectors (`funes jobs run`), or re-index it: `funes docs reindex ID`.",
            )
        scored = []
        for doc in self.docs.documents(tenant=tenant):
            if doc.id == target.id:
                continue
            other = self._centroid(doc.id)
            if other is not None:
                scored.append(
                    {"document": doc.id, "name": doc.name, "uri": doc.uri, "similarity": float(centroid @ other)}
                )
        scored.sort(key=lambda d: -d["similarity"])
        return [{**d, "similarity": round(d["similarity"], 4)} for d in scored[:limit]]

    def _centroid(self, document_id: str) -> np.ndarray | None:
        ids = self.docs.chunk_ids(document_id)
        vectors = [v for group in self.store.vectors_for(ids).values() for v in group]
        if not vectors:
            return None
        mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else None


def _same_place(a: Memory, b: Memory) -> bool:
    """Whether two records share visibility, owner and kind (only such records can be duplicates of each other)."""
    return (
        a.kind == b.kind
        and a.user_id == b.user_id
        and vis_key(a.scope, a.project_id, a.session_id) == vis_key(b.scope, b.project_id, b.session_id)
    )


__all__ = ["UPKEEP_KINDS", "DuplicatePair", "Upkeep", "keeper", "same_words"]
