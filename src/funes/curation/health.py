"""Store-wide care: stats, health checks, reindexing, clearing, and the cleanup log.

A feature service over the core. The coming curation work (maintenance every
N writes, retention, dedupe) joins it here, as jobs on the durable runner.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BackendUnavailable, InvalidInput, NotFound
from ..memory.turns import in_context
from ..models import EmbedderIdentity, utcnow

if TYPE_CHECKING:
    from ..memory.core import Core

log = logging.getLogger("funes")


class Maintenance:
    """Stats, doctor, reindex, clear and the cleanup log of one store."""

    def __init__(self, core: Core) -> None:
        self.core = core

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
        for what, value in (("session", session), ("project", project)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(
                    f"The {what} to clear must be a non-empty id, got {value!r}.", hint=f"Name the {what}."
                )
        chosen = [name for name, value in (("session", session), ("project", project), ("all", all)) if value]
        if len(chosen) != 1:
            raise InvalidInput(
                "Say what to clear: exactly one of session=, project= or all=True.",
                hint="CLI: `funes clear --session ID`, `funes clear --project NAME` or `funes clear --all`.",
            )
        tenant_id = self.core.tenant_of(tenant)
        report = self.core.store.clear(
            tenant_id,
            session_id=session,
            project_id=project,
            user_id=self.core.user_of(user),
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
            before, after = self.core.store.reclaim_space()
        except BackendUnavailable as exc:
            # The removal is committed and logged; only the file has not shrunk yet.
            log.warning("space not reclaimed after clear: %s", exc)
            report.update(bytes_before=None, bytes_after=None, reclaim_error=exc.to_dict())
        else:
            report.update(bytes_before=before, bytes_after=after)
            self.core.store.record_reclaimed(log_id, max(0, before - after))
        return report

    def cleanup_log(self, *, tenant: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The newest cleanup-log rows: retention runs, cleared sessions and `clear` calls."""
        if not 1 <= int(limit) <= 10_000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 10000.")
        return self.core.store.cleanup_log(self.core.tenant_of(tenant), int(limit))

    def stats(self, *, tenant: str | None = None, storage: bool = False) -> dict[str, Any]:
        """Counts by kind, type, scope and source, sizes, pending vectors and jobs, and the configured embedder.

        ``storage=True`` adds ``storage``: records and bytes per tier (scope),
        kind and source, their totals per tier, and the database size.
        Never creates the embedder: stats work while an embedding server is down.
        """
        out = self.core.store.stats(tenant)
        if storage:
            rows = self.core.store.storage_breakdown(tenant)
            tiers: dict[str, dict[str, int]] = {}
            for row in rows:
                tier = tiers.setdefault(row["tier"], {"records": 0, "text_bytes": 0, "vector_bytes": 0})
                for key in tier:
                    tier[key] += row[key]
            out["storage"] = {"rows": rows, "tiers": tiers, "database_bytes": out.get("size_bytes", 0)}
        configured = self.core.embedding.configured_identity()
        out["embedder_configured"] = {
            "model_id": configured.model_id
            if configured
            else f"{self.core.config.embedder}:{self.core.config.embed_model}",
            "dimensions": configured.dimensions if configured else None,  # None: only the server knows
        }
        return out

    def backup(self, dest: str | os.PathLike[str]) -> dict[str, Any]:
        """A consistent copy of the store at ``dest`` (SQLite's online backup API), safe while writers run."""
        method = getattr(self.core.store, "backup", None)
        if method is None:
            raise InvalidInput("This store has no file backup.", hint="Use `funes export FILE` instead.")
        return dict(method(dest))

    def repair(self, dest: str | os.PathLike[str]) -> dict[str, Any]:
        """Salvage every readable row into a new store at ``dest`` (the damaged store is left as it is)."""
        method = getattr(self.core.store, "salvage", None)
        if method is None:
            raise InvalidInput("This store cannot be salvaged to a file.", hint="Use `funes export FILE` instead.")
        return dict(method(dest))

    def doctor(self) -> list[str]:
        """Integrity problems of the store (empty when healthy); see :meth:`health` for notes too."""
        return list(self.health()["problems"])

    def health(self) -> dict[str, Any]:
        """Problems (to fix), notes (work in progress, e.g. pending vectors) and counts; never embeds."""
        problems = self.core.store.check()
        current = self.core.store.identity()
        configured = self.core.embedding.configured_identity()
        if current is not None and configured is not None and current != configured:
            problems.append(
                f"The store's vectors come from {current.model_id} ({current.dimensions} dims) but the configured "
                f"embedder is {configured.model_id} ({configured.dimensions} dims); run `funes reindex`."
            )
        notes: list[str] = []
        pending = self.core.store.pending_vectors()
        if pending:
            notes.append(
                f"{pending} records wait for their vectors (the embedder was unreachable when they were written); "
                "they are keyword-searchable now. A long-running process embeds them when it answers, or run "
                "`funes jobs run`."
            )
        server_notes = getattr(self.core.store, "server_notes", None)  # PostgreSQL: its server's own settings
        if server_notes is not None:
            notes.extend(server_notes())
        jobs = self.core.store.job_counts()
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
        records = list(self.core.store.iter_records())
        vectors: list[list[np.ndarray]] = []
        step = 256
        for start in range(0, len(records), step):
            batch = records[start : start + step]
            vectors.extend(
                in_context(self.core.store, self.core.embedding, batch, self.core.embedding.embed_memories(batch))
            )
            if progress:
                progress(min(start + step, len(records)), len(records))
        ident = EmbedderIdentity(self.core.embedding.embedder.model_id, self.core.embedding.embedder.dimensions)
        self.core.store.replace_index(ident, zip(records, vectors, strict=True))
        return len(records)
