"""The keyword leg of the SQLite store: BM25 over FTS5, with term planning for large stores.

Three costs grow with the store, and each has its answer here:

* ``bm25()`` ranks every match it is given: on a store larger than the scan
  cap, very common terms are left out when rarer ones remain, and at most the
  newest ``scan_cap`` matches (that pass the filters) are ranked.
* Joining each match with ``memories`` for the filters costs as much as
  BM25: the newest ``scan_cap`` matches are scored in the FTS index alone and
  only the best are joined (``_best_passing``). Under the cap this is exact;
  over it, when fewer than ``limit`` of those matches pass the filters, one
  statement that joins every match decides (its cap counts passing rows).
* ``bm25()`` computes each term's IDF by walking the term's whole doclist,
  every query (~27 ns a row: 8 ms for a word in 300k records). A query of
  only very common words keeps one of them; past ``IDF_WALK_MAX`` rows its
  BM25 is computed from the same inputs without the walk
  (``_single_term_bm25``): the cached row count, the term frequencies FTS5
  marks with ``highlight()`` and the row sizes in ``memories_fts_docsize``.

Term counts are cached while the store has grown by less than
``_STATS_GROWTH`` of its rows since they were counted: they choose plans and
feed IDFs (the calibrated relevance's keyword signal), where a count a few
writes old changes nothing that matters. The cache follows the data, not the
clock, so the same writes and queries give the same relevance however fast
they run.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..models import JudgedRecord, RankFields, SearchFilters, to_epoch
from .sqlite_cjk import cjk_runs, merge_hits
from .sqlite_rows import (
    JUDGE_COLUMNS,
    RANK_COLUMNS,
    candidate_columns,
    rows_by_id,
    tenant_token,
    to_candidate,
    to_judged,
    to_rank_fields,
)

_STATS_TTL = 120.0  # seconds a planning statistic is trusted where no store generation is at hand (PostgreSQL)
_STATS_GROWTH = 0.01  # share of new rows after which a cached term count is counted again
PRESENCE_SCAN = 5000  # index matches looked at per term by term_presence
IDF_WALK_MAX = 100_000  # rows of a lone common term past which its BM25 is computed without FTS5's IDF walk
COUNT_EXACT_MAX = 20_000  # a term in more records than this has its count estimated (_term_count)
COUNT_WINDOW = 100_000  # the newest rows that estimate is taken from
# bm25(memories_fts, 2.0, 1.0, 1.0, 0.0): title, content, topic, tags (hashed tenant tokens).
WEIGHTS = (2.0, 1.0, 1.0, 0.0)
# Index matches of an FTS expression, counting at most the bound: it stops early, never walks a whole doclist.
_BOUNDED_COUNT = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
# The newest matches of an FTS expression (``bound``: a rowid cut-off, ``_rowid_bound``), at most the bound parameter.
_NEWEST = "(SELECT {rows} FROM memories_fts WHERE memories_fts MATCH ?{bound} ORDER BY rowid DESC LIMIT ?)"


def _nothing() -> None:
    """No one waits for the ranking statement."""


class KeywordSearch:
    """The keyword-search half of :class:`~funes.store.sqlite.SqliteStore` (a mixin over its connections)."""

    db: Any
    _fts_stats: dict[str, tuple[int, float]]

    def keyword_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        limit: int,
        scan_cap: int = 2000,
        now: datetime | None = None,
        common_ratio: float = 0.1,
        fields: dict[str, RankFields] | None = None,
        judged: dict[str, JudgedRecord] | None = None,
        ready: Callable[[], None] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 over the word index, joined with the CJK trigram matches (sqlite_cjk) when the query has CJK text.

        ``fields``, when given, receives the rank fields of the hits whose records the plan read anyway, and
        ``judged`` (with ``fields``) their partial records (:meth:`judge_records`), read in the same statement.
        ``ready`` is called once the plan is made, right before the statement that ranks the matches (the
        longest one, which runs without the GIL): search's other thread waits for it before its vector leg.
        """
        words = self._word_search(
            terms,
            filters,
            limit=limit,
            scan_cap=scan_cap,
            now=now,
            common_ratio=common_ratio,
            fields=fields,
            judged=judged,
            ready=ready or _nothing,
        )
        if not cjk_runs(terms):
            return words
        cjk = self._cjk_search(self.db.reader(), terms, filters, limit, scan_cap, now)  # type: ignore[attr-defined]
        return merge_hits(words, cjk, limit)

    def _word_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        limit: int,
        scan_cap: int,
        now: datetime | None,
        common_ratio: float,
        fields: dict[str, RankFields] | None = None,
        judged: dict[str, JudgedRecord] | None = None,
        ready: Callable[[], None] = _nothing,
    ) -> list[tuple[str, float]]:
        """BM25 over the matches of the query's informative terms, best ``limit`` first.

        Terms are quoted, so no user text is ever parsed as FTS syntax. The
        filters run in the same statement, so the scan never returns fewer
        hits than exist within the cap. Ranking every match of a common word
        is what makes naive FTS slow on a large store (310 ms at 100k), so
        on a store larger than ``scan_cap``, terms found in more than
        ``common_ratio`` of the records are left out when rarer ones remain
        (their BM25 weight is small anyway), and at most the newest
        ``scan_cap`` matches are ranked.
        """
        if not terms:
            return []
        conn = self.db.reader()
        terms, only_common, matches = self._informative_terms(conn, terms, scan_cap, common_ratio)
        if not terms:
            return []
        if only_common:
            # Every term is common: BM25 barely separates the matches, and
            # scoring 2,000 of them was the slowest part of such queries.
            scan_cap = max(1, scan_cap // 4)
        quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        # No column filter on the user's terms: it makes FTS5 decode position
        # lists for every match (about twice the cost of a common-word query
        # at 100k records), and the only other column holds hashed tenant
        # tokens, which carry weight 0 in bm25 and no word can equal.
        match = f"({quoted})"
        if not self._tenant_dominates(conn, filters.tenant):
            # The tenant token skips other tenants' rows inside the index. When
            # the tenant holds most records it only adds work (bm25 counts the
            # token's whole doclist), and `m.tenant = ?` below filters anyway,
            # so both forms return the same rows with the same scores (the
            # tags column has weight 0).
            match = f'tags : "{tenant_token(filters.tenant)}" AND {match}'
        bound = self._rowid_bound(conn, filters)
        params: list[Any] = [match]
        where = ["memories_fts MATCH ?" + bound, *self._where(filters, now, params)]  # type: ignore[attr-defined]
        if only_common and matches > IDF_WALK_MAX:
            found = self._single_term_bm25(conn, terms[0], matches, where, params, limit, scan_cap, ready)
            if found is not None:
                return found
        # Score the newest matches in the index alone and join only the best with
        # the records: the join costs as much as BM25 (8.3 -> 4.0 ms p50 at 1M).
        # Under the cap this is exact; over it, the cap counts index matches
        # rather than passing ones, and when fewer than ``limit`` of them pass
        # the filters, the one-statement plan below decides instead.
        found = self._best_passing(
            conn,
            match,
            filters,
            now,
            limit,
            scan_cap,
            over_cap=matches >= scan_cap,
            fields=fields,
            judged=judged,
            bound=bound,
            ready=ready,
        )
        if found is not None:
            return found
        sql = (
            # CROSS JOIN pins the FTS index as the outer loop, so rows come
            # newest-first from the index and LIMIT stops the scan. With a
            # plain JOIN the planner starts from memories (tenant index) and
            # re-runs the MATCH once per row: seconds at 5k records.
            # The outer query ranks them in SQLite: ties newest first.
            "SELECT id, score FROM (SELECT m.id AS id, memories_fts.rowid AS rowid, "
            "bm25(memories_fts, 2.0, 1.0, 1.0, 0.0) AS score FROM memories_fts "
            "CROSS JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY memories_fts.rowid DESC LIMIT ?) ORDER BY score, rowid DESC LIMIT ?"
        )
        params += [scan_cap, limit]
        ready()
        return [(memory_id, -float(score)) for memory_id, score in conn.execute(sql, params)]

    def _best_passing(
        self,
        conn: Any,
        match: str,
        filters: SearchFilters,
        now: datetime | None,
        limit: int,
        scan_cap: int,
        *,
        over_cap: bool = False,
        fields: dict[str, RankFields] | None = None,
        judged: dict[str, JudgedRecord] | None = None,
        bound: str = "",
        ready: Callable[[], None] = _nothing,
    ) -> list[tuple[str, float]] | None:
        """The ``limit`` best-scored of the newest ``scan_cap`` matches that pass the filters, or None.

        Equal to the one-statement plan whenever every match fits under the
        cap (same rows, same scores, ties newest first); the filters are then
        checked in score order, a chunk of candidates at a time. Past the cap
        (``over_cap``) the newest ``scan_cap`` index matches are ranked, and
        None says fewer than ``limit`` of them passed (the one-statement plan,
        whose cap counts passing rows, must decide); without ``over_cap``,
        None says the matches did not fit.

        Only without ``over_cap`` does the statement count the matches, by a
        walk of their rowids that stops at the cap (a window over the scored
        rows stored every one aside first: twice the cost). Past the cap the
        count matters only once the chunks run out, and a chunk shorter than
        asked for gives it.
        """
        # SQLite ranks the matches and hands back one chunk at a time, best first: a chunk
        # of rows instead of every match keeps the thread out of the GIL (each row fetched
        # takes it again, which stalled this leg beside the vector leg), and the filters
        # are checked by rowid (NOT INDEXED: never a walk of the tenant index).
        out: list[tuple[str, float]] = []
        step, offset = max(2 * limit, 64), 0
        # Search's keyword leg reads what judging reads of its hits here too: the rows are joined anyway.
        read = candidate_columns("m") if judged is not None and fields is not None else None
        columns = read or ", ".join("m." + c for c in RANK_COLUMNS)
        scored = _NEWEST.format(bound=bound, rows="rowid, bm25(memories_fts, 2.0, 1.0, 1.0, 0.0) AS score")
        counted = "0" if over_cap else f"(SELECT count(*) FROM {_NEWEST.format(bound=bound, rows='rowid')})"
        while True:
            params: list[Any] = [] if over_cap else [match, scan_cap]
            params += [match, scan_cap, step, offset]
            on = ["m.rowid = f.rowid", *self._where(filters, now, params)]  # type: ignore[attr-defined]
            ready()
            cursor = conn.execute(
                # The matches' count (not over the cap). Innermost: the newest scan_cap matches,
                # scored. Then one chunk of them, best first (ties newest first). Outermost: each
                # one's record, NULL when it fails the filters.
                f"SELECT f.score, {counted}, {columns} FROM "
                f"(SELECT rowid, score FROM {scored} ORDER BY score, rowid DESC LIMIT ? OFFSET ?) f "
                f"LEFT JOIN memories m NOT INDEXED ON {' AND '.join(on)} ORDER BY f.score, f.rowid DESC",
                params,
            )
            # The chunk is ranked by the first row; the records of the rows after the limit-th passing one are
            # neither joined nor converted (the cursor stops there).
            try:
                first = cursor.fetchone()
                if first is None:  # no matches, or (over the cap, under it in fact) none after a full chunk
                    return out
                matches = first[1] if not over_cap else scan_cap  # at most; exact once a chunk falls short
                if matches >= scan_cap and not over_cap:
                    return None  # the cap counts passing rows: the one-statement plan must decide which
                rows = 0
                for score, _, memory_id, *rest in itertools.chain((first,), cursor):
                    rows += 1
                    if memory_id is not None:
                        out.append((memory_id, -float(score)))
                        if read is not None:
                            judged[memory_id], fields[memory_id] = to_candidate((memory_id, *rest))  # type: ignore[index]
                        elif fields is not None:
                            fields[memory_id] = to_rank_fields((memory_id, *rest))
                        if len(out) == limit:
                            return out
            finally:
                cursor.close()
            if over_cap and rows < step:
                matches = offset + rows
            offset += step
            if offset >= matches:
                return None if matches >= scan_cap else out
            step *= 4  # a filter that rejects many: fewer, larger chunks (each ranks the matches again)

    def _single_term_bm25(
        self,
        conn: Any,
        term: str,
        df: int,
        where: list[str],
        params: list[Any],
        limit: int,
        scan_cap: int,
        ready: Callable[[], None] = _nothing,
    ) -> list[tuple[str, float]] | None:
        """FTS5's bm25() of a one-term query over the newest ``scan_cap`` passing matches, without its IDF walk.

        The same formula (k1 1.2, b 0.75, the column weights, the IDF floor),
        fed by the row count and token total of FTS5's averages record, the
        term's cached count ``df``, the instances ``highlight()`` marks in each
        weighted column and each row's size from ``memories_fts_docsize``:
        equal to bm25() up to rounding while ``df`` is current. None when the
        index keeps no averages record (an empty index).
        """
        averages = conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
        if averages is None:
            return None
        totals = _varints(averages[0])
        rows_total, tokens = totals[0], sum(totals[1:])
        if rows_total <= 0 or tokens <= 0:
            return None
        idf = math.log((rows_total - df + 0.5) / (df + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        avgdl = tokens / rows_total
        # One row: each match's id, rowid, the instances highlight() marks in each weighted column and its
        # docsize record, as a JSON array. Row by row, each step handed the GIL back and forth with the
        # vector leg's thread (500 steps); one step releases it once for the whole statement.
        weighted = [c for c, w in enumerate(WEIGHTS) if w]
        marks = ", ".join(f"highlight(memories_fts, {c}, char(31), '') AS h{c}" for c in weighted)
        counts = ", ".join(f"coalesce(length(h{c}) - length(replace(h{c}, char(31), '')), 0)" for c in weighted)
        ready()
        found = conn.execute(
            f"SELECT json_group_array(json_array(f.id, f.r, hex(d.sz), {counts})) FROM "
            f"(SELECT m.id AS id, memories_fts.rowid AS r, {marks} FROM memories_fts "
            "CROSS JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY memories_fts.rowid DESC LIMIT ?) f "
            "LEFT JOIN memories_fts_docsize d ON d.id = f.r",
            [*params, scan_cap],
        ).fetchone()[0]
        rows = sorted(json.loads(found), key=lambda r: -r[1])  # newest first, as the scan walked them
        if not rows:
            return []
        n = len(rows)
        # Each weighted column's instances times its weight: whole numbers, so any order of the sums is exact.
        freq = np.zeros(n)
        for j, w in enumerate(w for w in WEIGHTS if w):
            freq += w * np.fromiter((r[3 + j] for r in rows), dtype=np.float64, count=n)
        length = np.fromiter((_size(bytes.fromhex(r[2])) for r in rows), dtype=np.int64, count=n)
        # bm25()'s own operations, in its order (fts5_aux.c), so the doubles agree (numpy's float64
        # operations round as Python's do).
        score = idf * ((freq * (1.2 + 1.0)) / (freq + 1.2 * (1 - 0.75 + 0.75 * length / avgdl)))
        best = np.argsort(-score, kind="stable")[:limit]  # stable: ties stay newest first, as bm25()'s plan orders
        return [(rows[i][0], s) for i, s in zip(best.tolist(), score[best].tolist(), strict=True)]

    def judge_records(
        self, memory_ids: Sequence[str], fields: dict[str, RankFields] | None = None
    ) -> dict[str, JudgedRecord]:
        """Partial records of search candidates: what judging and ordering read (``to_judged``), by id.

        ``fields``, when given, receives the rank fields of the same rows, read
        in the same statement (one lookup per record instead of two). Search
        reads whole records (``get_many``) only for the hits it returns.
        """
        if fields is None:
            return rows_by_id(self.db.reader(), JUDGE_COLUMNS, memory_ids, to_judged)
        both = rows_by_id(self.db.reader(), candidate_columns("memories"), memory_ids, to_candidate)
        fields.update((memory_id, ranked) for memory_id, (_, ranked) in both.items())
        return {memory_id: judged for memory_id, (judged, _) in both.items()}

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Rows in the keyword index and how many contain each term: BM25's IDF inputs (cached a while).

        Counted over the whole store, as FTS5's bm25() counts them, so the
        calibrated relevance's keyword signal reads the ranking's own
        statistics (the per-tenant bound is in docs/benchmarks.md).
        """
        conn = self.db.reader()
        total = self._record_estimate(conn)
        return total, {t: self._term_count(conn, t, None, total) for t in terms}

    def term_presence(self, terms: Sequence[str], filters: SearchFilters, now: datetime | None = None) -> set[str]:
        """The query terms that occur in at least one record the filters admit (CJK terms always count as present).

        A query about a name or subject the memory has never seen has no
        answer here, whatever its nearest neighbours are: the calibrated
        relevance reads this as ``absent`` (funes.relevance). Each term is one
        early-exit lookup through the word index; a term whose first
        ``PRESENCE_SCAN`` index matches are all outside the filters counts as
        present (unknown is never read as absent). The matches are walked
        oldest first, which FTS5 does without assembling a doclist to walk
        backwards (half the cost at 1M records): under ``PRESENCE_SCAN``
        matches the walk sees them all in either order, and past it the term
        is present whatever the walk found.
        """
        conn = self.db.reader()
        present: set[str] = set()
        scoped = not self._tenant_dominates(conn, filters.tenant)
        bound = self._rowid_bound(conn, filters)
        for term in dict.fromkeys(terms):
            if not term.isascii():
                present.add(term)
                continue
            phrase = '"' + term.replace('"', '""') + '"'
            match = f'tags : "{tenant_token(filters.tenant)}" AND {phrase}' if scoped else phrase
            params: list[Any] = [match, PRESENCE_SCAN]
            where = self._where(filters, now, params)
            found = conn.execute(
                f"SELECT 1 FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?{bound} "
                "ORDER BY rowid LIMIT ?) f CROSS JOIN memories m ON m.rowid = f.rowid "
                f"WHERE {' AND '.join(where)} LIMIT 1",
                params,
            ).fetchone()
            if found is not None or self._term_hits(conn, match) >= PRESENCE_SCAN:
                present.add(term)
        return present

    @staticmethod
    def _rowid_bound(conn: Any, filters: SearchFilters) -> str:
        """An FTS rowid bound for a creation-time cut-off (``as_of``, ``until``), or "" without one.

        The highest rowid of a record created by then bounds every record the
        filter admits, so the newest-first index scans start at the cut-off
        instead of walking past every later match (issue 25: an ``as_of`` in
        the middle of a store's history sent common words to the slow plan).
        Exact: it is read from the records at query time (``memories_created``).
        """
        if filters.created_before is None:
            return ""
        row = conn.execute(
            "SELECT max(rowid) FROM memories WHERE tenant = ? AND created_at <= ?",
            (filters.tenant, to_epoch(filters.created_before)),
        ).fetchone()
        return f" AND memories_fts.rowid <= {int(row[0] or 0)}"

    @staticmethod
    def _term_hits(conn: Any, match: str) -> int:
        """Index matches of an FTS expression, counting at most PRESENCE_SCAN (index only, no record reads)."""
        return int(conn.execute(_BOUNDED_COUNT, (match, PRESENCE_SCAN)).fetchone()[0])

    def _informative_terms(
        self, conn: Any, terms: Sequence[str], scan_cap: int, ratio: float
    ) -> tuple[list[str], bool, int]:
        """The terms worth a BM25 pass, whether they are all common words, and a bound on their matches.

        No term matching nothing, no common term beside rarer ones. The bound
        comes from cached counts, so it only ever chooses a plan.
        """
        total = self._record_estimate(conn)
        if total <= scan_cap or ratio <= 0:
            return list(terms), False, total  # everything fits under the cap: rank it exactly
        limit = max(1, int(ratio * total))
        counts = {t: self._term_count(conn, t, limit + 1, total) for t in terms}
        kept = [t for t in terms if 0 < counts[t] <= limit]
        if kept:
            return kept, False, sum(counts[t] for t in kept)
        common = [t for t in terms if counts[t] > 0]
        if not common:
            return [], False, 0
        # Only common words: keep the rarest one (a full count, cached).
        rarest = min(common, key=lambda t: self._term_count(conn, t, None, total))
        return [rarest], True, self._term_count(conn, rarest, None, total)

    def _planning_stat(self, key: str, compute: Callable[[], int], generation: int | None = None) -> int:
        """A query-planning statistic, cached (a stale value only changes a plan or an IDF by a little).

        With ``generation`` (the store's newest rowid) the cached value holds
        until the store has grown by ``_STATS_GROWTH`` of its rows, or shrunk:
        the data decides, never the time. Without one, it holds ``_STATS_TTL``
        (marked with the negated clock, so a clock mark is never read as a
        generation or the other way round, when a caller first has no
        generation at hand and then has one).
        """
        cached = self._fts_stats.get(key)
        if cached is not None:
            value, mark = cached
            if mark < 0:
                if time.monotonic() + mark < _STATS_TTL:
                    return value
            elif generation is not None and stat_fresh(mark, generation):
                return value
        value = compute()
        if len(self._fts_stats) > 10_000:
            self._fts_stats.clear()
        self._fts_stats[key] = (value, -time.monotonic() if generation is None else float(generation))
        return value

    def _record_estimate(self, conn: Any) -> int:
        """The store's newest rowid: the row count BM25's IDF reads, and the generation the term counts follow."""
        return int(conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0])

    def _term_count(self, conn: Any, term: str, bound: int | None, generation: int) -> int:
        """How many records contain the term, counting at most ``bound`` (cached while ``generation`` holds).

        Without a bound, a term in more than ``COUNT_EXACT_MAX`` records is
        estimated from its share of the newest ``COUNT_WINDOW`` rows instead
        of counted: a full count walks the term's whole doclist (20-150 ms
        for a common word at 1M records, the keyword thread's p95), and an
        IDF that low moves nothing by a few percent.
        """
        phrase = '"' + term.replace('"', '""') + '"'
        if bound is not None:

            def bounded() -> int:
                found = int(conn.execute(_BOUNDED_COUNT, (phrase, bound)).fetchone()[0])
                if found < bound and found <= COUNT_EXACT_MAX:
                    # Not cut off, so the term's whole count: the count without a bound (term_stats, right
                    # after the keyword leg's plan) would walk the same doclist again for the same number.
                    self._fts_stats[f"{term}\0{None}"] = (found, float(generation))
                return found

            return self._planning_stat(f"{term}\0{bound}", bounded, generation)

        def count() -> int:
            seen = int(conn.execute(_BOUNDED_COUNT, (phrase, COUNT_EXACT_MAX + 1)).fetchone()[0])
            if seen <= COUNT_EXACT_MAX:
                return seen
            newest = generation
            start = max(0, newest - COUNT_WINDOW)
            sql = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?"
            in_window = int(conn.execute(sql, (phrase, start)).fetchone()[0])
            return max(seen, round(in_window * newest / max(1, newest - start)))

        return self._planning_stat(f"{term}\0{bound}", count, generation)

    def _tenant_dominates(self, conn: Any, tenant: str, sample: int = 64) -> bool:
        """Whether the tenant holds most of the newest records (a cheap sample, only a plan choice)."""

        def share() -> int:
            rows = conn.execute("SELECT tenant FROM memories ORDER BY rowid DESC LIMIT ?", (sample,)).fetchall()
            return int(sum(1 for (t,) in rows if t == tenant) * 2 > len(rows))

        return bool(self._planning_stat(f"\0tenant\0{tenant}", share, self._record_estimate(conn)))


def stat_fresh(mark: float, generation: float) -> bool:
    """Whether a statistic counted at store generation ``mark`` still holds at ``generation``: the store
    has grown by under ``_STATS_GROWTH`` of its rows since, and not shrunk (:func:`stat_fresh_sql` in SQL)."""
    return mark <= generation <= mark + max(1.0, mark * _STATS_GROWTH)


def stat_fresh_sql(mark: str, generation: str) -> str:
    """:func:`stat_fresh` as a SQL condition on two SQL expressions (NULL when no mark: not fresh)."""
    return f"({generation} BETWEEN {mark} AND {mark} + greatest(1.0, {mark} * {_STATS_GROWTH!r}))"


def _size(blob: bytes) -> int:
    """The sum of a docsize record's varints (a row's tokens over its columns): a byte under 0x80 is a whole varint."""
    return sum(blob) if blob.isascii() else sum(_varints(blob))


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian groups of 7 bits), as FTS5 stores its counts."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out
