"""A common keyword term's record count on PostgreSQL: estimated from PostgreSQL's statistics where they may be read.

Counting a term's records visits every match's row (73 ms for a word in 60% of 100k records), so a
term ANALYZE's sample puts in more than ``_COUNT_EXACT_MAX`` records is estimated from its share of
that sample, as SQLite estimates a term in more than 20,000 (issue 29). Under row-level security
PostgreSQL hides the table's statistics (they describe every tenant's rows), and the count stays exact.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import funes
from funes.providers.embed import HashEmbedder
from funes.store.postgres_search import _COUNT_EXACT_MAX

pytestmark = pytest.mark.postgres


def _as_admin(pg_url: str, pg_admin_url: str) -> str:
    """The test database's URL with the admin's credentials (a superuser: row-level security does not apply)."""
    admin, own = urlsplit(pg_admin_url), urlsplit(pg_url)
    return urlunsplit((admin.scheme, admin.netloc, own.path, admin.query, ""))


def test_a_common_terms_count_is_estimated_from_the_statistics_only_where_postgres_shows_them(
    pg_url: str, pg_admin_url: str
) -> None:
    common = _COUNT_EXACT_MAX + 400
    with funes.open(pg_url, embedder=HashEmbedder(16), worker="off") as mem:
        mem.remember_many([f"Alpha note {n}" + (" glacier" if n % 10 == 0 else "") for n in range(common)])
    admin_url = _as_admin(pg_url, pg_admin_url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("ANALYZE memories")  # every row sampled: "alpha" is in all of them
    with funes.open(pg_url, embedder=HashEmbedder(16), worker="off") as mem:
        # 100 more records without "alpha" (over 1% more: counted again), not analysed.
        mem.remember_many([f"Bravo note {n}" for n in range(100)])
    with funes.open(admin_url, embedder=HashEmbedder(16), worker="off") as mem:
        total, counts = mem.store.term_stats(["alpha", "glacier"])
        assert total == common + 100
        # The statistics' share (every sampled row) times the records now: an estimate, not the count.
        assert counts == {"alpha": common + 100, "glacier": common // 10}
    with funes.open(pg_url, embedder=HashEmbedder(16), worker="off") as mem:
        # An ordinary role is under row-level security: pg_stats shows nothing, so every count is exact.
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'memories'").fetchone()[0] == 0
        assert mem.store.term_stats(["alpha", "glacier"]) == (common + 100, {"alpha": common, "glacier": common // 10})
        assert len(mem.search("alpha glacier", limit=5)) == 5
        mem.forget(mem.list(limit=1).items[0].id)
    with funes.open(pg_url, embedder=HashEmbedder(16), worker="off") as mem:
        assert mem.store.term_stats(["glacier"])[0] == common + 99  # counted under row-level security
    with funes.open(admin_url, embedder=HashEmbedder(16), worker="off") as mem:
        # Without it, the record total is the newest rowid, as SQLite reads it (a count(*) of 100k took 50-60 ms).
        assert mem.store.term_stats(["glacier"])[0] == common + 100
