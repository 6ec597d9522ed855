"""How many rows the iterative HNSW scan of a PostgreSQL search asks for (issue 29).

The scan walks the graph until that many rows passed the filters, then the best part of each record is kept.
It asks for about 1.5 rows per record it keeps per vector the tenant's records hold on average
(:func:`funes.store.pg_plan.iterative_rows`): a fixed ``4k`` rows walked twice as far as a tenant of one vector
per record needs, and left a tenant of long records (many parts each) short of ``k`` records, which sent every
search of it to the exact plan. The plan is read from the statements sent (the connection's statement log).
"""

from __future__ import annotations

import numpy as np
import pytest
import test_pg_exact
from test_pg_exact import DIMS, _unit

from funes.models import Memory, SearchFilters, SourceRef, content_hash, new_id, utcnow
from funes.store import pg_plan
from funes.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres

store = test_pg_exact.store  # the fixture: a PostgresStore of DIMS dimensions


def _record(n: int, tenant: str) -> Memory:
    now = utcnow()
    content = f"{tenant} record {n}"
    return Memory(
        id=new_id(),
        content=content,
        content_hash=content_hash(content),
        tenant=tenant,
        scope="team",
        created_at=now,
        updated_at=now,
        source=SourceRef(type="user"),
    )


def _fill(store: PostgresStore, tenant: str, parts: int, count: int, rng: np.random.Generator) -> list:
    """``count`` records of ``parts`` vectors each, a record's parts close together; their ids and vectors."""
    items = []
    for n in range(count):
        centre = rng.standard_normal(DIMS)
        items.append((_record(n, tenant), list(_unit(centre + 0.05 * rng.standard_normal((parts, DIMS))))))
    store.put_many(items)
    return items


def _truth(items: list, query: np.ndarray, k: int) -> list[str]:
    best = {m.id: float(np.max(np.stack(v) @ query)) for m, v in items}
    return sorted(best, key=lambda i: (-best[i], i))[:k]


def _vector_statements(store: PostgresStore, query: np.ndarray, tenant: str, k: int) -> tuple[list[str], list[str]]:
    counter = store.db.counter
    counter.log = []
    found = store.vector_search(query, SearchFilters(tenant=tenant), k=k, now=utcnow())
    log, counter.log = counter.log, None
    return [i for i, _ in found], [sql for _, sql in log if "memory_vectors" in sql]


def test_the_rows_asked_follow_the_tenant_s_vectors_per_record() -> None:
    assert pg_plan.iterative_rows(50) == 200  # unknown: 4k, as before
    assert pg_plan.iterative_rows(50, 1.0) == 75
    assert pg_plan.iterative_rows(10, 6.0) == 90  # more than 4k: long records need more rows for k records
    assert pg_plan.iterative_rows(5, 1.0) == 40  # never fewer than 40
    assert pg_plan.iterative_rows(50, 0.4) == 75  # records without vectors yet never ask below one a record


def test_a_tenant_of_long_records_is_answered_by_the_index_with_the_exact_answer(store: PostgresStore) -> None:
    store.exact_max = 0  # every tenant takes the HNSW plan
    store.load_quiet = 0.0  # the index is built as soon as asked
    rng = np.random.default_rng(29)
    long_items = _fill(store, "acme", 6, 80, rng)  # six parts a record: 4k rows held about 7 records for k=10
    short_items = _fill(store, "globex", 1, 300, rng)
    for tenant in store.index_work():
        store.maintain_index(tenant)
    store.db.reader().native("ANALYZE memory_vectors")
    assert pg_plan.vectors_per_record(store, "acme") == 6.0
    assert pg_plan.vectors_per_record(store, "globex") == 1.0
    for n in range(20):
        query = _unit(rng.standard_normal(DIMS))
        for tenant, items in (("acme", long_items), ("globex", short_items)):
            got, statements = _vector_statements(store, query, tenant, 10)
            assert got == _truth(items, query, 10), (n, tenant)
            # One statement, the index's: no exact plan behind it (its first step is "WITH near").
            hnsw = [s for s in statements if "ORDER BY v.embedding <=>" in s]
            assert len(hnsw) == 1 and not any("WITH near" in s for s in statements), (n, tenant, statements)
