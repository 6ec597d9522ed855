"""Anthropic's memory-stores API on a real `funes serve`, driven by the `anthropic` SDK, on both backends.

Written from Anthropic's public reference (the SDK's ``client.beta.memory_stores``
and its types): the shapes of ``memory_store``, ``memory``, ``memory_prefix``
and ``memory_version``; ``view=basic|full``; the ``content_sha256``
precondition (409 ``memory_precondition_failed_error``, 200 when the memory
already is what was asked); 409 ``memory_path_conflict_error``; a version on
every change; redaction keeping the time and author. Bad input answers the
documented status and error body and writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from served import funes_serve

import funes


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A `funes serve` on 127.0.0.1 with keys of team t (write, read) and team u, and t's memory folder."""
    folder = tmp_path / "notes"
    with funes.open(store_url, embedder="hash", worker="off") as service:
        keys = {
            "write": service.keys.create("t", "write")[0],
            "read": service.keys.create("t", "read")[0],
            "other": service.keys.create("u", "write")[0],
        }
        service.memory_folders.add_folder(folder, tenant="t")
    with funes_serve(store_url, tmp_path / "home") as base:
        yield {"base": base, "keys": keys, "folder": folder, "store_url": store_url}


@pytest.fixture
def client(server: dict[str, Any]) -> Iterator[Any]:
    """``client(key)``: an Anthropic SDK client on the server with one of its keys (closed after the test)."""
    made: list[anthropic.Anthropic] = []

    def make(key: str = "write") -> anthropic.Anthropic:
        made.append(anthropic.Anthropic(api_key=server["keys"][key], base_url=server["base"], max_retries=0))
        return made[-1]

    yield make
    for sdk in made:
        sdk.close()


def test_the_anthropic_sdk_runs_against_funes(server: dict[str, Any], client: Any) -> None:
    ms = client().beta.memory_stores
    store = ms.create(name="User preferences", description="What the user prefers.", metadata={"user": "ana"})
    assert store.type == "memory_store" and store.id.startswith("memstore_") and store.archived_at is None
    assert ms.retrieve(store.id).name == "User preferences"
    assert [s.id for s in ms.list()] == [store.id]

    first = "I prefer aisle seats.\n"
    created = ms.memories.create(store.id, path="/travel/seat.md", content=first)
    assert created.type == "memory" and created.id.startswith("mem_") and created.path == "/travel/seat.md"
    assert created.content is None  # create answers view=basic by default
    assert created.content_sha256 == sha(first) and created.content_size_bytes == len(first.encode())
    read = ms.memories.retrieve(created.id, memory_store_id=store.id)  # retrieve answers view=full
    assert read.content == first and read.memory_version_id == created.memory_version_id

    # A write guarded by the hash the caller read: one new version.
    second = "Window seats from now on.\n"
    updated = ms.memories.update(
        created.id,
        memory_store_id=store.id,
        content=second,
        precondition={"type": "content_sha256", "content_sha256": read.content_sha256},
        view="full",
    )
    assert updated.content == second and updated.content_sha256 == sha(second)
    assert updated.memory_version_id != created.memory_version_id and updated.id == created.id

    # The stale hash: 409 memory_precondition_failed_error, nothing written.
    with pytest.raises(anthropic.ConflictError) as stale:
        ms.memories.update(
            created.id,
            memory_store_id=store.id,
            content="Middle seats.",
            precondition={"type": "content_sha256", "content_sha256": read.content_sha256},
        )
    assert stale.value.body["error"]["type"] == "memory_precondition_failed_error"  # type: ignore[index]
    assert ms.memories.retrieve(created.id, memory_store_id=store.id).content == second
    # ...unless the memory already is exactly what was asked: 200.
    same = ms.memories.update(
        created.id,
        memory_store_id=store.id,
        content=second,
        precondition={"type": "content_sha256", "content_sha256": read.content_sha256},
    )
    assert same.memory_version_id == updated.memory_version_id

    # A path is unique in a store.
    with pytest.raises(anthropic.ConflictError) as taken:
        ms.memories.create(store.id, path="/travel/seat.md", content="again")
    assert taken.value.body["error"]["type"] == "memory_path_conflict_error"  # type: ignore[index]
    assert taken.value.body["error"]["conflicting_memory_id"] == created.id  # type: ignore[index]

    # Listings: basic leaves content out, full fills it, depth rolls deeper paths up.
    ms.memories.create(store.id, path="/about.md", content="")
    basic = list(ms.memories.list(store.id))
    assert [(m.type, m.path, m.content) for m in basic] == [
        ("memory", "/about.md", None),
        ("memory", "/travel/seat.md", None),
    ]
    assert all(m.content_sha256 for m in basic)  # type: ignore[union-attr]
    full = {m.path: m.content for m in ms.memories.list(store.id, view="full")}  # type: ignore[union-attr]
    assert full == {"/about.md": "", "/travel/seat.md": second}
    assert [(m.type, m.path) for m in ms.memories.list(store.id, depth=1)] == [
        ("memory", "/about.md"),
        ("memory_prefix", "/travel/"),
    ]
    assert [m.path for m in ms.memories.list(store.id, path_prefix="/travel/")] == ["/travel/seat.md"]
    pages = ms.memories.list(store.id, limit=1)
    assert len(pages.data) == 1 and pages.next_page and [m.path for m in pages] == ["/about.md", "/travel/seat.md"]

    # Every change is a version, newest first, attributed to the API key.
    versions = list(ms.memory_versions.list(store.id, memory_id=created.id, view="full"))
    assert [(v.operation, v.content) for v in versions] == [("modified", second), ("created", first)]
    assert versions[0].created_by.type == "api_actor"  # type: ignore[union-attr]

    # Redact the first version: its bytes are gone, its time and author stay; the current one cannot be.
    gone = ms.memory_versions.redact(versions[1].id, memory_store_id=store.id)
    assert gone.redacted_at is not None and gone.content is None and gone.path is None
    assert gone.created_at == versions[1].created_at and gone.created_by == versions[1].created_by
    again = ms.memory_versions.retrieve(versions[1].id, memory_store_id=store.id)
    assert again.redacted_at == gone.redacted_at and again.content is None and again.content_sha256 is None
    with pytest.raises(anthropic.ConflictError):
        ms.memory_versions.redact(versions[0].id, memory_store_id=store.id)

    # The memory is a Funes record: searchable like any other, its path the key; the folder has its file.
    with funes.open(server["store_url"], embedder="hash", worker="off") as service:
        hits = list(service.search("window seats", tenant="t"))
        assert [(h.memory.id, h.memory.entity_id) for h in hits[:1]] == [(created.id, "/travel/seat.md")]
        assert "aisle" not in str(service.get(created.id, tenant="t").to_dict())  # the redacted text is gone
    on_disk = server["folder"] / ".memory_stores" / store.id / "travel" / "seat.md"
    assert on_disk.read_text(encoding="utf-8") == second

    # Delete: the memory goes, its versions stay and end with `deleted`.
    assert ms.memories.delete(created.id, memory_store_id=store.id).type == "memory_deleted"
    with pytest.raises(anthropic.NotFoundError):
        ms.memories.retrieve(created.id, memory_store_id=store.id)
    assert [v.operation for v in ms.memory_versions.list(store.id, memory_id=created.id)] == [
        "deleted",
        "modified",
        "created",
    ]
    assert not on_disk.exists()

    # A read key reads and cannot write; another team does not see the store.
    reader = client("read").beta.memory_stores
    assert [m.path for m in reader.memories.list(store.id)] == ["/about.md"]
    with pytest.raises(anthropic.PermissionDeniedError):
        reader.memories.create(store.id, path="/planted.md", content="planted")
    with pytest.raises(anthropic.NotFoundError):
        client("other").beta.memory_stores.retrieve(store.id)

    assert ms.archive(store.id).archived_at is not None
    with pytest.raises(anthropic.ConflictError):
        ms.memories.create(store.id, path="/late.md", content="too late")
    assert ms.delete(store.id).type == "memory_store_deleted"
    with pytest.raises(anthropic.NotFoundError):
        ms.retrieve(store.id)


BAD = [
    ("create", {"path": "notes.md", "content": "x"}, 400, "invalid_request_error"),
    ("create", {"path": "/" + "a" * 1024, "content": "x"}, 400, "invalid_request_error"),
    ("create", {"path": "/notes/../secret.md", "content": "x"}, 400, "invalid_request_error"),
    ("create", {"path": "/big.md", "content": "x" * 102_401}, 400, "invalid_request_error"),
    ("update", {"content": "x" * 102_401}, 400, "invalid_request_error"),
    ("update", {"path": "relative.md"}, 400, "invalid_request_error"),
    ("update", {"path": "/a/../b.md"}, 400, "invalid_request_error"),
    ("update", {"content": "new", "precondition": {"type": "content_sha256", "content_sha256": "0" * 64}}, 409,
     "memory_precondition_failed_error"),
    ("update", {"content": "new", "precondition": {"type": "content_sha256", "content_sha256": "nothex"}}, 400,
     "invalid_request_error"),
    ("delete", {"expected_content_sha256": "0" * 64}, 409, "memory_precondition_failed_error"),
]  # fmt: skip


def test_bad_input_gets_the_documented_status_and_error_and_writes_nothing(server: dict[str, Any]) -> None:
    base, headers = server["base"], {"x-api-key": server["keys"]["write"]}
    store = httpx.post(f"{base}/v1/memory_stores", json={"name": "s"}, headers=headers).json()
    root = f"{base}/v1/memory_stores/{store['id']}"
    exact = "x" * 102_400  # exactly 100 kB is accepted
    memory = httpx.post(f"{root}/memories", json={"path": "/notes.md", "content": exact}, headers=headers)
    assert memory.status_code == 200, memory.text
    memory_id = memory.json()["id"]

    def state() -> Any:
        memories = httpx.get(f"{root}/memories", params={"view": "full"}, headers=headers).json()
        versions = httpx.get(f"{root}/memory_versions", params={"view": "full"}, headers=headers).json()
        return memories, versions

    before = state()
    assert len(before[0]["data"]) == 1 and len(before[1]["data"]) == 1
    for action, body, status, kind in BAD:
        if action == "create":
            reply = httpx.post(f"{root}/memories", json=body, headers=headers)
        elif action == "update":
            reply = httpx.post(f"{root}/memories/{memory_id}", json=body, headers=headers)
        else:
            reply = httpx.delete(f"{root}/memories/{memory_id}", params=body, headers=headers)
        assert reply.status_code == status, (action, body.keys(), reply.text)
        answer = reply.json()
        assert answer["type"] == "error" and answer["error"]["type"] == kind, answer
        assert answer["error"]["message"] and answer["error"]["hint"], answer
        assert state() == before, (action, body.keys())


def test_list_filters_through_the_sdk(server: dict[str, Any], client: Any) -> None:
    """Every list filter of the SDK narrows the answer; cursors hold across pages; bad values are 400s."""
    ms = client().beta.memory_stores
    store = ms.create(name="filters")
    for path in ("/a.md", "/notes/2026/01.md", "/notes/2026/02.md", "/notes/todo.md", "/notes-archive/x.md"):
        ms.memories.create(store.id, path=path, content=f"text of {path}")
    assert [m.path for m in ms.memories.list(store.id, path_prefix="/notes/", limit=1)] == [
        "/notes/2026/01.md",
        "/notes/2026/02.md",
        "/notes/todo.md",
    ]
    assert [(m.type, m.path) for m in ms.memories.list(store.id, path_prefix="/notes/", depth=1, limit=1)] == [
        ("memory_prefix", "/notes/2026/"),
        ("memory", "/notes/todo.md"),
    ]
    newest_first = ms.memories.list(store.id, limit=2, extra_query={"order": "desc", "order_by": "path"})
    assert [m.path for m in newest_first] == [
        "/notes/todo.md",
        "/notes/2026/02.md",
        "/notes/2026/01.md",
        "/notes-archive/x.md",
        "/a.md",
    ]

    # Versions by author: a second write key of the team, and an agent's session (written through the library).
    other_key = client("read")  # reads with another key see every author's versions
    with funes.open(server["store_url"], embedder="hash", worker="off") as service:
        second_key, second_row = service.keys.create("t", "write")
        agent_memory = service.memory_stores.create_memory(
            store.id, "/agent.md", "by the agent", tenant="t", actor={"type": "session_actor", "session_id": "sesn_9"}
        )
    second_id = second_row["id"]
    by_second = anthropic.Anthropic(api_key=second_key, base_url=server["base"], max_retries=0)
    try:
        mine = by_second.beta.memory_stores.memories.create(store.id, path="/second.md", content="by key two")
    finally:
        by_second.close()
    versions = other_key.beta.memory_stores.memory_versions
    assert [v.memory_id for v in versions.list(store.id, api_key_id=second_id)] == [mine.id]
    assert [v.memory_id for v in versions.list(store.id, session_id="sesn_9")] == [agent_memory["id"]]
    assert list(versions.list(store.id, service_account_id="svac_none")) == []
    everything = list(versions.list(store.id, limit=2))
    assert len(everything) == 7 and all(v.created_at for v in everything)
    middle = everything[3].created_at
    assert [v.id for v in versions.list(store.id, created_at_gte=middle, limit=1)] == [v.id for v in everything[:4]]
    assert [v.id for v in versions.list(store.id, created_at_lte=middle, limit=1)] == [v.id for v in everything[3:]]
    assert [s.id for s in ms.list(created_at_gte=store.created_at)] == [store.id]
    assert list(ms.list(created_at_lte="2000-01-01T00:00:00Z")) == []

    # Bad values: 400 invalid_request_error in Anthropic's shape, and nothing changes.
    base, headers = server["base"], {"x-api-key": server["keys"]["write"]}
    root = f"{base}/v1/memory_stores/{store.id}"
    before = (httpx.get(f"{root}/memories", headers=headers).json(), httpx.get(f"{root}/memory_versions",
              headers=headers).json())  # fmt: skip
    first = httpx.get(f"{root}/memories", params={"limit": 1}, headers=headers).json()
    for where, query in (
        ("/memories", {"order": "sideways"}),
        ("/memories", {"order_by": "created_at"}),
        ("/memories", {"depth": "deep"}),
        ("/memories", {"path_prefix": "notes"}),
        ("/memories", {"page": first["next_page"], "path_prefix": "/notes/"}),
        ("/memory_versions", {"created_at[gte]": "yesterday"}),
        ("/memory_versions", {"api_key_id": "k", "session_id": "s"}),
        ("/memory_versions", {"limit": 101}),
        ("", {"created_at[lte]": "soon"}),
    ):
        url = f"{root}{where}" if where else f"{base}/v1/memory_stores"
        reply = httpx.get(url, params=query, headers=headers)
        assert reply.status_code == 400, (where, query, reply.text)
        assert reply.json()["type"] == "error" and reply.json()["error"]["type"] == "invalid_request_error"
    after = (httpx.get(f"{root}/memories", headers=headers).json(), httpx.get(f"{root}/memory_versions",
             headers=headers).json())  # fmt: skip
    assert after == before


def test_key_errors_take_anthropics_shape_too(server: dict[str, Any]) -> None:
    """A wrong key (401) and a read key writing (403) answer in Anthropic's shape, which the SDK maps."""
    base = server["base"]
    wrong = httpx.get(f"{base}/v1/memory_stores", headers={"x-api-key": "fk_not_a_key"})
    assert wrong.status_code == 401 and wrong.json()["type"] == "error"
    assert wrong.json()["error"]["type"] == "authentication_error" and wrong.json()["error"]["message"]
    read = httpx.post(f"{base}/v1/memory_stores", json={"name": "x"}, headers={"x-api-key": server["keys"]["read"]})
    assert read.status_code == 403 and read.json()["error"]["type"] == "permission_error"
    assert read.json()["error"]["hint"]
    with anthropic.Anthropic(api_key="fk_not_a_key", base_url=base, max_retries=0) as sdk:
        with pytest.raises(anthropic.AuthenticationError) as refused:
            sdk.beta.memory_stores.list()
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    # Other routes keep Funes' own shape.
    other = httpx.get(f"{base}/v1/teams/t/memories", headers={"x-api-key": "fk_not_a_key"})
    assert other.status_code == 401 and "type" not in other.json() and other.json()["error"]["code"]
    listed = httpx.get(f"{base}/v1/memory_stores", headers={"x-api-key": server["keys"]["write"]}).json()
    assert listed["data"] == []  # nothing was created by the refused write
