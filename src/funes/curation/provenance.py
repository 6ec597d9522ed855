"""Provenance (issue 25): what a record was made from, and which records were made from it.

Every derived record already carries its sources in its fields; this module
reads them as one shape, ``{"messages", "sessions", "documents", "entity",
"uri"}``:

* a learned fact: ``metadata.learned_from`` (the session) and
  ``source.locator.message_id`` (the user's turn);
* an insight: ``metadata.sessions`` (every chat merged into it);
* a message record: its session and message id (``source.locator``);
* a chunk: its document (``source_id``) and the file (``source.uri``);
* an entity summary: its entity (``entity_type:entity_id``).

``funes why ID`` shows them, and forgetting uses :func:`cites` to find the
derived records of what it removes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from ..models import Memory, to_epoch, utcnow
from ..store.consistency import read_at
from .entities import KIND

if TYPE_CHECKING:
    from ..memory.core import Core

ENTITY_SUMMARY_KIND = KIND


def sources_of(memory: Memory) -> dict[str, Any]:
    """The sources a record names: message ids, sessions, documents, its entity and uri."""
    meta = memory.metadata or {}
    locator = dict(memory.source.locator) if memory.source else {}
    messages = [str(locator["message_id"])] if locator.get("message_id") else []
    sessions = [str(s) for s in meta.get("sessions") or ()]
    for value in (meta.get("learned_from"), locator.get("session")):
        if value and str(value) not in sessions:
            sessions.append(str(value))
    uri = memory.source.uri if memory.source else None
    if uri and uri.startswith("session:") and uri[8:] not in sessions:
        sessions.append(uri[8:])
    if memory.kind == "message" and memory.session_id and memory.session_id not in sessions:
        sessions.append(memory.session_id)
    documents = [memory.source.source_id] if memory.source and memory.source.source_id else []
    entity = f"{memory.entity_type}:{memory.entity_id}" if memory.entity_type and memory.entity_id else None
    return {"messages": messages, "sessions": sessions, "documents": documents, "entity": entity, "uri": uri}


def cites(
    memory: Memory,
    messages: set[str],
    touched: set[str],
    whole: set[str],
    documents: set[str],
    entities: set[tuple[str | None, str | None]],
) -> str | None:
    """Why ``memory`` is derived from something forgotten ("message", "session", "document", "entity"), or None.

    ``touched`` sessions lost some messages, ``whole`` sessions all of them. An
    insight summarises its sessions, so a touched one taints it; a learned fact
    names its own message, so only a wholly forgotten session does. A message
    record is the transcript itself, never derived; an entity counts only for
    entity summaries.
    """
    src = sources_of(memory)
    if messages.intersection(src["messages"]):
        return "message"
    if memory.kind == "insight" and touched.intersection(src["sessions"]):
        return "session"
    if memory.kind != "message" and memory.metadata.get("learned_from") and whole.intersection(src["sessions"]):
        return "session"
    if documents.intersection(src["documents"]):
        return "document"
    if memory.kind == ENTITY_SUMMARY_KIND and (memory.entity_type, memory.entity_id) in entities:
        return "entity"
    return None


class Provenance:
    """``why``: a record's sources and the records derived from it."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def why(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> dict[str, Any]:
        """The record's sources and the records that cite it (learned facts, insights, summaries)."""
        memory = self.core.get(memory_id, tenant=tenant, user=user)
        src = sources_of(memory)
        mine = {
            "messages": set(src["messages"]) if memory.kind == "message" else set(),
            "sessions": set(src["sessions"]) if memory.kind == "message" else set(),
        }
        derived = []
        for other in self.core.store.iter_records(memory.tenant):
            if other.id == memory.id or not self.core.visible(other, memory.tenant, user):
                continue
            reason = cites(other, mine["messages"], mine["sessions"], set(), set(), set())
            if reason is None and memory.kind != ENTITY_SUMMARY_KIND and memory.entity_type:
                reason = cites(other, set(), set(), set(), set(), {(memory.entity_type, memory.entity_id)})
            if reason is not None:
                derived.append({"id": other.id, "kind": other.kind, "via": reason})
        return {
            "id": memory.id,
            "kind": memory.kind,
            "source_type": memory.source.type if memory.source else None,
            "sources": src,
            "derived": derived,
        }


@contextmanager
def derived_from_reads(core: Core, tenant: str, what: str) -> Iterator[Callable[[], AbstractContextManager[None]]]:
    """Derive records from the store's reads inside the block, and write them inside the transaction it yields
    (``with writing(): ...``, the store's :meth:`~funes.store.Store.unforgotten_write`): a forget of the tenant
    since the block began may have taken what was read (a learned fact of a forgotten message), so it raises
    ForgetCrossed (a Conflict: run it again) and nothing is written (as the job runner rolls jobs back)."""
    started = to_epoch(utcnow())
    with read_at(started):  # nor are their embeddings cached after such a forget
        yield lambda: core.store.unforgotten_write(tenant, started, what)
