"""Funes: local-first long-term memory for AI assistants and agents.

>>> import funes
>>> mem = funes.open()                      # $FUNES_HOME/funes.db, local model
>>> mem.remember("I prefer US-based vendors", type="preference")
>>> mem.search("which suppliers does the user like?")
>>> mem.search(funes.SearchQuery("vendors", types=["preference"], limit=3))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    SearchQuery,
    SearchResults,
    SessionGroup,
    SourceRef,
)
from .models.lazy import lazy_exports

if TYPE_CHECKING:
    from .agents.tools import ToolResult
    from .conversations.assembly import Budget, BuiltContext
    from .conversations.sessions import Session
    from .knowledge.results import Document, IngestReport
    from .service import Funes, open
    from .store.consistency import noting_writes, reading_after


# The names of the TYPE_CHECKING block load on first use (the service: numpy, SQLite, the store).
__getattr__ = lazy_exports(__name__, __file__)[0]

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
    "SearchQuery",
    "SearchResults",
    "Session",
    "SessionGroup",
    "SourceRef",
    "StoreCorrupt",
    "ToolResult",
    "__version__",
    "noting_writes",
    "open",
    "reading_after",
]
