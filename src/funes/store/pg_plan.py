"""Which exact vector plan a filtered search takes on PostgreSQL: the share of the tenant its filters keep, as seen.

The exact plan (:meth:`funes.store.postgres_search.PostgresSearch._exact_knn`) first sorts the tenant's
vectors by distance alone and filters the nearest ``near`` of them; when fewer than k records survive,
the full join (filters first, then distances) answers in the same statement, and both were paid. A filter
that keeps a small share of the tenant (a session scope and one memory type: about 6%) took 15.2 ms that
way against 3.7 ms for the full join alone (bench/pg_exact_bench.py, issue 29).

So every two-step statement reports how many of its near records passed the filters; that share,
remembered per filter set (the tenant included) while the store's generation holds (the rule of the
keyword statistics, :func:`funes.store.sqlite_keyword.stat_fresh`), chooses the next search's plan:

* under ``FULL_JOIN_SHARE``: the full join alone (its cost follows the records the filters keep);
* otherwise the two steps, with enough near vectors that about ``2k`` records should survive: ``2k`` over the
  records kept per near vector last time (the filters and the records' several parts together), at least
  ``NEAR_PARTS``. Before a search has seen the filter set, at least ``4k``; the gated full join keeps the answer
  exact either way (a near step of 100 instead of 200 vectors at k=50: 7.2 against 9.4 ms p50, hits identical
  on 300 queries of a 100k store, issue 29).

A filter set never seen, or one with a time bound (whose share moves with the bound), takes the two
steps with the gated full join, as before. Pure functions (but :func:`vectors_per_record`, which reads the
store's cached count); the store keeps the shares.

The iterative HNSW scan asks for rows in proportion to the tenant's vectors per record
(:func:`iterative_rows`, :func:`vectors_per_record`): a fixed ``4k`` rows made a tenant of one vector per
record walk the graph twice as far as its ``k`` records need.
"""

from __future__ import annotations

import math
from typing import Any

from ..models import SearchFilters

#: Below this share of the tenant kept by the filters, the full join alone is cheaper than sorting every distance
#: (pg_exact_bench, 4,000 vectors a tenant: 3.7 against 15.2 ms at 6%; 11.9 against 30.6 ms the other way at 20%).
FULL_JOIN_SHARE = 0.1
#: The fewest near vectors the two-step plan sorts out (at least 4 x k too, until a search saw the filter set).
NEAR_PARTS = 100
#: The suffix of a filter set's key under which the records kept per near vector are remembered.
PER_PART = "\0per part"


def share_key(filters: SearchFilters) -> str | None:
    """The key a filter set's share is remembered under (None: not remembered, a time bound moves it)."""
    if filters.created_after is not None or filters.created_before is not None:
        return None
    return f"\0share\0{filters!r}"


def near_parts(share: float | None, per_part: float | None, k: int) -> int | None:
    """How many near vectors the two-step plan sorts out for ``k`` hits, or None for the full join alone.

    ``share``: the share of the near records the filters kept last time; ``per_part``: the records kept per
    near vector then (None when unknown).
    """
    base = max(NEAR_PARTS, 4 * k)
    if share is None:
        return base
    if share < FULL_JOIN_SHARE:
        return None
    if per_part:
        return max(NEAR_PARTS, math.ceil(2 * k / per_part))
    return max(base, math.ceil(2 * k / share))


def part_share(rows: list[tuple[int, int]], near: int) -> float:
    """The records that passed the filters per near vector, from the rows :func:`seen_share` reads."""
    return rows[0][0] / max(1, near) if rows else 0.0


def seen_share(rows: list[tuple[int, int]]) -> float:
    """The share of near records that passed the filters, from the (passed, near records) the statement returned."""
    if not rows:
        return 0.0  # none of the near records passed
    passed, near = rows[0]
    return passed / max(1, near)


def hnsw_settings(ef: int, *, iterative: bool) -> list[str]:
    """The settings of an HNSW statement (the search's vector leg and maintenance's batched neighbours).

    The row-level-security qual makes the planner expect a handful of rows and sort them by a sequential
    scan: exact, but it reads every vector, so the scan is turned off. ``iterative`` (pgvector >= 0.8): the
    filters run inside the index scan, which walks on until enough rows pass them.
    """
    iterate = ["SET LOCAL hnsw.iterative_scan = relaxed_order"] if iterative else []
    return [f"SET LOCAL hnsw.ef_search = {int(ef)}", "SET LOCAL enable_seqscan = off", *iterate]


#: Rows an iterative HNSW scan asks for, per vector a tenant's records hold on average, per record it keeps.
#: 100k records x 384 dims, 1.7 vectors a record (bench/pg_rows_bench.py, k 50, 300 queries): 1.5 kept the 4k rows'
#: recall@10 against exact (0.9917 both) at half their time (3.4 against 4.1-7.3 ms); 1.25 and 1.1 lost some
#: (0.9897, 0.9850), and so did ef_search 64 (0.9850).
ROWS_PER_PART = 1.5
#: The cached statistic's key, and the statement that reads it: vectors per thousand records of a tenant.
PARTS_KEY = "\0parts per record\0"
PARTS = (
    "SELECT (SELECT count(*) FROM memory_vectors WHERE tenant = ?) * 1000 "
    "/ greatest(1, (SELECT count(*) FROM memories WHERE tenant = ?))"
)


def iterative_rows(k: int, per_record: float | None = None) -> int:
    """Rows an iterative HNSW scan asks for to keep the best part of ``k`` records (records hold several).

    ``per_record``: the tenant's vectors per record; None (unknown) asks for ``4k``. The scan walks the graph
    until that many rows passed the filters, so every row asked beyond what ``k`` records need is paid in
    distances and joins: 200 rows for 50 records of one vector each took 10.4 ms against 5.6 ms for 75 at 100k
    (server_bench's store). Fewer than ``k`` records among them sends the search to the exact plan, as before.
    """
    if per_record is None:
        return max(k * 4, 40)
    return min(20_000, max(40, math.ceil(ROWS_PER_PART * k * max(1.0, per_record))))


def vectors_per_record(store: Any, tenant: str) -> float:
    """The tenant's vectors per record, cached as its vector count is (``store._planning_stat``, per 1% growth)."""
    conn = store.db.reader()
    per_mille = store._planning_stat(
        PARTS_KEY + tenant, lambda: int(conn.execute(PARTS, (tenant, tenant)).fetchone()[0]), store._generation
    )
    return int(per_mille) / 1000
