"""The memory-stores service as a library (``Funes.memory_stores``): paths, the folder mirror, renames, paging."""

from __future__ import annotations

from pathlib import Path

import pytest

import funes
from funes.agents.memory_store_rules import check_path, check_text, sha256_hex
from funes.errors import Conflict, InvalidInput, NotFound, PathConflict, PreconditionFailed


@pytest.mark.parametrize(
    "path",
    ["/a.md", "/projects/foo/notes.md", "/ünïcode/ファイル.md", "/a b/c.txt", "/" + "x" * 1023, "/.hidden", "/a..b"],
)
def test_paths_the_api_accepts(path: str) -> None:
    assert check_path(path) == path


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("a.md", "does not start with '/'"),
        ("", "does not start with '/'"),
        ("/", "empty segment"),
        ("/a//b.md", "empty segment"),
        ("/a/", "empty segment"),
        ("/a/../b.md", "'..' segment"),
        ("/..", "'..' segment"),
        ("/./a.md", "'..' segment"),
        ("/" + "é" * 512, "over the limit of 1,024"),  # 1,025 bytes
        ("/a\x00b", "control or format"),
        ("/a\u200bb", "control or format"),
        ("/a\u2028b", "control or format"),
        ("/cafe\u0301.md", "not NFC"),
        (None, "must be text"),
    ],
)
def test_paths_the_api_refuses(path: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=why):
        check_path(path)


def test_content_is_up_to_100_kB_of_text_and_hashed_as_sent() -> None:
    assert check_text("x" * 102_400) == "x" * 102_400
    assert check_text("") == ""
    with pytest.raises(InvalidInput, match="102,401 bytes"):
        check_text("x" * 102_401)
    with pytest.raises(InvalidInput, match="102,401 bytes"):
        check_text("é" * 51_200 + "x")  # counted in UTF-8 bytes, not characters
    assert sha256_hex(" a \n") != sha256_hex("a")  # no normalisation


def test_a_memory_folder_holds_each_memory_as_a_file(mem: funes.Funes, tmp_path: Path) -> None:
    folder = mem.memory_folders.add_folder(tmp_path / "notes")
    ms = mem.memory_stores
    store = ms.create_store("Notes")["id"]
    made = ms.create_memory(store, "/team/standup.md", "Standup is at 9:30.\n")
    mirror = Path(folder.path) / ".memory_stores" / store
    assert (mirror / "team" / "standup.md").read_text(encoding="utf-8") == "Standup is at 9:30.\n"
    # A rename keeps the id, moves the file, and is one version.
    moved = ms.update_memory(store, made["id"], path="/meetings/standup.md")
    assert moved["id"] == made["id"] and moved["memory_version_id"] != made["memory_version_id"]
    assert not (mirror / "team" / "standup.md").exists()
    assert (mirror / "meetings" / "standup.md").read_text(encoding="utf-8") == "Standup is at 9:30.\n"
    assert [v["operation"] for v in ms.list_versions(store)["data"]] == ["modified", "created"]
    # The folder sync does not index the mirror a second time.
    mem.memory_folders.sync(folder.path)
    assert [h.memory.id for h in mem.search("standup 9:30")] == [made["id"]]
    ms.delete_store(store)
    assert not mirror.exists()
    assert list(mem.search("standup 9:30")) == []


def test_an_empty_memory_reads_back_empty_and_is_found_by_its_path(mem: funes.Funes) -> None:
    ms = mem.memory_stores
    store = ms.create_store("s")["id"]
    empty = ms.create_memory(store, "/inbox/placeholder.md", "")
    assert empty["content_size_bytes"] == 0 and empty["content_sha256"] == sha256_hex("")
    assert ms.get_memory(store, empty["id"])["content"] == ""
    assert mem.get(empty["id"]).entity_id == "/inbox/placeholder.md"
    filled = ms.update_memory(
        store,
        empty["id"],
        content="Now it has words.",
        precondition={"type": "content_sha256", "content_sha256": sha256_hex("")},
        view="full",
    )
    assert filled["content"] == "Now it has words." and mem.get(empty["id"]).content == "Now it has words."


def test_paging_through_memories_and_versions(mem: funes.Funes) -> None:
    ms = mem.memory_stores
    store = ms.create_store("s")["id"]
    paths = [f"/n/{i:02d}.md" for i in range(7)]
    for path in reversed(paths):
        ms.create_memory(store, path, f"note {path}")
    seen, page = [], None
    while True:
        answer = ms.list_memories(store, limit=3, page=page)
        seen += [m["path"] for m in answer["data"]]
        page = answer["next_page"]
        if page is None:
            break
    assert seen == paths
    assert len(ms.list_memories(store, limit=100, view="full")["data"]) == 7  # full caps a page at 20
    versions, page = [], None
    while True:
        answer = ms.list_versions(store, limit=2, page=page)
        versions += [v["path"] for v in answer["data"]]
        page = answer["next_page"]
        if page is None:
            break
    assert versions == paths  # newest first: the last created was /n/00.md
    with pytest.raises(InvalidInput, match="cursor"):
        ms.list_memories(store, page="page_bm90IGpzb24")
    with pytest.raises(InvalidInput, match="1 to 100"):
        ms.list_memories(store, limit=101)


def test_conflicts_and_tenants(mem: funes.Funes) -> None:
    ms = mem.memory_stores
    store = ms.create_store("s")["id"]
    a = ms.create_memory(store, "/a.md", "A")
    b = ms.create_memory(store, "/b.md", "B")
    with pytest.raises(PathConflict) as taken:
        ms.update_memory(store, b["id"], path="/a.md")
    assert taken.value.memory_id == a["id"]
    with pytest.raises(PreconditionFailed):
        ms.delete_memory(store, a["id"], expected_content_sha256=sha256_hex("not A"))
    assert ms.delete_memory(store, a["id"], expected_content_sha256=sha256_hex("A"))["id"] == a["id"]
    with pytest.raises(NotFound):
        ms.get_store(store, tenant="other")
    with pytest.raises(NotFound):
        ms.get_memory(store, b["id"], tenant="other")
    other = ms.create_store("theirs", tenant="other")["id"]
    with pytest.raises(NotFound):
        ms.get_memory(other, b["id"], tenant="other")  # a memory of another store is not in this one
    ms.archive_store(store)
    assert [s["id"] for s in ms.list_stores()["data"]] == []
    assert [s["id"] for s in ms.list_stores(include_archived=True)["data"]] == [store]
    with pytest.raises(Conflict, match="archived"):
        ms.update_memory(store, b["id"], content="B2")
    assert ms.get_memory(store, b["id"])["content"] == "B"
