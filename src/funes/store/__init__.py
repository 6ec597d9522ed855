"""Storage protocol and the factory that opens a store from a path or URL.

A store does storage and raw retrieval and nothing else: it puts and deletes
records atomically, runs keyword search and vector KNN with every filter
applied inside the index, lists with cursor pagination, and keeps the side
tables (embedding cache, access log). It never embeds and never ranks across
lists; that is the service's and :mod:`funes.memory.ranking`'s job.

May import: ``funes.errors``, ``funes.models``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import AccessEvent, Store, Visibility, vis_key


def open_store(url: str | Path, **options: Any) -> Store:
    """Open a store from a file path, a ``sqlite:///path`` URL or a ``postgresql://`` URL."""
    text = str(url)
    if is_postgres_url(text):
        from .postgres import PostgresStore

        return PostgresStore(text, **options)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    from .sqlite import SqliteStore

    return SqliteStore(text, **options)


def is_postgres_url(url: str | Path) -> bool:
    """Whether a store location names a PostgreSQL database."""
    return str(url).startswith(("postgres://", "postgresql://"))


__all__ = ["AccessEvent", "Store", "Visibility", "is_postgres_url", "open_store", "vis_key"]
