"""The exact vector plan of PostgreSQL (tenants of at most ``exact_max`` vectors), issue 29.

It sorts the tenant's vectors by distance alone, then joins and filters the nearest; when filters
leave fewer than k records among those, the full join answers in the same statement. Both paths
must give exactly the brute-force answer: the best part of each record, in order.
"""

from __future__ import annotations

from collections.abc import Iterator
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
