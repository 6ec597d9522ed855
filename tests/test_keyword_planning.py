"""Keyword-leg planning on stores larger than the scan cap: common terms give way to rare ones."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import funes
from funes.models import SearchFilters, utcnow
from funes.providers.embed import HashEmbedder

CAP = 50


def fill(tmp_path: Path) -> funes.Funes:
    mem = funes.open(str(tmp_path / "kw.db"), embedder=HashEmbedder(32), keyword_scan_cap=CAP)
    mem.remember("The zeppelin hangar report lists the project budget")  # oldest: outside the newest CAP
    for n in range(200):
        mem.remember(f"Weekly project update number {n} about the project budget")
    return mem


def test_a_rare_term_is_ranked_over_the_whole_store_not_just_the_newest_matches(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        hits = mem.store.keyword_search(
            ["zeppelin", "project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert [mem.get(i).content for i, _ in hits] == ["The zeppelin hangar report lists the project budget"]
        # Without planning, the oldest record is past the cap of newest matches and is never seen.
        capped = mem.store.keyword_search(
            ["zeppelin", "project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0
        )
        assert "The zeppelin hangar report lists the project budget" not in [mem.get(i).content for i, _ in capped]


def test_past_the_cap_the_newest_matches_are_scored_in_the_index_and_filters_fall_back(tmp_path: Path) -> None:
    """Over the cap: the newest CAP index matches are ranked (the one-statement plan's rows when all pass);
    a filter that few of them pass hands the query to the one-statement plan, so older passing records are found."""
    with funes.open(str(tmp_path / "over.db"), embedder=HashEmbedder(32), keyword_scan_cap=CAP) as mem:
        decisions = [
            mem.remember(f"Harbour decision {n}: dredge the harbour channel", type="decision") for n in range(5)
        ]
        for n in range(300):
            mem.remember(f"Harbour log {n}: " + "harbour " * (n % 4 + 1) + "tide", type="fact")
        store, now = mem.store, utcnow()
        terms = ["harbour", "tide"]
        hits = store.keyword_search(terms, SearchFilters(), limit=10, scan_cap=CAP, now=now, common_ratio=1.0)
        conn = store.db.reader()
        expected = conn.execute(
            "SELECT m.id, bm25(memories_fts, 2.0, 1.0, 1.0, 0.0) FROM memories_fts "
            "CROSS JOIN memories m ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? "
            "ORDER BY memories_fts.rowid DESC LIMIT ?",
            ('("harbour" OR "tide")', CAP),
        ).fetchall()
        expected.sort(key=lambda r: r[1])
        assert [h[0] for h in hits] == [r[0] for r in expected[:10]]
        assert [round(h[1], 9) for h in hits] == [round(-r[1], 9) for r in expected[:10]]
        only = store.keyword_search(
            terms, SearchFilters(memory_types=("decision",)), limit=3, scan_cap=CAP, now=now, common_ratio=1.0
        )
        assert len(only) == 3 and {h[0] for h in only} <= {d.id for d in decisions}


def test_a_query_of_only_common_words_still_finds_matches(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        hits = mem.store.keyword_search(
            ["project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert len(hits) == 5
        assert all("budget" in mem.get(i).content for i, _ in hits)


def test_terms_that_match_nothing_are_dropped_and_all_unknown_returns_nothing(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        none = mem.store.keyword_search(
            ["qwertyuiop", "asdfghjkl"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert none == []
        some = mem.search("zeppelin qwertyuiop", limit=3, track=False)
        assert some[0].memory.content.startswith("The zeppelin hangar")
        assert some[0].explanation.keyword_rank == 1


def _mixed(tmp_path: Path) -> tuple[funes.Funes, datetime, list[SearchFilters]]:
    """600 records of six words over two tenants, three scopes, two types, some expired; filters of each kind."""
    import random

    from funes.models import Memory, content_hash, new_id

    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    now = utcnow()
    mem = funes.open(str(tmp_path / "two.db"), embedder=HashEmbedder(32))
    items = []
    for n in range(600):
        content = " ".join(rng.choices(words, k=rng.randint(2, 9))) + f" filler{n % 7}"
        scope = rng.choice(["team", "project", "session"])
        items.append(
            Memory(
                id=new_id(),
                content=content,
                tenant=rng.choice(["a", "a", "a", "b"]),
                scope=scope,
                project_id="p1" if scope == "project" else None,
                session_id="s1" if scope == "session" else None,
                memory_type=rng.choice(["fact", "decision"]),
                expires_at=now - timedelta(days=1) if rng.random() < 0.1 else None,
                content_hash=content_hash(content),
                created_at=now - timedelta(days=rng.randint(0, 99)),
            )
        )
    mem.store.put_many([(m, None) for m in items])
    filters = [
        SearchFilters(tenant="a"),
        SearchFilters(tenant="b"),
        SearchFilters(tenant="a", scopes=("project",), project_id="p1"),
        SearchFilters(tenant="a", memory_types=("decision",), created_after=now - timedelta(days=30)),
        SearchFilters(tenant="a", session_id="s1"),
    ]
    return mem, now, filters


def test_scoring_in_the_index_first_gives_the_same_hits_as_one_statement(tmp_path: Path) -> None:
    """Under the cap, matches are scored in the FTS index and only the best joined: same rows, scores, order."""
    mem, now, filters = _mixed(tmp_path)
    with mem:
        store = mem.store
        used = []
        real = store._best_passing

        def spy(*args: object, **kwargs: object) -> object:
            found = real(*args, **kwargs)  # type: ignore[arg-type]
            used.append(found is not None)
            return found

        for f in filters:
            for terms in (["alpha"], ["beta", "omega"], ["filler3", "gamma"], ["sigma", "delta", "alpha"]):
                store._best_passing = spy  # type: ignore[method-assign]
                two = store.keyword_search(terms, f, limit=7, scan_cap=2000, now=now, common_ratio=0.1)
                store._best_passing = lambda *a, **k: None  # type: ignore[method-assign]
                one = store.keyword_search(terms, f, limit=7, scan_cap=2000, now=now, common_ratio=0.1)
                assert two == one and one
        assert all(used) and used
        # Over the cap the index-first plan steps aside: the cap counts rows that pass the filters.
        store._best_passing = real  # type: ignore[method-assign]
        assert store._best_passing(store.db.reader(), '("alpha")', SearchFilters(tenant="a"), now, 5, 10) is None


def test_the_best_passing_matches_are_the_definitions_with_the_count_read_or_left_out(tmp_path: Path) -> None:
    """Over the cap the statement counts no matches: the chunks' ends give the count. For caps and limits on and
    around the chunk boundaries (64 and 320 rows) and filters that pass few rows, the answer is the definition's:
    the best passing rows of the newest ``scan_cap`` matches, or None when fewer than ``limit`` pass and the cap
    was reached."""
    mem, now, filters = _mixed(tmp_path)
    with mem:
        store, conn = mem.store, mem.store.db.reader()
        checked = {True: 0, False: 0}
        for f in filters:
            params: list[object] = []
            where = " AND ".join(store._where(f, now, params))
            passing = dict(conn.execute(f"SELECT m.rowid, m.id FROM memories m WHERE {where}", params).fetchall())
            for match in ('("alpha")', '("beta" OR "omega")', '("alpha" OR "beta" OR "gamma" OR "filler3")'):
                for cap in (1, 10, 63, 64, 65, 128, 320, 321, 500, 2000):
                    rows = conn.execute(
                        "SELECT rowid, bm25(memories_fts, 2.0, 1.0, 1.0, 0.0) FROM memories_fts "
                        "WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                        (match, cap),
                    ).fetchall()
                    rows.sort(key=lambda r: (r[1], -r[0]))
                    best = [(passing[r], -float(score)) for r, score in rows if r in passing]
                    for limit in (1, 5, 32, 40, 200):
                        found = store._best_passing(conn, match, f, now, limit, cap, over_cap=True)
                        expected = best[:limit] if len(best) >= limit or len(rows) < cap else None
                        assert found == expected, (f, match, cap, limit)
                        checked[expected is None] += 1
                        # Not over the cap (the plan expected every match under it): None once they reach it.
                        found = store._best_passing(conn, match, f, now, limit, cap)
                        assert found == (None if len(rows) >= cap else best[:limit]), (f, match, cap, limit)
        assert checked[True] > 20 and checked[False] > 20  # both answers, on several chunk counts


def test_a_lone_common_term_scores_as_bm25_without_the_idf_walk(tmp_path: Path, monkeypatch: object) -> None:
    """Past IDF_WALK_MAX rows the one-term BM25 is computed from FTS5's counts: the same scores and order."""

    from funes.store import sqlite_keyword

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    with fill(tmp_path) as mem:
        mem.remember("Project budget project budget, and a title", title="Project project")
        mem.remember("A long note that mentions the project once among many many other words here")
        # A common term under half the store, so its IDF is not the floor.
        mem.remember_many([f"Quarterly zebra memo {n} " + "zebra " * (n % 4) + "filler " * (n % 9) for n in range(120)])
        # Newest records in another tenant: "default" no longer dominates, so its MATCH carries the tenant token.
        mem.remember_many([f"zebra crossing {n}" for n in range(80)], tenant="other")
        store = mem.store
        used: list[bool] = []
        real = store._single_term_bm25

        def spy(*args: object) -> object:
            found = real(*args)  # type: ignore[arg-type]
            used.append(found is not None)
            return found

        now = utcnow()
        cases = (
            (["project", "budget"], SearchFilters()),
            (["update"], SearchFilters(tenant="default")),
            (["zebra"], SearchFilters()),
            (["zebra"], SearchFilters(tenant="default")),
        )
        for terms, f in cases:
            plain = store.keyword_search(terms, f, limit=20, scan_cap=CAP, now=now, common_ratio=0.1)
            monkeypatch.setattr(sqlite_keyword, "IDF_WALK_MAX", 0)
            monkeypatch.setattr(store, "_single_term_bm25", spy)
            walkless = store.keyword_search(terms, f, limit=20, scan_cap=CAP, now=now, common_ratio=0.1)
            monkeypatch.undo()
            assert [i for i, _ in walkless] == [i for i, _ in plain] and len(plain) == CAP // 4
            for (_, a), (_, b) in zip(walkless, plain, strict=True):
                assert a == pytest.approx(b, rel=1e-12)
        assert used == [True, True, True, True]
        assert plain[0][1] > 0.01  # zebra: a real IDF, not the floor


def test_ready_is_called_once_the_plan_is_made_right_before_each_statement_that_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ready`` (what search's vector leg waits for) comes after every planning statement and right before each
    statement that ranks the matches, in every plan: the best passing chunks, the one-statement plan a selective
    filter falls back to, and a lone common term's. The hits are the same with it or without."""
    from funes.store import sqlite_keyword

    with fill(tmp_path) as mem:
        for n in range(300):
            mem.remember(f"Harbour log {n}: " + "harbour " * (n % 4 + 1) + "tide", type="fact")
        store, now = mem.store, utcnow()
        conn = store.db.reader()
        log: list[str] = []
        cases = (
            (["zeppelin", "project", "budget"], SearchFilters(), 0.1),  # rare words: the best passing chunks
            (["harbour", "tide"], SearchFilters(memory_types=("decision",)), 1.0),  # none pass: one statement
            (["project"], SearchFilters(), 0.1),  # a lone common term (IDF_WALK_MAX is 0 below)
        )
        monkeypatch.setattr(sqlite_keyword, "IDF_WALK_MAX", 0)
        conn.set_trace_callback(log.append)
        try:
            for terms, filters, ratio in cases:
                scan = {"limit": 10, "scan_cap": CAP, "now": now, "common_ratio": ratio}
                plain = store.keyword_search(terms, filters, **scan)
                log.clear()
                assert store.keyword_search(terms, filters, ready=lambda: log.append("READY"), **scan) == plain
                marks = [i for i, line in enumerate(log) if line == "READY"]
                ranking = [i for i, line in enumerate(log) if "bm25(" in line or "highlight(" in line]
                assert marks and [i + 1 for i in marks] == ranking, (terms, log)
        finally:
            conn.set_trace_callback(None)


def test_searches_at_once_answer_as_one_at_a_time_and_a_failed_keyword_leg_lets_the_next_search_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a search with no other under way waits for its keyword leg's plan (the others' legs may be queued on
    the one worker); searches run together answer as they do alone, and a keyword leg that fails hands the wait
    back."""
    from concurrent.futures import ThreadPoolExecutor

    with fill(tmp_path) as mem:
        queries = ["zeppelin budget", "project update", "weekly number budget", "hangar report"] * 3
        alone = [[h.memory.id for h in mem.search(q, limit=5)] for q in queries]
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(lambda q: [h.memory.id for h in mem.search(q, limit=5)], queries))
        assert together == alone
        hybrid = mem.core.hybrid
        assert not hybrid._alone.locked()

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("keyword leg failed")

        monkeypatch.setattr(mem.store, "keyword_search", broken)
        with pytest.raises(RuntimeError):
            mem.search("zeppelin budget", limit=5)
        assert not hybrid._alone.locked()
        monkeypatch.undo()
        assert [h.memory.id for h in mem.search(queries[0], limit=5)] == alone[0]


@given(st.lists(st.integers(min_value=0, max_value=2**40), max_size=6), st.binary(max_size=12))
def test_a_docsize_records_token_total_is_the_sum_of_its_varints(counts: list[int], junk: bytes) -> None:
    """The one-term BM25's row length: the sum of the row's varints, by the shortcut for one-byte ones or in full."""
    from funes.store.sqlite_keyword import _size, _varints

    def varint(value: int) -> bytes:
        groups = [value & 0x7F]
        while value > 0x7F:
            value >>= 7
            groups.append(0x80 | (value & 0x7F))
        return bytes(reversed(groups))

    blob = b"".join(varint(c) for c in counts)
    assert _varints(blob) == counts
    assert _size(blob) == sum(counts)
    assert _size(junk) == sum(_varints(junk))  # any bytes: the same total as the full decoding


def test_a_terms_count_the_keyword_plan_took_whole_is_not_walked_again_for_its_statistics(tmp_path: Path) -> None:
    """The plan's bounded count of a term that stopped short of its bound is the term's count: term_stats reuses it,
    and reads the same numbers as a store that never planned."""
    from funes.store.sqlite_keyword import _BOUNDED_COUNT

    counting = _BOUNDED_COUNT.split("?")[0]  # the statement as traced, its parameters filled in
    terms = ["zeppelin", "project", "budget", "hangar"]
    with fill(tmp_path) as mem:
        fresh_stats = mem.store.term_stats(terms)  # nothing cached yet: every count walked
    with funes.open(str(tmp_path / "kw.db"), embedder=HashEmbedder(32), keyword_scan_cap=CAP) as mem:
        store, conn = mem.store, mem.store.db.reader()
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        store.keyword_search(terms, SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1)
        planned = sum(q.startswith(counting) for q in statements)
        statements.clear()
        stats = store.term_stats(terms)
        conn.set_trace_callback(None)
        assert stats == fresh_stats
        assert planned == 4  # one bounded count per term (bound: a tenth of the 201 records, plus one)
        # "zeppelin" (1 record) and "hangar" (1) stopped short of the bound: reused. "project" and "budget"
        # (201 each) were cut off at 21: counted again without the bound.
        assert sum(q.startswith(counting) for q in statements) == 2
        assert stats[1]["zeppelin"] == 1 and stats[1]["project"] == 201


def test_a_very_common_terms_count_is_estimated_from_the_newest_rows(tmp_path: Path, monkeypatch: object) -> None:
    """Past COUNT_EXACT_MAX a term's record count comes from its share of the newest rows, close to the truth."""
    import funes.store.sqlite_keyword as kw

    monkeypatch.setattr(kw, "COUNT_EXACT_MAX", 40)  # type: ignore[attr-defined]
    monkeypatch.setattr(kw, "COUNT_WINDOW", 200)  # type: ignore[attr-defined]
    with funes.open(str(tmp_path / "count.db"), embedder=HashEmbedder(32)) as mem:
        mem.remember_many(
            [{"content": f"Note {n} about the " + ("ferry" if n % 3 == 0 else "bridge")} for n in range(900)]
        )
        conn = mem.store.db.reader()
        truth = conn.execute("SELECT count(*) FROM memories WHERE content LIKE '%ferry%'").fetchone()[0]
        total, counts = mem.store.term_stats(["ferry", "note"])
        assert truth == 300 and total == 900
        assert abs(counts["ferry"] - truth) <= 0.05 * truth
        assert counts["note"] == 900
        mem.remember("One note about the zeppelin")
        assert mem.store.term_stats(["zeppelin"])[1]["zeppelin"] == 1  # under the bound: counted exactly


def test_only_a_keyword_leg_that_says_when_it_ranks_is_waited_for(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's keyword leg says when its ranking statement begins, and a lone search's vector leg waits for that
    (``PLAN_WAIT`` at most); PostgreSQL's one-trip keyword leg says nothing, so nothing waits for it."""
    import threading

    from funes.memory import search as search_module

    waits: list[float | None] = []
    real = threading.Event.wait

    def wait(self: threading.Event, timeout: float | None = None) -> bool:
        if timeout == 12.5:  # the plan's wait, told apart by its (patched) bound
            waits.append(timeout)
        return real(self, timeout)

    monkeypatch.setattr(search_module, "PLAN_WAIT", 12.5)
    monkeypatch.setattr(threading.Event, "wait", wait)
    postgres = not store_url.endswith(".db")
    with funes.open(store_url, embedder=HashEmbedder(32)) as mem:
        mem.remember_many([f"Glacier note {n}" if n % 10 == 0 else f"Desert note {n}" for n in range(60)])
        assert mem.search("glacier note", limit=3)
        assert waits == ([] if postgres else [12.5])


def test_term_counts_follow_the_data_not_the_clock(store_url: str) -> None:
    """The keyword signal's IDF inputs: a count is reused while the store grows by under 1%, and counted
    again once it has grown more, at once (no wait), so the same writes and queries give the same relevance.

    On PostgreSQL the keyword statement reads the store's generation (the rowid sequence) itself, and the
    record total is a cached statistic too; on SQLite the total is the newest rowid, read every time.
    """
    postgres = not store_url.endswith(".db")
    with funes.open(store_url, embedder=HashEmbedder(32)) as mem:
        mem.remember_many([f"Glacier note {n}" if n % 10 == 0 else f"Desert note {n}" for n in range(300)])
        assert mem.store.term_stats(["glacier"]) == (300, {"glacier": 30})
        mem.remember("One more glacier note")  # 1 row on 300: under 1%, the count stands
        assert mem.store.term_stats(["glacier"]) == (300 if postgres else 301, {"glacier": 30})
        mem.remember_many([f"Later glacier note {n}" for n in range(20)])  # 21 rows on 300: counted again
        assert mem.store.term_stats(["glacier"]) == (321, {"glacier": 51})
        # A search's keyword leg keeps the same counts (tests/test_pg_round_trips.py counts its statements).
        assert mem.search("glacier", limit=3)
        assert mem.store.term_stats(["glacier"]) == (321, {"glacier": 51})


def test_a_statistic_kept_by_the_clock_is_never_read_as_a_generation_or_back(tmp_path: Path) -> None:
    # PostgreSQL's tenant vector count is taken before any keyword statement has read the store's generation
    # (kept by the clock), and later with one (kept by the data): each mark is judged by its own rule.
    with funes.open(str(tmp_path / "marks.db"), embedder=HashEmbedder(32)) as mem:
        store = mem.store
        counted: list[int] = []

        def count() -> int:
            counted.append(1)
            return len(counted)

        assert store._planning_stat("k", count) == 1  # no generation at hand: kept for a while
        assert store._planning_stat("k", count, 10**9) == 1  # a generation appears: the clock still holds it
        store._fts_stats["k"] = (7, 100.0)  # counted at generation 100
        assert store._planning_stat("k", count, 100) == 7
        assert store._planning_stat("k", count, 102) == 2  # grown by over 1%: counted again
        assert store._planning_stat("k", count, 102) == 2
        assert store._planning_stat("k", count) == 3  # a generation mark, no generation at hand: counted again
        assert store._planning_stat("k", count, 10**9) == 3  # now kept by the clock, whatever the generation
