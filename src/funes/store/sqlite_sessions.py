"""SQLite tables of sessions, messages and usage (see sql/003_*.sql)."""

from __future__ import annotations


class SessionTables:
    """Session storage, mixed into :class:`funes.store.sqlite.SqliteStore`."""
