"""Entity reconciliation: keep a file's entity summaries in step with its current contents, cheaply.

A caller (an editor, a notebook, a sync job) sends the entities a file holds
now: typed (FILE, CODE_CELL, DATA_TABLE, SHEET_TABLE, CONNECTION, or any
caller-defined type), each with an id and its fields. Each gets a
deterministic md5 **fingerprint** of the fields that define it (seed 001):

* CODE_CELL: code + language + output shape
* DATA_TABLE: name + sorted columns + bounds
* SHEET_TABLE: columns + bounds + rows + cols
* FILE: sheet names + code-cell, data-table and sheet-table counts
* any other type: the canonical JSON of its fields

plus ``content`` when an entity of those types has one (the REST API's shape),
(parts are joined with a unit separator, so ``"ab" + "c"`` and ``"a" + "bc"``
differ). Against the file's existing entity summaries:

* a matching fingerprint is **skipped**: no LLM call, no write;
* a changed entity is **re-summarised**: its old summary is pushed onto
  ``metadata.previous_summaries`` (5 at most, oldest dropped, each with its
  timestamp) and the record's version rises by one (the old text is also in
  the record's version history);
* a new entity is **created**;
* an **orphan** (a summary of this file whose entity is no longer sent) is deleted.

The LLM calls and embeddings happen first, outside any transaction; then
every write is applied in ONE transaction that reads the records again under
the write lock. A crash before the commit leaves the store as it was (the
next reconcile redoes the work), never half-applied, never duplicated. In the
background (``background=True``) the same two phases are a ``reconcile`` job
on the durable runner: the slow phase is the handler, the transaction its
``apply``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderUnavailable, InvalidInput
from ..memory.versioning import superseded
from ..models import ENTITY_SCOPES, Job, Memory, SourceRef, format_time, to_epoch, utcnow
from ..providers.llm import LLM, create_llm
from .proposals import Proposals

if TYPE_CHECKING:
    from ..memory.core import Core
    from ..memory.jobs import Jobs

log = logging.getLogger("funes")

MAX_PREVIOUS_SUMMARIES = 5
KIND = "entity_summary"
SUMMARY_SCHEMA: dict[str, Any] = {
    "title": "entity_summary",
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "A short label, under 60 characters."},
        "summary": {"type": "string", "description": "What the entity is and does, in 1 to 3 sentences."},
    },
    "required": ["title", "summary"],
    "additionalProperties": False,
}
_SEP = "\x1f"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def fingerprint(entity_type: str, fields: Mapping[str, Any]) -> str:
    """The md5 fingerprint of an entity's defining fields (see the module docstring), tagged ``md5:``."""
    f = dict(fields)
    if entity_type == "CODE_CELL":
        parts = [str(f.get("code", "")), str(f.get("language", "")), _canonical(f.get("output_shape"))]
    elif entity_type == "DATA_TABLE":
        columns = sorted(str(c) for c in f.get("columns") or [])
        parts = [str(f.get("name", "")), _canonical(columns), _canonical(f.get("bounds"))]
    elif entity_type == "SHEET_TABLE":
        parts = [
            _canonical(f.get("columns") or []),
            _canonical(f.get("bounds")),
            str(f.get("rows")),
            str(f.get("cols")),
        ]
    elif entity_type == "FILE":
        counts = [f.get(k, 0) for k in ("code_cell_count", "data_table_count", "sheet_table_count")]
        parts = [_canonical(f.get("sheet_names") or []), *map(str, counts)]
    else:
        parts = [_canonical(f)]
        return "md5:" + hashlib.md5(_SEP.join(parts).encode("utf-8")).hexdigest()
    if "content" in f:
        # The REST API's entities carry their text as ``content``; it defines them too.
        parts.append(str(f["content"]))
    return "md5:" + hashlib.md5(_SEP.join(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entity:
    """One entity of a reconcile payload: its type, id, optional title, and fields."""

    type: str
    id: str
    fields: dict[str, Any]
    title: str | None = None

    @classmethod
    def parse(cls, item: Any, index: int) -> Entity:
        """An entity from ``{"type", "id", "title"?, "fields"?}`` (other keys count as fields too)."""
        if isinstance(item, Entity):
            return item
        if not isinstance(item, Mapping):
            raise InvalidInput(
                f"Entity {index} is a {type(item).__name__}, not an object.",
                hint='Send entities like {"type": "CODE_CELL", "id": "Sheet1:A1", "fields": {"code": "..."}}.',
            )
        kind, ident = item.get("type"), item.get("id")
        if not isinstance(kind, str) or not kind.strip() or not isinstance(ident, str | int) or not str(ident).strip():
            raise InvalidInput(
                f"Entity {index} needs a text 'type' and an 'id'.",
                hint='E.g. {"type": "DATA_TABLE", "id": "orders", "fields": {"name": "orders", "columns": [...]}}.',
            )
        fields = dict(item.get("fields") or {})
        fields.update({k: v for k, v in item.items() if k not in ("type", "id", "title", "fields")})
        title = item.get("title")
        return cls(kind.strip(), str(ident).strip(), fields, str(title) if title else None)

    @property
    def key(self) -> tuple[str, str]:
        """(type, id): what identifies the entity within its file."""
        return (self.type, self.id)


@dataclass
class ReconcilePlan:
    """What a reconcile will write, computed before its transaction (summaries and vectors included)."""

    tenant: str
    user: str | None
    project: str
    writes: list[tuple[Entity, str, Memory, list[np.ndarray] | None]] = field(default_factory=list)
    skipped: int = 0
    llm_calls: int = 0
    force: bool = False
    seen: set[tuple[str, str]] = field(default_factory=set)


class Entities:
    """Reconcile a file's entities with their stored summaries (a feature service over the core and jobs)."""

    def __init__(self, core: Core, jobs: Jobs, llm: LLM | None = None) -> None:
        self.core = core
        self._llm = llm
        jobs.register("reconcile", self._job)
        self._jobs = jobs

    @property
    def llm(self) -> LLM:
        """The LLM that writes summaries (the ``llm`` setting; created on first use)."""
        if self._llm is None:
            self._llm = create_llm(self.core.config)
        return self._llm

    @llm.setter
    def llm(self, value: LLM) -> None:
        self._llm = value

    def close(self) -> None:
        """Release the LLM's connections, if it holds any."""
        close = getattr(self._llm, "close", None)
        if close is not None:
            close()

    def reconcile(
        self,
        scope: str,
        entities: Sequence[Mapping[str, Any] | Entity],
        *,
        tenant: str | None = None,
        user: str | None = None,
        background: bool = False,
    ) -> dict[str, Any]:
        """Bring the file ``scope``'s entity summaries in line with ``entities``; returns the counts.

        Counts: created, updated, skipped, deleted and llm_calls. With
        ``background=True`` the work is a durable ``reconcile`` job and the
        result is ``{"job_id": ...}`` (``funes jobs show ID`` has the counts).
        """
        if not isinstance(scope, str) or not scope.strip():
            raise InvalidInput(
                "Reconcile needs the file (project) the entities belong to.", hint="Pass scope='FILE_ID'."
            )
        parsed = self._parse(entities)
        tenant_id, user_id = self.core.tenant_of(tenant), self.core.user_of(user)
        if background:
            payload = {
                "project": scope.strip(),
                "user": user_id,
                "entities": [{"type": e.type, "id": e.id, "title": e.title, "fields": e.fields} for e in parsed],
            }
            return {"job_id": self.core.enqueue_job("reconcile", payload, tenant=tenant_id)}
        # The plan reads the file's stored summaries, and the write makes a changed one the next version of its
        # summary: a forget of the tenant meanwhile (another process) writes nothing (ForgetCrossed: run it again).
        since = to_epoch(utcnow())
        plan = self._plan(tenant_id, user_id, scope.strip(), parsed)
        with self.core.store.unforgotten_write(tenant_id, since, f"reconciling the entities of {scope.strip()}"):
            return self._apply(plan)

    # -- the two phases ---------------------------------------------------------------
    def _parse(self, entities: Sequence[Mapping[str, Any] | Entity]) -> list[Entity]:
        if isinstance(entities, Mapping | str) or not isinstance(entities, Sequence):
            raise InvalidInput("Entities must be a list.", hint='Pass [{"type": "FILE", "id": "f1", ...}, ...].')
        parsed = [Entity.parse(item, i) for i, item in enumerate(entities)]
        keys = [e.key for e in parsed]
        twice = sorted({f"{t}:{i}" for t, i in keys if keys.count((t, i)) > 1})
        if twice:
            raise InvalidInput(
                f"Entities sent twice: {', '.join(twice[:5])}.", hint="Send each (type, id) once per reconcile."
            )
        return parsed

    def _existing(self, tenant: str, user: str | None, project: str, entities: Sequence[Entity]) -> dict[Any, Memory]:
        """The stored summaries of this file (file scope) and of the sent team-scope entities, by (type, id)."""
        found: dict[Any, Memory] = {}
        cursor = None
        while True:
            page = self.core.list(
                tenant=tenant, user=user, kinds=[KIND], scopes=["project"], project=project, cursor=cursor, limit=1000
            )
            for m in page.items:
                if m.entity_type and m.entity_id and (m.user_id or None) == user:
                    found[(m.entity_type, m.entity_id)] = m
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        for e in sorted(entities, key=lambda e: e.key):  # a fixed order: find_entity locks on PostgreSQL
            if _scope_of(e.type) == "team":
                team = self.core.store.find_entity(tenant, user, None, e.type, e.id)
                if team is not None:
                    found[e.key] = team
        return found

    def plan(
        self,
        project: str,
        entities: Sequence[Mapping[str, Any] | Entity],
        *,
        tenant: str,
        user: str | None = None,
        force: bool = False,
    ) -> Callable[[], dict[str, Any]]:
        """The slow phase of a reconcile (LLM, embeddings); returns ``apply``, to call inside a store transaction.

        For job handlers (the team server's ``generate`` jobs). ``force``
        re-summarises every entity, even those whose fingerprint is unchanged.
        """
        plan = self._plan(tenant, user, project, self._parse(entities), force=force)
        return lambda: self._apply(plan)

    def _plan(
        self, tenant: str, user: str | None, project: str, entities: Sequence[Entity], *, force: bool = False
    ) -> ReconcilePlan:
        """Fingerprint every entity and summarise (and embed) only the new and changed ones (all, with ``force``)."""
        plan = ReconcilePlan(tenant, user, project, seen={e.key for e in entities}, force=force)
        existing = self._existing(tenant, user, project, entities)
        for entity in entities:
            mark = fingerprint(entity.type, entity.fields)
            current = existing.get(entity.key)
            if not force and current is not None and current.metadata.get("fingerprint") == mark:
                plan.skipped += 1
                continue
            answer = self.llm.complete_json(_prompt(entity), SUMMARY_SCHEMA)
            plan.llm_calls += 1
            title = entity.title or str(answer.get("title") or "").strip() or f"{entity.type} {entity.id}"
            summary = str(answer.get("summary") or "").strip() or f"{entity.type} {entity.id}."
            scope = _scope_of(entity.type)
            record = self.core.prepare(
                summary,
                type="context",
                kind=KIND,
                scope=scope,
                project=project,
                tenant=tenant,
                user=user,
                title=title[:200],
                entity_type=entity.type,
                entity_id=entity.id,
                source=SourceRef(type="entity", uri=project, locator={"entity": f"{entity.type}:{entity.id}"}),
                metadata={"fingerprint": mark},
            )
            try:
                vectors = self.core.embedding.embed_records([self.core.embedding.embed_text(record)])[0]
            except EmbedderUnavailable as exc:
                log.warning("embedder unavailable, %s:%s summary waits for its vector: %s", entity.type, entity.id, exc)
                vectors = None
            plan.writes.append((entity, mark, record, vectors))
        return plan

    def _apply(self, plan: ReconcilePlan) -> dict[str, Any]:
        """Write the plan; call it inside one store transaction (it reads the records again under the lock)."""
        store = self.core.store
        counts = {"created": 0, "updated": 0, "skipped": plan.skipped, "deleted": 0, "llm_calls": plan.llm_calls}
        # Concurrent reconciles of one project take turns (PostgreSQL: an advisory lock; SQLite: its writer lock).
        store.lock_identity(f"entity-reconcile\x1f{plan.tenant}\x1f{plan.user or ''}\x1f{plan.project}")
        current = self._existing(plan.tenant, plan.user, plan.project, [e for e, *_ in plan.writes])
        deferred: list[str] = []
        for entity, mark, record, vectors in plan.writes:
            old = current.get(entity.key)
            if old is None:
                stored = record
                counts["created"] += 1
            elif not plan.force and old.metadata.get("fingerprint") == mark:
                counts["skipped"] += 1  # another reconcile wrote this very state meanwhile
                continue
            elif old.sovereign:
                # A person edited or pinned this summary: the machine's text waits as a proposal (issue 25).
                reason = "the entity changed" if old.metadata.get("fingerprint") != mark else "regenerated"
                Proposals(self.core).propose(
                    old, record.content, author="llm", reason=reason, metadata={"fingerprint": mark}
                )
                counts["proposed"] = counts.get("proposed", 0) + 1  # only present when a person's text stood
                continue
            else:
                history = [
                    *old.metadata.get("previous_summaries", []),
                    {"summary": old.content, "updated_at": format_time(old.updated_at)},
                ][-MAX_PREVIOUS_SUMMARIES:]
                stored = superseded(old, record.evolve(metadata={**record.metadata, "previous_summaries": history}))
                if stored.content_hash == old.content_hash:
                    # Same words for a changed entity: still a new version of the summary.
                    stored = stored.evolve(version=old.version + 1)
                counts["updated"] += 1
            store.put(stored, vectors)
            if vectors is None:
                deferred.append(stored.id)
        orphans = [
            m.id
            for key, m in self._existing(plan.tenant, plan.user, plan.project, []).items()
            if key not in plan.seen and m.scope == "project" and not m.sovereign  # a person's summary stays
        ]
        counts["deleted"] = store.delete(orphans)
        if deferred:
            self.core.defer_vectors(deferred, plan.tenant)
        return counts

    def _job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``reconcile`` jobs: plan now (LLM, embeddings), apply with the job's completion."""
        data = job.payload
        entities = self._parse(data.get("entities") or [])
        plan = self._plan(job.tenant, data.get("user"), str(data["project"]), entities)
        return lambda: self._apply(plan)


def _scope_of(entity_type: str) -> str:
    """Seed 001's scope of an entity type; reconciled entities of other types belong to their file."""
    return ENTITY_SCOPES.get(entity_type, "project")


def _prompt(entity: Entity) -> str:
    material = _canonical({"type": entity.type, "id": entity.id, "title": entity.title, **entity.fields})
    return (
        f"Summarise this {entity.type} entity for a team's long-term memory: what it is, what it does or holds, "
        "and anything a colleague would search for. Be specific and brief (1 to 3 sentences); give a short title.\n"
        f"<input>{material}</input>"
    )
