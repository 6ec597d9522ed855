"""Topics for documents and notes indexed before they had them: the ``document-topics`` job (issue 26).

New passages and sections are labelled as they are read (see
:mod:`funes.memory.topics`). A store indexed earlier gets one
``document-topics`` job per tenant from its migration (SQLite ``015``,
PostgreSQL ``012``); the job labels every document's records that have no
topic, with the same rule as at ingest, and changes nothing else: no new
version, no new vector (a topic is searchable by keyword, not embedded).
Running it again finds nothing left to label. An import of an export made
before topics queues the same job (:mod:`funes.memory.transfer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..memory.topics import TOPICS_JOB, document_topics, unlabelled
from ..models import Job, Memory

if TYPE_CHECKING:
    from ..memory.core import Core
    from ..memory.jobs import Jobs
    from .documents import DocumentStore


class DocumentTopics:
    """Label the stored passages and sections of a tenant's documents that have no topic."""

    def __init__(self, core: Core, jobs: Jobs) -> None:
        self.core = core
        jobs.register(TOPICS_JOB, self.job)

    def plan(self, tenant: str) -> dict[str, str]:
        """Each unlabelled record's new topic, by id, over the tenant's indexed documents."""
        store = cast("DocumentStore", self.core.store)
        topics: dict[str, str] = {}
        for doc in store.list_documents(tenant):
            if doc.get("kind") == "chat":
                continue
            stored = self.core.store.get_many(store.document_chunk_ids(str(doc["id"])))
            records = sorted(stored.values(), key=lambda m: int(m.metadata.get("chunk_index", 0)))
            if not any(unlabelled(m) for m in records):
                continue
            title = (doc.get("metadata") or {}).get("title")
            for old, new in zip(records, document_topics(records, name=str(doc["name"]), title=title), strict=True):
                if new.topic and new.topic != old.topic:
                    topics[old.id] = new.topic
        return topics

    def job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``document-topics`` jobs: label outside the transaction, write the topics in it."""
        topics = self.plan(job.tenant)

        def apply() -> dict[str, Any]:
            # Read again inside the transaction: a record edited meanwhile keeps the topic it was given.
            fresh: dict[str, Memory] = self.core.store.get_many(list(topics))
            labelled = 0
            for memory_id, memory in fresh.items():
                if not memory.topic:
                    self.core.store.put(memory.evolve(topic=topics[memory_id]), None)
                    labelled += 1
            return {"labelled": labelled}

        return apply


__all__ = ["TOPICS_JOB", "DocumentTopics"]
