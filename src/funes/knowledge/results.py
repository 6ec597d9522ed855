"""Values of knowledge ingestion: a managed document, per-input results, reports, progress.

Shells render these; :mod:`funes.knowledge.documents` builds them. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..models import format_time, from_epoch


@dataclass(frozen=True)
class Document:
    """A managed source: one ingested file and the state of its index."""

    id: str
    uri: str
    name: str
    kind: str
    status: str
    version: int
    chunk_count: int
    content_hash: str
    size_bytes: int
    tenant: str = "default"
    user_id: str | None = None
    scope: str = "team"
    project_id: str | None = None
    session_id: str | None = None
    error: str | None = None
    pages: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None
    indexed_at: datetime | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Document:
        """A document from its store row."""
        return cls(
            id=row["id"],
            uri=row["uri"],
            name=row["name"],
            kind=row["kind"],
            status=row["status"],
            version=int(row["version"]),
            chunk_count=int(row["chunk_count"]),
            content_hash=row["content_hash"],
            size_bytes=int(row["size_bytes"]),
            tenant=row["tenant"],
            user_id=row.get("user_id") or None,
            scope=row["scope"],
            project_id=row.get("project_id"),
            session_id=row.get("session_id"),
            error=row.get("error"),
            pages=row.get("pages"),
            metadata=dict(row.get("metadata") or {}),
            warnings=tuple(row.get("warnings") or ()),
            created_at=from_epoch(row.get("created_at")),
            updated_at=from_epoch(row.get("updated_at")),
            indexed_at=from_epoch(row.get("indexed_at")),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "uri": self.uri,
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "error": self.error,
            "version": self.version,
            "chunk_count": self.chunk_count,
            "pages": self.pages,
            "content_hash": self.content_hash,
            "size_bytes": self.size_bytes,
            "tenant": self.tenant,
            "user_id": self.user_id,
            "scope": self.scope,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "metadata": self.metadata,
            "warnings": list(self.warnings),
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "indexed_at": format_time(self.indexed_at),
        }


@dataclass(frozen=True)
class IngestResult:
    """What happened to one input: indexed, updated, unchanged, removed (its file is gone), skipped or failed (and why)."""

    uri: str
    name: str
    status: str
    document: Document | None = None
    chunks: int = 0
    pages: int | None = None
    error: str | None = None
    hint: str | None = None
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the input is indexed (now or already)."""
        return self.status != "failed"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "uri": self.uri,
            "name": self.name,
            "status": self.status,
            "document_id": self.document.id if self.document else None,
            "version": self.document.version if self.document else None,
            "chunks": self.chunks,
            "pages": self.pages,
            "error": self.error,
            "hint": self.hint,
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class IngestReport:
    """The outcome of ingesting several inputs."""

    results: tuple[IngestResult, ...]
    seconds: float = 0.0
    # Said once for the whole run (a chunk size the embedding model caps, ...).
    notes: tuple[str, ...] = ()

    @property
    def indexed(self) -> list[IngestResult]:
        """Inputs indexed for the first time or updated."""
        return [r for r in self.results if r.status in ("indexed", "updated")]

    @property
    def unchanged(self) -> list[IngestResult]:
        """Inputs already indexed at this version."""
        return [r for r in self.results if r.status == "unchanged"]

    @property
    def failed(self) -> list[IngestResult]:
        """Inputs that could not be indexed, with their reasons."""
        return [r for r in self.results if r.status == "failed"]

    @property
    def removed(self) -> list[IngestResult]:
        """Documents removed because their file no longer exists (``ingest --sync``, ``reindex --all``)."""
        return [r for r in self.results if r.status == "removed"]

    @property
    def skipped(self) -> list[IngestResult]:
        """Inputs left out on purpose (devices, FIFOs, sockets), with the reason in ``error``."""
        return [r for r in self.results if r.status == "skipped"]

    @property
    def chunks(self) -> int:
        """Chunks written in this run."""
        return sum(r.chunks for r in self.indexed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with every result and the totals."""
        return {
            "indexed": len(self.indexed),
            "unchanged": len(self.unchanged),
            "failed": len(self.failed),
            "removed": len(self.removed),
            "skipped": len(self.skipped),
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
            "results": [r.to_dict() for r in self.results],
        }


@dataclass(frozen=True)
class IngestProgress:
    """Where a multi-file ingestion is, for progress bars."""

    files_done: int
    files_total: int
    chunks_done: int
    bytes_done: float
    bytes_total: int
    current: str | None
    elapsed: float

    @property
    def eta(self) -> float | None:
        """Seconds left, estimated from the bytes done so far (None until there is a rate)."""
        if self.bytes_done <= 0 or self.bytes_total <= 0 or self.elapsed <= 0:
            return None
        return max(0.0, self.elapsed * (self.bytes_total - self.bytes_done) / self.bytes_done)


ProgressCallback = Callable[[IngestProgress], None]


__all__ = ["Document", "IngestProgress", "IngestReport", "IngestResult", "ProgressCallback"]
