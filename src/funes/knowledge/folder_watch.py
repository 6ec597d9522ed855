"""The watchdog side of ``funes watch``: notice changes, settle them, hand each batch to a job.

The observer thread only records which folders changed and when; the
caller's loop (:meth:`FolderWatcher.tick`) queues one ``folder-sync`` job per
folder once its changes have been quiet for the debounce time. A watched
folder that is deleted is watched again when it reappears, and both events
queue a sync, so a watcher never goes stale silently (issue 11).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .readers import EXTENSIONS

# queue(folder path, reason, changed paths): hands one settled batch to a job.
QueueBatch = Callable[[str, str, Sequence[str]], None]
_IGNORED_EVENTS = frozenset({"opened", "closed_no_write"})
_MAX_WAIT_FACTOR = 10  # a folder that never goes quiet is still synced every 10 debounce periods


class _Benign(logging.Filter):
    """Drops watchdog's note that an emitter stopped (its folder was deleted; the watcher re-watches it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


_BENIGN = _Benign()


def _quiet_watchdog() -> None:
    """Keep watchdog's notes on churn off the terminal: they are not problems and say nothing to do (issue 31).

    A folder deleted and recreated under the watcher makes watchdog warn, for
    every sub-folder, that it overwrote a callback, with its whole watch table
    (kilobytes a line); a stopped emitter logs an error. Both are expected here.
    """
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
    logging.getLogger("watchdog.observers.inotify").addFilter(_BENIGN)


class _Pending:
    """Changes of one folder not yet handed to a job."""

    def __init__(self, now: float, reason: str) -> None:
        self.first = now
        self.last = now
        self.reason = reason
        self.paths: set[str] = set()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: FolderWatcher, folder: str) -> None:
        self.watcher = watcher
        self.folder = folder
        self.root = Path(folder)

    def _relevant(self, raw: str | bytes) -> bool:
        path = Path(os.fsdecode(raw))
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        # Hidden entries are editor scratch (.note.md.swp) and VCS internals.
        return not any(p.startswith(".") for p in parts)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        paths = [p for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        if os.fsdecode(event.src_path) == str(self.root) and event.event_type in ("deleted", "moved"):
            self.watcher.lost(self.folder)
            return
        hits = [os.fsdecode(p) for p in paths if self._relevant(p)]
        if event.is_directory:
            # A moved or deleted sub-folder takes its notes with it; a modified one says nothing new.
            if event.event_type in ("modified",) or not hits:
                return
        else:
            hits = [p for p in hits if Path(p).suffix.lower() in EXTENSIONS]
        if hits:
            self.watcher.changed(self.folder, "change", hits)


class FolderWatcher:
    """Watch folders with watchdog; call :meth:`tick` often to queue settled batches."""

    def __init__(self, folders: Sequence[str], debounce: float, queue: QueueBatch) -> None:
        self.folders = list(folders)
        self.debounce = max(0.0, debounce)
        self.queue = queue
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._watches: dict[str, Any] = {}
        self._identity: dict[str, tuple[int, int] | None] = {}
        self._observer: Any = None

    def __enter__(self) -> FolderWatcher:
        _quiet_watchdog()
        self._observer = Observer()
        for folder in self.folders:
            self._identity[folder] = self._stat(folder)
            self._schedule(folder)
        self._observer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._observer.stop()
        self._observer.join(timeout=10)

    @staticmethod
    def _stat(folder: str) -> tuple[int, int] | None:
        try:
            st = os.stat(folder)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if Path(folder).is_dir() else None

    def _schedule(self, folder: str) -> None:
        if folder in self._watches or not Path(folder).is_dir():
            return
        try:
            self._watches[folder] = self._observer.schedule(_Handler(self, folder), folder, recursive=True)
        except OSError:
            pass  # gone again between the check and the call; the next tick retries

    def _unschedule(self, folder: str) -> None:
        watch = self._watches.pop(folder, None)
        if watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    # -- called from the observer thread -------------------------------------------------
    def changed(self, folder: str, reason: str, paths: Sequence[str]) -> None:
        """Record changes of a folder (the batch settles after the debounce time)."""
        now = time.monotonic()
        with self._lock:
            pending = self._pending.setdefault(folder, _Pending(now, reason))
            pending.last = now
            if reason != "change":
                pending.reason = reason  # the folder itself went or came back: the batch is named for that
            pending.paths.update(paths)

    def lost(self, folder: str) -> None:
        """The folder itself was deleted or moved away; the next tick notices and re-watches it later."""
        with self._lock:
            self._identity[folder] = (-1, -1)  # never equal to a real directory's identity

    # -- called from the watching loop ----------------------------------------------------
    def tick(self) -> None:
        """Re-watch folders that were deleted and recreated, and queue the batches that have settled."""
        for folder in self.folders:
            now_id = self._stat(folder)
            with self._lock:
                was = self._identity.get(folder)
                self._identity[folder] = now_id
            if now_id != was:
                self._unschedule(folder)
                self._schedule(folder)
                self.changed(folder, "recreated" if now_id is not None else "deleted", ())
            elif now_id is not None and folder not in self._watches:
                self._schedule(folder)
        now = time.monotonic()
        due: list[tuple[str, _Pending]] = []
        with self._lock:
            for folder in self.folders:
                pending = self._pending.get(folder)
                if pending is None:
                    continue
                quiet = now - pending.last >= self.debounce
                overdue = now - pending.first >= self.debounce * _MAX_WAIT_FACTOR
                if quiet or overdue:
                    due.append((folder, self._pending.pop(folder)))
        for folder, pending in due:
            self.queue(folder, pending.reason, sorted(pending.paths))


def report_problems(
    jobs: Any, queued: dict[str, Any], tell: Callable[[Any, str], None], told: set[tuple[str, str]]
) -> None:
    """Tell ``tell(folder, line)`` what each finished sync job of ``queued`` (job id → folder) could not do.

    A file that stays unreadable is told once (``told`` remembers), not at every later sync of its folder.
    """
    for job_id, folder in list(queued.items()):
        try:
            job = jobs.get(job_id)
        except Exception:
            queued.pop(job_id, None)
            continue
        if job.status == "done":
            queued.pop(job_id, None)
            for problem in (job.result or {}).get("problems", ()):
                key = (str(problem.get("path")), str(problem.get("error")))
                if key in told:
                    continue
                told.add(key)
                where = _relative(problem.get("path", ""), folder.path)
                tell(folder, _one_line(f"{where} is not indexed: {problem.get('error')} {problem.get('hint') or ''}"))
        elif job.status == "failed" or (job.status == "queued" and job.last_error and job.attempts):
            queued.pop(job_id, None)
            tell(
                folder,
                _one_line(
                    f"a sync of {folder.path} failed ({job.last_error}); it is retried on the next change, "
                    "or run `funes folders sync`."
                ),
            )


def _relative(path: str, root: str) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]
