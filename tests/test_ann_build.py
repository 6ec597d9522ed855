"""The approximate index is built away from the requests: searches during a build, the swap, a killed build."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_ann_index import DIMS, fill, open_pair, queries, recall
from test_vector_cache import NOW

from funes.models import Memory, SearchFilters
from funes.store import ann_build, ann_index
from funes.store.sqlite import SqliteStore


def _ask_for_the_index(store: SqliteStore) -> None:
    for _ in range(ann_index.BUILD_ON_SEARCH):
        store.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert store.index_work() == ["big"]


def _hold_the_build(store: SqliteStore) -> ann_build.FileLock:
    """The tenant's index lock, taken: a build started now waits on it, as behind another process's build."""
    assert store.ann.dir is not None
    store.ann.dir.mkdir(parents=True, exist_ok=True)
    lock = ann_build.FileLock(store.ann.dir / f"{ann_build.stem('big')}.lock")
    lock.__enter__()
    return lock


def _build_processes() -> list[int]:
    """Pids of this process's index-build children."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if ppid == str(os.getpid()) and b"funes.store.ann_build" in cmdline:
            out.append(int(entry.name))
    return out


def _own_vector_hits(ann: SqliteStore, exact: SqliteStore, records: list[Memory]) -> None:
    """Each record's own vector finds what the exact path finds (the record itself when visible)."""
    vectors = exact.vectors_for([m.id for m in records])
    for record in records:
        if record.id in vectors:
            query = vectors[record.id][0]
            want = exact.vector_search(query, SearchFilters(tenant="big"), k=1, now=NOW)
            got = ann.vector_search(query, SearchFilters(tenant="big"), k=1, now=NOW)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


def test_searches_during_a_build_answer_exactly_and_the_swap_brings_the_writes_made_meanwhile(tmp_path: Path) -> None:
    ann, exact = open_pair(tmp_path / "b.db")
    ann.ann.isolate_min = 0  # in a child process, as a large tenant's build is
    fill(ann, "big", 3000, seed=1)
    _ask_for_the_index(ann)
    lock = _hold_the_build(ann)
    outcome: dict[str, str] = {}
    job = threading.Thread(target=lambda: outcome.update(done=ann.maintain_index("big")))
    job.start()
    try:
        while job.is_alive() and not _build_processes():
            time.sleep(0.05)
        assert _build_processes(), "no build process started"
        # The build is under way (its process waits): searches are answered by the exact path meanwhile.
        for query, filters in queries(41, 30, filtered=True):
            got = ann.vector_search(query, filters, k=10, now=NOW)
            assert got == exact.vector_search(query, filters, k=10, now=NOW)
        assert job.is_alive() and "big" not in ann.ann._tenants and ann.ann.searches == 0
        added = fill(exact, "big", 100, seed=2)
        gone, added = added[:20], added[20:]
        exact.delete([m.id for m in gone])
    finally:
        lock.__exit__()
    # Writes go on while it builds, at least one after its snapshot (the manifest it saves is written after).
    manifest, after_save, seed = ann.ann.manifest_path("big"), False, 100
    while job.is_alive() or not after_save:
        saved = manifest.exists()
        added += fill(exact, "big", 10, seed=seed)
        seed, after_save = seed + 1, after_save or saved
    job.join()
    assert outcome["done"] == "built" and ann.ann.builds == 1
    # Built by another process (the file is named after its writer's pid): not under this one's GIL.
    assert not json.loads(manifest.read_text())["file"].endswith(f"-{os.getpid()}.usearch")
    entry = ann.ann._tenants["big"]
    _, top = ann_index._log_bounds(ann.db.reader())
    assert entry.seq < top  # some writes are not in the built files: the delta answers them
    _own_vector_hits(ann, exact, added)
    assert ann.ann.searches > 0  # answered by the index now
    removed = {m.id for m in gone}
    for query, filters in queries(42, 40, filtered=False):
        assert not removed & {i for i, _ in ann.vector_search(query, filters, k=20, now=NOW)}
    assert recall(ann, exact, queries(43, 40, filtered=True)) >= 0.99
    # A catch-up in a child process is swapped in the same way; the index it replaced answered meanwhile.
    ann.ann.delta_min = 50
    more = fill(exact, "big", 80, seed=7)
    ann.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert ann.index_work() == ["big"]
    assert ann.maintain_index("big") == "caught up" and ann.ann.catchups == 1
    assert ann.ann._tenants["big"].seq == ann_index._log_bounds(ann.db.reader())[1]
    _own_vector_hits(ann, exact, more)


def test_a_build_process_killed_leaves_the_store_as_it_was_and_the_job_runs_again(tmp_path: Path) -> None:
    import funes
    from funes.providers.embed import HashEmbedder

    with funes.open(
        str(tmp_path / "k.db"), embedder=HashEmbedder(DIMS), worker="off", ann_min=500, job_backoff_seconds=0
    ) as mem:
        store = mem.store
        assert isinstance(store, SqliteStore)
        store.ann.isolate_min = 0
        mem.remember_many([f"note {i} about topic {i % 37}" for i in range(700)], tenant="big")
        before = [h.memory.id for h in mem.search("topic 5", tenant="big", min_relevance=0)]
        for _ in range(ann_index.BUILD_ON_SEARCH):
            mem.search("topic 5", tenant="big", min_relevance=0)
        (job,) = mem.jobs.list(kind="ann-index")
        lock = _hold_the_build(store)
        ran: dict[str, int] = {}
        runner = threading.Thread(target=lambda: ran.update(mem.run_jobs(kinds=["ann-index"])))
        runner.start()
        try:
            children: list[int] = []
            while runner.is_alive() and not (children := _build_processes()):
                time.sleep(0.05)
            assert children, "no build process started"
            os.kill(children[0], signal.SIGKILL)
            runner.join()
        finally:
            lock.__exit__()
        assert ran["done"] == 0
        failed = mem.jobs.get(job.id)
        assert (
            failed.status == "queued"
            and failed.attempts == 1
            and "index build process failed" in str(failed.last_error)
        )
        assert not store.ann.manifest_path("big").exists() and "big" not in store.ann._tenants
        assert [h.memory.id for h in mem.search("topic 5", tenant="big", min_relevance=0)] == before
        assert mem.run_jobs(kinds=["ann-index"])["done"] == 1
        assert mem.jobs.get(job.id).result == {"index": "built"}
        served = store.ann.searches
        assert [h.memory.id for h in mem.search("topic 5", tenant="big", min_relevance=0)] == before
        assert store.ann.searches == served + 1
