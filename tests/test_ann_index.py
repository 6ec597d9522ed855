"""The approximate vector index: recall against the exact path, filters, staleness, corruption and killed writers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from test_vector_cache import NOW, make_record, random_filters

from funes.models import EmbedderIdentity, Memory, SearchFilters
from funes.store import ann_build, ann_columns, ann_index
from funes.store.sqlite import SqliteStore

DIMS = 48
SRC = str(Path(__file__).resolve().parents[1] / "src")


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Vectors near 40 centres, so neighbours are close and near-ties exist, like real embeddings."""
    centres = rng.standard_normal((40, DIMS))
    x = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIMS))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def fill(store: SqliteStore, tenant: str, count: int, seed: int) -> list[Memory]:
    """``count`` records with one clustered vector each."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    vecs = clustered(nrng, count)
    items = [(make_record(rng, tenant), [vecs[i]]) for i in range(count)]
    store.put_many(items)
    return [m for m, _ in items]


def open_pair(path: Path, ann_min: int = 500) -> tuple[SqliteStore, SqliteStore]:
    """(ann, exact): the same file through the approximate index and through sqlite-vec."""
    ann = SqliteStore(path, vector_cache_min=0, ann_min=ann_min)
    ann.set_identity(EmbedderIdentity("test-model", DIMS))
    return ann, SqliteStore(path, vector_cache_min=0, ann_min=0)


def recall(ann: SqliteStore, exact: SqliteStore, queries: list[tuple[np.ndarray, SearchFilters]], k: int = 10) -> float:
    """Mean share of the exact top-k found; also checks every hit is a true, filter-passing hit."""
    shares = []
    for n, (query, filters) in enumerate(queries):
        truth = exact.vector_search(query, filters, k=k, now=NOW)
        got = ann.vector_search(query, filters, k=k, now=NOW)
        if n < 5:  # a wide exact search is slow in vec0: a few queries suffice
            allowed = dict(exact.vector_search(query, filters, k=4096, now=NOW))
            for memory_id, sim in got:
                assert sim == pytest.approx(allowed[memory_id], abs=1e-5)  # passes the filter, exact similarity
        if truth:
            shares.append(len({i for i, _ in got} & {i for i, _ in truth}) / len(truth))
    return float(np.mean(shares))


def queries(seed: int, n: int, filtered: bool) -> list[tuple[np.ndarray, SearchFilters]]:
    """Query vectors from the same mixture, with random filters or only the tenant."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    vecs = clustered(nrng, n)
    return [(v, random_filters(rng, "big") if filtered else SearchFilters(tenant="big")) for v in vecs]


def built(path: Path, count: int = 2000) -> tuple[SqliteStore, SqliteStore]:
    """``open_pair`` on a tenant of ``count`` records whose index is built and saved."""
    ann, exact = open_pair(path)
    fill(ann, "big", count, seed=1)
    warm(ann)
    return ann, exact


def warm(store: SqliteStore) -> None:
    """Search until the index is opened or asked for, then do the asked-for work as the job would."""
    for _ in range(ann_index.BUILD_ON_SEARCH):
        store.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    for tenant in store.index_work():
        store.maintain_index(tenant)
    assert "big" in store.ann._tenants


def test_recall_filtered_and_unfiltered(tmp_path: Path) -> None:
    ann, exact = open_pair(tmp_path / "a.db")
    fill(ann, "big", 6000, seed=1)
    fill(ann, "small", 100, seed=2)
    warm(ann)
    assert ann.ann.builds == 1 and (tmp_path / "a.db.ann").is_dir()
    assert recall(ann, exact, queries(3, 60, filtered=False)) >= 0.99
    assert recall(ann, exact, queries(4, 120, filtered=True)) >= 0.99
    # Served by the graph for the unfiltered queries, not by a scan.
    before = ann.ann.scans
    recall(ann, exact, queries(5, 20, filtered=False))
    assert ann.ann.scans == before
    # A small tenant stays on the exact path.
    for _ in range(3):
        ann.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="small"), k=5, now=NOW)
    assert "small" not in ann.ann._tenants


def test_selective_filter_scans_the_rows_it_passes(tmp_path: Path) -> None:
    ann, exact = open_pair(tmp_path / "s.db")
    fill(ann, "big", 6000, seed=1)
    warm(ann)
    query = np.ones(DIMS, dtype=np.float32)
    # Fewer than k of 6000 records pass: no graph pool would fill, so the passing rows are scanned.
    narrow = SearchFilters(tenant="big", created_after=NOW, created_before=NOW, memory_types=("fact",))
    truth = exact.vector_search(query, narrow, k=10, now=NOW)
    assert 0 < len(truth) < 10
    before = ann.ann.scans
    got = ann.vector_search(query, narrow, k=10, now=NOW)
    assert ann.ann.scans == before + 1
    assert [i for i, _ in got] == [i for i, _ in truth]
    assert ann.vector_search(query, SearchFilters(tenant="big", source_ids=("nope",)), k=10, now=NOW) == []


def test_new_process_opens_saved_index_and_catches_up(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    ann, exact = built(path)
    ann.close()
    # Writes after the save are in the log only.
    added = fill(exact, "big", 300, seed=7)
    deleted = added[:50]
    exact.delete([m.id for m in deleted])
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    again.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert again.ann.builds == 0 and again.ann._tenants["big"].view  # opened, mapped, not rebuilt
    gone = {m.id for m in deleted}
    for query, filters in queries(11, 40, filtered=False):
        assert not gone & {i for i, _ in again.vector_search(query, filters, k=20, now=NOW)}
    # New records are found through the delta (query = a new record's own vector).
    fresh = next(m for m in added[50:] if m.expires_at is None)
    vec = exact.vectors_for([fresh.id])[fresh.id][0]
    assert again.vector_search(vec, SearchFilters(tenant="big"), k=1, now=NOW)[0][0] == fresh.id
    assert recall(again, exact, queries(12, 60, filtered=True)) >= 0.99


def test_large_delta_is_caught_up_and_saved(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    ann, exact = built(path)
    old = json.loads(ann.ann.manifest_path("big").read_text())
    ann.ann.delta_min = 200
    fill(exact, "big", 300, seed=5)
    ann.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert ann.ann.catchups == 0 and ann.index_work() == ["big"]  # a search asks; it never catches up itself
    assert ann.maintain_index("big") == "caught up"
    new = json.loads(ann.ann.manifest_path("big").read_text())
    assert ann.ann.catchups == 1 and new["seq"] > old["seq"] and new["count"] == 2000 + 300
    assert not (path.parent / (path.name + ".ann") / old["file"]).exists()
    assert recall(ann, exact, queries(13, 60, filtered=False)) >= 0.99


@pytest.mark.parametrize("damage", ["truncate", "garbage", "missing", "trimmed-log"])
def test_corrupt_or_outdated_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "r.db"
    ann, exact = built(path)
    manifest = json.loads(ann.ann.manifest_path("big").read_text())
    ann.close()
    index_file = path.parent / (path.name + ".ann") / manifest["file"]
    if damage == "truncate":
        index_file.write_bytes(index_file.read_bytes()[: manifest["bytes"] // 2])
    elif damage == "garbage":
        index_file.write_bytes(os.urandom(manifest["bytes"]))
    elif damage == "missing":
        index_file.unlink()
    else:
        fill(exact, "big", 10, seed=3)
        exact.trim_vector_changes(0)  # the changes since the save are gone from the log
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(again)
    assert again.ann.builds == 1
    assert recall(again, exact, queries(14, 60, filtered=True)) >= 0.99


def test_a_tenant_shrunk_under_the_threshold_drops_an_index_too_old_to_catch_up(tmp_path: Path) -> None:
    """An opened index is caught up however small its tenant got; one the log no longer reaches is dropped,
    not rebuilt, when the tenant is under ``ann_min``: the exact path answers it."""
    path = tmp_path / "s.db"
    ann, exact = built(path)
    records = [m.id for m in exact.list(SearchFilters(tenant="big"), limit=2000).items]
    exact.delete(records[:1800])
    exact.trim_vector_changes(0)
    assert ann.maintain_index("big") == "none"
    assert not list((path.parent / (path.name + ".ann")).glob("*.usearch"))
    query = np.ones(DIMS, dtype=np.float32)
    truth = exact.vector_search(query, SearchFilters(tenant="big"), k=10, now=NOW)
    assert ann.vector_search(query, SearchFilters(tenant="big"), k=10, now=NOW) == truth


# -- killed writers ----------------------------------------------------------------------------
CHILD = textwrap.dedent(
    """
    import os, random, signal, sys
    import numpy as np
    sys.path.insert(0, sys.argv[3])
    from test_ann_index import fill, DIMS, NOW
    from funes.models import SearchFilters
    from funes.store.sqlite import SqliteStore

    path, mode = sys.argv[1], sys.argv[2]
    store = SqliteStore(path, vector_cache_min=0, ann_min=500)
    store.ann.delta_min = 200
    if mode == "writer":
        for seed in range(100, 10000):  # killed by the parent while writing
            fill(store, "big", 50, seed=seed)
            print("batch", flush=True)
    fill(store, "big", 300, seed=8)
    real_replace = os.replace

    def dying_replace(src, dst):
        if mode == "before-manifest" and str(dst).endswith(".json"):
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
        if mode == "after-manifest" and str(dst).endswith(".json"):
            os.kill(os.getpid(), signal.SIGKILL)

    if mode == "mid-save":
        from usearch.index import Index
        def dying_save(self, path_or_buffer=None, progress=None):
            with open(path_or_buffer, "wb") as fh:
                fh.write(b"partial index")
            os._exit(9)
        Index.save = dying_save
    os.replace = dying_replace
    store.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    for tenant in store.index_work():  # what the ann-index job does
        store.maintain_index(tenant)
    print("not killed", flush=True)
    """
)


@pytest.mark.parametrize("mode", ["mid-save", "before-manifest", "after-manifest", "writer"])
def test_killed_writer_leaves_an_index_that_is_caught_up(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "k.db"
    ann, exact = built(path)
    ann.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": SRC}
    tests_dir = str(Path(__file__).resolve().parent)
    if mode == "writer":
        child = subprocess.Popen(
            [sys.executable, str(script), str(path), mode, tests_dir], env=env, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        for _ in range(3):
            assert child.stdout.readline().strip() == "batch"
        time.sleep(0.05)  # most likely inside the next transaction
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
    else:
        done = subprocess.run(
            [sys.executable, str(script), str(path), mode, tests_dir],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (-signal.SIGKILL, 9), done.stderr
        assert "not killed" not in done.stdout
    # The manifest names a complete file (old or new): the next process opens it and catches up.
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(again)
    assert again.ann.builds == 0
    entry = again.ann._tenants["big"]
    _, top = ann_index._log_bounds(again.db.reader())
    assert entry.seq == top or entry.delta_seq == top
    assert recall(again, exact, queries(15, 60, filtered=False)) >= 0.99
    assert recall(again, exact, queries(16, 60, filtered=True)) >= 0.99


def test_a_search_never_builds_the_index_itself_it_queues_a_job(tmp_path: Path) -> None:
    import funes
    from funes.providers.embed import HashEmbedder

    with funes.open(str(tmp_path / "j.db"), embedder=HashEmbedder(32), worker="off", ann_min=500) as mem:
        mem.remember_many([f"note {i} about topic {i % 37}" for i in range(700)])
        for _ in range(ann_index.BUILD_ON_SEARCH + 1):
            assert mem.search("topic 5", min_relevance=0)
        assert mem.store.ann.builds == 0  # type: ignore[attr-defined]
        (job,) = mem.jobs.list(kind="ann-index")
        assert job.status == "queued" and job.payload == {"tenant": "default"}
        assert mem.run_jobs(kinds=["ann-index"])["done"] == 1
        assert mem.jobs.get(job.id).result == {"index": "built"}
        assert mem.store.ann.builds == 1  # type: ignore[attr-defined]
        before = mem.store.ann.searches  # type: ignore[attr-defined]
        assert mem.search("topic 5", min_relevance=0)[0].memory.content.endswith("topic 5")
        assert mem.store.ann.searches == before + 1  # type: ignore[attr-defined]  # answered by the index
        assert mem.jobs.list(kind="ann-index", status="queued") == []


def test_filter_columns_changed_after_the_save_are_honoured(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    ann, exact = built(path)
    ann.close()
    rng = random.Random(21)
    records = list(exact.iter_records("big"))
    moved = rng.sample(records, 300)
    for n, record in enumerate(moved):
        # Metadata only (no new vectors): the change log names the vectors, the saved columns are stale.
        if n % 3 == 0:
            record = record.evolve(scope="session", session_id="s9", project_id=None)
        elif n % 3 == 1:
            record = record.evolve(expires_at=NOW - timedelta(days=3))
        else:
            record = record.evolve(memory_type="decision", kind="message")
        exact.put(record, None)
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    again.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert again.ann._tenants["big"].view and again.ann.builds == 0
    for filters in (
        SearchFilters(tenant="big", session_id="s9", scopes=("session",)),
        SearchFilters(tenant="big", memory_types=("decision",), kinds=("message",)),
        SearchFilters(tenant="big"),
    ):
        qs = [(v, filters) for v, _ in queries(22, 30, filtered=False)]
        assert recall(again, exact, qs) >= 0.99
        allowed = {i for i, _ in exact.vector_search(qs[0][0], filters, k=4096, now=NOW)}
        for query, _ in qs:
            assert {i for i, _ in again.vector_search(query, filters, k=10, now=NOW)} <= allowed


def test_a_selective_filter_is_answered_by_scanning_its_rows(tmp_path: Path) -> None:
    ann, exact = built(tmp_path / "sc.db", count=6000)
    # ~3% of the records: the graph would need a pool far larger than the rows that pass.
    narrow = SearchFilters(
        tenant="big", created_after=NOW - timedelta(days=40), created_before=NOW - timedelta(days=31)
    )
    qs = [(v, narrow) for v, _ in queries(23, 40, filtered=False)]
    before = ann.ann.scans
    assert recall(ann, exact, qs) >= 0.99
    assert ann.ann.scans == before + len(qs)
    # The same through a view (a new process): exact vectors come from the store, not the index.
    ann.close()
    again = SqliteStore(tmp_path / "sc.db", vector_cache_min=0, ann_min=500)
    assert recall(again, exact, qs) >= 0.99
    assert again.ann.scans == len(qs) and again.ann._tenants["big"].view


def test_vectors_for_reads_unchanged_records_from_the_index(tmp_path: Path) -> None:
    ann, exact = built(tmp_path / "v.db")
    ids = [m.id for m in list(exact.iter_records("big"))[:40]]
    changed = exact.get(ids[0])
    assert changed is not None
    exact.put(changed, [np.full(DIMS, 0.5, dtype=np.float32)])  # a new vector after the save
    got = ann.vectors_for([*ids, "no-such-id"])
    want = exact.vectors_for(ids)
    assert set(got) == set(want) == set(ids)
    for memory_id in ids:
        assert [v.tolist() for v in got[memory_id]] == [v.tolist() for v in want[memory_id]]
    assert got[ids[0]][0].tolist() == [0.5] * DIMS


def test_vectors_for_gives_every_part_of_a_long_record_in_order(tmp_path: Path) -> None:
    ann, exact = open_pair(tmp_path / "p.db")
    rng, nrng = random.Random(5), np.random.default_rng(5)
    fill(ann, "big", 1500, seed=1)
    long_ones = [(make_record(rng, "big"), list(clustered(nrng, parts))) for parts in (3, 2, 4)]
    ann.put_many(long_ones)
    warm(ann)
    ids = [m.id for m, _ in long_ones]
    single = [m.id for m in list(exact.iter_records("big"))[:5]]
    # One long record gets new parts after the save: its vectors come from the store, the others' from the index.
    exact.put(long_ones[1][0], list(clustered(nrng, 2)))
    got = ann.vectors_for([*ids, *single])
    want = exact.vectors_for([*ids, *single])
    assert [len(got[i]) for i in ids] == [3, 2, 4]
    for memory_id in [*ids, *single]:
        assert [v.tolist() for v in got[memory_id]] == [v.tolist() for v in want[memory_id]]


def test_a_records_rows_are_found_the_same_through_the_sorted_ids_or_the_permutation(tmp_path: Path) -> None:
    """The saved ``ids_sorted`` column and, for a file written before it, ``by_id`` over ``ids`` find the same
    rows: one-part and several-part records, ids not indexed, an id longer than any indexed."""
    ann, exact = open_pair(tmp_path / "s.db")
    rng, nrng = random.Random(9), np.random.default_rng(9)

    def shuffled(parts: int) -> tuple[Memory, list[np.ndarray]]:  # ids in no relation to the insert (key) order
        return make_record(rng, "big", id=f"{rng.getrandbits(64):x}" * rng.randint(1, 2)), list(clustered(nrng, parts))

    ann.put_many([shuffled(1) for _ in range(1500)])
    long_ones = [shuffled(parts) for parts in (3, 2, 5)]
    ann.put_many(long_ones)
    warm(ann)
    columns = ann.ann._tenants["big"].columns
    assert columns.ids_sorted is not None and columns.ids_sorted.tolist() == sorted(columns.ids.tolist())
    ids = [m.id for m in exact.iter_records("big")]
    wanted = [*ids[::7], *(m.id for m, _ in long_ones), "no-such-id", "x" * 80, ids[0][:-1], ids[-1] + "0"]
    saved = columns.rows_of_ids(wanted)
    columns.ids_sorted = None  # as a file written before the column
    before = columns.rows_of_ids(wanted)
    assert saved.keys() == before.keys() == set(wanted) - {"no-such-id", "x" * 80, ids[0][:-1], ids[-1] + "0"}
    assert all(saved[i].tolist() == before[i].tolist() for i in saved)
    assert [len(saved[m.id]) for m, _ in long_ones] == [3, 2, 5]


def test_the_optimize_job_gives_an_index_saved_before_the_sorted_ids_that_column(tmp_path: Path) -> None:
    """An index whose columns were saved before ``ids_sorted`` gains it at the store's optimize: a new columns file
    with the same arrays and that one, the manifest moved to it, the old file gone. The opened entry swaps it in, a
    new process opens it, and searches and the keyword hits' vectors are the same before and after."""
    path = tmp_path / "o.db"
    ann, exact = open_pair(path)
    rng, nrng = random.Random(3), np.random.default_rng(3)
    # Ids in no relation to the insert (key) order, so the sorted ids are not the ids.
    ann.put_many(
        [(make_record(rng, "big", id=f"{rng.getrandbits(64):x}"), list(clustered(nrng, 1))) for _ in range(1500)]
    )
    warm(ann)
    directory, manifest_file = ann.ann.dir, ann.ann.manifest_path("big")
    assert directory is not None
    manifest = json.loads(manifest_file.read_text())
    newer = directory / manifest["columns"]["file"]
    arrays = {k: v for k, v in ann.ann._tenants["big"].columns.arrays.items() if k != "ids_sorted"}
    older = directory / newer.name.replace(".cols", "-older.cols")
    layout = ann_columns.write_columns(older, arrays)  # the file as written before the column
    manifest["columns"].update(file=older.name, bytes=older.stat().st_size, layout=layout)
    manifest_file.write_text(json.dumps(manifest))
    newer.unlink()
    ann.close()
    store = SqliteStore(path, vector_cache_min=0, ann_min=500)
    qs = queries(41, 30, filtered=True)
    ids = [m.id for m in exact.iter_records("big")][::9]

    def answers(searcher: SqliteStore) -> tuple[list[list[tuple[str, float]]], dict[str, list[list[float]]]]:
        hits = [searcher.vector_search(q, f, k=10, now=NOW) for q, f in qs]
        return hits, {i: [v.tolist() for v in vs] for i, vs in searcher.vectors_for(ids).items()}

    before = answers(store)
    assert store.ann._tenants["big"].lookups and store.ann._tenants["big"].columns.ids_sorted is None
    assert before[1].keys() == set(ids)

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    # A write that fails (the columns, or the manifest after them) leaves the old file in use and no new one.
    for broken in ("write_columns", "_write_manifest"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ann_build, broken, full)
            assert "vector_indexes_upgraded" not in store.optimize(vacuum_free_ratio=1.0)
        assert json.loads(manifest_file.read_text()) == manifest
        assert sorted(p.name for p in directory.glob("*.cols*")) == [older.name]
    assert answers(store) == before
    assert store.optimize(vacuum_free_ratio=1.0)["vector_indexes_upgraded"] == 1
    columns = store.ann._tenants["big"].columns
    assert columns.ids_sorted is not None and columns.ids_sorted.tolist() == sorted(columns.ids.tolist())
    saved = json.loads(manifest_file.read_text())["columns"]
    assert "ids_sorted" in saved["layout"] and not older.exists() and (directory / saved["file"]).exists()
    assert answers(store) == before
    assert "vector_indexes_upgraded" not in store.optimize(vacuum_free_ratio=1.0)  # nothing left to do
    fresh = SqliteStore(path, vector_cache_min=0, ann_min=500)
    assert answers(fresh) == before
    assert fresh.ann._tenants["big"].columns.ids_sorted is not None
    assert recall(fresh, exact, qs) >= 0.99


def test_a_view_gains_key_lookups_and_follows_another_process_save(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    ann, exact = built(path)
    ann.close()
    first = SqliteStore(path, vector_cache_min=0, ann_min=500)
    second = SqliteStore(path, vector_cache_min=0, ann_min=500)
    probe = np.ones(DIMS, dtype=np.float32)
    for store in (first, second):
        store.vector_search(probe, SearchFilters(tenant="big"), k=1, now=NOW)
        assert not store.ann._tenants["big"].lookups  # a one-shot process never builds them
        store.vector_search(probe, SearchFilters(tenant="big"), k=1, now=NOW)
        assert store.ann._tenants["big"].lookups
    ids = [m.id for m in list(exact.iter_records("big"))[:20]]
    assert first.vectors_for(ids).keys() == set(ids)
    # The first process catches up and saves; the second's view now maps a replaced file.
    first.ann.delta_min = 10
    fill(exact, "big", 50, seed=31)
    first.vector_search(probe, SearchFilters(tenant="big"), k=1, now=NOW)
    assert first.maintain_index("big") == "caught up"
    assert second.maintain_index("big") == "current"  # maps the newer save instead of redoing it
    assert second.ann._tenants["big"].seq == first.ann._tenants["big"].seq
    assert recall(second, exact, queries(32, 40, filtered=True)) >= 0.99
