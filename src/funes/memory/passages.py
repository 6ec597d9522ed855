"""Passage windows for records stored before them: the ``passage-windows`` job (issue 28).

New records get their passage windows as they are embedded
(:mod:`funes.memory.windows`). A store written earlier gets one
``passage-windows`` job per tenant holding long records from its migration
(SQLite ``018``, PostgreSQL ``016``), and an import of an export made before
windows queues the same job (:mod:`funes.memory.transfer`). The job finds the
tenant's records whose stored vectors are not their parts and windows, embeds
them outside any transaction, and writes each record's vectors in the job's
transaction unless the record changed meanwhile. It does ``batch`` records per
run and queues itself again while more are left, so a large store is
backfilled in steps that each commit; running it again finds nothing to do.

Cost: the model embeds each long record's windows (one sentence each by
default, so about the record's tokens once more, docs/benchmarks.md); records
that get no windows are read, not embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..models import Job, Memory
from .embedding import windowed
from .windows import long_enough

if TYPE_CHECKING:
    from .core import Core
    from .jobs import Jobs

WINDOWS_JOB = "passage-windows"
BATCH = 64


class PassageWindows:
    """Embed and store the passage windows of a tenant's records that lack them."""

    def __init__(self, core: Core, jobs: Jobs) -> None:
        self.core = core
        jobs.register(WINDOWS_JOB, self.job)

    def lacking(self, tenant: str) -> Iterator[Memory]:
        """The tenant's records whose stored vectors are not their text's parts and passage windows."""
        store = self.core.store
        if store.identity() is None or int(self.core.config.passage_window_sentences) <= 0:
            return
        batch: list[Memory] = []
        for memory in store.iter_records(tenant):
            if long_enough(memory):
                batch.append(memory)
            if len(batch) == 500:
                yield from self._lacking(batch)
                batch = []
        yield from self._lacking(batch)

    def _lacking(self, records: list[Memory]) -> Iterator[Memory]:
        embedding = self.core.embedding
        wanted: dict[str, int] = {}
        for memory in records:
            if not windowed(memory):
                continue
            text = embedding.embed_text(memory)
            if windows := embedding.windows(text):
                wanted[memory.id] = len(embedding.parts(text)) + len(windows)
        stored = self.core.store.vectors_for(list(wanted)) if wanted else {}
        for memory in records:
            # A record with no vectors at all waits for its own ``vectors`` job.
            if memory.id in wanted and memory.id in stored and len(stored[memory.id]) != wanted[memory.id]:
                yield memory

    def job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``passage-windows`` jobs: embed a batch outside the transaction, write it in the job's."""
        batch_size = int(job.payload.get("batch", BATCH))
        todo: list[Memory] = []
        more = False
        for memory in self.lacking(job.tenant):
            if len(todo) == batch_size:
                more = True
                break
            todo.append(memory)
        embedding = self.core.embedding
        vectors = embedding.embed_memories(todo, force=True) if todo else []

        def apply() -> dict[str, Any]:
            current = self.core.store.get_many([m.id for m in todo])
            written = 0
            for memory, parts in zip(todo, vectors, strict=True):
                now = current.get(memory.id)
                # A record deleted, or changed since (its own write embedded it anew), is skipped.
                if now is None or now.content_hash != memory.content_hash or now.title != memory.title:
                    continue
                self.core.store.put(now, parts)
                written += 1
            if more:  # the next batch is its own job, queued with this one's writes
                self.core.enqueue_job(WINDOWS_JOB, {"batch": batch_size}, tenant=job.tenant)
            return {"windowed": written, "more": more}

        return apply
