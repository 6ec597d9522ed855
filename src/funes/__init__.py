"""Funes: local-first long-term memory for AI assistants and agents.

>>> import funes
>>> mem = funes.open()                      # $FUNES_HOME/funes.db, local model
>>> mem.remember("I prefer US-based vendors", type="preference")
>>> mem.search("which suppliers does the user like?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    BackendUnavailable,
    Conflict,
    DependencyMissing,
    EmbedderMismatch,
    FunesError,
    InvalidInput,
    NotFound,
    StoreCorrupt,
)
from .models import (
    Caller,
    Explanation,
    Memory,
    Page,
    PreviousVersion,
    Reference,
    SearchFilters,
    SearchHit,
    SourceRef,
)
if TYPE_CHECKING:
    from .service import Funes, open


def __getattr__(name: str) -> Any:
    """Load the service (numpy, SQLite, the store) on first use, so `funes --help` stays instant."""
    if name in ("Funes", "open"):
        from . import service

        return getattr(service, name)
    raise AttributeError(f"module 'funes' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "Caller",
    "Conflict",
    "DependencyMissing",
    "EmbedderMismatch",
    "Explanation",
    "Funes",
    "FunesError",
    "InvalidInput",
    "Memory",
    "NotFound",
    "Page",
    "PreviousVersion",
    "Reference",
    "SearchFilters",
    "SearchHit",
    "SourceRef",
    "StoreCorrupt",
    "__version__",
    "open",
]
