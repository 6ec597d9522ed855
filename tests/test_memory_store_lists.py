"""Memory-store list filters, honoured in the query on both backends (issue 27).

The memory listing is compared, page by page, with a reference model (every
path sorted by code point, deeper ones rolled up at ``depth``); the version
filters (author, time, memory, operation) narrow the rows and keep cursors
stable; bad values are refused and change nothing.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import funes
from funes.errors import Conflict, InvalidInput
from funes.models import format_time, from_epoch

PATHS = [
    "/a.md",
    "/a/b.md",
    "/a/b/c.md",
    "/a/b/c/d.md",
    "/a/b0.md",
    "/a-b/c.md",
    "/a.b/c.md",
    "/a0.md",
    "/a/z.md",
    "/Z.md",
    "/ä/x.md",
    "/ä/y/z.md",
    "/😀/y.md",
    "/ｆｕｌｌ/w.md",
    "/notes/todo.md",
    "/notes-archive/todo.md",
    "/notes/2026/01.md",
    "/notes/2026/02.md",
    "/notes/2027/01.md",
]


def reference(prefix: str, depth: int | None, descending: bool) -> list[str]:
    """The listing's keys as the API defines them: paths below ``prefix``, deeper than ``depth`` rolled up."""
    keys = set()
    for path in PATHS:
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        keys.add(prefix + "/".join(parts[:depth]) + "/" if depth and len(parts) > depth else path)
    return sorted(keys, reverse=descending)


def pages(stores: Any, store_id: str, **query: Any) -> list[str]:
    out, page, seen = [], None, 0
    while True:
        answer = stores.list_memories(store_id, page=page, tenant="t", **query)
        out += [item["path"] for item in answer["data"]]
        assert len(answer["data"]) <= (query.get("limit") or 20)
        page, seen = answer["next_page"], seen + 1
        if page is None:
            return out
        assert answer["data"], "a page with a next_page is never empty"
        assert seen < 100


def test_memory_listing_matches_the_reference_page_by_page(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        stores = mem.memory_stores
        store = stores.create_store("lists", tenant="t")["id"]
        for path in PATHS:
            stores.create_memory(store, path, f"text of {path}", tenant="t")
        other = stores.create_store("other", tenant="t")["id"]
        stores.create_memory(other, "/a/b.md", "another store's memory", tenant="t")
        for prefix in ("/", "/a/", "/a/b/", "/ä/", "/notes/", "/none/"):
            for depth in (None, 1, 2):
                for order in ("asc", "desc"):
                    want = reference(prefix, depth, order == "desc")
                    for limit in (1, 3, 100):
                        got = pages(stores, store, path_prefix=prefix, depth=depth, order=order, limit=limit)
                        assert got == want, (prefix, depth, order, limit)
        # The prefix matches whole segments: /notes/ is not /notes-archive/.
        assert pages(stores, store, path_prefix="/notes/", depth=1) == [
            "/notes/2026/",
            "/notes/2027/",
            "/notes/todo.md",
        ]
        # A page's items are memories or prefixes, and full pages carry the content.
        full = stores.list_memories(store, path_prefix="/notes/2026/", view="full", tenant="t")["data"]
        assert [(m["type"], m["content"]) for m in full] == [
            ("memory", "text of /notes/2026/01.md"),
            ("memory", "text of /notes/2026/02.md"),
        ]


def test_a_cursor_survives_writes_between_pages_and_belongs_to_its_listing(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        stores = mem.memory_stores
        store = stores.create_store("s", tenant="t")["id"]
        for path in ("/b.md", "/d.md", "/f.md", "/h.md"):
            stores.create_memory(store, path, path, tenant="t")
        first = stores.list_memories(store, limit=2, tenant="t")
        assert [m["path"] for m in first["data"]] == ["/b.md", "/d.md"]
        stores.create_memory(store, "/a.md", "before the cursor", tenant="t")  # sorts before: not seen again
        stores.create_memory(store, "/e.md", "after the cursor", tenant="t")  # sorts after: seen
        rest = stores.list_memories(store, limit=10, page=first["next_page"], tenant="t")
        assert [m["path"] for m in rest["data"]] == ["/e.md", "/f.md", "/h.md"] and rest["next_page"] is None
        for changed in ({"path_prefix": "/x/"}, {"depth": 1}, {"order": "desc"}):
            with pytest.raises(InvalidInput, match="other filters"):
                stores.list_memories(store, page=first["next_page"], tenant="t", **changed)


BAD_LISTS = [
    ("list_memories", {"order": "sideways"}, "Unknown order"),
    ("list_memories", {"order_by": "created_at"}, "Unknown order_by"),
    ("list_memories", {"path_prefix": "notes/"}, "must start and end"),
    ("list_memories", {"depth": -1}, "0 or more"),
    ("list_memories", {"page": "page_bm90LWpzb24"}, "not one this server gave"),
    ("list_versions", {"created_at_gte": "yesterday"}, "not an RFC 3339 time"),
    ("list_versions", {"created_at_lte": "2026-13-01T00:00:00Z"}, "not an RFC 3339 time"),
    ("list_versions", {"api_key_id": ""}, "non-empty id"),
    ("list_versions", {"api_key_id": "k", "session_id": "s"}, "one author at a time"),
    ("list_versions", {"operation": "renamed"}, "Unknown operation"),
    ("list_versions", {"limit": 0}, "out of range"),
    ("list_stores", {"created_at_gte": "2026-07-22"}, None),  # a date alone is a valid ISO time: accepted
    ("list_stores", {"created_at_lte": "not a time"}, "not an RFC 3339 time"),
]


def test_version_filters_narrow_in_the_query_and_bad_values_change_nothing(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        stores = mem.memory_stores
        store = stores.create_store("v", tenant="t")["id"]
        key_a = {"type": "api_actor", "api_key_id": "key_a"}
        key_b = {"type": "api_actor", "api_key_id": "key_b"}
        agent = {"type": "session_actor", "session_id": "sesn_1"}
        one = stores.create_memory(store, "/one.md", "one", tenant="t", actor=key_a)["id"]
        stores.update_memory(store, one, content="one, twice", tenant="t", actor=key_b)
        time.sleep(0.05)
        cut = time.time()
        time.sleep(0.05)
        two = stores.create_memory(store, "/two.md", "two", tenant="t", actor=agent)["id"]
        stores.update_memory(store, two, content="two, by the agent", tenant="t", actor=agent)
        stores.delete_memory(store, one, tenant="t", actor=key_a)
        stores.create_memory(store, "/three.md", "three", tenant="t", actor={"type": "service_account_actor",
                                                                           "service_account_id": "svac_1"})  # fmt: skip

        def ops(**query: Any) -> list[tuple[str, str]]:
            out, page = [], None
            while True:
                answer = stores.list_versions(store, page=page, limit=1, tenant="t", **query)
                out += [(v["path"], v["operation"]) for v in answer["data"]]
                page = answer["next_page"]
                if page is None:
                    return out

        assert ops(api_key_id="key_a") == [("/one.md", "deleted"), ("/one.md", "created")]
        assert ops(api_key_id="key_b") == [("/one.md", "modified")]
        assert ops(session_id="sesn_1") == [("/two.md", "modified"), ("/two.md", "created")]
        assert ops(service_account_id="svac_1") == [("/three.md", "created")]
        assert ops(api_key_id="sesn_1") == []  # a session's id is not a key's
        since = format_time(from_epoch(cut))
        assert ops(created_at_gte=since) == [
            ("/three.md", "created"),
            ("/one.md", "deleted"),
            ("/two.md", "modified"),
            ("/two.md", "created"),
        ]
        assert ops(created_at_lte=since) == [("/one.md", "modified"), ("/one.md", "created")]
        assert ops(created_at_gte=since, api_key_id="key_a", operation="deleted") == [("/one.md", "deleted")]
        assert ops(memory_id=one, created_at_lte=since) == [("/one.md", "modified"), ("/one.md", "created")]
        # A cursor of a filtered listing stays put while new versions arrive (they are newer than it).
        first = stores.list_versions(store, session_id="sesn_1", limit=1, tenant="t")
        stores.update_memory(store, two, content="two, again", tenant="t", actor=agent)
        rest = stores.list_versions(store, session_id="sesn_1", limit=5, page=first["next_page"], tenant="t")
        assert [v["operation"] for v in rest["data"]] == ["created"]
        # The store list keeps a span of creation times too.
        later = stores.create_store("later", tenant="t")["id"]
        assert [s["id"] for s in stores.list_stores(created_at_gte=since, tenant="t")["data"]] == [later]
        assert store in [s["id"] for s in stores.list_stores(created_at_lte=since, tenant="t")["data"]]

        def state() -> Any:
            return (
                stores.list_memories(store, view="full", limit=20, tenant="t"),
                stores.list_versions(store, view="full", limit=20, tenant="t"),
                stores.list_stores(include_archived=True, tenant="t"),
            )

        before = state()
        for method, query, why in BAD_LISTS:
            call = getattr(stores, method)
            args = () if method == "list_stores" else (store,)
            if why is None:
                call(*args, tenant="t", **query)
            else:
                with pytest.raises(InvalidInput, match=why):
                    call(*args, tenant="t", **query)
            assert state() == before, (method, query)


def test_an_archived_store_still_deletes_and_redacts_but_is_not_updated(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        stores = mem.memory_stores
        store = stores.create_store("a", metadata={"user": "ana", "team": "x"}, tenant="t")["id"]
        # Metadata updates are changes: a null removes a key, keys left out stay.
        changed = stores.update_store(store, metadata={"team": None, "role": "admin"}, tenant="t")
        assert changed["metadata"] == {"user": "ana", "role": "admin"}
        assert stores.update_store(store, name=None, description="", tenant="t")["name"] == "a"
        with pytest.raises(InvalidInput, match="20"):
            stores.create_memory(store, "/" + "/".join("s" * 21), "deep", tenant="t")
        stores.create_memory(store, "/" + "/".join("s" * 20), "twenty segments are fine", tenant="t")
        memory = stores.create_memory(store, "/m.md", "first", tenant="t")["id"]
        stores.update_memory(store, memory, content="second", tenant="t")
        old = stores.list_versions(store, memory_id=memory, operation="created", tenant="t")["data"][0]["id"]
        stores.archive_store(store, tenant="t")
        with pytest.raises(Conflict, match="archived"):
            stores.update_store(store, name="renamed", tenant="t")
        with pytest.raises(Conflict, match="archived"):
            stores.update_memory(store, memory, content="third", tenant="t")
        assert stores.get_store(store, tenant="t")["name"] == "a"
        assert stores.redact_version(store, old, tenant="t")["redacted_at"] is not None
        assert stores.delete_memory(store, memory, tenant="t")["type"] == "memory_deleted"
        latest = stores.list_versions(store, memory_id=memory, tenant="t")["data"][0]
        assert latest["operation"] == "deleted"


def test_the_migration_backfills_the_authors_of_existing_versions(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with funes.open(str(db), embedder="hash", worker="off") as mem:
        store = mem.memory_stores.create_store("s", tenant="t")["id"]
        mem.memory_stores.create_memory(
            store, "/a.md", "a", tenant="t", actor={"type": "api_actor", "api_key_id": "key_old"}
        )
    # Back to the store as migration 014 left it: no author columns, 017 not applied.
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP INDEX memory_store_versions_author; DROP INDEX memory_store_versions_time; DROP INDEX memories_store_paths;"
        "ALTER TABLE memory_store_versions DROP COLUMN created_by_type;"
        "ALTER TABLE memory_store_versions DROP COLUMN created_by_id;"
        "DELETE FROM migrations WHERE version = 17;"
    )
    conn.close()
    with funes.open(str(db), embedder="hash", worker="off") as mem:
        found = mem.memory_stores.list_versions(store, api_key_id="key_old", tenant="t")["data"]
        assert [(v["path"], v["created_by"]) for v in found] == [
            ("/a.md", {"type": "api_actor", "api_key_id": "key_old"})
        ]
