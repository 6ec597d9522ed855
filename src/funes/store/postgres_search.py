"""Keyword and vector search of the PostgreSQL store.

Keyword: ``memories.fts`` is a tsvector of the words :func:`fold_words`
gives (lowercased, without diacritics, Porter-stemmed as FTS5's ``porter``
tokenizer stems them; put through 'simple', which adds nothing) with a GIN
index. The query is an OR of
``plainto_tsquery('simple', term)`` per term, with every term a bound
parameter, so no user text is ever parsed as tsquery syntax. Matches are
scored with Okapi BM25 (k1 1.2, b 0.75, FTS5's IDF) computed from the
tsvector's positions, so the calibrated relevance model
(:mod:`funes.memory.relevance`) reads the same scale on both stores. At most the
newest ``scan_cap`` matches are scored, as on SQLite.

CJK: PostgreSQL's parsers do not split Chinese or Japanese either, and
pg_trgm is not installed everywhere. Records with CJK text are flagged by a
generated column (``has_cjk``, partial index per tenant); a query's CJK runs
are matched by substring (``strpos``) of their trigrams and 2-character
words among those records only: a scan of the tenant's CJK records.

Vector: exact KNN (tenant btree, then a distance sort over the vectors alone, the
nearest then joined and filtered) while the tenant holds at most ``exact_max`` vectors. Above that the HNSW index is used: with
pgvector >= 0.8 with ``hnsw.iterative_scan = relaxed_order`` and the filters
inside the scan; before 0.8 (no iterative scan, where a filtered HNSW query
silently returned 0.4 of 10 rows) the index's 1000 nearest (``ef_search``
1000, its maximum), the filters applied to those candidates, and the exact plan whenever fewer than ``k``
records survive. Numbers: docs/postgres.md and bench/pg_recall.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..models import JudgedRecord, RankFields, SearchFilters, to_epoch
from . import pg_judged, pg_plan, pg_scan
from .base import Visibility
from .pg_connection import placeholders
from .sqlite_cjk import cjk_runs, merge_hits, trigrams
from .sqlite_keyword import stat_fresh, stat_fresh_sql
from .sqlite_rows import RANK_COLUMNS, record_filters, sql_in
from .tenancy import current_tenant
from .words import fold_words

_K1 = 1.2
_B = 0.75
_TITLE_WEIGHT = 2.0  # as bm25(memories_fts, 2.0, 1.0, 1.0) on SQLite: a title hit counts twice
_EF_SEARCH = 1000  # pgvector's maximum
# With an iterative scan the index walks on until enough rows pass the filters: at 12k x 384 dims,
# ef_search 40 to 1000 all measured recall@10 1.00 for tenants of 0.5%, 5% and 95% (bench/pg_recall.py).
_EF_ITERATIVE = 100
# The exact plan's first step: the tenant's nearest vectors by distance alone, then their records filtered
# (at least 4 x k); the full join runs only when fewer than k records survive (funes.store.pg_plan).
_NEAR_PARTS = pg_plan.NEAR_PARTS
# The keyword and the exact vector statements run on the generic plan of their prepared form (psycopg prepares
# a statement text on its fifth run on a connection): PostgreSQL chose a custom plan every time, and planning
# them took 2-5 ms and 0.6-0.8 ms a search. Term presence rides in the keyword statement: a term one of its
# scanned matches holds is present without a probe, so the probes left are of rare or absent terms, whose GIN
# lookup the generic plan takes too (a statement of their own, custom-planned per term, cost 1-1.6 ms a search).
_GENERIC_PLAN = "SET LOCAL plan_cache_mode = force_generic_plan"
# A hit's stored vectors, parts in order (the keyword leg hands them to fusion with the hit), in pgvector's
# binary form (vector_send: a 4-byte header, then big-endian float4s): 50 hits' vectors as text took 10.6 ms
# to format, send and parse, against 2.8 ms.
_VECTORS = (
    "(SELECT array_agg(vector_send(v.embedding) ORDER BY v.part) FROM memory_vectors v "
    "WHERE v.tenant = s.tenant AND v.memory_rowid = s.rowid)"
)


# The average length in tokens, over 1,000 records spread evenly over the row keys (index lookups), as FTS5
# averages over its whole index; over the newest 1,000 when fewer than 100 of those are visible (a small
# tenant under row-level security). The newest alone skewed it: SciFact NDCG@10 0.656 against 0.679 when
# its abstracts came before short chat turns (bench/pg_keyword_bench.py).
_LENGTH = "fts_length"  # tokens per record, a generated column (pg_sql/018_fts_length.sql)
_AVGDL = (
    f"(SELECT floor(coalesce(CASE WHEN count(*) >= 100 THEN avg(sp.l) END, (SELECT avg({_LENGTH}) FROM "
    "(SELECT fts_length FROM memories ORDER BY rowid DESC LIMIT 1000) n), 1))::bigint "
    f"FROM (SELECT {_LENGTH} AS l FROM memories WHERE rowid IN (SELECT generate_series(r.lo, r.hi, "
    "greatest(1, (r.hi - r.lo) / 1000)) FROM (SELECT min(rowid) AS lo, max(rowid) AS hi FROM memories) r)) sp)"
)
# A keyword term's share of the records in ANALYZE's sample (pg_stats' most common elements of the tsvector;
# NULL for a term not among them, for a store never analysed, and under row-level security, where pg_stats
# hides the table's statistics).
_FTS_STATS = "FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = 'memories' AND s.attname = 'fts'"
# Each side is an uncorrelated subquery: PostgreSQL reads and converts the arrays once per statement (an initplan).
_COMMON_SHARE = (
    f"SELECT (SELECT s.most_common_elem_freqs {_FTS_STATS})[array_position((SELECT s.most_common_elems::text::text[] "
    f"{_FTS_STATS}), t.term)] AS f"
)
_COUNT_EXACT_MAX = 2000  # a term PostgreSQL's statistics put in more records than this is estimated, not counted


class PostgresSearch:
    """Mixin of PostgresStore: filters, keyword search, vector search."""

    db: Any
    exact_max: int
    pgvector_version: tuple[int, ...]
    _dims: int | None
    _planning_stat: Any  # SqliteStore._planning_stat, shared by PostgresStore
    _fts_stats: dict[str, tuple[int, float]]
    settings_statement: Any  # postgres_upkeep.PostgresUpkeep's
    keep_settings: Any
    #: The store generation (newest rowid) the last keyword statement read: what the tenant's vector count follows.
    _generation: int | None = None

    # -- filters -----------------------------------------------------------------
    def _where(
        self, filters: SearchFilters, now: datetime | None, params: list[Any], include_expired: bool = False
    ) -> list[str]:
        where = ["m.tenant = ?"]
        params.append(filters.tenant)
        clauses = Visibility.from_filters(filters).clauses()
        if len(clauses) == 1:
            where += record_filters(filters, clauses[0], params, "m.")
        else:
            where.append("(" + " OR ".join(sql_in("m." + c, v, params) for c, v in clauses) + ")")
            where += record_filters(filters, None, params, "m.")
        if filters.entity_types:
            where.append(sql_in("m.entity_type", filters.entity_types, params))
        if filters.entity_ids:
            where.append(sql_in("m.entity_id", filters.entity_ids, params))
        for ref in filters.references or ():
            where.append(
                "EXISTS (SELECT 1 FROM jsonb_array_elements(m.refs::jsonb) r WHERE r ->> 'type' = ? AND r ->> 'id' = ?)"
            )
            params.extend((ref.type, ref.id))
        if filters.roles:
            # locator is JSON text here too; a role belongs to chat messages alone.
            where.append("m.kind = 'message'")
            where.append(sql_in("(m.locator::jsonb ->> 'role')", filters.roles, params))
        if not include_expired and now is not None:
            where.append("(m.expires_at IS NULL OR m.expires_at > ?)")
            params.append(to_epoch(now))
        return where

    # -- keyword -----------------------------------------------------------------
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
    ) -> list[tuple[str, float]]:
        """BM25 over the tsvector matches, joined with the CJK substring matches when the query has CJK text.

        ``fields``, when given, receives the rank fields of the hits (the scoring query reads them).
        """
        found, hit_fields, _stats, _vectors, _present, _judged = self.keyword_leg(
            terms, filters, limit=limit, scan_cap=scan_cap, now=now, common_ratio=common_ratio, presence=False
        )
        if fields is not None:
            fields.update(hit_fields)
        return found

    def keyword_leg(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        limit: int,
        scan_cap: int = 2000,
        now: datetime | None = None,
        common_ratio: float = 0.1,
        presence: bool = True,
    ) -> tuple[
        list[tuple[str, float]],
        dict[str, RankFields],
        tuple[int, dict[str, int]],
        dict[str, list[np.ndarray]],
        set[str],
        dict[str, JudgedRecord],
    ]:
        """A search's whole keyword leg in one round trip: hits, their rank fields and stored vectors, the term
        statistics, (with ``presence``) the terms present and the hits' partial records (funes.store.pg_judged),
        as :class:`funes.memory.search.HybridSearch` reads them.

        BM25 is scored inside PostgreSQL; the term statistics are computed by the
        same statement where they are not cached (per tenant setting: row-level
        security counts the tenant's records).
        """
        present, checked = _presence_terms(terms) if presence else (set(), [])
        word_sql, word_params, uniq = self._word_statement(
            terms, filters, limit, scan_cap, now, common_ratio, checked=checked
        )
        statements: list[tuple[str, Sequence[Any] | None]] = [(word_sql, word_params)]
        cjk = self._cjk_statement(terms, filters, limit, scan_cap, now)
        if cjk is not None:
            statements.append((cjk[0], cjk[1]))
        settings = self.settings_statement(filters.tenant)  # what the search reads after ranking (postgres_upkeep)
        sent = time.monotonic()
        results = self.db.reader().batch(
            [*statements, settings] if settings else statements, [_GENERIC_PLAN], prepare=True
        )
        if settings is not None:
            self.keep_settings(filters.tenant, results[-1].fetchall(), sent)
        rows = results[0].fetchall()
        total, dfs = int(rows[0][0]), [int(d) for d in rows[0][2]]
        counts = self._keep_stats(total, int(rows[0][1]), dict(zip(uniq, dfs, strict=True)), int(rows[0][3]))
        fields: dict[str, RankFields] = {}
        vectors: dict[str, list[np.ndarray]] = {}
        judged: dict[str, JudgedRecord] = {}
        words = _hits(rows, 4, fields, vectors, judged, True)
        found = words
        if cjk is not None:
            cjk_rows = results[1].fetchall()
            runs = len(cjk_runs(terms))
            grams = cjk[2]
            # On the BM25 scale of a rare term: every gram found counts like one matched rare word.
            ranked = _hits(
                [(2.0 * int(r[0]) / grams * runs, *r[1:]) for r in cjk_rows], 0, fields, vectors, judged, False
            )
            found = merge_hits(words, sorted(ranked, key=lambda kv: -kv[1]), limit)
        if checked:
            present.update(t for t, flag in zip(checked, rows[0][-1], strict=True) if flag)
        kept = {i for i, _ in found}
        return (
            found,
            {i: f for i, f in fields.items() if i in kept},
            (total, counts),
            {i: v for i, v in vectors.items() if i in kept},
            present,
            {i: j for i, j in judged.items() if i in kept},
        )

    def _word_statement(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        scan_cap: int,
        now: datetime | None,
        common_ratio: float = 0.1,
        checked: Sequence[str] = (),
    ) -> tuple[str, list[Any], list[str]]:
        """The BM25 statement (PostgreSQL SQL, parameters, the terms its statistics are of).

        Its first columns are the statistics (records, average length in tokens over the newest
        1,000, each term's record count: the cached ones passed in, the rest counted), then the
        best ``limit`` of the newest ``scan_cap`` matches with their score, vectors and rank columns
        (one row of statistics alone when nothing matches); with ``checked`` terms, a last column
        saying which of them a record the filters admit holds (term presence, a relevance input).
        """
        uniq = list(dict.fromkeys(terms))
        originals = [t for t in uniq if fold_words(t)]
        folded = [fold_words(t) for t in originals]
        tenant = current_tenant.get() or ""
        cached = [self._fts_stats.get(k) for k in (f"{tenant}\0total", f"{tenant}\0avgdl")]
        counts = [self._fts_stats.get(f"{tenant}\0{t}\0count") for t in uniq]
        params: list[Any] = [
            [fold_words(t) for t in uniq],
            [c[0] if c else None for c in counts],
            [c[1] if c else None for c in counts],
            [c[0] if c else None for c in cached],
            [c[1] if c else None for c in cached],
        ]
        # A cached statistic is used while the store's generation (its newest rowid, read from the sequence
        # in this statement) is within 1% of the one it was counted at, as on SQLite: the data decides.
        # The record total: counted under row-level security (the acting tenant's); otherwise the newest rowid,
        # as SQLite reads it (sqlite_keyword._record_estimate): a count(*) of 100k records took 50-60 ms.
        # A term PostgreSQL's statistics put in more than _COUNT_EXACT_MAX records is estimated from them
        # (its share of ANALYZE's sample) instead of counted: a count visits every match's row (73 ms for a word
        # in 60% of 100k records), and an IDF that low moves nothing by a few percent (SQLite estimates too,
        # sqlite_keyword._term_count). Under row-level security pg_stats shows nothing: counted, per tenant.
        stats = (
            f"SELECT tt.total, greatest(1, coalesce(CASE WHEN {stat_fresh_sql('p.marks[2]', 'g.gen')} THEN p.vals[2] "
            f"END, {_AVGDL})) AS avgdl, ARRAY(SELECT coalesce(CASE WHEN {stat_fresh_sql('t.mark', 'g.gen')} THEN t.df "
            f"END, CASE WHEN t.term = '' THEN 0 END, (SELECT round(e.f * tt.total)::bigint FROM ({_COMMON_SHARE}) e "
            f"WHERE e.f * tt.total > {_COUNT_EXACT_MAX}), (SELECT count(*) FROM memories WHERE fts @@ "
            "plainto_tsquery('simple', t.term))) FROM unnest(?::text[], ?::bigint[], ?::float8[]) WITH ORDINALITY AS "
            "t(term, df, mark, n) ORDER BY t.n) AS dfs, g.gen FROM (SELECT ?::bigint[] AS vals, ?::float8[] AS marks) p, "
            "(SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS gen FROM memories_rowid_seq) g, "
            f"LATERAL (SELECT coalesce(CASE WHEN {stat_fresh_sql('p.marks[1]', 'g.gen')} THEN p.vals[1] END, "
            "CASE WHEN NOT row_security_active('memories') THEN g.gen END, (SELECT count(*) FROM memories)) AS total) tt"
        )
        if not folded or limit <= 0:
            probes = [self._probe(fold_words(t), filters, now, params) for t in checked]
            present = f", ARRAY[{', '.join(probes)}]" if probes else ""
            return placeholders(f"SELECT total, avgdl, dfs, gen{present} FROM ({stats}) st"), params, uniq
        cap = max(1, scan_cap)
        positions = [uniq.index(t) + 1 for t in originals]
        # Per match: its stored length in tokens, then each query term's frequency (a title hit counts
        # twice, as bm25(memories_fts, 2.0, 1.0, 1.0) on SQLite); then Okapi BM25 with FTS5's IDF. For a
        # one-word query, ts_rank_cd without normalisation is the sum of its positions' weights: with A
        # weighing 1 and the rest 0.5, twice that is the frequency. It looks the word up in the tsvector,
        # detoasted once per match (the concatenation, kept apart by OFFSET 0); unnesting every match's
        # vector was most of the slowest queries' time (bench/pg_keyword_bench.py, docs/postgres.md).
        frequencies = "".join(
            ", 0" if " " in f else ", (2 * ts_rank_cd('{0.5,0.5,0.5,1}', f.v, plainto_tsquery('simple', ?), 0))::int"
            for f in folded
        )
        # The informative terms, as SQLite's keyword leg plans them (sqlite_keyword._informative_terms): on a
        # store larger than the scan cap, a term in more than common_ratio of the records is left out beside
        # rarer ones, and of only common terms the rarest alone is ranked, over a quarter of the cap.
        # Which scan finds the matches: the GIN index, or a walk of the tenant's newest records (funes.store.pg_scan).
        walk = not _selective(filters)
        params += [*([pg_scan.WALK_FACTOR, cap, cap] if walk else []), cap, common_ratio, common_ratio, common_ratio]
        params.append(positions)
        query = " || ".join(
            f"(CASE WHEN kp.keep[{n}] THEN plainto_tsquery('simple', ?) ELSE ''::tsquery END)"
            for n in range(1, len(folded) + 1)
        )
        scans = []
        for walked in (True, False) if walk else (None,):
            params += [*(f for f in folded if " " not in f), *folded]
            where = [pg_scan.match(f"(SELECT {query} FROM kp)", walked), *self._where(filters, now, params)]
            params += [cap, cap]
            scans.append(
                f"(SELECT {', '.join('m.' + c for c in RANK_COLUMNS)}, m.tenant, m.rowid, "
                f"(SELECT ARRAY[coalesce(m.fts_length, 0){frequencies}] FROM (SELECT m.fts || ''::tsvector AS v "
                f"OFFSET 0) f) AS tfs FROM memories m WHERE {' AND '.join(where)} ORDER BY m.rowid DESC "
                "LIMIT (SELECT CASE WHEN kp.common THEN greatest(1, ? / 4) ELSE ? END FROM kp))"
            )
        # Term presence: a term some scanned match holds is present (the match passed every filter). A term the
        # statement searched for (kept), held by none of its matches when they were all scanned (fewer than the
        # cap), is absent: every record the filters admit that holds it was among them. The rest (terms left out,
        # a capped scan, a hyphenated term whose positions cannot show) are probed, in this statement, instead of
        # in one of their own beside it (custom-planned per term: 1-1.6 ms of server time a search).
        probes = []
        for n, t in enumerate(checked, 1):
            at = originals.index(t) + 1
            known = f"WHEN kp.keep[{at}] AND NOT b.capped THEN false " if " " not in folded[at - 1] else ""
            if walk:  # a common term is probed in the tenant's newest records first (funes.store.pg_scan)
                known += f"WHEN {pg_scan.probe(' AND '.join(self._where(filters, now, params)), uniq.index(t) + 1)} THEN true "
                params.append(folded[at - 1])
            probe = self._probe(folded[at - 1], filters, now, params)
            probes.append(f"CASE WHEN b.seen[{n}] THEN true {known}ELSE {probe} END")
        seen = ", ".join(f"bool_or(c.tfs[{originals.index(t) + 2}] > 0)" for t in checked)
        present = (
            f"(SELECT ARRAY[{', '.join(probes)}] FROM st, kp, (SELECT ARRAY[{seen}] AS seen, count(*) >= (SELECT CASE "
            "WHEN kp.common THEN greatest(1, ? / 4) ELSE ? END FROM kp) AS capped FROM c) b)"
            if checked
            else "NULL::boolean[]"
        )
        if checked:
            params += [cap, cap]
        params.append(limit)
        vecs = _VECTORS if self._dims is not None else "NULL"
        # Each term's part of a match's score, summed in the terms' order (as sum() added them over a subquery
        # per match, which cost 1-1.5 ms over 500 matches); its IDF is worked out once, in kp.
        score = " + ".join(
            f"CASE WHEN c.tfs[{n + 1}] > 0 AND kp.keep[{n}] THEN kp.idf[{n}] * c.tfs[{n + 1}]::float8 * "
            f"{_K1 + 1!r}::float8 / (c.tfs[{n + 1}]::float8 + {_K1!r}::float8 * (1 - {_B!r}::float8 + {_B!r}::float8 "
            "* c.tfs[1] / st.avgdl::float8)) ELSE 0 END"
            for n in range(1, len(folded) + 1)
        )
        sql = (
            f"WITH st AS MATERIALIZED ({stats}), "
            "kp AS MATERIALIZED (SELECT array_agg(p.keep ORDER BY p.i) AS keep, bool_and(p.over AND NOT p.some) AS "
            "common, array_agg(greatest(ln((greatest(p.total, p.df) - p.df + 0.5::float8) / (p.df + 0.5::float8)), "
            f"1e-6::float8) ORDER BY p.i) AS idf, {pg_scan.WALK if walk else 'false'} AS walk FROM (SELECT p.*, CASE WHEN "
            "NOT p.over THEN true WHEN p.some THEN p.df > 0 AND p.df <= p.lim ELSE p.i = p.rarest END AS keep "
            "FROM (SELECT q.i, st.dfs[q.p] AS df, st.total > ? AND ?::float8 > 0 AS over, greatest(1, "
            "floor(?::float8 * st.total)) AS lim, bool_or(st.dfs[q.p] > 0 AND st.dfs[q.p] <= greatest(1, "
            "floor(?::float8 * st.total))) OVER () AS some, first_value(q.i) OVER (ORDER BY st.dfs[q.p] <= 0, "
            "st.dfs[q.p], q.i) AS rarest, st.total FROM st, unnest(?::int[]) WITH ORDINALITY AS q(p, i)) p) p), "
            f"c AS ({' UNION ALL '.join(scans)}), "
            f"s AS (SELECT c.*, {score} AS score FROM c, st, kp), "
            f"pr AS MATERIALIZED (SELECT {present} AS present) "
            # A match on a term the positions cannot show (a hyphenated part) still ranks above nothing.
            "SELECT st.total, st.avgdl, st.dfs, st.gen, CASE WHEN h.score > 0 THEN h.score ELSE 1e-6 END, h.vecs, "
            f"{', '.join('h.' + c for c in RANK_COLUMNS)}, {', '.join('j.' + c for c in pg_judged.JUDGE_EXTRA)}, "
            f"pr.present FROM st CROSS JOIN pr LEFT JOIN LATERAL (SELECT s.*, {vecs} AS vecs "
            'FROM s ORDER BY s.score DESC, s.id COLLATE "C" LIMIT ?) h ON true '
            # What judging reads of the hits (a partial record), joined to the hits alone (funes.store.pg_judged).
            "LEFT JOIN memories j ON j.tenant = h.tenant AND j.rowid = h.rowid"
        )
        return placeholders(sql), params, uniq

    def _keep_stats(self, total: int, avgdl: int, counts: dict[str, int], generation: int) -> dict[str, int]:
        """Cache what the statement counted, marked with the store generation it read (what it took from the
        cache stays as it was: the same rule, :func:`funes.store.sqlite_keyword.stat_fresh`, keeps it)."""
        tenant = current_tenant.get() or ""
        self._generation = generation
        self._planning_stat(f"{tenant}\0total", lambda: total, generation)
        self._planning_stat(f"{tenant}\0avgdl", lambda: avgdl, generation)
        return {
            t: self._planning_stat(f"{tenant}\0{t}\0count", lambda d=d: d, generation)  # type: ignore[misc]
            for t, d in counts.items()
        }

    def _probe(self, folded: str, filters: SearchFilters, now: datetime | None, params: list[Any]) -> str:
        """Whether a record the filters admit holds the folded term (SQL; its parameters go to ``params``)."""
        params.append(folded)
        where = self._where(filters, now, params)
        return (
            "EXISTS (SELECT 1 FROM memories m WHERE m.fts @@ plainto_tsquery('simple', ?) AND "
            + " AND ".join(where)
            + ")"
        )

    def _presence_statement(
        self, terms: Sequence[str], filters: SearchFilters, now: datetime | None
    ) -> tuple[set[str], list[str], tuple[str, list[Any]] | None]:
        """Terms present without asking (CJK, nothing to fold), the terms to check, and one statement checking them."""
        present, checked = _presence_terms(terms)
        params: list[Any] = []
        probes = [self._probe(fold_words(t), filters, now, params) for t in checked]
        if not probes:
            return present, checked, None
        return present, checked, (placeholders(f"SELECT ARRAY[{', '.join(probes)}]"), params)

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Records in the keyword index and how many contain each term (BM25's IDF inputs; cached a while)."""
        sql, params, uniq = self._word_statement(terms, SearchFilters(tenant=""), 0, 0, None)
        row = self.db.reader().native(sql, params).fetchone()
        counts = self._keep_stats(
            int(row[0]), int(row[1]), {t: int(d) for t, d in zip(uniq, row[2], strict=True)}, int(row[3])
        )
        return int(row[0]), counts

    def term_presence(self, terms: Sequence[str], filters: SearchFilters, now: datetime | None = None) -> set[str]:
        """The query terms found in at least one record the filters admit (CJK terms always count as present)."""
        present, checked, check = self._presence_statement(terms, filters, now)
        if check is not None:
            flags = self.db.reader().native(*check).fetchone()[0]
            present.update(t for t, flag in zip(checked, flags, strict=True) if flag)
        return present

    def _cjk_statement(
        self, terms: Sequence[str], filters: SearchFilters, limit: int, scan_cap: int, now: datetime | None
    ) -> tuple[str, list[Any], int] | None:
        """Records holding the query's CJK trigrams and 2-character words: the share found, best first (or None)."""
        runs = cjk_runs(terms)
        grams = list(
            dict.fromkeys(g for r in runs for g in (trigrams(r) if len(r) >= 3 else [r] if len(r) == 2 else []))
        )
        if not grams or limit <= 0:
            return None
        params: list[Any] = []
        found = " + ".join("(strpos(coalesce(m.title, '') || ' ' || m.content, ?) > 0)::int" for _ in grams)
        params.extend(grams)
        where = ["m.has_cjk", *self._where(filters, now, params)]
        params += [max(1, scan_cap), limit]
        vecs = _VECTORS.replace("s.", "c.") if self._dims is not None else "NULL"
        # Best first among the newest scan_cap that hold any (newer first among equals).
        sql = (
            f"SELECT c.found, {vecs}, {pg_judged.columns('c')} FROM (SELECT * FROM "
            f"(SELECT {pg_judged.columns('m')}, m.tenant, m.rowid, {found} AS found FROM memories m "
            f"WHERE {' AND '.join(where)}) f WHERE found > 0 ORDER BY rowid DESC LIMIT ?) c "
            "ORDER BY c.found DESC, c.rowid DESC LIMIT ?"
        )
        return placeholders(sql), params, len(grams)

    # -- vectors -----------------------------------------------------------------
    def _tenant_vectors(self, conn: Any, tenant: str) -> int:
        """How many vectors the tenant holds (a plan input): cached while the store grows by under 1% since the
        generation the last keyword statement read, or a while before any was read (``_planning_stat``)."""
        return self._planning_stat(  # type: ignore[no-any-return]
            f"\0vectors\0{tenant}",
            lambda: int(conn.execute("SELECT count(*) FROM memory_vectors WHERE tenant = ?", (tenant,)).fetchone()[0]),
            self._generation,
        )

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None = None
    ) -> list[tuple[str, float]]:
        """Cosine KNN with every filter applied: exact for small tenants, HNSW with a recall guard for large ones."""
        return self.vector_leg(vector, filters, k=k, now=now)[0]

    def vector_leg(
        self,
        vector: np.ndarray,
        filters: SearchFilters,
        *,
        k: int,
        now: datetime | None = None,
        judged: dict[str, JudgedRecord] | None = None,
        vectors: dict[str, list[np.ndarray]] | None = None,
        every_vector: bool = False,
    ) -> tuple[list[tuple[str, float]], dict[str, RankFields]]:
        """A search's vector leg in one round trip (with the tenant's vector count cached): hits and their rank fields.

        ``judged``, when given, receives the hits' partial records and ``vectors`` the stored vectors of those
        with several (``every_vector``: of every hit) (funes.store.pg_judged), read by the same statement.
        """
        out = None if judged is None else (judged, {} if vectors is None else vectors, 1 if every_vector else 2)
        if self._dims is None or k <= 0:
            return [], {}
        query = np.asarray(vector, dtype=np.float32)
        # Entity and reference filters are narrow: an HNSW scan would walk far for a few records, so they
        # go exact. A role filter keeps a large share (half a chat, for "user"): the HNSW scan applies it
        # inside, with every other filter of _where, and the exact search below answers when it falls short.
        narrow = bool(filters.entity_types or filters.entity_ids or filters.references)
        if narrow or self._tenant_vectors(self.db.reader(), filters.tenant) <= self.exact_max:
            return self._exact_knn(query, filters, k, now, out)
        # Before 0.8, ef_search 1000 (pgvector's maximum) whatever the tenant's share: at 12k x 384 dims, 100
        # for a tenant holding 95% of the vectors measured recall@10 0.71; 1000 measured 0.99 (bench/pg_recall.py).
        iterative = self.pgvector_version >= (0, 8)
        found = self._hnsw_knn(
            query, filters, k, now, iterative=iterative, ef=_EF_ITERATIVE if iterative else _EF_SEARCH, out=out
        )
        if len(found[0]) < k:
            # Too few candidates survived the filters: the approximate answer would be short, so go exact.
            return self._exact_knn(query, filters, k, now, out)
        return found

    def _exact_knn(
        self, query: np.ndarray, filters: SearchFilters, k: int, now: datetime | None, out: _Judging | None = None
    ) -> tuple[list[tuple[str, float]], dict[str, RankFields]]:
        """Every vector of the tenant inside the filters, sorted by distance (the tenant btree, no HNSW).

        One statement in two steps. First the distances on ``memory_vectors`` alone: its best
        ``_NEAR_PARTS`` vectors, then their records joined and filtered. That answer is exact when at least
        ``k`` records survive: a record outside those vectors is no nearer than the last of them. Else (filters
        that remove most near neighbours) the same statement runs the full join, gated by that count: PostgreSQL
        runs the gated part only when the first falls short. At 4,000 vectors a tenant, joining every vector to
        its record first took 33 ms at p50; the distances alone take a few (bench/pg_exact_bench.py).
        Selective filters (a project, a session, a user, entities, references, sources) keep the full join
        alone: their indexes on ``memories`` leave a few records to join, faster than every distance. So do
        other filters once a search has seen them keep under a tenth of the near records, and the near step
        grows to the share they keep (:mod:`funes.store.pg_plan`).
        """
        # With ``out``, what judging reads too, and the record's keys for its vectors (_judging).
        columns = pg_judged.columns("m", judged=out is not None) + (", m.tenant, m.rowid" if out is not None else "")
        params: list[Any] = []
        # How many near vectors the two steps sort out, or None for the full join alone (funes.store.pg_plan).
        seen = (self._filter_share(filters), self._filter_share(filters, pg_plan.PER_PART))
        near = None if _selective(filters) else pg_plan.near_parts(*seen, k)
        if near is not None:
            params += [query, filters.tenant, near]
            near_where = self._where(filters, now, params)
            params.append(k)
        params += [query, filters.tenant]
        where = ["v.tenant = ?", *self._where(filters, now, params)]
        params.append(k)
        # GROUP BY takes the best part of each record and keeps the planner off the HNSW index.
        sql = (
            f"SELECT max(1 - (v.embedding <=> ?)) AS sim, {columns} "
            f"FROM memory_vectors v JOIN memories m ON m.tenant = v.tenant AND m.rowid = v.memory_rowid "
            f"WHERE {' AND '.join(where)} GROUP BY m.tenant, m.rowid ORDER BY sim DESC, m.id LIMIT ?"
        )
        if near is None:
            return _best(self._generic(_judging(sql, out), params), k, out)
        params.append(k)
        # ORDER BY the similarity, not the distance operator, keeps the planner off the HNSW index. The near
        # rows carry how many near records passed the filters, and of how many (the next plan's choice).
        sql = (
            "WITH near AS MATERIALIZED (SELECT v.tenant, v.memory_rowid, 1 - (v.embedding <=> ?) AS sim "
            "FROM memory_vectors v WHERE v.tenant = ? ORDER BY sim DESC LIMIT ?), "
            f"hits AS MATERIALIZED (SELECT max(n.sim) AS sim, {columns}, count(*) OVER () AS passed FROM near n "
            f"JOIN memories m ON m.tenant = n.tenant AND m.rowid = n.memory_rowid WHERE {' AND '.join(near_where)} "
            "GROUP BY m.tenant, m.rowid ORDER BY sim DESC, m.id LIMIT ?) "
            "SELECT h.*, (SELECT count(DISTINCT memory_rowid) FROM near) AS seen FROM hits h UNION ALL "
            f"SELECT e.*, NULL, NULL FROM ({sql}) e WHERE (SELECT count(*) FROM hits) < ?"
        )
        rows = self._generic(_judging(sql, out), params)
        cut = -2 if out is None else -3  # (passed, seen), before the vectors _judging adds
        self._keep_share(filters, [(int(r[cut]), int(r[cut + 1])) for r in rows if r[cut + 1] is not None], near)
        return _best([r[:cut] if out is None else (*r[:cut], r[-1]) for r in rows], k, out)

    def _generic(self, sql: str, params: list[Any]) -> list[Any]:
        """The rows of a statement run with the generic plan of its prepared form (no planning per search)."""
        return list(self.db.reader().batch([(placeholders(sql), params)], [_GENERIC_PLAN], prepare=True)[0].fetchall())

    def _filter_share(self, filters: SearchFilters, per: str = "") -> float | None:
        """The share of the tenant's near records the filters kept last time, while the store's generation holds
        (``per`` = ``pg_plan.PER_PART``: the records kept per near vector)."""
        key = pg_plan.share_key(filters)
        cached = self._fts_stats.get(key + per) if key is not None else None
        if cached is None or self._generation is None or not stat_fresh(cached[1], self._generation):
            return None
        return cached[0] / 1000

    def _keep_share(self, filters: SearchFilters, rows: list[tuple[int, int]], near: int) -> None:
        key = pg_plan.share_key(filters)
        if key is not None and self._generation is not None:
            self._fts_stats[key] = (round(1000 * pg_plan.seen_share(rows)), float(self._generation))
            self._fts_stats[key + pg_plan.PER_PART] = (
                round(1000 * pg_plan.part_share(rows, near)),
                float(self._generation),
            )

    def _hnsw_knn(
        self,
        query: np.ndarray,
        filters: SearchFilters,
        k: int,
        now: datetime | None,
        *,
        iterative: bool,
        ef: int = _EF_SEARCH,
        out: _Judging | None = None,
    ) -> tuple[list[tuple[str, float]], dict[str, RankFields]]:
        """The HNSW index's nearest vectors, filtered (inside the scan when iterative), best part per record."""
        settings = pg_plan.hnsw_settings(ef, iterative=iterative)
        columns = pg_judged.columns("m", judged=out is not None) + (", m.tenant, m.rowid" if out is not None else "")
        if iterative:
            params: list[Any] = [query]
            where = self._where(filters, now, params)
            params += [query, pg_plan.iterative_rows(k, pg_plan.vectors_per_record(self, filters.tenant))]
            sql = (
                f"SELECT 1 - (v.embedding <=> ?) AS sim, {columns} FROM memory_vectors v JOIN memories m "
                f"ON m.tenant = v.tenant AND m.rowid = v.memory_rowid WHERE {' AND '.join(where)} "
                "ORDER BY v.embedding <=> ? LIMIT ?"
            )
        else:
            params = [query, query, int(ef)]
            # MATERIALIZED: the index's candidates are fetched once, then joined by primary key
            # (an inlined subquery was re-run per record under a stale row estimate: 400 ms).
            inner = (
                "WITH c AS MATERIALIZED (SELECT v.tenant, v.memory_rowid, 1 - (v.embedding <=> ?) AS sim "
                "FROM memory_vectors v ORDER BY v.embedding <=> ? LIMIT ?) "
            )
            where = self._where(filters, now, params)
            sql = (
                f"{inner}SELECT c.sim, {columns} FROM c JOIN memories m ON m.tenant = c.tenant AND m.rowid = c.memory_rowid "
                f"WHERE {' AND '.join(where)}"
            )
        if out is not None:
            # The best part of each record, the best k records: what judging reads is sent for those alone.
            sql = (
                "SELECT d.* FROM (SELECT DISTINCT ON (r.id) r.* FROM "
                f"({sql}) r WHERE r.sim <> 'NaN'::float8 ORDER BY r.id, r.sim DESC) d "
                'ORDER BY d.sim DESC, d.id COLLATE "C" LIMIT ?'
            )
            params.append(k)
        rows = self.db.reader().batch([(placeholders(_judging(sql, out)), params)], settings)[0].fetchall()
        return _best(rows, k, out)

    def vectors_for(self, memory_ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        """Stored vectors of the given records, by record id, parts in order."""
        out: dict[str, list[np.ndarray]] = {}
        if self._dims is None or not memory_ids:
            return out
        conn = self.db.reader()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for memory_id, embedding in conn.execute(
                f"SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v "
                f"ON v.tenant = m.tenant AND v.memory_rowid = m.rowid WHERE m.id IN ({marks}) "
                "ORDER BY v.memory_rowid, v.part",
                chunk,
            ):
                out.setdefault(memory_id, []).append(_array(embedding))
        return out


def _selective(filters: SearchFilters) -> bool:
    """Filters an index on ``memories`` narrows to a small share of a tenant (the exact plan joins from those)."""
    return bool(
        filters.project_id
        or filters.session_id
        or filters.user_id
        or filters.entity_types
        or filters.entity_ids
        or filters.references
        or filters.source_ids
    )


def _presence_terms(terms: Sequence[str]) -> tuple[set[str], list[str]]:
    """Query terms present without asking (CJK, nothing to fold), and the terms whose presence is checked."""
    present: set[str] = set()
    checked: list[str] = []
    for term in dict.fromkeys(terms):
        if not term.isascii() or not fold_words(term).strip():
            present.add(term)
        else:
            checked.append(term)
    return present, checked


def _idf(total: int, count: int) -> float:
    """FTS5's BM25 IDF (floor 1e-6), as funes.relevance.idf."""
    total = max(total, count)
    return max(math.log((total - count + 0.5) / (count + 0.5)), 1e-6)


# Where a vector statement puts its hits' partial records and the vectors of those with at least so many.
_Judging = tuple[dict[str, JudgedRecord], dict[str, list[np.ndarray]], int]


def _judging(sql: str, out: _Judging | None) -> str:
    """A vector statement, with ``out`` each row's record's vectors when it has several (after its own columns)."""
    if out is None:
        return sql
    return f"SELECT u.*, {pg_judged.several_vectors('u', out[2])} FROM ({sql}) u"


def _best(
    rows: Sequence[Sequence[Any]], k: int, out: _Judging | None = None
) -> tuple[list[tuple[str, float]], dict[str, RankFields]]:
    """Rows of (similarity, rank columns...) as the best ``k`` records (best part each) and their rank fields.

    With ``out``, rows of (similarity, rank and judging's columns, tenant, rowid, vectors when several): their
    partial records and those vectors go to ``out``.
    """
    best: dict[str, float] = {}
    fields: dict[str, RankFields] = {}
    records: dict[str, tuple[JudgedRecord | None, Any]] = {}
    for row in rows:
        sim, memory_id = row[0], str(row[1])
        if sim is not None and sim == sim and sim > best.get(memory_id, -2.0):
            best[memory_id] = float(sim)
            vecs = row[-1] if out is not None else None
            fields[memory_id], record = pg_judged.to_candidate(row[1:], 1 if vecs is None else len(vecs))
            records[memory_id] = (record, vecs)
    found = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    if out is not None:
        for memory_id, _ in found:
            record, vecs = records[memory_id]
            if record is not None:
                out[0][memory_id] = record
            if vecs is not None:
                out[1][memory_id] = [_array(v) for v in vecs]
    return found, {i: fields[i] for i, _ in found}


def _hits(
    rows: Sequence[Sequence[Any]],
    at: int,
    fields: dict[str, RankFields],
    vectors: dict[str, list[np.ndarray]],
    judged: dict[str, JudgedRecord],
    sort: bool,
) -> list[tuple[str, float]]:
    """Rows holding (score, vectors, rank columns, judging's columns) from column ``at`` as hits; their fields,
    vectors and partial records are kept."""
    out: list[tuple[str, float]] = []
    for row in rows:
        if len(row) <= at + 2 or row[at + 2] is None:
            continue  # the statistics row of a search without matches
        score, vecs = row[at], row[at + 1]
        ranked, record = pg_judged.to_candidate(row[at + 2 :], 0 if vecs is None else len(vecs))
        memory_id = ranked.id
        out.append((memory_id, float(score)))
        fields[memory_id] = ranked
        if record is not None:
            judged[memory_id] = record
        if vecs is not None:
            vectors[memory_id] = [_array(v) for v in vecs]
    if sort:
        out.sort(key=lambda kv: (-kv[1], kv[0]))
    return out


_array = pg_judged.to_array
