"""The exact vector plan of PostgreSQL (tenants of at most ``exact_max`` vectors), issue 29.

It sorts the tenant's vectors by distance alone, then joins and filters the nearest; when filters
leave fewer than k records among those, the full join answers in the same statement. Both paths
must give exactly the brute-force answer: the best part of each record, in order.

Which plan a filter set takes is chosen from the share of near records it was seen to keep
(funes.store.pg_plan): a filter keeping about 5% takes the full join alone after its first search.
The plan is read from the statement sent (a statement log on the connection), never from a timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from funes.models import EmbedderIdentity, Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store.postgres import PostgresStore
from funes.store.postgres_search import _NEAR_PARTS

pytestmark = pytest.mark.postgres

DIMS = 16


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url)
    opened.set_identity(EmbedderIdentity("test-model", DIMS))
    yield opened
    opened.close()


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def _record(n: int, group: str) -> Memory:
    now = utcnow()
    content = f"record {n}"
    # "near" records are in a project, "far" ones in a session: a scope filter (not selective: the two-step
    # plan) or a project filter (selective: the full join alone) removes the near ones.
    scope = "project" if group == "near" else "session"
    return Memory(
        id=new_id(),
        content=content,
        content_hash=content_hash(content),
        tenant="acme",
        scope=scope,
        project_id="p1" if group == "near" else None,
        session_id="s1" if group == "far" else None,
        created_at=now,
        updated_at=now,
        source=SourceRef(type="user"),
    )


def _truth(parts: list[np.ndarray], ids: list[str], keep: list[bool], query: np.ndarray, k: int) -> list[str]:
    best = [float(np.max(p @ query)) for p in parts]
    order = sorted((i for i in range(len(ids)) if keep[i]), key=lambda i: (-best[i], ids[i]))
    return [ids[i] for i in order[:k]]


def test_exact_plan_matches_brute_force_when_filters_remove_most_near_neighbours(store: PostgresStore) -> None:
    rng = np.random.default_rng(29)
    centre = _unit(rng.standard_normal(DIMS))
    # 3 x _NEAR_PARTS records of project "near" around one point, 40 of "far" spread out; a third
    # of the records hold two parts, so the nearest parts name fewer records than parts.
    projects = ["near"] * (3 * _NEAR_PARTS) + ["far"] * 40
    parts: list[np.ndarray] = []
    for project in projects:
        spread = 0.2 if project == "near" else 2.0
        count = 2 if rng.random() < 0.33 else 1
        parts.append(_unit(centre + spread * rng.standard_normal((count, DIMS))))
    items = [(_record(n, p), list(v)) for n, (p, v) in enumerate(zip(projects, parts, strict=True))]
    store.put_many(items)
    ids = [m.id for m, _ in items]
    now = utcnow() + timedelta(seconds=1)
    assert store._tenant_vectors(store.db.reader(), "acme") <= store.exact_max  # the exact plan answers
    for n in range(60):
        query = _unit(centre + 0.3 * rng.standard_normal(DIMS))
        cases = {
            "far": SearchFilters(tenant="acme", scopes=["session"]),
            "near": SearchFilters(tenant="acme", scopes=["project"]),
            "all": SearchFilters(tenant="acme", scopes=["project", "session"]),
            "far, selective": SearchFilters(tenant="acme", scopes=["session"], session_id="s1"),
        }
        for case, filters in cases.items():
            keep = [case == "all" or case.startswith(p) for p in projects]
            for k in (10, 60):
                got = [i for i, _ in store.vector_search(query, filters, k=k, now=now)]
                assert got == _truth(parts, ids, keep, query, k), (n, case, k)


# -- the plan's choice (funes.store.pg_plan): filters seen to keep a small share go straight to the join --


def _records(rng: np.random.Generator, count: int, start: int) -> tuple[list[tuple[Memory, list[np.ndarray]]], list]:
    now = utcnow()
    items, rows = [], []
    for n in range(start, start + count):
        kind = "preference" if n % 20 == 0 else "fact"  # 5% preferences
        content = f"record {n}"
        vector = rng.standard_normal(DIMS).astype(np.float32)
        vector /= np.linalg.norm(vector)
        memory = Memory(
            id=new_id(),
            content=content,
            content_hash=content_hash(content),
            tenant="acme",
            scope="team",
            memory_type=kind,
            created_at=now,
            updated_at=now,
            source=SourceRef(type="user"),
        )
        items.append((memory, [vector]))
        rows.append((memory.id, kind, vector))
    return items, rows


def _kind_truth(rows: list, query: np.ndarray, kind: str | None, k: int) -> list[str]:
    kept = [(float(v @ query), i) for i, t, v in rows if kind is None or t == kind]
    return [i for _, i in sorted(kept, key=lambda s: (-s[0], s[1]))[:k]]


def _plan(store: PostgresStore, query: np.ndarray, filters: SearchFilters, k: int) -> tuple[list[str], str]:
    """The hits of one exact search and which plan its statement took ("two steps" or "join")."""
    counter = store.db.counter
    counter.log = []
    hits, _fields = store.vector_leg(query, filters, k=k)
    log, counter.log = counter.log, None
    vector_sql = [sql for _, sql in log if "memory_vectors" in sql and "<=>" in sql]
    assert len(vector_sql) == 1
    return [i for i, _ in hits], "two steps" if "WITH near" in vector_sql[0] else "join"


def test_a_filter_seen_to_keep_a_small_share_takes_the_full_join_and_every_answer_stays_exact(
    store: PostgresStore,
) -> None:
    rng = np.random.default_rng(3)
    items, rows = _records(rng, 600, 0)
    store.put_many(items)
    store.term_stats(["record"])  # the keyword statement reads the store's generation, which shares follow
    narrow = SearchFilters(tenant="acme", memory_types=("preference",))
    wide = SearchFilters(tenant="acme")
    plans = []
    for _ in range(6):
        query = rng.standard_normal(DIMS).astype(np.float32)
        query /= np.linalg.norm(query)
        for filters, kind in ((narrow, "preference"), (wide, None)):
            hits, plan = _plan(store, query, filters, 10)
            assert hits == _kind_truth(rows, query, kind, 10)
            plans.append((kind, plan))
    # The first narrow search takes the two steps (falling short: 5 of 100 near records pass) and learns it.
    assert plans[0] == ("preference", "two steps")
    assert [p for kind, p in plans[2:] if kind == "preference"] == ["join"] * 5
    assert {p for kind, p in plans if kind is None} == {"two steps"}
    # 30 more records (5% more than the 600 the share was seen at): the share is seen again.
    more, more_rows = _records(rng, 30, 600)
    store.put_many(more)
    rows += more_rows
    store.term_stats(["record"])
    query = rng.standard_normal(DIMS).astype(np.float32)
    query /= np.linalg.norm(query)
    hits, plan = _plan(store, query, narrow, 10)
    assert (hits, plan) == (_kind_truth(rows, query, "preference", 10), "two steps")
    hits, plan = _plan(store, query, narrow, 10)
    assert (hits, plan) == (_kind_truth(rows, query, "preference", 10), "join")


def test_the_near_step_is_sized_by_the_records_kept_per_near_vector_and_every_answer_stays_exact(
    store: PostgresStore,
) -> None:
    """Once a filter set was seen, the near step takes about 2k records' worth of vectors: fewer than 4k when each
    record has one vector, more when records have several (passage windows), which fell short every time."""
    rng = np.random.default_rng(11)
    tenants = {"solo": 1, "multi": 5}  # vectors per record
    truth: dict[str, tuple[list[np.ndarray], list[str]]] = {}
    for tenant, count in tenants.items():
        items = []
        for n in range(300):
            memory = replace(_record(n, "near"), tenant=tenant, scope="team", project_id=None)
            # A record's parts lie close together, as a text's passage windows do.
            base = rng.standard_normal(DIMS)
            items.append((memory, list(_unit(base + 0.05 * rng.standard_normal((count, DIMS))))))
        store.put_many(items)
        truth[tenant] = ([np.vstack(v) for _, v in items], [m.id for m, _ in items])
    store.term_stats(["record"])  # the keyword statement reads the store's generation, which shares follow
    sent: list[int] = []
    run = store._generic

    def generic(sql: str, params: list) -> list:
        sent.append(int(params[2]))  # the near step's LIMIT
        return run(sql, params)

    store._generic = generic  # type: ignore[method-assign]
    k = 30
    for tenant in tenants:
        parts, ids = truth[tenant]
        for _ in range(3):
            query = _unit(rng.standard_normal(DIMS))
            hits, _fields = store.vector_leg(query, SearchFilters(tenant=tenant), k=k)
            assert [i for i, _ in hits] == _truth(parts, ids, [True] * len(ids), query, k)
    first_solo, *later_solo, first_multi = sent[:4]
    assert first_solo == first_multi == 4 * k  # not seen yet
    assert later_solo == [_NEAR_PARTS, _NEAR_PARTS]  # 2k = 60 records' worth, at least _NEAR_PARTS
    assert all(near >= 2 * k * 5 * 0.8 for near in sent[4:]), sent  # five vectors a record: about 2k x 5
