"""Per-file (project) settings of the team server: generation on or off, chunk size, retrieval depth.

``file_id`` in the REST API is a project id in the library. The settings are
a row per (tenant, project) in the store; a file without a row has the
defaults below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import InvalidInput
from .models import utcnow

if TYPE_CHECKING:
    from .core import Core

DEFAULTS: dict[str, Any] = {"enabled": True, "chunk_size": 512, "retrieval_k": 10}
_LIMITS = {"chunk_size": (64, 8192), "retrieval_k": (1, 100)}


class Projects:
    """Read and change the settings of one file (project) of a tenant."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def settings(self, project_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """A file's settings: the stored ones over the defaults."""
        stored = self.core.store.get_project_settings(self.core.tenant_of(tenant), _check_project(project_id)) or {}
        return {**DEFAULTS, **{k: v for k, v in stored.items() if k in DEFAULTS}}

    def save_settings(self, project_id: str, changes: dict[str, Any], *, tenant: str | None = None) -> dict[str, Any]:
        """Change some of a file's settings; returns them all."""
        project_id = _check_project(project_id)
        unknown = sorted(set(changes) - set(DEFAULTS))
        if unknown:
            raise InvalidInput(
                f"Unknown project setting(s): {', '.join(unknown)}.", hint=f"Settings are: {', '.join(DEFAULTS)}."
            )
        merged = self.settings(project_id, tenant=tenant)
        for name, value in changes.items():
            if name == "enabled":
                if not isinstance(value, bool):
                    raise InvalidInput("'enabled' must be true or false.", hint='Send {"enabled": false}.')
            else:
                low, high = _LIMITS[name]
                if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                    raise InvalidInput(
                        f"{name!r} must be a whole number from {low} to {high}, got {value!r}.",
                        hint=f'Send e.g. {{"{name}": {DEFAULTS[name]}}}.',
                    )
            merged[name] = value
        self.core.store.save_project_settings(self.core.tenant_of(tenant), project_id, merged, utcnow())
        return merged


def _check_project(project_id: str) -> str:
    if not isinstance(project_id, str) or not project_id.strip() or len(project_id) > 512:
        raise InvalidInput("A file id must be a non-empty name under 512 characters.", hint="Pass the file's id.")
    return project_id.strip()
