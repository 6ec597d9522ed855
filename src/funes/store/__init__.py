"""Storage protocol and the factory that opens a store from a path or URL.

A store does storage and raw retrieval and nothing else: it puts and deletes
records atomically, runs keyword search and vector KNN with every filter
applied inside the index, lists with cursor pagination, and keeps the side
tables (embedding cache, access log). It never embeds and never ranks across
lists; that is the service's and :mod:`funes.retrieval`'s job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import AccessEvent, Store, Visibility, vis_key


def open_store(url: str | Path, **options: Any) -> Store:
    """Open a store from a file path or a ``sqlite:///path`` URL."""
    text = str(url)
    if text.startswith(("postgres://", "postgresql://")):
        from ..errors import InvalidInput

        raise InvalidInput(
            "PostgreSQL stores are not available in this version of Funes.",
            hint="Use a SQLite file path (the default) for now.",
        )
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    from .sqlite import SqliteStore

    return SqliteStore(text, **options)


__all__ = ["AccessEvent", "Store", "Visibility", "open_store", "vis_key"]
