"""SQLite tables of managed document sources (see sql/002_*.sql)."""

from __future__ import annotations


class DocumentTables:
    """Source (document) storage, mixed into :class:`funes.store.sqlite.SqliteStore`."""
