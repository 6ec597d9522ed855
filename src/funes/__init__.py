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
    ForgetResult,
    Memory,
    Page,
    PreviousVersion,
    Reference,
    RememberResult,
    SearchFilters,
    SearchHit,
    SearchResults,
    SessionGroup,
    SourceRef,
)

if TYPE_CHECKING:
    from .context import Budget, BuiltContext
    from .ingest.results import Document, IngestReport
    from .service import Funes, open
    from .sessions import Session
    from .tools import ToolResult


_LAZY = {
    "Funes": "service",
    "open": "service",
    "Session": "sessions",
    "Budget": "context",
    "BuiltContext": "context",
    "ToolResult": "tools",
    "Document": "ingest.results",
    "IngestReport": "ingest.results",
}


def __getattr__(name: str) -> Any:
    """Load the service (numpy, SQLite, the store) on first use, so `funes --help` stays instant."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'funes' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "Budget",
    "BuiltContext",
    "Caller",
    "Conflict",
    "DependencyMissing",
    "Document",
    "EmbedderMismatch",
    "Explanation",
    "ForgetResult",
    "Funes",
    "FunesError",
    "IngestReport",
    "InvalidInput",
    "Memory",
    "NotFound",
    "Page",
    "PreviousVersion",
    "Reference",
    "RememberResult",
    "SearchFilters",
    "SearchHit",
    "SearchResults",
    "Session",
    "SessionGroup",
    "SourceRef",
    "StoreCorrupt",
    "ToolResult",
    "__version__",
    "open",
]
