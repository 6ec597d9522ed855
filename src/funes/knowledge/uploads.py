"""Documents uploaded to the team server: saved durably, then indexed by a ``document-ingest`` job.

An upload's bytes are written (and fsynced) under ``uploads/`` beside the
store BEFORE the job that indexes them is queued, and the job is queued
before the caller hears 202: a crash at any point loses nothing accepted.
Until its job is done, an upload is listed as a document of its own (its id
is the job id) with the job's state: ``queued``, ``indexing`` or ``failed``
with the reason. Indexing is two-phase like every job: read and embed first,
then swap the chunks in with the job's completion. The saved file stays as
the document's source (a reindex reads it again); upload folders that no job
refers to any more (jobs are trimmed after ``job_keep_days``) are removed
once they are an hour old. The job names the folder the bytes were saved in, so
the worker of another server on the same PostgreSQL store (another Funes home
on this host) reads them there; servers on other hosts need that folder on a
shared disk.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, NotFound
from ..memory.record_input import check_scope
from ..models import Job, format_time, new_id
from ..store.tenancy import acting_for
from .paths import read_regular

if TYPE_CHECKING:
    from ..memory.core import Core
    from ..memory.jobs import Jobs
    from .documents import Documents

KIND = "document-ingest"
_SWEEP_AGE_SECONDS = 3600.0
_NAME_MAX_BYTES = 255  # NAME_MAX of Linux and macOS file systems
_JOB_STATUS = {"queued": "queued", "running": "indexing", "failed": "failed"}


class Uploads:
    """Accept uploaded documents and index them in the background."""

    def __init__(self, core: Core, docs: Documents, jobs: Jobs) -> None:
        self.core = core
        self.docs = docs
        jobs.register(KIND, self._job)

    @property
    def folder(self) -> Path:
        """Where uploads wait for their job: beside a SQLite store, else in the Funes home."""
        path = str(self.core.store.path)
        if path and path != ":memory:" and "://" not in path:
            return Path(path).expanduser().resolve().parent / "uploads"
        from ..models.config import home

        return home() / "uploads"

    def upload(
        self,
        name: str,
        data: bytes,
        *,
        tenant: str | None = None,
        user: str | None = None,
        scope: str | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Save the bytes, queue their indexing; ``{"job_id", "document"}`` (the document as queued)."""
        base = Path(str(name or "").replace("\\", "/")).name.strip()
        if not base or base in (".", ".."):
            raise InvalidInput("The upload has no file name.", hint="Send the file as multipart field `file`.")
        if len(base.encode("utf-8", "surrogatepass")) > _NAME_MAX_BYTES or "\x00" in base:
            # The name becomes a file on disk: a 300-character one failed the write with a 500 (issue 31).
            raise InvalidInput(
                f"The upload's file name is over {_NAME_MAX_BYTES} bytes or holds a NUL character.",
                hint="Rename the file to a shorter name (the name is what search results cite).",
            )
        if not data:
            raise InvalidInput(f"{base} is empty.", hint="Upload a file with content.")
        limit = int(self.core.config.max_file_mb) * 1024 * 1024
        if len(data) > limit:
            raise InvalidInput(
                f"{base} is {len(data):,} bytes, over the limit of {limit:,}.", hint="Raise max_file_mb, or split it."
            )
        tenant_id = self.core.tenant_of(tenant)
        check_scope(scope, project, None)
        self._sweep()
        upload_id = new_id("upl")
        target = self.folder / upload_id / base
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Owner-only, like the store: an upload is a team's document (issue 31).
        with os.fdopen(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        payload = {
            "upload": upload_id,
            "name": base,
            "scope": scope,
            "project": project,
            "user": user,
            "folder": str(self.folder),  # another server on this store (another home) runs the job from here
        }
        job_id = self.core.enqueue_job(KIND, payload, tenant=tenant_id)
        return {"job_id": job_id, "document": self.pending(self.core.store.get_job(job_id))}

    @staticmethod
    def pending(job: Job | None) -> dict[str, Any]:
        """An upload whose job is not done, as a document dict (its id is the job id)."""
        assert job is not None
        return {
            "id": job.id,
            "name": job.payload.get("name"),
            "uri": job.payload.get("name"),
            "status": _JOB_STATUS.get(job.status, job.status),
            "error": job.last_error if job.status == "failed" else None,
            "attempts": job.attempts,
            "scope": job.payload.get("scope") or ("project" if job.payload.get("project") else "team"),
            "project_id": job.payload.get("project"),
            "job_id": job.id,
            "created_at": format_time(job.created_at),
        }

    def pending_uploads(self, *, tenant: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
        """Uploads not indexed yet (queued, indexing or failed), newest first."""
        tenant_id = self.core.tenant_of(tenant)
        jobs = self.core.store.list_jobs(tenant_id, kind=KIND, limit=1000)
        return [
            self.pending(j)
            for j in jobs
            if j.status != "done" and (not j.payload.get("user") or j.payload.get("user") == user)
        ]

    def upload_job(self, job_id: str, *, tenant: str | None = None) -> Job:
        """The job of an upload of this tenant (NotFound for any other id)."""
        job = self.core.store.get_job(job_id)
        if job is None or job.kind != KIND or job.tenant != self.core.tenant_of(tenant):
            raise NotFound(f"No document {job_id!r}.", hint="GET /v1/teams/{team}/documents lists documents.")
        return job

    def reindex(self, document_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """Queue a re-read of an uploaded document from its saved file; ``{"job_id"}``."""
        tenant_id = self.core.tenant_of(tenant)
        for job in self.core.store.list_jobs(tenant_id, kind=KIND, limit=1000):
            if job.status == "done" and (job.result or {}).get("document_id") == document_id:
                if not self._saved(job.payload)[1].is_file():
                    break
                payload = {**job.payload, "force": True}
                return {"job_id": self.core.enqueue_job(KIND, payload, tenant=tenant_id)}
        raise InvalidInput(
            f"Document {document_id!r} has no saved upload to read again.",
            hint="Upload the file again (POST /v1/teams/{team}/documents); it replaces the document of that name.",
        )

    def _sweep(self) -> None:
        """Remove upload folders no job refers to, once they are an hour old."""
        if not self.folder.is_dir():
            return
        # Every team's uploads share this folder: read every team's jobs (row-level security would show only
        # the caller's, and another team's accepted uploads would look unused), and all of them, not the newest.
        with acting_for(None):
            jobs = self.core.store.list_jobs(None, kind=KIND, limit=1_000_000)
        live = {str(j.payload.get("upload")) for j in jobs}
        cutoff = time.time() - _SWEEP_AGE_SECONDS
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name not in live and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)

    def _saved(self, payload: dict[str, Any]) -> tuple[Path, Path]:
        """The uploads folder an upload was saved in (by whichever server accepted it), and its file there."""
        folder = Path(str(payload.get("folder") or self.folder))
        return folder, folder / str(payload["upload"]) / str(payload["name"])

    def _job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``document-ingest`` jobs: read and embed the saved upload, swap its chunks in on completion."""
        data = job.payload
        folder, path = self._saved(data)
        if not path.exists() and not path.is_symlink():
            raise NotFound(
                f"The uploaded file {data['name']!r} is gone from {folder}.",
                hint="Upload the file again. Servers sharing one store need the folder the upload was saved in "
                "(the same Funes home, or a shared disk).",
            )
        limit = int(self.core.config.max_file_mb) * 1024 * 1024
        content = read_regular(
            path,
            str(data["name"]),
            limit,
            within=folder,
            over=f"the {self.core.config.max_file_mb} MB limit",
            hint="Split the file, or raise the limit: funes config set max_file_mb 500.",
        )
        result, apply = self.docs.prepare_bytes(
            content,
            str(data["name"]),
            tenant=job.tenant,
            user=data.get("user"),
            scope=data.get("scope"),
            project=data.get("project"),
            force=bool(data.get("force")),
        )

        def finish() -> dict[str, Any]:
            apply()
            return result.to_dict()

        return finish
