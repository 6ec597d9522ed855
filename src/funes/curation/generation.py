"""Memory generation for files on the team server: accepted at once, reconciled in the background.

``generate`` turns a file's entities into a durable ``generate`` job (written
before the caller hears 202) whose handler is entity reconciliation
(:mod:`funes.curation.entities`). Seed 001's per-file cooldown applies: generations of
one file start at least ``generate_cooldown_seconds`` apart. A request inside
the window is **coalesced**, not dropped: its job waits for the window's end,
and when it runs, a newer queued job of the same file supersedes it (only the
newest entity list matters), so a burst of requests costs one generation.
Every request keeps its own job id, whose result says which job carried it.

``regenerate`` re-summarises every entity of the file's latest generation,
fingerprints notwithstanding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, InvalidInput, NotFound
from ..models import Job, utcnow

if TYPE_CHECKING:
    from ..memory.core import Core
    from ..memory.jobs import Jobs
    from .entities import Entities

KIND = "generate"
_SCAN = 1000  # jobs of a tenant looked at to find a file's pending and last generations


def entity_items(entities: Any) -> list[dict[str, Any]]:
    """Entities in the reconcile shape, from the REST shape ``{entity_type, entity_id, content, ...}`` or as is."""
    if isinstance(entities, Mapping | str) or not isinstance(entities, Sequence):
        raise InvalidInput(
            "Entities must be a list.",
            hint='Send [{"entity_type": "CODE_CELL", "entity_id": "A1", "content": "..."}, ...].',
        )
    out: list[dict[str, Any]] = []
    for index, item in enumerate(entities):
        if isinstance(item, Mapping) and "type" not in item and ("entity_type" in item or "entity_id" in item):
            fields = {k: v for k, v in item.items() if k not in ("entity_type", "entity_id", "title")}
            out.append(
                {
                    "type": item.get("entity_type"),
                    "id": item.get("entity_id"),
                    "title": item.get("title"),
                    "fields": fields,
                }
            )
        elif isinstance(item, Mapping):
            out.append(dict(item))
        else:
            raise InvalidInput(
                f"Entity {index} is a {type(item).__name__}, not an object.",
                hint='Send entities like {"entity_type": "CODE_CELL", "entity_id": "A1", "content": "..."}.',
            )
    return out


class Generation:
    """Generate and regenerate a file's entity memories as durable, cooled-down jobs."""

    def __init__(self, core: Core, jobs: Jobs, entities: Entities) -> None:
        self.core = core
        self.jobs = jobs
        self.entities = entities
        jobs.register(KIND, self._job)

    def _file_jobs(self, tenant: str, project: str) -> list[Job]:
        jobs = self.core.store.list_jobs(tenant, kind=KIND, limit=_SCAN)
        return [j for j in jobs if j.payload.get("project") == project]

    def generate(
        self,
        file_id: str,
        entities: Any,
        *,
        tenant: str | None = None,
        user: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """Queue a generation of ``file_id``'s memories; ``{"job_id", "status", "coalesced", "run_after"}``."""
        if not isinstance(file_id, str) or not file_id.strip():
            raise InvalidInput("Generation needs the file id.", hint='Send {"file_id": "...", "entities": [...]}.')
        project = file_id.strip()
        tenant_id = self.core.tenant_of(tenant)
        items = entity_items(entities)
        self.entities._parse(items)  # bad entities are refused now, not found by the job later
        if not self.core.projects.enabled(tenant_id, project):
            raise Conflict(
                f"Memory generation is turned off for file {project!r}.",
                hint=f'Turn it on: PUT /v1/teams/{{team}}/projects/{project}/settings {{"enabled": true}}.',
            )
        cooldown = timedelta(seconds=float(self.core.config.generate_cooldown_seconds))
        now = utcnow()
        payload = {"project": project, "user": user, "entities": items, "force": bool(force)}
        with self.core.store.transaction():
            mine = self._file_jobs(tenant_id, project)
            start = now
            coalesced = False
            for job in mine:
                if job.status == "queued":
                    coalesced = True
                    start = max(start, job.run_after)
                elif job.status == "running":
                    start = max(start, now + cooldown)
                elif job.status == "done" and job.finished_at and not (job.result or {}).get("superseded_by"):
                    start = max(start, job.finished_at + cooldown)
            delay = max(0.0, (start - now).total_seconds())
            job_id = self.core.enqueue_job(KIND, payload, tenant=tenant_id, delay=delay)
        return {
            "job_id": job_id,
            "status": "queued",
            "coalesced": coalesced,
            "run_after": start.isoformat(),
            "cooldown_seconds": round(delay, 3),
        }

    def regenerate(self, file_id: str, *, tenant: str | None = None, user: str | None = None) -> dict[str, Any]:
        """Queue a forced generation of the file's latest entity list (every summary written anew)."""
        tenant_id = self.core.tenant_of(tenant)
        project = str(file_id).strip()
        latest = next((j for j in self._file_jobs(tenant_id, project) if j.payload.get("entities") is not None), None)
        if latest is None:
            raise NotFound(
                f"File {project!r} has no generation to repeat.",
                hint="Generate its memories first: POST /v1/teams/{team}/memories/generate with its entities.",
            )
        return self.generate(project, latest.payload["entities"], tenant=tenant_id, user=user, force=True)

    def _job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``generate`` jobs: give way to a newer queued request of the file, else reconcile."""
        project = str(job.payload["project"])
        newer = [
            j
            for j in self._file_jobs(job.tenant, project)
            if j.status == "queued" and (j.created_at, j.id) > (job.created_at, job.id)
        ]
        if newer:
            carrier = max(newer, key=lambda j: (j.created_at, j.id))
            return lambda: {"file_id": project, "superseded_by": carrier.id}
        force = bool(job.payload.get("force"))
        apply = self.entities.plan(
            project, job.payload.get("entities") or [], tenant=job.tenant, user=job.payload.get("user"), force=force
        )
        return lambda: {"file_id": project, **apply()}
