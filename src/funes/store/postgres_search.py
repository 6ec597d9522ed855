"""Keyword and vector search of the PostgreSQL store.

Keyword: ``memories.fts`` is a generated tsvector ('simple': lowercased
words of any script, no stemming) with a GIN index. The query is an OR of
``plainto_tsquery('simple', term)`` per term, with every term a bound
parameter, so no user text is ever parsed as tsquery syntax. Matches are
scored with Okapi BM25 (k1 1.2, b 0.75, FTS5's IDF) computed from the
tsvector's positions, so the calibrated relevance model
(:mod:`funes.memory.relevance`) reads the same scale on both stores. At most the
newest ``scan_cap`` matches are scored, as on SQLite.

CJK: PostgreSQL's parsers do not split Chinese or Japanese either, and
pgserver's build has no pg_trgm. Records with CJK text are flagged by a
generated column (``has_cjk``, partial index per tenant); a query's CJK runs
are matched by substring (``strpos``) of their trigrams and 2-character
words among those records only: a scan of the tenant's CJK records.

Vector: exact KNN (tenant btree, then a distance sort) while the tenant
holds at most ``exact_max`` vectors. Above that the HNSW index is used: with
pgvector >= 0.8 with ``hnsw.iterative_scan = relaxed_order`` and the filters
inside the scan; before 0.8 (no iterative scan, where a filtered HNSW query
silently returned 0.4 of 10 rows) the index's 1000 nearest (``ef_search``
1000, its maximum), the filters applied to those candidates, and the exact plan whenever fewer than ``k``
records survive. Numbers: docs/postgres.md and bench/pg_recall.py.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..models import RankFields, SearchFilters, to_epoch
from .base import Visibility
from .sqlite_cjk import cjk_runs, merge_hits, trigrams
from .sqlite_rows import RANK_COLUMNS, record_filters, sql_in, to_rank_fields

_K1 = 1.2
_B = 0.75
_TITLE_WEIGHT = 2.0  # as bm25(memories_fts, 2.0, 1.0, 1.0) on SQLite: a title hit counts twice
_EF_SEARCH = 1000  # pgvector's maximum


_WORD = re.compile(r"\w+", re.UNICODE)
# The crude English suffix fold of funes.relevance.fold (SQLite's index stems with porter).
_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "est", "ed", "es", "er", "ly", "s")


def fold_word(word: str) -> str:
    """A word lowercased, without diacritics, with a common English suffix removed."""
    word = "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c))
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def fold_words(text: str | None) -> str:
    """The text as the keyword index holds it: folded words (see :func:`fold_word`) joined by spaces.

    FTS5's ``porter unicode61 remove_diacritics 2`` finds "cafe" in "café" and
    "vendor" in "vendors"; PostgreSQL's 'simple' configuration does neither,
    and the unaccent extension is not always installed, so both sides fold in
    Python: the indexed text here, the query terms in ``_word_search``.
    """
    return " ".join(fold_word(w) for w in _WORD.findall(text or ""))


def _tsquery(terms: Sequence[str], params: list[Any]) -> str:
    """An OR of plainto_tsquery per folded term (each a bound parameter: never query syntax)."""
    params.extend(terms)
    return "(" + " || ".join("plainto_tsquery('simple', ?)" for _ in terms) + ")"


class PostgresSearch:
    """Mixin of PostgresStore: filters, keyword search, vector search."""

    db: Any
    exact_max: int
    pgvector_version: tuple[int, ...]
    _dims: int | None
    _planning_stat: Any  # SqliteStore._planning_stat, shared by PostgresStore

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

        ``fields``, when given, receives the rank fields of the word hits (the scoring query reads them).
        """
        words = self._word_search(terms, filters, limit=limit, scan_cap=scan_cap, now=now, fields=fields)
        if not cjk_runs(terms):
            return words
        return merge_hits(words, self._cjk_search(terms, filters, limit, scan_cap, now), limit)

    def _word_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        limit: int,
        scan_cap: int,
        now: datetime | None,
        fields: dict[str, RankFields] | None = None,
    ) -> list[tuple[str, float]]:
        originals = [t for t in dict.fromkeys(terms) if fold_words(t)]
        folded = [fold_words(t) for t in originals]
        if not folded or limit <= 0:
            return []
        conn = self.db.reader()
        params: list[Any] = [folded]  # the SELECT list's term array comes first in the text
        query = _tsquery(folded, params)
        where = [f"m.fts @@ {query}", *self._where(filters, now, params)]
        params.append(max(1, scan_cap))
        # Per match: title and body term frequencies of each query term, and the length in tokens.
        sql = (
            f"SELECT c.dl, c.tf, {', '.join('c.' + c for c in RANK_COLUMNS)} FROM (SELECT "
            f"{', '.join('m.' + c for c in RANK_COLUMNS)}, m.rowid, "
            "(SELECT coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(m.fts) u) AS dl, "
            "(SELECT array_agg(ARRAY[coalesce((SELECT sum(CASE WHEN w = 'A' THEN 1 ELSE 0 END) "
            "FROM unnest(m.fts) u, unnest(u.weights) w WHERE u.lexeme = t.term), 0), "
            "coalesce((SELECT sum(CASE WHEN w = 'A' THEN 0 ELSE 1 END) "
            "FROM unnest(m.fts) u, unnest(u.weights) w WHERE u.lexeme = t.term), 0)] ORDER BY t.n) "
            "FROM unnest(?::text[]) WITH ORDINALITY AS t(term, n)) AS tf "
            f"FROM memories m WHERE {' AND '.join(where)} ORDER BY m.rowid DESC LIMIT ?) c"
        )
        rows = conn.execute(sql, params).fetchall()
        if not rows:
            return []
        total, counts = self.term_stats(originals)
        idfs = [_idf(total, counts.get(t, 0)) for t in originals]
        avgdl = max(1.0, float(self._average_length(conn)))
        scored: list[tuple[str, float]] = []
        for dl, tfs, *rank_row in rows:
            memory_id = rank_row[0]
            norm = _K1 * (1 - _B + _B * float(dl or 0) / avgdl)
            score = 0.0
            for weight, (title_tf, body_tf) in zip(idfs, tfs or [], strict=False):
                tf = _TITLE_WEIGHT * float(title_tf) + float(body_tf)
                if tf > 0:
                    score += weight * tf * (_K1 + 1) / (tf + norm)
            # A match on a term the positions cannot show (a hyphenated part) still ranks above nothing.
            scored.append((memory_id, score if score > 0 else 1e-6))
        scored.sort(key=lambda kv: (-kv[1], kv[0]))
        if fields is not None:
            kept = {memory_id for memory_id, _ in scored[:limit]}
            fields.update((row[2], to_rank_fields(row[2:])) for row in rows if row[2] in kept)
        return scored[:limit]

    def _average_length(self, conn: Any) -> int:
        """Average record length in tokens, sampled over the newest 1,000 records (a plan input, cached)."""
        return self._planning_stat(
            "\0avgdl",
            lambda: int(
                conn.native(
                    "SELECT coalesce(avg((SELECT sum(array_length(u.positions, 1)) FROM unnest(fts) u)), 1) "
                    "FROM (SELECT fts FROM memories ORDER BY rowid DESC LIMIT 1000) s"
                ).fetchone()[0]
                or 1
            ),
        )

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Rows in the keyword index and how many contain each term (BM25's IDF inputs; cached a while)."""
        conn = self.db.reader()
        total = self._planning_stat("\0total", lambda: int(conn.native("SELECT count(*) FROM memories").fetchone()[0]))
        counts = {
            t: self._planning_stat(
                f"{t}\0count",
                lambda t=t: int(  # type: ignore[misc]
                    conn.execute(
                        "SELECT count(*) FROM memories WHERE fts @@ plainto_tsquery('simple', ?)", (fold_words(t),)
                    ).fetchone()[0]
                ),
            )
            for t in terms
        }
        return total, counts

    def term_presence(self, terms: Sequence[str], filters: SearchFilters, now: datetime | None = None) -> set[str]:
        """The query terms found in at least one record the filters admit (CJK terms always count as present)."""
        conn = self.db.reader()
        present: set[str] = set()
        for term in dict.fromkeys(terms):
            folded = fold_words(term)
            if not term.isascii() or not folded.strip():
                present.add(term)
                continue
            params: list[Any] = [folded]
            where = self._where(filters, now, params)
            sql = (
                "SELECT 1 FROM memories m WHERE m.fts @@ plainto_tsquery('simple', ?) AND "
                + " AND ".join(where)
                + " LIMIT 1"
            )
            if conn.execute(sql, params).fetchone() is not None:
                present.add(term)
        return present

    def _cjk_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int, scan_cap: int, now: datetime | None
    ) -> list[tuple[str, float]]:
        """Records containing the query's CJK trigrams and 2-character words, by the share found (higher is better)."""
        runs = cjk_runs(terms)
        grams = list(
            dict.fromkeys(g for r in runs for g in (trigrams(r) if len(r) >= 3 else [r] if len(r) == 2 else []))
        )
        if not grams:
            return []
        params: list[Any] = []
        found = " + ".join("(strpos(coalesce(m.title, '') || ' ' || m.content, ?) > 0)::int" for _ in grams)
        params.extend(grams)
        where = ["m.has_cjk", *self._where(filters, now, params)]
        params.append(max(1, scan_cap))
        sql = (
            f"SELECT id, found FROM (SELECT m.id, m.rowid, {found} AS found FROM memories m "
            f"WHERE {' AND '.join(where)}) c WHERE found > 0 ORDER BY rowid DESC LIMIT ?"
        )
        rows = self.db.reader().execute(sql, params).fetchall()
        # On the BM25 scale of a rare term: every gram found counts like one matched rare word.
        ranked = sorted(((str(i), 2.0 * int(n) / len(grams) * len(runs)) for i, n in rows), key=lambda kv: -kv[1])
        return ranked[:limit]

    # -- vectors -----------------------------------------------------------------
    def _tenant_vectors(self, conn: Any, tenant: str) -> int:
        """How many vectors the tenant holds (a plan input, cached a while)."""
        return self._planning_stat(
            f"\0vectors\0{tenant}",
            lambda: int(conn.execute("SELECT count(*) FROM memory_vectors WHERE tenant = ?", (tenant,)).fetchone()[0]),
        )

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None = None
    ) -> list[tuple[str, float]]:
        """Cosine KNN with every filter applied: exact for small tenants, HNSW with a recall guard for large ones."""
        if self._dims is None or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        conn = self.db.reader()
        # Entity and reference filters are narrow: an HNSW scan would walk far for a few records, so they
        # go exact. A role filter keeps a large share (half a chat, for "user"): the HNSW scan applies it
        # inside, with every other filter of _where, and the exact search below answers when it falls short.
        narrow = bool(filters.entity_types or filters.entity_ids or filters.references)
        if narrow or self._tenant_vectors(conn, filters.tenant) <= self.exact_max:
            return self._exact_knn(query, filters, k, now)
        # ef_search 1000 (pgvector's maximum) whatever the tenant's share: at 12k x 384 dims, 100 for a
        # tenant holding 95% of the vectors measured recall@10 0.71; 1000 measured 0.99 (bench/pg_recall.py).
        found = self._hnsw_knn(query, filters, k, now, iterative=self.pgvector_version >= (0, 8))
        if len(found) < k:
            # Too few candidates survived the filters: the approximate answer would be short, so go exact.
            return self._exact_knn(query, filters, k, now)
        return found

    def _exact_knn(
        self, query: np.ndarray, filters: SearchFilters, k: int, now: datetime | None
    ) -> list[tuple[str, float]]:
        """Every vector of the tenant inside the filters, sorted by distance (the tenant btree, no HNSW)."""
        params: list[Any] = [query, filters.tenant]
        where = ["v.tenant = ?", *self._where(filters, now, params)]
        params.append(k)
        # GROUP BY takes the best part of each record and keeps the planner off the HNSW index.
        sql = (
            "SELECT m.id, max(1 - (v.embedding <=> ?)) AS sim FROM memory_vectors v "
            f"JOIN memories m ON m.rowid = v.memory_rowid WHERE {' AND '.join(where)} "
            "GROUP BY m.id ORDER BY sim DESC, m.id LIMIT ?"
        )
        rows = self.db.reader().execute(sql, params).fetchall()
        return [(str(i), float(s)) for i, s in rows if s is not None and s == s]

    def _hnsw_knn(
        self,
        query: np.ndarray,
        filters: SearchFilters,
        k: int,
        now: datetime | None,
        *,
        iterative: bool,
        ef: int = _EF_SEARCH,
    ) -> list[tuple[str, float]]:
        """The HNSW index's nearest vectors, filtered (inside the scan when iterative), best part per record."""
        with self.db.snapshot() as conn:  # SET LOCAL needs a transaction
            conn.native(f"SET LOCAL hnsw.ef_search = {int(ef)}")
            # The row-level-security qual makes the planner expect a handful of rows and sort them
            # by a sequential scan: exact, but it reads every vector. This plan is for the index.
            conn.native("SET LOCAL enable_seqscan = off")
            if iterative:
                conn.native("SET LOCAL hnsw.iterative_scan = relaxed_order")
                params: list[Any] = [query]
                where = self._where(filters, now, params)
                params += [query, max(k * 4, 40)]
                sql = (
                    "SELECT m.id, 1 - (v.embedding <=> ?) FROM memory_vectors v JOIN memories m "
                    f"ON m.rowid = v.memory_rowid WHERE {' AND '.join(where)} "
                    "ORDER BY v.embedding <=> ? LIMIT ?"
                )
            else:
                params = [query, query, int(ef)]
                # MATERIALIZED: the index's candidates are fetched once, then joined by primary key
                # (an inlined subquery was re-run per record under a stale row estimate: 400 ms).
                inner = (
                    "WITH c AS MATERIALIZED (SELECT v.memory_rowid, 1 - (v.embedding <=> ?) AS sim "
                    "FROM memory_vectors v ORDER BY v.embedding <=> ? LIMIT ?) "
                )
                where = self._where(filters, now, params)
                sql = (
                    f"{inner}SELECT m.id, c.sim FROM c JOIN memories m ON m.rowid = c.memory_rowid "
                    f"WHERE {' AND '.join(where)}"
                )
            rows = conn.execute(sql, params).fetchall()
        best: dict[str, float] = {}
        for memory_id, sim in rows:
            if sim is not None and sim == sim and sim > best.get(memory_id, -2.0):
                best[memory_id] = float(sim)
        return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

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
                f"SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid "
                f"WHERE m.id IN ({marks}) ORDER BY v.memory_rowid, v.part",
                chunk,
            ):
                values = embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding  # pgvector.Vector
                out.setdefault(memory_id, []).append(np.asarray(values, dtype=np.float32))
        return out


def _idf(total: int, count: int) -> float:
    """FTS5's BM25 IDF (floor 1e-6), as funes.relevance.idf."""
    total = max(total, count)
    return max(math.log((total - count + 0.5) / (count + 0.5)), 1e-6)
