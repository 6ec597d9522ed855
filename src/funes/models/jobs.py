"""Durable background work as a value: one row of the job queue (see :mod:`funes.memory.jobs`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .records import format_time

JOB_STATUSES = ("queued", "running", "done", "failed")


@dataclass(frozen=True)
class Job:
    """One unit of durable background work (see :mod:`funes.memory.jobs`)."""

    id: str
    tenant: str
    kind: str
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    created_at: datetime
    updated_at: datetime
    lease_until: datetime | None = None
    locked_by: str | None = None
    last_error: str | None = None
    result: Any = None
    dedupe_key: str | None = None
    finished_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "kind": self.kind,
            "payload": self.payload,
            "status": self.status,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "run_after": format_time(self.run_after),
            "lease_until": format_time(self.lease_until),
            "locked_by": self.locked_by,
            "last_error": self.last_error,
            "result": self.result,
            "dedupe_key": self.dedupe_key,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "finished_at": format_time(self.finished_at),
        }
