"""An edit racing a delete or another edit, on a real `funes serve` (both backends) and through the library.

Issue 31: the edit read the record outside the transaction and wrote it back
unchecked, so a PATCH racing a DELETE brought the deleted record back (DELETE
had answered 204) and of two concurrent edits one was silently lost. Now the
edit compares the version under the write lock; the loser answers 409.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import funes_serve

import funes
from funes.errors import Conflict, NotFound

ROUNDS = 25
TEAM = "/v1/teams/t"


def _together(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls at the same moment in threads; their results (or exceptions) in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as exc:  # the exception is the result under test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    with funes.open(store_url, embedder="hash", worker="off") as service:
        service.remember("setup", tenant="setup")
        key = service.keys.create("t", "write")[0]
    with funes_serve(store_url, tmp_path / "home") as base:
        yield base, {"Authorization": f"Bearer {key}"}


def test_a_patch_racing_a_delete_never_brings_the_record_back(server: tuple[str, dict[str, str]]) -> None:
    base, headers = server
    with (
        httpx.Client(base_url=base, headers=headers, timeout=30) as a,
        httpx.Client(base_url=base, headers=headers, timeout=30) as b,
    ):
        for i in range(ROUNDS):
            memory_id = a.post(f"{TEAM}/memories", json={"content": f"Round {i}: the door code is 1111"}).json()["id"]
            patch, delete = _together(
                partial(a.patch, f"{TEAM}/memories/{memory_id}", json={"content": f"Round {i}: the door code is 2222"}),
                partial(b.delete, f"{TEAM}/memories/{memory_id}"),
            )
            assert delete.status_code == 204, delete.text
            assert patch.status_code in (200, 404, 409), patch.text
            if patch.status_code == 409:
                assert patch.json()["error"]["hint"]
            after = a.get(f"{TEAM}/memories/{memory_id}")
            assert after.status_code == 404, f"round {i}: deleted (204) but still there: {after.text}"


def test_of_two_concurrent_edits_none_is_lost_silently(server: tuple[str, dict[str, str]]) -> None:
    base, headers = server
    with (
        httpx.Client(base_url=base, headers=headers, timeout=30) as a,
        httpx.Client(base_url=base, headers=headers, timeout=30) as b,
    ):
        for i in range(ROUNDS):
            memory = a.post(f"{TEAM}/memories", json={"content": f"Edit round {i}: version one"}).json()
            texts = (f"Edit round {i}: from A", f"Edit round {i}: from B")
            first, second = _together(
                partial(a.patch, f"{TEAM}/memories/{memory['id']}", json={"content": texts[0]}),
                partial(b.patch, f"{TEAM}/memories/{memory['id']}", json={"content": texts[1]}),
            )
            applied = [t for t, r in zip(texts, (first, second), strict=True) if r.status_code == 200]
            for r in (first, second):
                assert r.status_code in (200, 409), r.text
            history = a.get(f"{TEAM}/memories/{memory['id']}/history").json()
            kept = {v["content"] for v in history["versions"]} | {history["current"]["content"]}
            # Every edit that answered 200 is in the record's history: none was overwritten unseen.
            assert set(applied) <= kept, (applied, kept)
            assert history["current"]["version"] == memory["version"] + len(applied)


def test_the_library_refuses_an_edit_of_a_record_deleted_or_changed_meanwhile(store_url: str) -> None:
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        for i in range(ROUNDS):
            record = mem.remember(f"Library round {i}: the locker is 12")
            update, _ = _together(
                partial(mem.update, record.id, content=f"Library round {i}: the locker is 13"),
                partial(mem.forget, record.id),
            )
            assert update is None or isinstance(update, (funes.Memory, Conflict, NotFound)), update
            with pytest.raises(NotFound):
                mem.get(record.id)


def test_a_pin_or_a_label_read_before_an_edit_applies_to_the_edited_record(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change beside the text (pin, importance, metadata) does not depend on the text: it lands on what is there now.

    The interleaving is made by hand: the caller read the record, then a person's edit committed, then the
    caller's pin reached the write. A new text written against the older text still conflicts.
    """
    with funes.open(store_url, embedder="hash", worker="off") as mem:
        record = mem.remember("The locker code is 12", metadata={"room": "B"})
        stale = mem.get(record.id)
        edited = mem.update(record.id, content="The locker code is 13", metadata={"floor": 2})
        monkeypatch.setattr(mem.core, "get", lambda *_a, **_k: stale)  # every later edit starts from the old read
        pinned = mem.update(record.id, pinned=True, importance=0.9, metadata={"owner": "ana"})
        assert (pinned.content, pinned.version, pinned.pinned, pinned.importance) == (
            "The locker code is 13",
            2,
            True,
            0.9,
        )
        assert pinned.metadata == {"room": "B", "floor": 2, "owner": "ana"}
        with pytest.raises(Conflict, match="changed while it was being edited"):
            mem.update(record.id, content="The locker code is 14")
        monkeypatch.undo()
        now = mem.get(record.id)
        assert (now.content, now.version, now.pinned) == (edited.content, 2, True)
