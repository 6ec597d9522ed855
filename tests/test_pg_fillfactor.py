"""A search's access rows update a record in place on PostgreSQL (issue 29, migration 020).

access_count and last_accessed are in no index, so PostgreSQL can keep the new version on the record's
page (a HOT update) and touch no index, if the page has room. A bulk load at the default fillfactor fills
every page, and the update then moved the row: a new entry in every index of ``memories`` and the whole
tsvector again in the keyword index's pending list. Migration 020 leaves a tenth of each page free.
"""

from __future__ import annotations

import psycopg
import pytest

import funes
from funes.providers.embed import HashEmbedder
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _pages(pg_url: str, ids: list[str]) -> dict[str, int]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute("SELECT id, (ctid::text::point)[0]::int FROM memories WHERE id = ANY(%s)", [ids]).fetchall()
    return dict(rows)


def test_access_rows_of_a_bulk_loaded_store_update_each_record_on_its_own_page(pg_url: str) -> None:
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    try:
        with acting_for("acme"):
            records = service.remember_many(
                [
                    f"note {n}: the budget review of team {n % 97} is on {DAYS[n % 5]} in room {n % 89}"
                    for n in range(2000)
                ],
                tenant="acme",
            )
            ids = [r.memory.id for r in records if r.memory is not None]
            before = _pages(pg_url, ids)
            assert len(set(before.values())) > 5  # the load spans many pages
            for n in range(40):  # searches of ten hits each, a few of them on any one page
                assert service.search(f"team {n} room {n + 3}", tenant="acme", limit=10)
            service.core.sync_access()
            counts = {i: m.access_count for i, m in service.core.store.get_many(ids).items()}
    finally:
        service.close()
    read = [i for i in ids if counts[i] > 0]
    assert len(read) >= 100
    after = _pages(pg_url, read)
    moved = [i for i in read if after[i] != before[i]]
    # A page's tenth holds one or two new versions: a page read more often than that may still move a row
    # (at fillfactor 100, about half of them moved).
    assert len(moved) <= len(read) // 10, f"{len(moved)} of {len(read)} read records moved to another page"
