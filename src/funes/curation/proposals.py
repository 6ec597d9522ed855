"""Human edits are sovereign: machine text for a person's record is a proposal, never an overwrite (issue 25).

A record is *sovereign* when a person wrote or edited its current text
(author ``user``: ``remember``/``update`` from the CLI, REST, the UI or the
library) or pinned it. Machine processes (``learn``, chat insights, entity
``reconcile``/``regenerate``) write through :meth:`Proposals.write`: on a
machine-written record the new text becomes the next version as usual; on a
sovereign one it is kept as the record's ``proposal``::

    {"content": ..., "content_hash": ..., "author": "llm", "reason": ...,
     "proposed_at": ..., "metadata": {...}}

and the current text does not change. A person then lists them
(``funes proposals``, ``GET /v1/teams/{team}/proposals``, the UI's detail
panel) and **accepts** one (it becomes the next version, written by the
proposal's author, so later machine updates apply again unless the record is
pinned) or **dismisses** it (the proposal goes; the same text is not proposed
again). A newer proposal replaces an older one.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, InvalidInput, NotFound
from ..models import Memory, content_hash, format_time, utcnow

if TYPE_CHECKING:
    from ..memory.core import Core

DISMISSED_KEY = "dismissed_proposal"  # metadata: the hash of the last dismissed proposal


class Proposals:
    """Proposals on sovereign records: written by machine processes, decided by people (a feature service)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def write(
        self,
        current: Memory,
        text: str,
        *,
        author: str = "llm",
        reason: str = "",
        metadata: dict[str, Any] | None = None,
        valid_from: datetime | None = None,
    ) -> tuple[Memory, bool]:
        """A machine's new text for ``current``: its next version, or a proposal when a person owns it.

        Returns the record that stands and whether the text was only proposed.
        """
        if not current.sovereign:
            updated = self.core.update(
                current.id,
                content=text,
                metadata=metadata,
                tenant=current.tenant,
                user=current.user_id,
                author=author,
                valid_from=valid_from,
            )
            return updated, False
        return self.propose(current, text, author=author, reason=reason, metadata=metadata), True

    def propose(
        self, current: Memory, text: str, *, author: str, reason: str = "", metadata: dict[str, Any] | None = None
    ) -> Memory:
        """Keep ``text`` as the record's proposal (the same text as now, or as last dismissed, proposes nothing)."""
        digest = content_hash(text)
        if digest == current.content_hash or current.metadata.get(DISMISSED_KEY) == digest:
            return current
        proposal = {
            "content": text,
            "content_hash": digest,
            "author": author,
            "reason": reason,
            "proposed_at": format_time(utcnow()),
            "metadata": dict(metadata or {}),
        }
        with self.core.store.transaction():
            stored = self.core.store.get_for_update(current.id)
            if stored is None:
                return current
            marked = stored.evolve(proposal=proposal)
            self.core.store.put(marked, None)
        return marked

    def list(self, *, tenant: str | None = None, user: str | None = None, limit: int = 100) -> list[Memory]:
        """Records with a pending proposal, most recently changed first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit {limit!r} is out of range.", hint="Use 1 to 1000.")
        return self.core.store.with_proposals(self.core.tenant_of(tenant), self.core.user_of(user), limit)

    def _pending(self, memory_id: str, tenant: str | None, user: str | None) -> Memory:
        memory = self.core.get(memory_id, tenant=tenant, user=user)
        if memory.proposal is None:
            raise NotFound(
                f"Memory {memory_id} has no pending proposal.",
                hint="`funes proposals` lists the records that have one.",
            )
        return memory

    def accept(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> Memory:
        """Make the proposal the record's next version (the current text is kept in history)."""
        memory = self._pending(memory_id, tenant, user)
        proposal = dict(memory.proposal or {})
        updated = self.core.update(
            memory.id,
            content=str(proposal["content"]),
            metadata={**(proposal.get("metadata") or {}), "accepted_proposal": proposal.get("proposed_at")},
            tenant=tenant,
            user=user,
            author=str(proposal.get("author") or "llm"),
        )
        return self._clear(updated, None)

    def dismiss(self, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> Memory:
        """Drop the proposal; the current text stays, and the same text is not proposed again."""
        memory = self._pending(memory_id, tenant, user)
        return self._clear(memory, str((memory.proposal or {}).get("content_hash") or ""))

    def _clear(self, memory: Memory, dismissed: str | None) -> Memory:
        with self.core.store.transaction():
            stored = self.core.store.get_for_update(memory.id)
            if stored is None:
                raise Conflict(f"Memory {memory.id} was deleted meanwhile.", hint="Nothing is left to decide.")
            metadata = stored.metadata if dismissed is None else {**stored.metadata, DISMISSED_KEY: dismissed}
            cleared = stored.evolve(proposal=None, metadata=metadata)
            self.core.store.put(cleared, None)
        return cleared


__all__ = ["DISMISSED_KEY", "Proposals"]
