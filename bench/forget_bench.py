"""Forget time for a user with many records (issue 25), against baselines from the same run.

One SQLite store holds ``--records`` records of one user (each with a chat
message, an access-log row from a search, and a learned-looking derived
record every 20th) beside ``--others`` records of other users. Timed:

* baseline A, writing: ``remember_many`` of the user's records (hash
  embedder: the bench measures storage, not the model);
* baseline B, the plain delete: ``Funes.forget_many`` of one record, then of
  1,000 records (row, vectors, keyword rows only);
* ``forget_everywhere(user=...)``: plan, purge in one transaction, FTS5
  merge, secure_delete, WAL truncate, token hashes; and ``verify_forgotten``.

    python bench/forget_bench.py                   # 10k records, ~1-2 min on 2 cores
    python bench/forget_bench.py --records 2000    # quick
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

import funes
from funes.providers.embed import HashEmbedder

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu ramen okapi tapir boiler vault"
).split()


def _text(rng: random.Random, i: int, secret: bool) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return f"{words} {'secretword' if secret else 'plainword'}{i} note {i}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=5_000)
    parser.add_argument("--workdir", help="Where the store goes (default: a temporary directory).")
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="forget-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    mem = funes.open(str(work / "bench.db"), embedder=HashEmbedder(64), worker="off", max_records_total=10_000_000)
    try:
        others = [{"content": _text(rng, i, False), "user": f"u{i % 50}"} for i in range(args.others)]
        mem.remember_many(others)
        mine = [{"content": _text(rng, i, True), "user": "heavy"} for i in range(args.records)]
        started = time.perf_counter()
        mem.remember_many(mine)
        write = time.perf_counter() - started
        mem.session("hs", user="heavy")
        for i in range(min(200, args.records)):
            mem.add_message("hs", "user", f"I prefer secretword{i} seats.")
        for i in range(0, min(200, args.records), 10):
            mem.search(f"secretword{i}", user="heavy")
        ids = [m.id for m in mem.list(user="heavy", limit=1000).items if m.user_id == "heavy"]
        started = time.perf_counter()
        mem.forget_many(ids[:1])
        delete_one = time.perf_counter() - started
        started = time.perf_counter()
        mem.forget_many(ids[1:1000])
        delete_1000 = time.perf_counter() - started
        left = len(mem.store.ids_of_user(mem.core.tenant_of(None), "heavy"))
        started = time.perf_counter()
        receipt = mem.forget_everywhere(user="heavy")
        forget = time.perf_counter() - started
        started = time.perf_counter()
        report = mem.verify_forgotten(receipt["id"])
        verify = time.perf_counter() - started
        size = sum(p.stat().st_size for p in mem.store.storage_files())
    finally:
        mem.close()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"store: {args.others} other records + {args.records} of the user; {size / 1e6:.1f} MB after")
    print(f"baseline A  remember_many of the user's {args.records} records: {write:.2f} s")
    print(f"baseline B  forget_many of 1 record: {delete_one * 1000:.1f} ms; of 999 records: {delete_1000:.2f} s")
    print(
        f"forget_everywhere(user) of {left} records + {receipt['counts']['messages']} messages: {forget:.2f} s "
        f"({forget / write:.2f}x the write, {forget / max(delete_1000, 1e-9) * 999 / max(left, 1):.2f}x "
        "the plain delete per record)"
    )
    print(
        f"verify_forgotten: {verify:.2f} s over {sum(report['files_scanned'].values())} files, found {report['found']}"
    )


if __name__ == "__main__":
    main()
