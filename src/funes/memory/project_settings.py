"""Per-project settings (seed 002's ``memory_config``): enabled, max_records, chunk_size, chunk_overlap, retrieval_k.

A project (a file, in seed 001's words) may override the store-wide
settings. Every path honours them:

* ``enabled = false``: the project neither stores nor recalls. Writing a
  project-scope memory or ingesting a document into it is refused with a
  clear error; searches and context never return its project-scope records.
  (Session messages of its chats are still kept: they are the chat history.)
* ``max_records`` (default ``project_max_records``, 10,000): retention evicts
  the lowest-scoring unpinned memories once the project holds more than 80%
  of it (see :mod:`funes.curation.upkeep`).
* ``chunk_size`` / ``chunk_overlap``: how its documents are chunked.
* ``retrieval_k``: how many memories context assembly retrieves for its sessions.

Only the values a user set are stored; the rest follow the store-wide
settings as they change. Reads are cached for a second or two, so a
setting changed by another process applies within that time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..models import utcnow

if TYPE_CHECKING:
    from ..models.config import Config
    from ..store import Store

_TTL = 2.0  # seconds a read is trusted (another process's change applies within this)
# name: (type, the store-wide setting it defaults to, minimum)
FIELDS: dict[str, tuple[type, str | None, int | None]] = {
    "enabled": (bool, None, None),
    "max_records": (int, "project_max_records", 1),
    "chunk_size": (int, "chunk_tokens", 8),
    "chunk_overlap": (int, "chunk_overlap", 0),
    "retrieval_k": (int, "context_retrieved_chunks", 1),
}


def _parse(name: str, value: Any) -> Any:
    if name not in FIELDS:
        raise InvalidInput(f"Unknown project setting {name!r}.", hint=f"Project settings are: {', '.join(FIELDS)}.")
    kind, _, minimum = FIELDS[name]
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise InvalidInput(f"{name} must be true or false, got {value!r}.", hint=f"e.g. `{name} false`.")
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or (isinstance(value, float) and not value.is_integer()):
        raise InvalidInput(f"{name} must be a whole number, got {value!r}.", hint=f"e.g. `{name} 500`.")
    if minimum is not None and number < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {number}.", hint=f"Use {minimum} or more.")
    return number


class ProjectSettings:
    """Read and change per-project settings; the effective value falls back to the store-wide setting."""

    def __init__(self, store: Store, config: Config) -> None:
        self.store = store
        self.config = config
        self._cache: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._disabled: dict[str, tuple[float, set[str]]] = {}
        self._lock = threading.Lock()

    def stored(self, tenant: str, project: str) -> dict[str, Any]:
        """The values set for this project (cached briefly)."""
        key = (tenant, project)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < _TTL:
                return hit[1]
        values = self.store.get_project_settings(tenant, project) or {}
        with self._lock:
            self._cache[key] = (now, values)
        return values

    def effective(self, tenant: str, project: str | None) -> dict[str, Any]:
        """Every project setting's value for this project (the store-wide ones when ``project`` is None)."""
        stored = self.stored(tenant, project) if project else {}
        out: dict[str, Any] = {}
        for name, (_, default, _) in FIELDS.items():
            out[name] = stored.get(name, True if default is None else getattr(self.config, default))
        return out

    def enabled(self, tenant: str, project: str | None) -> bool:
        """Whether the project stores and recalls (a missing project always does)."""
        return not project or bool(self.stored(tenant, project).get("enabled", True))

    def disabled_projects(self, tenant: str) -> set[str]:
        """The tenant's projects with ``enabled = false`` (cached briefly: every search asks)."""
        now = time.monotonic()
        with self._lock:
            hit = self._disabled.get(tenant)
            if hit is not None and now - hit[0] < _TTL:
                return hit[1]
        found = {p for p, s in self.store.list_project_settings(tenant).items() if s.get("enabled") is False}
        with self._lock:
            self._disabled[tenant] = (now, found)
        return found

    def update(self, tenant: str, project: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Set some of a project's settings (None resets one to the store-wide value); returns the effective ones."""
        if not isinstance(project, str) or not project.strip():
            raise InvalidInput("Name the project.", hint="e.g. `funes config set --project acme enabled false`.")
        current = dict(self.store.get_project_settings(tenant, project) or {})
        for name, value in values.items():
            if value is None:
                _parse(name, True if FIELDS.get(name, (bool,))[0] is bool else 1)  # checks the name
                current.pop(name, None)
            else:
                current[name] = _parse(name, value)
        effective = {**self.effective(tenant, None), **current}
        if effective["chunk_overlap"] * 2 > effective["chunk_size"]:
            raise InvalidInput(
                f"chunk_overlap {effective['chunk_overlap']} is over half of chunk_size {effective['chunk_size']}.",
                hint="Use an overlap of at most half the chunk size.",
            )
        self.store.save_project_settings(tenant, project, current, utcnow())
        self.invalidate(tenant, project)
        return effective

    def invalidate(self, tenant: str, project: str) -> None:
        """Forget cached reads of a project (after a change commits, so the next read sees it)."""
        with self._lock:
            self._cache.pop((tenant, project), None)
            self._disabled.pop(tenant, None)


__all__ = ["FIELDS", "ProjectSettings"]
