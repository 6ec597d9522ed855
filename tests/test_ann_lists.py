"""The recall guard beside the HNSW graph: inverted lists that answer what a lost graph search misses."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from test_ann_index import DIMS, built, fill, open_pair, queries, recall, warm
from test_vector_cache import NOW, make_record, random_filters

from funes.models import SearchFilters
from funes.store import ann_build, ann_index, ann_lists
from funes.store.ann_columns import IndexColumns, quantize
from funes.store.sqlite import SqliteStore

CENTRES = 100


def tight(rng: np.random.Generator, n: int) -> np.ndarray:
    """Vectors in 100 tight clusters: a graph with few links per node strands its search in one."""
    centres = np.random.default_rng(99).standard_normal((CENTRES, DIMS))
    x = centres[rng.integers(0, CENTRES, n)] + 0.3 * rng.standard_normal((n, DIMS))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def graph_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the guard off in this process (the graph answers alone)."""
    monkeypatch.setattr(IndexColumns, "probe", lambda self, query, widen=1.0: np.zeros(0, dtype=np.int64))


def lost_graph(path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> tuple[SqliteStore, SqliteStore]:
    """(ann, exact) over 3,000 tight-cluster records, guarded at any size, in a graph of two links per node
    (a narrow beam strands many of its searches)."""
    monkeypatch.setattr(ann_index, "GUARD_MIN_ROWS", 0)  # guarded at any size (by default from 200k rows)
    monkeypatch.setattr(ann_build, "CONNECTIVITY", 2)
    monkeypatch.setattr(ann_build, "EXPANSION_ADD", 16)
    monkeypatch.setattr(ann_index, "BEAM", 1)
    ann, exact = open_pair(path)
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    vectors = tight(nrng, 3000)
    ann.put_many([(make_record(rng, "big"), [vectors[i]]) for i in range(3000)])
    warm(ann)
    return ann, exact


def test_lists_cover_every_row_and_probe_the_nearest() -> None:
    rng = np.random.default_rng(1)
    unit = tight(rng, 3000)
    q8, scale = quantize(unit)
    arrays = ann_lists.build_lists(q8, scale)
    lists = len(arrays["centroids"])
    assert lists == ann_lists.list_count(3000) == 55
    starts, by_list, labels = arrays["list_start"], arrays["by_list"], arrays["list"]
    assert starts[0] == 0 and starts[-1] == 3000 and sorted(by_list.tolist()) == list(range(3000))
    for c in range(lists):  # each list holds exactly the rows labelled with it
        assert set(by_list[starts[c] : starts[c + 1]].tolist()) == set(np.flatnonzero(labels == c).tolist())
    # Each row sits in its nearest centroid's list (by its codes).
    approx = q8.astype(np.float32) * scale[:, None]
    assert (np.argmax(approx @ arrays["centroids"].T, axis=1) == labels).all()
    ann_lists.check(arrays, 3000, DIMS, ann_lists.crc(arrays))
    query = unit[7]
    rows = ann_lists.probe(arrays["centroids"], starts, by_list, query)
    assert 7 in rows.tolist()
    assert len(rows) >= ann_lists.PROBE_LISTS * 3000 / lists  # about PROBE_LISTS lists' worth, whole lists
    assert len(np.unique(labels[rows])) <= 4 * ann_lists.PROBE_LISTS + 16
    # No rows: no lists, nothing probed.
    empty = ann_lists.build_lists(np.zeros((0, DIMS), dtype=np.int8), np.zeros(0, dtype=np.float32))
    assert empty["centroids"].shape == (0, DIMS) and list(empty["list_start"]) == [0]
    assert len(ann_lists.probe(empty["centroids"], empty["list_start"], empty["by_list"], query)) == 0


def test_check_rejects_lists_that_do_not_add_up() -> None:
    q8, scale = quantize(tight(np.random.default_rng(2), 500))
    arrays = ann_lists.build_lists(q8, scale)
    good = ann_lists.crc(arrays)
    ann_lists.check(arrays, 500, DIMS, good)
    with pytest.raises(ValueError, match="checksum"):
        ann_lists.check(arrays, 500, DIMS, good ^ 1)
    with pytest.raises(ValueError, match="cover"):
        ann_lists.check(arrays, 501, DIMS, good)
    with pytest.raises(ValueError, match="match"):
        ann_lists.check(arrays, 500, DIMS + 1, good)
    bad = dict(arrays, by_list=arrays["by_list"].copy())
    bad["by_list"][3] = 500
    with pytest.raises(ValueError, match="outside"):
        ann_lists.check(bad, 500, DIMS, good)


def test_catch_up_assigns_new_rows_and_retrains_after_growth() -> None:
    rng = np.random.default_rng(3)
    q8, scale = quantize(tight(rng, 1000))
    first = ann_lists.build_lists(q8, scale)
    more_q8, more_scale = quantize(tight(rng, 200))
    all_q8, all_scale = np.concatenate([q8, more_q8]), np.concatenate([scale, more_scale])
    labels = np.concatenate([first["list"], np.full(200, -1, dtype=np.int32)])
    merged = ann_lists.merged_lists(first["centroids"], 1000, labels, all_q8, all_scale)
    assert np.array_equal(merged["centroids"], first["centroids"]) and merged["trained"][0] == 1000
    assert np.array_equal(merged["list"][:1000], first["list"])  # kept rows keep their list
    approx = all_q8[1000:].astype(np.float32) * all_scale[1000:, None]
    assert (merged["list"][1000:] == np.argmax(approx @ first["centroids"].T, axis=1)).all()
    ann_lists.check(merged, 1200, DIMS, ann_lists.crc(merged))
    # Grown past twice the trained rows: trained again, on everything.
    big_q8, big_scale = quantize(tight(rng, 2500))
    regrown = ann_lists.merged_lists(first["centroids"], 1000, np.full(2500, -1, dtype=np.int32), big_q8, big_scale)
    assert regrown["trained"][0] == 2500 and len(regrown["centroids"]) == ann_lists.list_count(2500)


def test_the_guard_returns_the_exact_top_k_when_the_graph_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A beam no wider than its pool: it strands many searches.
    monkeypatch.setattr(ann_index, "EXPANSION_SEARCH", 16)
    monkeypatch.setattr(ann_index, "GUARDED_SEARCH", 16)
    ann, exact = lost_graph(tmp_path / "g.db", monkeypatch, seed=5)
    unfiltered = [(v, SearchFilters(tenant="big")) for v in tight(np.random.default_rng(6), 40)]
    mild = (
        SearchFilters(tenant="big", scopes=("team", "project")),
        SearchFilters(tenant="big", memory_types=("fact", "decision"), kinds=("memory", "chunk")),
    )
    filtered = [(v, mild[n % 2]) for n, v in enumerate(tight(np.random.default_rng(7), 40))]
    selective = [(v, random_filters(random.Random(7), "big")) for v in tight(np.random.default_rng(8), 40)]
    assert recall(ann, exact, unfiltered) == 1.0
    assert recall(ann, exact, filtered) == 1.0  # filters the graph answers: the guard filters its rows alike
    assert ann.ann.rescues > 0 and ann.ann.scans == 0
    assert recall(ann, exact, selective) >= 0.99  # (mostly answered by scans)
    # The same queries through the graph alone lose much of the top ten.
    with monkeypatch.context() as patch:
        graph_alone(patch)
        assert recall(ann, exact, unfiltered) < 0.8
        assert recall(ann, exact, filtered) < 0.8
    # At the default size threshold a graph this small is searched without the guard.
    with monkeypatch.context() as patch:
        patch.setattr(ann_index, "GUARD_MIN_ROWS", 200_000)
        patch.setattr(IndexColumns, "probe", lambda *a, **kw: pytest.fail("a small graph is not guarded"))
        assert ann.vector_search(unfiltered[0][0], unfiltered[0][1], k=10, now=NOW)
    # A new process (a view without key lookups: re-scored from the store) answers the same.
    ann.close()
    again = SqliteStore(tmp_path / "g.db", vector_cache_min=0, ann_min=500)
    assert recall(again, exact, unfiltered[:10]) == 1.0
    assert again.ann.rescues > 0


def test_a_similarity_is_the_same_whichever_of_graph_and_guard_found_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A narrow beam leaves rows to the guard that a wide one finds in the graph: the same hits, the same
    scores to the last bit (usearch's float32 cosine and numpy's differ in it), and the exact path's ids."""
    ann, exact = lost_graph(tmp_path / "s.db", monkeypatch, seed=11)
    asked = [(v, SearchFilters(tenant="big")) for v in tight(np.random.default_rng(12), 40)]
    asked += [
        (v, SearchFilters(tenant="big", scopes=("team", "project"))) for v in tight(np.random.default_rng(13), 20)
    ]

    def answers(beam: int) -> list[list[tuple[str, float]]]:
        monkeypatch.setattr(ann_index, "EXPANSION_SEARCH", beam)
        monkeypatch.setattr(ann_index, "GUARDED_SEARCH", beam)
        return [ann.vector_search(v, f, k=10, now=NOW) for v, f in asked]

    wide = answers(4096)  # the graph finds every winner itself
    rescues = ann.ann.rescues
    narrow = answers(16)  # the graph strands many searches: the guard finds their winners
    assert ann.ann.rescues - rescues >= 10 and ann.ann.scans == 0
    assert narrow == wide
    for (v, f), got in zip(asked, wide, strict=True):
        assert [i for i, _ in got] == [i for i, _ in exact.vector_search(v, f, k=10, now=NOW)]


@pytest.mark.parametrize("damage", ["centroids", "offsets", "rows"])
def test_damaged_lists_are_never_trusted(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "d.db"
    ann, exact = built(path)
    manifest = json.loads(ann.ann.manifest_path("big").read_text())
    ann.close()
    cols = manifest["columns"]
    name = {"centroids": "centroids", "offsets": "list_start", "rows": "by_list"}[damage]
    dtype, shape, offset = cols["layout"][name]
    cols_file = path.parent / (path.name + ".ann") / cols["file"]
    data = bytearray(cols_file.read_bytes())
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    data[offset : offset + size] = b"\x7f" * size  # same size, wrong content
    cols_file.write_bytes(bytes(data))
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(again)
    assert again.ann.builds == 1  # rebuilt, not used
    assert recall(again, exact, queries(41, 40, filtered=True)) >= 0.99


def test_an_index_of_the_previous_format_is_rebuilt_once(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    ann, exact = built(path)
    manifest_path = ann.ann.manifest_path("big")
    manifest = json.loads(manifest_path.read_text())
    ann.close()
    # What format 2 wrote: no lists in the columns, no checksum.
    manifest["format"] = 2
    for name in ann_lists.ARRAYS:
        del manifest["columns"]["layout"][name]
    del manifest["columns"]["lists_crc"]
    manifest_path.write_text(json.dumps(manifest))
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(again)
    assert again.ann.builds == 1
    upgraded = json.loads(manifest_path.read_text())
    assert upgraded["format"] == ann_build.FORMAT == 3 and "lists_crc" in upgraded["columns"]
    assert recall(again, exact, queries(42, 40, filtered=False)) >= 0.99
    third = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(third)
    assert third.ann.builds == 0  # once


def test_catch_up_saves_lists_that_cover_the_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "u.db"
    ann, exact = built(path)
    ann.ann.delta_min = 10
    fill(exact, "big", 300, seed=43)
    ann.vector_search(np.ones(DIMS, dtype=np.float32), SearchFilters(tenant="big"), k=1, now=NOW)
    assert ann.maintain_index("big") == "caught up"
    manifest = json.loads(ann.ann.manifest_path("big").read_text())
    cols = IndexColumns.open(
        path.parent / (path.name + ".ann") / manifest["columns"]["file"], manifest["columns"]["layout"]
    )
    assert cols.n == 2300 and cols.trained == 2000
    ann_lists.check(cols.arrays, cols.n, DIMS, manifest["columns"]["lists_crc"])
    ann.close()
    again = SqliteStore(path, vector_cache_min=0, ann_min=500)
    warm(again)
    assert again.ann.builds == 0
    assert recall(again, exact, queries(44, 60, filtered=True)) >= 0.99
