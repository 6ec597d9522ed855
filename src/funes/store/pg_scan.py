"""How the PostgreSQL keyword statement finds its matches: the GIN index, or a walk of the tenant's newest records.

The statement ranks the newest ``scan_cap`` matches of its terms (a quarter of that for a query of only
common words). Through the GIN index that is a bitmap of every record holding the terms, store-wide, ANDed
with the tenant's, then a sort by row: for a word in 20-90% of a 100k store (18-94k index entries) that took
2.5-9.3 ms, whatever the cap. Walking the tenant's records newest first (the ``(tenant, rowid)`` primary key)
and testing each one's tsvector stops once it has the cap: 0.3-1.1 ms for a cap of 500, 1.3-2.7 ms for
2,000, for the same words (25 tenants of 4,000 records, issue 29). For a rare word the index wins by far.

The generic plan the statement runs on cannot choose between them (its terms are parameters), so it holds
both, each gated by ``walk``, worked out in the statement from the terms' record counts: PostgreSQL runs
only the gated-in scan. The walk reads about ``cap x records / matches`` rows, the index about as many
entries as the terms' counts; the walk is taken when the index's entries (the sum over the terms searched
for, times the largest count) exceed ``WALK_FACTOR`` times ``cap x records``. Same rows either way: only
the path differs. Selective filters (a project, a session...) keep the index alone: their matches are few
among the tenant's newest records.

Term presence probes the same way. A term no scanned match held (one the informative-term plan left out,
common) was probed with ``EXISTS`` through the index: a bitmap of every record holding it, store-wide, which
cannot stop at the first (up to 22 ms for one probe at 100k). A term in more than ``sqrt(PROBE_FACTOR x
records)`` records is first looked for among the tenant's newest ``PROBE_FACTOR x records / count`` records
(at most ``PROBE_ROWS``), and only if none of them holds it, through the index: the same answer.
"""

from __future__ import annotations

#: The walk is taken when sum(counts) x max(count) > WALK_FACTOR x cap x records (a walked row costs a few index
#: entries; the walk stops at the tenant's last record, so the rule errs toward the index).
WALK_FACTOR = 2.0
#: kp's ``walk`` column, over its rows ``p`` (the term's count ``df``, ``keep``, ``over``, ``some``, ``total``);
#: parameters: WALK_FACTOR, the cap, the cap.
WALK = (
    "coalesce((sum(p.df) FILTER (WHERE p.keep))::float8 * max(p.df) FILTER (WHERE p.keep) > ?::float8 * "
    "max(p.total) * CASE WHEN bool_and(p.over AND NOT p.some) THEN greatest(1, ? / 4) ELSE ? END, false)"
)


def match(query: str, walked: bool | None) -> str:
    """The match condition of one scan: ``walked`` True the walk (a function call the GIN index cannot serve),
    False the index's scan, each gated by kp's ``walk``; None the index's scan alone."""
    if walked is None:
        return f"m.fts @@ {query}"
    if walked:
        return f"ts_match_vq(m.fts, {query}) AND (SELECT kp.walk FROM kp)"
    return f"m.fts @@ {query} AND NOT (SELECT kp.walk FROM kp)"


#: A probe walks first when count x count > PROBE_FACTOR x records, over PROBE_FACTOR x records / count rows.
PROBE_FACTOR = 4
PROBE_ROWS = 2000


def probe(where: str, at: int) -> str:
    """Whether one of the tenant's newest records that ``where`` admits holds the term (its count is ``st.dfs[at]``;
    one parameter after those of ``where``: the folded term), for a term common enough; else false."""
    return (
        f"(st.dfs[{at}]::float8 * st.dfs[{at}] > {PROBE_FACTOR} * st.total AND EXISTS (SELECT 1 FROM (SELECT m.fts FROM "
        f"memories m WHERE {where} ORDER BY m.rowid DESC LIMIT least({PROBE_ROWS}, ceil({PROBE_FACTOR} * st.total / "
        f"greatest(st.dfs[{at}], 1)))::bigint) w WHERE ts_match_vq(w.fts, plainto_tsquery('simple', ?))))"
    )
