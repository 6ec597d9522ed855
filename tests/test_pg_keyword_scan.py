"""The PostgreSQL keyword statement's two scans (funes.store.pg_scan, issue 29).

A query of common words walks the tenant's newest records instead of the GIN index; a rare word takes the
index. Either way the statement ranks the same rows: hits, scores and term presence match the index's answer.
"""

from __future__ import annotations

from typing import Any

import pytest

import funes
from funes.models import SearchFilters, utcnow
from funes.providers.embed import HashEmbedder
from funes.store import pg_scan
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def mem(pg_url: str):  # type: ignore[no-untyped-def]
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    for tenant in ("acme", "globex"):
        with acting_for(tenant):
            service.remember_many([f"{tenant} hangar log {n}" for n in range(40)], tenant=tenant)  # the oldest
            service.remember_many(
                [
                    f"{tenant} budget note {n}: review the budget" + (" zeppelin" if n % 50 == 7 else "")
                    for n in range(150)
                ]
                + [f"{tenant} recipe {n}: bake bread, then the budget" for n in range(10)],
                tenant=tenant,
            )
            service.remember_many(
                [f"{tenant} project budget {n}" for n in range(5)], tenant=tenant, scope="project", project="p1"
            )
            service.remember_many([f"{tenant} quay entry {n}" for n in range(40)], tenant=tenant)  # the newest
    yield service
    service.close()


QUERIES = [["budget"], ["budget", "review"], ["zeppelin"], ["zeppelin", "budget", "bread"], ["bread", "qqq"]]
# hangar and quay: in 16% of the records each, in none of zeppelin's: probed (quay among the newest, hangar the oldest)
QUERIES += [["zeppelin", "hangar", "quay", "qqq"]]


def _answers(mem: funes.Funes, filters: SearchFilters, cap: int) -> list[Any]:
    store, now = mem.core.store, utcnow()
    out = []
    with acting_for(filters.tenant):
        for terms in QUERIES:
            found, _fields, stats, _vectors, present, _judged = store.keyword_leg(
                terms, filters, limit=20, scan_cap=cap, now=now, common_ratio=0.1
            )
            out.append(([(i, repr(s)) for i, s in found], stats, sorted(present)))
    return out


@pytest.mark.parametrize("cap", [8, 40, 2000])
def test_the_walk_ranks_the_same_matches_as_the_index(
    mem: funes.Funes, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [
        SearchFilters(tenant="acme"),
        SearchFilters(tenant="globex"),
        SearchFilters(tenant="acme", project_id="p1"),
    ]
    walked = [_answers(mem, filters, cap) for filters in cases]
    monkeypatch.setattr(pg_scan, "WALK_FACTOR", 1e300)  # the index always
    monkeypatch.setattr(pg_scan, "PROBE_FACTOR", 1e300)
    indexed = [_answers(mem, filters, cap) for filters in cases]
    assert walked == indexed
    assert all(answer[0][0] for answer in walked)  # budget found for each
    if cap == 8:  # zeppelin's matches were all scanned: hangar and quay were probed
        assert [answer[-1][2] for answer in walked[:2]] == [["hangar", "quay", "zeppelin"]] * 2


def _walk_loops(mem: funes.Funes, terms: list[str], cap: int, probes: bool = False) -> list[int]:
    """How many times each walk node of the keyword statement ran (EXPLAIN ANALYZE of the statement sent): the scan's
    walk, or with ``probes`` the presence probes'."""
    store, filters = mem.core.store, SearchFilters(tenant="acme")
    sql, params, _ = store._word_statement(terms, filters, 20, cap, utcnow(), 0.1, checked=terms)
    with acting_for("acme"):
        plan = store.db.reader().native("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
    loops: list[int] = []

    def visit(node: dict[str, Any]) -> None:
        test = node.get("Filter", "")
        if "ts_match_vq(" in test and ("ts_match_vq(w" in test) == probes:
            loops.append(int(node["Actual Loops"]))
        for child in node.get("Plans", ()):
            visit(child)

    visit(plan[0]["Plan"])
    return loops


def test_common_words_walk_the_tenant_s_newest_records_and_a_rare_word_takes_the_index(mem: funes.Funes) -> None:
    assert _walk_loops(mem, ["budget"], 8) == [1]  # in every record: the 2 newest are a walk of 2-3 rows away
    assert _walk_loops(mem, ["zeppelin"], 8) == [0]  # in 3 records: the index
    assert _walk_loops(mem, ["budget"], 2000) == [0]  # every match is ranked: the index holds no more than the walk
    # quay, in none of zeppelin's records, is probed among the tenant's newest records first
    assert _walk_loops(mem, ["zeppelin", "quay"], 8, probes=True) == [0, 1]  # zeppelin: all its matches scanned
    assert _walk_loops(mem, ["budget", "review"], 8, probes=True) == [0, 0]  # both held by scanned matches


def test_the_keyword_statement_is_prepared_and_runs_its_generic_plan_from_its_first_run(mem: funes.Funes) -> None:
    """psycopg prepares a statement on its fifth run on a connection: until then PostgreSQL planned the keyword
    statement afresh each time (5-11 ms at 100k), whatever plan_cache_mode asked."""
    store = mem.core.store
    with acting_for("acme"):
        store.keyword_leg(["budget", "rarebird"], SearchFilters(tenant="acme"), limit=5, now=utcnow())
        seen = set()
        for _ in range(store.db.pool.get_stats()["pool_size"] + 1):  # the pool hands its connections out in turn
            seen.update(
                store.db.reader()
                .native(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                    ["%kp AS MATERIALIZED%"],
                )
                .fetchall()
            )
    assert seen == {(1, 0)}
