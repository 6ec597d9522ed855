"""Chat insights: what a conversation taught, kept as ONE memory per topic and merged across chats (seed 001).

:meth:`Insights.process_chat` reads a session and:

1. applies a **quality filter** with no LLM (:func:`chat_quality`): it skips
   a chat with fewer than 2 substantive messages (over 50 characters, not
   pure tool calls), one where over 80% of the messages are tool executions,
   and one where no assistant message explains anything in over 100
   characters;
2. **extracts the topic**: primary topic, related concepts, knowledge type,
   summary and scope, through the configured LLM (the offline heuristics by
   default). The extractor may answer skip;
3. **finds the insight on that topic**: the existing ``CHAT_INSIGHT``
   records nearest the topic, compared by the cosine of their topics'
   embeddings. At ``insight_merge_similarity`` (0.85) or above, the new
   summary is merged into that memory (the old text stays in its version
   history); below it, a new memory is created with entity id
   ``topic:<hash>``.

With ``auto_insights`` on, each user message queues an ``insights`` job for
its session (coalesced per session, after ``insights_delay_seconds``), so
the work is durable and never slows the chat.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderUnavailable
from ..models import MEMORY_TYPES, Job, Memory, SearchQuery, SourceRef
from .proposals import Proposals
from .provenance import derived_from_reads

if TYPE_CHECKING:
    from ..conversations.sessions import Conversations, Session
    from ..memory.core import Core
    from ..models.messages import Message
    from ..providers.llm import LLM

log = logging.getLogger("funes")

INSIGHT_TYPE = "CHAT_INSIGHT"
SUBSTANTIVE_CHARS = 50
EXPLANATION_CHARS = 100
MAX_TOOL_SHARE = 0.8
TOPIC_SCHEMA: dict[str, Any] = {
    "title": "chat_insight",
    "type": "object",
    "properties": {
        "skip": {"type": "boolean", "description": "True when the chat taught nothing worth keeping."},
        "primary_topic": {"type": "string", "description": "The one subject of the chat, in 2 to 6 words."},
        "related_concepts": {"type": "array", "items": {"type": "string"}, "description": "Up to 8 related terms."},
        "knowledge_type": {"type": "string", "enum": ["fact", "decision", "preference", "procedure", "context"]},
        "summary": {"type": "string", "description": "What was learned, in 1 to 4 sentences a colleague can reuse."},
        "scope": {"type": "string", "enum": ["team", "file", "session"]},
    },
    "required": ["skip", "primary_topic", "related_concepts", "knowledge_type", "summary", "scope"],
    "additionalProperties": False,
}
MERGE_SCHEMA: dict[str, Any] = {
    "title": "merged_insight",
    "type": "object",
    "properties": {"merged_summary": {"type": "string", "description": "Both summaries as one, without repeats."}},
    "required": ["merged_summary"],
    "additionalProperties": False,
}
_TYPES = {"procedure": "fact"}  # knowledge types that are not memory types map onto one


def _is_tool(message: Message) -> bool:
    return message.role == "tool" or (bool(message.tool_calls) and not message.content.strip())


def chat_quality(messages: Sequence[Message]) -> str | None:
    """Why a chat is not worth an insight (the three seed-001 rules), or None when it is."""
    if not messages:
        return "the chat has no messages"
    substantive = [m for m in messages if not _is_tool(m) and len(m.content.strip()) > SUBSTANTIVE_CHARS]
    if len(substantive) < 2:
        return f"fewer than 2 substantive messages (over {SUBSTANTIVE_CHARS} characters, not tool calls)"
    tools = sum(1 for m in messages if _is_tool(m) or m.tool_calls)
    if tools / len(messages) > MAX_TOOL_SHARE:
        return f"over {MAX_TOOL_SHARE:.0%} of the messages are tool executions"
    if not any(m.role == "assistant" and len(m.content.strip()) > EXPLANATION_CHARS for m in messages):
        return f"no assistant message explains anything in over {EXPLANATION_CHARS} characters"
    return None


def topic_key(topic: str) -> str:
    """The entity id of a topic's insight: ``topic:`` + a short hash of the normalised topic."""
    normal = " ".join(re.findall(r"\w+", topic.lower()))
    return "topic:" + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


class Insights:
    """Chat insights: the quality filter, topic extraction, and one merged memory per topic."""

    def __init__(self, core: Core, conversations: Conversations, llm: Callable[[], LLM]) -> None:
        self.core = core
        self.conversations = conversations
        self.config = core.config
        self._llm = llm
        conversations.message_observers.append(self._messages_written)

    # -- the automatic trigger -------------------------------------------------------------
    def _messages_written(self, session: Session, messages: Sequence[Message]) -> None:
        if not self.config.auto_insights or not any(m.role == "user" for m in messages):
            return
        self.core.enqueue_job(
            "insights",
            {"session": session.id, "user": session.user_id},
            tenant=session.tenant,
            delay=float(self.config.insights_delay_seconds),
            dedupe_key=f"insights:{session.tenant}:{session.id}",
        )

    def job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``insights`` jobs: extract and embed now, write with the job's completion."""
        plan = self._plan(str(job.payload["session"]), job.tenant, job.payload.get("user"))
        return lambda: self._apply(plan)

    # -- the work ------------------------------------------------------------------------
    def process_chat(
        self, session: Session | str, *, tenant: str | None = None, user: str | None = None, background: bool = False
    ) -> dict[str, Any]:
        """Learn the chat's insight: skipped (with the reason), created, or merged into the topic's memory.

        Returns ``status`` (skipped, created or merged), ``reason`` when
        skipped, the ``memory``, its ``topic`` and, when merged, the
        ``similarity`` of the topics. ``background=True`` queues it as a
        durable ``insights`` job and returns ``{"job_id": ...}``.
        """
        sess = self.conversations.resolve(session, tenant, user)
        if background:
            job_id = self.core.enqueue_job(
                "insights",
                {"session": sess.id, "user": sess.user_id},
                tenant=sess.tenant,
                dedupe_key=f"insights:{sess.tenant}:{sess.id}",
            )
            return {"job_id": job_id}
        with derived_from_reads(self.core, sess.tenant, f"learning the insight of session {sess.id}") as writing:
            plan = self._plan(sess.id, sess.tenant, sess.user_id)
            with writing():
                return self._apply(plan)

    def _plan(self, session_id: str, tenant: str, user: str | None) -> dict[str, Any]:
        sess = self.conversations.resolve(session_id, tenant, user)
        messages = self.conversations.history(sess)
        reason = chat_quality(messages)
        if reason is not None:
            return {"status": "skipped", "reason": reason, "session": sess.id}
        transcript = "\n".join(f"{m.role}: {m.content.strip()}" for m in messages if not _is_tool(m) and m.content)
        answer = self._llm().complete_json(
            "Extract the one insight of this conversation worth keeping for later conversations: its primary "
            "topic, related concepts, knowledge type, a reusable summary, and whether it concerns the whole team, "
            "the current file or only this session. Answer skip=true if it taught nothing.\n"
            f"<input>{transcript}</input>",
            TOPIC_SCHEMA,
        )
        topic = str(answer.get("primary_topic") or "").strip()
        summary = str(answer.get("summary") or "").strip()
        if answer.get("skip") or not topic or not summary:
            return {"status": "skipped", "reason": "the extractor found nothing worth keeping", "session": sess.id}
        scope = {"team": "team", "file": "project", "session": "session"}.get(str(answer.get("scope")), "team")
        if scope == "project" and not sess.project_id:
            scope = "team"  # a chat outside any file cannot hold a file-scope insight
        concepts = [str(c) for c in answer.get("related_concepts") or []][:8]
        match, similarity = self.find_topic(topic, concepts, tenant=sess.tenant, user=sess.user_id)
        kind_of = str(answer.get("knowledge_type") or "fact")
        plan: dict[str, Any] = {
            "session": sess.id,
            "tenant": sess.tenant,
            "user": sess.user_id,
            "topic": topic,
            "concepts": concepts,
            "memory_type": _TYPES.get(kind_of, kind_of if kind_of in MEMORY_TYPES else "fact"),
            "knowledge_type": kind_of,
            "scope": scope,
            "project": sess.project_id,
        }
        if match is not None and similarity >= float(self.config.insight_merge_similarity):
            merged = self._llm().complete_json(
                "Merge what a new conversation taught about this topic into the existing insight: keep every "
                f"distinct point once, newest facts winning.\n<existing>{match.content}</existing>\n"
                f"<new>{summary}</new>",
                MERGE_SCHEMA,
            )
            text = str(merged.get("merged_summary") or "").strip() or f"{match.content} {summary}"
            self._warm(match.evolve(content=text))
            return {**plan, "status": "merged", "memory_id": match.id, "content": text, "similarity": similarity}
        self._warm(Memory(id="mem_plan", content=summary, title=topic[:200], topic=topic))
        return {**plan, "status": "created", "content": summary, "similarity": similarity}

    def _warm(self, memory: Memory) -> None:
        """Embed the text the apply phase will write now, so the write finds it in the embedding cache."""
        try:
            self.core.embedding.embed_records([self.core.embedding.embed_text(memory)])
        except EmbedderUnavailable:
            pass  # the write stores it for keyword search and queues its vectors

    def _apply(self, plan: dict[str, Any]) -> dict[str, Any]:
        if plan["status"] == "skipped":
            return plan
        sources = {"sessions": [plan["session"]], "related_concepts": plan["concepts"]}
        fields: dict[str, Any] = {
            "type": plan["memory_type"],
            "kind": "insight",
            "scope": plan["scope"],
            "project": plan["project"] if plan["scope"] != "team" else None,
            "session": plan["session"] if plan["scope"] == "session" else None,
            "tenant": plan["tenant"],
            "user": plan["user"],
            "title": plan["topic"][:200],
            "topic": plan["topic"],
            "entity_type": INSIGHT_TYPE,
            "entity_id": topic_key(plan["topic"]),
            "source": SourceRef(type="chat", uri=f"session:{plan['session']}", locator={"session": plan["session"]}),
            "metadata": {**sources, "knowledge_type": plan["knowledge_type"]},
        }
        if plan["status"] == "created":
            # Another chat of this topic may have created its memory since the plan (its identity is locked
            # now, to the commit): merge into it, or that chat's session would be dropped from the record.
            draft = self.core.prepare(plan["content"], **fields)
            key = (draft.tenant, draft.user_id, draft.project_id, INSIGHT_TYPE, str(draft.entity_id))
            topical = self.core.store.find_entity(*key)
            if topical is not None:
                plan = {**plan, "status": "merged", "memory_id": topical.id, "similarity": 1.0}
        if plan["status"] == "merged":
            current = self.core.store.get_for_update(plan["memory_id"])  # held to the commit: no lost merge
            if current is not None:
                seen = [*current.metadata.get("sessions", []), plan["session"]]
                memory, proposed = Proposals(self.core).write(
                    current,
                    plan["content"],
                    author="llm",
                    reason=f"merged the chat {plan['session']}",
                    metadata={"sessions": list(dict.fromkeys(seen)), "related_concepts": plan["concepts"]},
                )
                return self._report({**plan, "status": "proposed"} if proposed else plan, memory)
            plan = {**plan, "status": "created"}  # the topic's memory was deleted meanwhile
        memory = self.core.remember(plan["content"], **fields)
        return self._report(plan, memory)

    @staticmethod
    def _report(plan: dict[str, Any], memory: Memory) -> dict[str, Any]:
        out = {"status": plan["status"], "session": plan["session"], "topic": plan["topic"], "memory": memory}
        if plan["status"] == "merged":
            out["similarity"] = round(float(plan["similarity"]), 4)
        return out

    def find_topic(
        self, topic: str, concepts: Sequence[str] = (), *, tenant: str, user: str | None = None
    ) -> tuple[Memory | None, float]:
        """The existing insight whose topic is nearest, and the cosine of the two topics' embeddings.

        A topic is compared with its related concepts (``topic: a, b, c``):
        two short labels of one subject often share no word ("pool size",
        "connection pool") while their concepts overlap.
        """
        hits = self.core.search(
            SearchQuery(
                _topic_text(topic, concepts),
                tenant=tenant,
                user=user,
                kinds=["insight"],
                entity_types=[INSIGHT_TYPE],
                limit=10,
                min_relevance=0,
                track=False,
            )
        )
        candidates = [h.memory for h in hits if h.memory.topic]
        if not candidates:
            return None, 0.0
        try:
            vectors = self.core.embedding.embed(
                [
                    _topic_text(topic, concepts),
                    *(_topic_text(m.topic or "", m.metadata.get("related_concepts") or ()) for m in candidates),
                ]
            )
        except EmbedderUnavailable:
            # No embedder: only the same topic, word for word, is the same topic.
            same = next((m for m in candidates if topic_key(m.topic or "") == topic_key(topic)), None)
            return (same, 1.0) if same is not None else (None, 0.0)
        matrix = np.asarray(vectors, dtype=np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        sims = matrix[1:] @ matrix[0]
        best = int(np.argmax(sims))
        return candidates[best], float(sims[best])


def _topic_text(topic: str, concepts: Sequence[str]) -> str:
    """A topic as embedded for comparison: the label, then its related concepts."""
    extra = [c for c in concepts if c.lower() not in topic.lower()]
    return f"{topic}: {', '.join(extra)}" if extra else topic


__all__ = ["INSIGHT_TYPE", "Insights", "chat_quality", "topic_key"]
