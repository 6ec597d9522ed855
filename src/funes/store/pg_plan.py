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
steps with the gated full join, as before. Pure functions; the store keeps the shares.
"""

from __future__ import annotations

import math

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


def iterative_rows(k: int) -> int:
    """Rows an iterative HNSW scan asks for to keep the best part of ``k`` records (records hold several)."""
    return max(k * 4, 40)
