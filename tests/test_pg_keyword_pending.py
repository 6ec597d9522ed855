"""The keyword index keeps a short pending list (pg_sql/019_keyword_pending_list.sql, issue 29).

GIN queues new entries in a pending list that every lookup reads through; at
PostgreSQL's default 4 MB a bulk load left 340 pages to read per lookup. The
migration sets the index's limit to 256 kB and empties what is pending, on new
stores and on stores made before it.
"""

from __future__ import annotations

import pytest
from test_pg_keyword_length import record

from funes.models import SearchFilters
from funes.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres


def _limit(store: PostgresStore) -> list[str]:
    row = store.db.reader().native("SELECT reloptions FROM pg_class WHERE relname = 'memories_fts'").fetchone()
    return list(row[0] or [])


def test_a_new_store_keeps_a_short_pending_list(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        assert _limit(store) == ["gin_pending_list_limit=256"]
        assert (19, "019_keyword_pending_list.sql") in store.migrations()
    finally:
        store.close()


def test_a_store_made_before_has_its_pending_entries_merged_and_still_finds_them(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        with store.db.write() as conn:  # the store as it was before the migration
            conn.native("ALTER INDEX memories_fts RESET (gin_pending_list_limit)")
            conn.native("DELETE FROM migrations WHERE version = 19")
        store.put_many([(record(f"quince note {n} about the orchard"), None) for n in range(300)])
    finally:
        store.close()
    store = PostgresStore(pg_url)  # migrated on open
    try:
        assert _limit(store) == ["gin_pending_list_limit=256"]
        pending = store.db.reader().native("SELECT gin_clean_pending_list('memories_fts'::regclass)").fetchone()[0]
        assert pending == 0  # the migration merged them
        found = store.keyword_search(["quince"], SearchFilters(tenant="t"), limit=500)
        assert len(found) == 300
    finally:
        store.close()
