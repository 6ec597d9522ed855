"""The memory-stores service against plain records: what a version row, the store lock and the path checks cost.

Run from the repository root (under a minute on 2 cores)::

    .venv/bin/python bench/memory_stores_bench.py --memories 500

Both sides use the deterministic hash embedder, so the figures are the
storage path, not the model. Baselines are measured in the same run on a
fresh SQLite store each: ``Funes.remember`` (create), ``Funes.update``
(a new version) and ``Funes.list`` (a page of 20) against
``memory_stores.create_memory``, ``update_memory`` with a ``content_sha256``
precondition, and ``list_memories`` (a page of 20, view=basic), also with
``path_prefix`` and ``depth=1`` and from a cursor half way through, and
``list_versions`` filtered by author (``api_key_id``); every filter runs in
the query, so a page should cost about the same at any store size (compare
``--memories 500`` with ``--memories 5000``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import funes


def timed(calls: list[Callable[[], object]]) -> list[float]:
    """Each call's time in milliseconds."""
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def row(name: str, base: list[float], ours: list[float]) -> str:
    b, o = statistics.median(base), statistics.median(ours)
    return f"{name:<28} {b:8.2f} ms {o:8.2f} ms {o / b:6.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=500)
    args = parser.parse_args()
    n = args.memories
    with tempfile.TemporaryDirectory() as tmp:
        with funes.open(str(Path(tmp) / "base.db"), embedder="hash", worker="off") as plain:
            ids: list[str] = []
            create_base = timed(
                [lambda i=i: ids.append(plain.remember(f"note {i} about topic {i % 17}").id) for i in range(n)]
            )
            update_base = timed([lambda i=i: plain.update(ids[i], content=f"note {i} changed") for i in range(n)])
            list_base = timed([lambda: plain.list(limit=20) for _ in range(50)])
        with funes.open(str(Path(tmp) / "stores.db"), embedder="hash", worker="off") as served:
            ms = served.memory_stores
            store = ms.create_store("bench")["id"]
            made: list[dict[str, str]] = []
            create_ours = timed(
                [
                    lambda i=i: made.append(
                        ms.create_memory(
                            store,
                            f"/n/{i % 25:02d}/{i:05d}.md",
                            f"note {i} about topic {i % 17}",
                            actor={"type": "api_actor", "api_key_id": f"key_{i % 5}"},
                        )
                    )
                    for i in range(n)
                ]
            )
            update_ours = timed(
                [
                    lambda i=i: ms.update_memory(
                        store,
                        made[i]["id"],
                        content=f"note {i} changed",
                        precondition={"type": "content_sha256", "content_sha256": made[i]["content_sha256"]},
                    )
                    for i in range(n)
                ]
            )
            list_ours = timed([lambda: ms.list_memories(store, limit=20) for _ in range(50)])
            halfway = None
            for _ in range(n // 40):
                halfway = ms.list_memories(store, limit=20, page=halfway)["next_page"]
            deep_ours = timed([lambda: ms.list_memories(store, limit=20, page=halfway) for _ in range(50)])
            prefix_ours = timed([lambda: ms.list_memories(store, path_prefix="/n/07/", limit=20) for _ in range(50)])
            depth_ours = timed(
                [lambda: ms.list_memories(store, path_prefix="/n/", depth=1, limit=20) for _ in range(50)]
            )
            author_ours = timed([lambda: ms.list_versions(store, api_key_id="key_3", limit=20) for _ in range(50)])
    print(f"{n} memories, hash embedder, SQLite; median per call (baseline, memory stores, ratio)")
    print(row("create", create_base, create_ours))
    print(row("update (new version)", update_base, update_ours))
    print(row("list a page of 20", list_base, list_ours))
    print(row("  from a cursor half way", list_base, deep_ours))
    print(row("  with path_prefix", list_base, prefix_ours))
    print(row("  depth=1 (20 prefixes)", list_base, depth_ours))
    print(row("versions by api_key_id", list_base, author_ours))


if __name__ == "__main__":
    main()
