"""Memory folders: registered, reconciled with the index, watched.

A **folder** is a directory of notes and files kept in sync with the index
(issue 11): Markdown, text, PDF, spreadsheets and chat exports, every type
``funes ingest`` reads. Its files are ordinary managed documents (see
:mod:`funes.knowledge.documents`) whose uri lies under the folder; the ``folders``
table only says which directories to keep in sync, in which scope, and when
they were last reconciled.

Invariants:

* **Reconcile by path and content hash.** A scan compares the files on disk
  with the folder's documents: new and changed files are read and embedded,
  documents of files that are gone (or emptied) are removed, and a file that
  reappears under another path with the same bytes is *moved*: its records
  keep their ids, text and vectors, so a rename costs no embedding.
* **One batch, one transaction.** A sync reads and embeds first, outside any
  transaction, then swaps every change in and records the sync time in ONE
  transaction: a search sees the folder before the batch or after it.
* **Background work is a job.** ``funes watch`` only notices changes; each
  settled batch is a durable ``folder-sync`` job (see :mod:`funes.memory.jobs`)
  that reconciles the whole folder, so a coalesced or retried job never
  misses a change, and a watcher that was down catches up on start.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import Conflict, DependencyMissing, EmbedderUnavailable, InvalidInput, NotFound
from ..models import Job, Memory, format_time, from_epoch, new_id, to_epoch, utcnow
from .paths import expand_paths, read_regular
from .readers import EXTENSIONS
from .results import IngestReport

if TYPE_CHECKING:
    from ..memory.core import Core
    from ..memory.jobs import Jobs
    from .documents import Documents

log = logging.getLogger("funes.folders")
FOLDER_SYNC = "folder-sync"  # the job kind of a watcher batch
# The marker of a section written back from a stored memory (see funes.capture).
WRITTEN_BACK = re.compile(r"<!-- funes:(mem_[0-9A-Za-z]+) -->")


MAX_DEBOUNCE = 3600.0


def debounce_seconds(value: Any) -> float:
    """``value`` as a watcher's debounce time, or :class:`InvalidInput` naming the range (NaN watched forever)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 <= seconds <= MAX_DEBOUNCE:  # False for NaN too
        raise InvalidInput(
            f"The debounce time {value!r} is not a number of seconds from 0 to {MAX_DEBOUNCE:g}.",
            hint="Pass e.g. --debounce 1 (or set watch_debounce_seconds).",
        )
    return seconds


_SYNC_ATTEMPTS = 5  # scans of one sync call when other syncs keep writing the same folder meanwhile
_PROBLEMS_KEPT = 20  # per sync job: a folder of a thousand broken files says so in a few lines


def problems(report: IngestReport) -> list[dict[str, str]]:
    """The files a sync could not index, with why and what to do; a file that vanished before it was read is left out."""
    out = []
    for result in (*report.failed, *report.skipped):
        if not os.path.lexists(result.uri):
            continue  # deleted or renamed under the sync: the next batch sees where it went
        out.append({"path": result.uri, "error": result.error or result.status, "hint": result.hint or ""})
    return out[:_PROBLEMS_KEPT]


class FolderStore(Protocol):
    """What folders need from a store, beyond records and documents."""

    def list_folders(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's folders, ordered by path."""
        ...

    def get_folder(self, tenant: str, path: str) -> dict[str, Any] | None:
        """The folder registered at a path."""
        ...

    def save_folder(self, folder: dict[str, Any]) -> None:
        """Insert or update a folder row."""
        ...

    def delete_folder(self, folder_id: str) -> bool:
        """Forget a folder row."""
        ...

    def list_documents(self, tenant: str | None, **filters: Any) -> list[dict[str, Any]]:
        """Document rows ordered by uri."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Delete a document with its chunks."""
        ...

    def move_document(self, doc_id: str, uri: str, name: str, updated_at: float) -> int:
        """Point a document and its chunks at a new uri."""
        ...


def project_root(cwd: Path | None = None) -> Path:
    """The project's root: the nearest directory holding ``.git``, else the current directory."""
    here = (cwd or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return here


@dataclass(frozen=True)
class Folder:
    """A registered memory folder and its last sync."""

    id: str
    path: str
    tenant: str
    scope: str
    project_id: str | None
    created_at: datetime | None
    last_sync_at: datetime | None
    last_sync: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Folder:
        """A folder from its store row."""
        return cls(
            id=row["id"],
            path=row["path"],
            tenant=row["tenant"],
            scope=row["scope"],
            project_id=row.get("project_id"),
            created_at=from_epoch(row.get("created_at")),
            last_sync_at=from_epoch(row.get("last_sync_at")),
            last_sync=dict(row.get("last_sync") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "path": self.path,
            "tenant": self.tenant,
            "scope": self.scope,
            "project_id": self.project_id,
            "created_at": format_time(self.created_at),
            "last_sync_at": format_time(self.last_sync_at),
            "last_sync": self.last_sync,
        }


@dataclass(frozen=True)
class Drift:
    """How a folder's files differ from its index: paths not yet indexed, changed, gone, or moved."""

    new: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    unchanged: int = 0
    failed: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """How many files are out of step with the index."""
        return len(self.new) + len(self.changed) + len(self.removed) + len(self.renamed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "new": list(self.new),
            "changed": list(self.changed),
            "removed": list(self.removed),
            "renamed": [{"from": a, "to": b} for a, b in self.renamed],
            "unchanged": self.unchanged,
            "failed": list(self.failed),
            "drift": self.total,
        }


@dataclass(frozen=True)
class SyncReport:
    """What one sync of a folder did."""

    folder: Folder
    drift: Drift
    ingest: IngestReport
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "folder": self.folder.path,
            **self.drift.to_dict(),
            "errors": [{"name": r.name, "error": r.error, "hint": r.hint} for r in self.ingest.failed],
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class FolderStatus:
    """A folder's drift right now and when it was last synced."""

    folder: Folder
    exists: bool
    drift: Drift
    queued_jobs: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**self.folder.to_dict(), "exists": self.exists, "queued_jobs": self.queued_jobs, **self.drift.to_dict()}


@dataclass
class _Indexed:
    doc_id: str
    digest: str
    status: str


class Folders:
    """Memory folders: register them, reconcile them with the index, watch them (a feature service)."""

    def __init__(self, core: Core, docs: Documents, jobs: Jobs) -> None:
        self.core = core
        self.docs = docs
        self.jobs = jobs
        self.store = core.store
        self.config = core.config
        jobs.register(FOLDER_SYNC, self.sync_job)

    def _folder_store(self) -> FolderStore:
        return cast(FolderStore, self.store)

    # -- registration ----------------------------------------------------------------
    def default_folder(self) -> Path:
        """The memory folder used when none is named: the setting, else ``.funes/memory`` in the project root."""
        configured = str(self.config.memory_folder or "")
        return Path(configured).expanduser().resolve() if configured else project_root() / ".funes" / "memory"

    def add_folder(
        self, path: str | os.PathLike[str] | None = None, *, project: str | None = None, tenant: str | None = None
    ) -> Folder:
        """Register a folder (created if missing; default :meth:`default_folder`) and return it."""
        root = Path(path).expanduser().resolve() if path is not None else self.default_folder()
        if root.exists() and not root.is_dir():
            raise InvalidInput(f"{root} is not a folder.", hint="Name a directory of Markdown notes.")
        tenant_id = self.core.tenant_of(tenant)
        existing = self._folder_store().get_folder(tenant_id, str(root))
        if existing is not None:
            return Folder.from_row(existing)
        for other in self.folders(tenant=tenant):
            if Path(other.path).is_relative_to(root) or root.is_relative_to(Path(other.path)):
                raise InvalidInput(
                    f"{root} overlaps the registered folder {other.path}.",
                    hint=f"Register one of them only; `funes folders rm {other.path}` forgets the other.",
                )
        root.mkdir(parents=True, exist_ok=True)
        project_id = self.core.project_of(project)
        row = {
            "id": new_id("fld"),
            "tenant": tenant_id,
            "path": str(root),
            "scope": "project" if project_id else "team",
            "project_id": project_id,
            "created_at": to_epoch(utcnow()),
            "last_sync_at": None,
            "last_sync": {},
        }
        self._folder_store().save_folder(row)
        return Folder.from_row(row)

    def folders(self, *, tenant: str | None = None) -> list[Folder]:
        """The registered folders, ordered by path."""
        return [Folder.from_row(r) for r in self._folder_store().list_folders(self.core.tenant_of(tenant))]

    def folder(self, path: str | os.PathLike[str] | None = None, *, tenant: str | None = None) -> Folder:
        """The folder registered at ``path`` (default: the default folder, registered on first use)."""
        if path is None:
            return self.add_folder(tenant=tenant)
        root = Path(path).expanduser().resolve()
        row = self._folder_store().get_folder(self.core.tenant_of(tenant), str(root))
        if row is None:
            raise NotFound(f"{root} is not a registered folder.", hint=f"Register it with `funes folders add {path}`.")
        return Folder.from_row(row)

    def remove_folder(
        self, path: str | os.PathLike[str], *, forget_documents: bool = False, tenant: str | None = None
    ) -> Folder:
        """Stop syncing a folder; with ``forget_documents`` its files' records are removed too."""
        folder = self.folder(path, tenant=tenant)
        if forget_documents:
            with self.store.transaction():
                for entry in self._indexed(folder).values():
                    self._folder_store().delete_document(entry.doc_id)
        self._folder_store().delete_folder(folder.id)
        return folder

    # -- scanning ------------------------------------------------------------------------
    def _indexed(self, folder: Folder) -> dict[str, _Indexed]:
        """The folder's documents by uri (those under its path, in its scope)."""
        root = Path(folder.path)
        out: dict[str, _Indexed] = {}
        for row in self._folder_store().list_documents(folder.tenant):
            path = Path(row["uri"])
            if not path.is_absolute() or not path.is_relative_to(root):
                continue
            if row["scope"] != folder.scope or (row.get("project_id") or None) != folder.project_id:
                continue
            out[row["uri"]] = _Indexed(row["id"], row["content_hash"], row["status"])
        return out

    def _on_disk(self, root: Path) -> dict[str, str]:
        """Each file under ``root`` that `funes ingest` reads (Markdown, text, PDF, spreadsheets, chat exports),
        by absolute path: its content hash.

        Files are read with :func:`~.paths.read_regular`: a device, a FIFO or a link
        out of the folder is left out, never read (issue 31).
        """
        limit = int(self.config.max_file_mb) * 1024 * 1024
        out: dict[str, str] = {}
        if not root.is_dir():
            return out
        for dirpath, dirnames, filenames in os.walk(root):
            # Hidden entries are editor and VCS scratch (.git, .foo.md.swp), never notes.
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or Path(name).suffix.lower() not in EXTENSIONS:
                    continue
                path = Path(dirpath) / name
                try:
                    data = read_regular(path, name, limit, within=root, hint="Split the note.")
                except InvalidInput as exc:
                    # Vanished or unreadable mid-scan (the next sync sees it settled), or not a note to read.
                    log.info("memory folder: %s left out: %s", name, exc.message)
                    continue
                if data.strip():
                    out[str(path)] = "sha256:" + hashlib.sha256(data).hexdigest()
        return out

    def scan(self, folder: Folder, indexed: dict[str, _Indexed] | None = None) -> Drift:
        """Compare the folder's files with its index (``indexed``, else read now) by path and content hash."""
        disk = self._on_disk(Path(folder.path))
        indexed = self._indexed(folder) if indexed is None else indexed
        new = [p for p in disk if p not in indexed]
        changed = [p for p in disk if p in indexed and indexed[p].digest != disk[p]]
        removed = [u for u in indexed if u not in disk]
        failed = [p for p in disk if p in indexed and indexed[p].status == "failed" and indexed[p].digest == disk[p]]
        renamed: list[tuple[str, str]] = []
        for old in list(removed):
            if indexed[old].status != "indexed":
                continue
            twin = next((p for p in new if disk[p] == indexed[old].digest), None)
            if twin is not None:
                renamed.append((old, twin))
                removed.remove(old)
                new.remove(twin)
        unchanged = len(disk) - len(new) - len(changed) - len(renamed)
        return Drift(tuple(new), tuple(changed), tuple(removed), tuple(renamed), unchanged, tuple(failed))

    # -- syncing -------------------------------------------------------------------------
    def _prepare(self, folder: Folder) -> tuple[Drift, IngestReport, Callable[[], dict[str, Any]]]:
        """Scan, then read and embed what changed; the returned ``apply`` writes it all (call it in a transaction)."""
        started = time.monotonic()
        # One read of the index for the drift and for the apply: a document another writer removed between
        # two reads left a removed file's uri with no document to look up (a KeyError).
        indexed = self._indexed(folder)
        drift = self.scan(folder, indexed)
        report, swap_in = self.docs.prepare_paths(
            [*drift.new, *drift.changed],
            keep=self._not_written_back,
            scope=folder.scope,
            project=folder.project_id,
            tenant=folder.tenant,
        )
        names = {new: expand_paths([new])[0].name for _, new in drift.renamed}
        store = self._folder_store()

        def apply() -> dict[str, Any]:
            now = to_epoch(utcnow())
            # Syncs of one folder (a watcher's job, the memory tool's, `funes sync`) write in turns: each
            # writes several documents, and two in different orders deadlocked on PostgreSQL.
            self._take(folder)
            now_indexed = self._indexed(folder)
            # The files this apply writes (not those the preparation failed on: it recorded their failure itself).
            touched = {r.uri for r in report.indexed} | {*drift.removed, *(u for pair in drift.renamed for u in pair)}
            if any(now_indexed.get(u) != indexed.get(u) for u in touched):
                # Another sync wrote one of the files this one is about to write since our scan: ours would
                # undo or double it. Its writes to other files change nothing here.
                raise Conflict(
                    f"The index of {folder.path} changed while it was being synced; nothing was written.",
                    hint="Sync again: a fresh scan sees the other sync's work.",
                )
            swap_in()
            for uri in drift.removed:
                store.delete_document(indexed[uri].doc_id)
            for old, new in drift.renamed:
                store.move_document(indexed[old].doc_id, new, names[new], now)
            summary = {
                "new": len(drift.new),
                "changed": len(drift.changed),
                "removed": len(drift.removed),
                "renamed": len(drift.renamed),
                "failed": len(report.failed),
                "seconds": round(time.monotonic() - started, 3),
                "problems": problems(report),
            }
            row = self._folder_store().get_folder(folder.tenant, folder.path)
            if row is not None:  # forgotten meanwhile: its documents were still brought in step
                store.save_folder({**row, "last_sync_at": now, "last_sync": summary})
            return summary

        return drift, report, apply

    def _take(self, folder: Folder) -> None:
        """Hold the folder's lock to the end of the transaction (other syncs of it wait; a no-op on SQLite)."""
        self.store.lock_identity(f"folder\x1f{folder.tenant}\x1f{folder.path}")

    def _not_written_back(self, chunk: Memory) -> bool:
        """False for a section that is the Markdown copy of a stored memory (write-back), so it is indexed once."""
        match = WRITTEN_BACK.search(chunk.content)
        if match is None:
            return True
        memory = self.store.get(match.group(1))
        # Edited by hand since it was written, the section is a note of its own.
        if memory is None or memory.content not in chunk.content:
            return True
        # A line typed under the copy (issue 31) makes it a note too: anything beside the copy, its marker and tags.
        rest = chunk.content.replace(match.group(0), "").replace(memory.content, "")
        return bool(re.search(r"\w", re.sub(r"^- tags: .*$", "", rest, flags=re.M)))

    def sync(self, path: str | os.PathLike[str] | None = None, *, tenant: str | None = None) -> list[SyncReport]:
        """Reconcile folders with the index now (the named one, else every registered one, else the default)."""
        targets = (
            [self.folder(path, tenant=tenant)] if path is not None else self.folders(tenant=tenant) or [self.folder()]
        )
        out = []
        for folder in targets:
            started = time.monotonic()
            for attempt in range(1, _SYNC_ATTEMPTS + 1):
                whole = attempt == _SYNC_ATTEMPTS
                since = to_epoch(utcnow())  # the scan reads stored chunks (an edited section: the next version)
                if not whole:
                    drift, report, apply = self._prepare(folder)
                try:
                    # A forget of the tenant since the scan writes nothing (ForgetCrossed, a Conflict: scan again).
                    with self.store.unforgotten_write(folder.tenant, since, f"syncing {folder.path}"):
                        if whole:
                            # Overtaken on every scan so far (a folder under heavy churn): this last one
                            # takes the folder's lock before it scans, so no other sync writes meanwhile.
                            self._take(folder)
                            drift, report, apply = self._prepare(folder)
                        apply()
                    break
                except Exception as exc:
                    # Another sync (a watcher's job, another process) indexed the same files between our
                    # scan and our write, and the batch rolled back whole; a fresh scan sees its work.
                    if whole or (attempt == 2 and not isinstance(exc, Conflict)):
                        raise
            out.append(
                SyncReport(self.folder(folder.path, tenant=folder.tenant), drift, report, time.monotonic() - started)
            )
        return out

    def status(self, path: str | os.PathLike[str] | None = None, *, tenant: str | None = None) -> list[FolderStatus]:
        """Each folder's drift (files not yet indexed, changed, removed) and last sync time."""
        targets = [self.folder(path, tenant=tenant)] if path is not None else self.folders(tenant=tenant)
        queued: dict[str, int] = {}
        for job in self.jobs.list(tenant=self.core.tenant_of(tenant), kind=FOLDER_SYNC, limit=1000):
            if job.status in ("queued", "running"):
                key = str(job.payload.get("folder"))
                queued[key] = queued.get(key, 0) + 1
        return [FolderStatus(f, Path(f.path).is_dir(), self.scan(f), queued.get(f.path, 0)) for f in targets]

    # -- the job ---------------------------------------------------------------------------
    def enqueue_sync(self, folder: Folder, reason: str = "change", paths: Sequence[str] = ()) -> str:
        """Queue a ``folder-sync`` job for a folder (coalesced with one already queued)."""
        with self.store.transaction():
            return self.core.enqueue_job(
                FOLDER_SYNC,
                {"folder": folder.path, "reason": reason, "paths": list(paths)[:100]},
                tenant=folder.tenant,
                dedupe_key=f"{FOLDER_SYNC}:{folder.tenant}:{folder.path}",
            )

    def sync_job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``folder-sync`` jobs: reconcile the whole folder, so a coalesced batch misses nothing."""
        row = self._folder_store().get_folder(job.tenant, str(job.payload.get("folder")))
        if row is None:
            return lambda: {"skipped": "the folder is no longer registered"}
        return self._prepare(Folder.from_row(row))[2]

    # -- watching -------------------------------------------------------------------------
    def watch(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        stop: threading.Event,
        debounce: float | None = None,
        on_batch: Callable[[Folder, str], None] | None = None,
        on_problem: Callable[[Folder, str], None] | None = None,
        tenant: str | None = None,
    ) -> None:
        """Watch folders until ``stop`` is set: each settled batch of changes becomes a ``folder-sync`` job.

        Reconciles on start (a watcher that was down catches up), runs this
        process's job worker, and survives a folder being deleted and
        recreated. ``on_batch(folder, reason)`` is told of each job queued,
        ``on_problem(folder, line)`` of each file a finished job could not index
        and of each failed job, one line saying what to do (a file that
        vanished before it was read is no problem).
        """
        try:
            from .folder_watch import FolderWatcher, report_problems
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise DependencyMissing(
                "Watching folders needs the watchdog package.", hint="pip install 'funes-memory[watch]'"
            ) from exc
        targets = [self.folder(path, tenant=tenant)] if path is not None else self.folders(tenant=tenant)
        if not targets:
            targets = [self.folder()]
        wait = debounce_seconds(self.config.watch_debounce_seconds if debounce is None else debounce)

        by_path = {f.path: f for f in targets}
        queued: dict[str, Folder] = {}
        told: set[tuple[str, str]] = set()

        def queue(path: str, reason: str, paths: Sequence[str]) -> None:
            queued[self.enqueue_sync(by_path[path], reason, paths)] = by_path[path]
            if on_batch is not None:
                on_batch(by_path[path], reason)

        # The model loads now, not on the first change: the first save is searchable as fast as the rest.
        try:
            self.core.embedding.embed(["warm"])
        except EmbedderUnavailable as exc:  # a server that is down: changes are indexed by keyword, vectors later
            log.warning("the embedder is unavailable at start: %s", exc)
        self.jobs.start()
        with FolderWatcher(list(by_path), wait, queue) as watcher:
            # Reconcile once the observer runs, so nothing changed in between goes unseen.
            for folder in targets:
                queue(folder.path, "start", ())
            while not stop.wait(0.1):
                watcher.tick()
                if on_problem is not None:
                    report_problems(self.jobs, queued, on_problem, told)
