"""A longer schemathesis run over the team server than the test suite's: every operation, then linked scenarios.

On SQLite, and on PostgreSQL when pgserver is installed (a throwaway server
is started and removed). Prints, per backend, the calls made and the failures
found (5xx, or an answer the OpenAPI document does not declare); exits 1 if
any. ``--seed`` varies the generated input between runs.

    python bench/schemathesis_run.py [--examples 100] [--scenarios 200] [--steps 10] [--seed N] [--no-postgres]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from api_fuzz import open_service, run_operations, run_stateful, server_schema


def _postgres(stack: list) -> str | None:
    try:
        import local_postgres
        import psycopg

        local_postgres.package_name()  # raises ModuleNotFoundError without a local package
    except ImportError:
        return None
    server = local_postgres.get_server(tempfile.mkdtemp(prefix="funes-bench-pg-"), cleanup_mode="delete")
    stack.append(server)
    admin = urlsplit(server.get_uri())
    with psycopg.connect(urlunsplit(admin), autocommit=True) as conn:
        # An ordinary role, as in production: row-level security applies to it.
        conn.execute("CREATE ROLE funes_fuzz LOGIN PASSWORD 'funes_fuzz' NOSUPERUSER NOBYPASSRLS")
        conn.execute("CREATE DATABASE funes_fuzz OWNER funes_fuzz")
    with psycopg.connect(urlunsplit((*admin[:2], "/funes_fuzz", admin.query, "")), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    where = (admin.hostname or "") + (f":{admin.port}" if admin.port else "")
    return urlunsplit((admin.scheme, f"funes_fuzz:funes_fuzz@{where}", "/funes_fuzz", admin.query, ""))


def main(argv: list[str] | None = None) -> int:
    """Run both phases on each backend; print the failures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100, help="Generated inputs per operation.")
    parser.add_argument("--scenarios", type=int, default=200, help="Linked scenarios.")
    parser.add_argument("--steps", type=int, default=10, help="Calls per scenario at most.")
    parser.add_argument("--seed", type=int, default=None, help="Random seed (default: derandomized).")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only.")
    args = parser.parse_args(argv)
    stack: list = []
    backends = [("sqlite", str(Path(tempfile.mkdtemp(prefix="funes-fuzz-")) / "fuzz.db"))]
    if not args.no_postgres:
        url = _postgres(stack)
        if url is None:
            print("postgres: skipped (pgserver is not installed)")
        else:
            backends.append(("postgres", url))
    failed = 0
    try:
        for name, where in backends:
            service = open_service(where)
            schema, key = server_schema(service)
            operations = sum(1 for _ in schema.get_all_operations())
            started = time.perf_counter()
            found = run_operations(schema, key, examples=args.examples, seed=args.seed)
            found += run_stateful(schema, key, scenarios=args.scenarios, steps=args.steps)
            service.close()
            print(
                f"{name:>8}: {operations} operations x {args.examples} inputs, {args.scenarios} linked scenarios "
                f"of <= {args.steps} calls in {time.perf_counter() - started:.0f} s: {len(found)} failures"
            )
            for failure in found:
                print("    " + failure.replace("\n", "\n    "))
            failed += len(found)
    finally:
        for server in stack:
            server.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
