"""Loads on the PostgreSQL store tracked across calls: when a load keeps the HNSW index and when it defers it.

pgvector cannot add rows to an HNSW index in bulk: each row is a graph
insert (2 ms at 10k vectors, bench/pg_write_bench.py), while a build from
scratch costs 0.27 ms per vector. A load made of many calls (an import loop
writing a thousand records a call) is one load, so its size is counted across
calls and across processes: every ``put_many`` of at least ``TRACK_MIN``
vectors adds its count to one row of ``meta`` (key ``pg_load``: the database
clock of the last such write and the vectors written since the store was last
quiet for ``quiet`` seconds), in the same statement that reads the index's
state and the whole store's size from the catalog (row-level security would
narrow a ``count(*)`` to one tenant; the index is the whole store's).

When the load so far is at least ``REBUILD_MIN`` vectors and the store holds
at most ``REBUILD_SHARE`` times as many, the ``ann-index`` job is queued
(first, in its own transaction, to run once the store has been quiet) and the
index dropped ``CONCURRENTLY``. The calls after it write into a table with no
graph to extend. The job builds the index only when no load has written for
``quiet`` seconds; before that it queues itself again for the moment the
store turns quiet, so the index is built once, after the load, by the one
durable job runner. A process killed mid-load leaves the queued job behind.
Searches meanwhile scan the tenant's vectors exactly (docs/postgres.md gives
their cost).
"""

from __future__ import annotations

from typing import Any

LOAD_KEY = "pg_load"
LOAD_QUIET = 10.0  # seconds without a tracked write after which a load is over and its index may be built
TRACK_MIN = 100  # vectors a put_many brings for the load to count it (a single remember is not a load)
# Rebuilding the HNSW index beats extending it when a load brings at least REBUILD_MIN vectors and
# the store holds at most REBUILD_SHARE times as many: bench/pg_write_bench.py measured 2 ms to insert
# one vector into the graph of 10k and 0.27 ms per vector to build it whole (7.4x; 18x under load).
REBUILD_MIN = 1000
REBUILD_SHARE = 6.0
# The whole store's vectors, which row-level security would hide from a count(*): the statistics'
# live rows (current at each commit) or the planner's estimate, whichever is larger.
HELD = (
    "SELECT greatest(c.reltuples, s.n_live_tup, 0) FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE c.oid = 'memory_vectors'::regclass"
)
# The database's clock, shared by every process writing to it.
_NOW = "extract(epoch FROM clock_timestamp())"
#: Whether the HNSW index is valid (no row: there is none).
HNSW_VALID = "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('memory_vectors_hnsw')"
_RECORD = (
    "WITH w AS (INSERT INTO meta (key, value) VALUES (%s, " + _NOW + "::text || ' ' || %s::text) "
    "ON CONFLICT (key) DO UPDATE SET value = split_part(excluded.value, ' ', 1) || ' ' || (CASE WHEN "
    "split_part(excluded.value, ' ', 1)::float8 - split_part(meta.value, ' ', 1)::float8 <= %s "
    "THEN split_part(meta.value, ' ', 2)::bigint ELSE 0 END + split_part(excluded.value, ' ', 2)::bigint)::text "
    "RETURNING value) "
    "SELECT split_part(w.value, ' ', 2)::bigint, "
    f"({HNSW_VALID}), ({HELD}) FROM w"
)
# Seconds until the store has been quiet for the given seconds (0 or less: quiet now; no row: never loaded).
_WAIT = "SELECT split_part(value, ' ', 1)::float8 + %s - " + _NOW + " FROM meta WHERE key = %s"


def worth_rebuilding(incoming: int, held: float) -> bool:
    """Whether building the index again after ``incoming`` vectors beats extending a graph of ``held``."""
    return incoming >= REBUILD_MIN and held <= incoming * REBUILD_SHARE


def record_load(conn: Any, incoming: int, quiet: float) -> tuple[int, bool | None, float]:
    """Count a write of ``incoming`` vectors into the load: (the load's vectors so far, this one included,
    the index's state: None absent, False invalid or being built, True valid; the whole store's vectors).
    """
    row = conn.native(_RECORD, [LOAD_KEY, int(incoming), float(quiet)]).fetchone()
    return int(row[0]), row[1], float(row[2])


def quiet_in(conn: Any, quiet: float) -> float:
    """Seconds until no tracked load has written for ``quiet`` seconds (0: the store is quiet now)."""
    row = conn.native(_WAIT, [float(quiet), LOAD_KEY]).fetchone()
    return max(0.0, float(row[0])) if row is not None else 0.0


def end_load(conn: Any) -> None:
    """The load is over (its index is being built): the next tracked write starts a new one."""
    conn.native("UPDATE meta SET value = split_part(value, ' ', 1) || ' 0' WHERE key = %s", [LOAD_KEY])
