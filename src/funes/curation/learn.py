"""Facts from conversations: ``learn(messages | session)`` turns what the user said into durable memories.

What mem0 users expect of ``add(messages)``, done cheaply and safely:

* **Extract** candidates from the user's turns only: with the configured LLM
  (``llm`` setting) when there is one, else (or when it finds nothing) by
  heuristics: first-person statements of preference ("I prefer aisle
  seats"), decision ("we decided to ship on Fridays") and fact ("I moved to
  Berlin", "our vendor is Acme"), each with the date it was said.
  Questions and small talk are not statements.
* **Reconcile** each candidate with what exists, by embedding similarity
  within the same owner and memory type, and by the statement's *frame*
  (where the user lives, works, what they prefer, which tool or vendor):
  * the same statement again is **skipped** (the record's access count rises);
  * a changed statement of the same frame (moved, switched vendor, changed a
    preference about the same thing) **supersedes** the old record as its new
    version, the old text kept in its history: two contradicting truths are
    never kept side by side;
  * anything else is **added**.
* It never deletes: a replaced statement stays in the record's history.

With ``auto_learn`` on (off for the library, on for ``funes serve``), the
messages a session stores queue a ``learn`` job (coalesced per session).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..models import Job, Memory, SearchQuery, SourceRef, format_time
from ..store import AccessEvent
from .proposals import Proposals
from .provenance import derived_from_reads
from .upkeep import same_words

if TYPE_CHECKING:
    from ..conversations.sessions import Conversations, Session
    from ..memory.core import Core
    from ..models.messages import Message
    from ..providers.llm import LLM

log = logging.getLogger("funes")

# (frame, memory type, pattern, exclusive): an exclusive frame holds one truth at a time
# (one home, one employer), so a new statement of it supersedes the old whatever the words.
_FRAMES: tuple[tuple[str, str, re.Pattern[str], bool], ...] = tuple(
    (name, kind, re.compile(pattern, re.IGNORECASE), exclusive)
    for name, kind, pattern, exclusive in (
        (
            "residence",
            "fact",
            r"\b(?:i|we)\s+(?:now\s+)?(?:live|am living|reside|moved|have moved|relocated)\s+(?:in|to)\b",
            True,
        ),
        (
            "employer",
            "fact",
            r"\bi\s+(?:now\s+)?(?:work|am working)\s+(?:at|for)\b|\bi\s+(?:joined|started at)\b",
            True,
        ),
        (
            "choice",
            "decision",
            r"\b(?:we|i)\s+(?:have\s+)?(?:switched|changed|migrated|moved over)\s+(?:\w+\s+)?(?:from\s+\S+\s+)?to\b|\bour\s+(?:main\s+)?(?:vendor|supplier|provider|stack|database|cloud)\s+is\b",
            False,
        ),
        (
            "preference",
            "preference",
            r"\b(?:i|we)\s+(?:really\s+|now\s+|still\s+|much\s+)?(?:prefer|like|love|enjoy|hate|dislike|don't like|do not like|favou?r)\b|\bmy\s+favou?rite\b",
            False,
        ),
        (
            "decision",
            "decision",
            r"\b(?:we|i)\s+(?:have\s+)?(?:decided|agreed|chose|will always|will never)\b|\blet's\s+(?:go with|use|always|never)\b|\b(?:going forward|from now on)\b",
            False,
        ),
        (
            "fact",
            "fact",
            r"\b(?:i am|i'm|my\s+\w+(?:\s+\w+)?\s+(?:is|are)|our\s+\w+(?:\s+\w+)?\s+(?:is|are)|we use|we're using|i use|i have|we have)\b",
            False,
        ),
    )
)
_FILLER = re.compile(r"^(?:actually|also|so|well|now|oh|ok(?:ay)?|btw|by the way|just so you know|fyi)[,\s]+", re.I)
_SENTENCE = re.compile(r"(?<=[.!;])\s+|\n+")
CANDIDATES_SCHEMA: dict[str, Any] = {
    "title": "learned_memories",
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "description": "Durable facts, preferences and decisions the USER stated, one per item, in the third person.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "type": {"type": "string", "enum": ["preference", "fact", "decision"]},
                    "subject": {"type": "string", "description": "What it is about, e.g. 'home city', 'seat'."},
                },
                "required": ["content", "type", "subject"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Candidate:
    """A statement worth remembering, found in a user's turn."""

    content: str
    memory_type: str
    frame: str
    exclusive: bool
    stated_at: datetime | None = None
    message_id: str | None = None


def _frame(sentence: str) -> tuple[str, str, bool] | None:
    for name, kind, pattern, exclusive in _FRAMES:
        if pattern.search(sentence):
            return name, kind, exclusive
    return None


def statements(messages: Sequence[Message]) -> list[Candidate]:
    """The first-person statements of preference, decision and fact in the user's turns (heuristics)."""
    out: list[Candidate] = []
    for message in messages:
        if message.role != "user" or not message.content:
            continue
        for raw in _SENTENCE.split(message.content):
            sentence = _FILLER.sub("", raw.strip()).strip()
            if not sentence or sentence.endswith("?") or len(sentence.split()) < 4 or len(sentence) > 400:
                continue
            found = _frame(sentence)
            if found is None:
                continue
            name, kind, exclusive = found
            text = sentence[0].upper() + sentence[1:]
            out.append(Candidate(text, kind, name, exclusive, message.created_at, message.id))
    return out


class Learning:
    """``learn``: durable memories from what users say, reconciled with what is already known."""

    def __init__(self, core: Core, conversations: Conversations, llm: Callable[[], LLM]) -> None:
        self.core = core
        self.conversations = conversations
        self.config = core.config
        self._llm = llm
        conversations.message_observers.append(self._messages_written)

    def _messages_written(self, session: Session, messages: Sequence[Message]) -> None:
        users = [m for m in messages if m.role == "user"]
        if not self.config.auto_learn or not users:
            return
        self.core.enqueue_job(
            "learn",
            {"session": session.id, "user": session.user_id, "after_seq": min(m.seq for m in users) - 1},
            tenant=session.tenant,
            delay=float(self.config.insights_delay_seconds),
            dedupe_key=f"learn:{session.tenant}:{session.id}",
        )

    def job(self, job: Job) -> Callable[[], dict[str, Any]]:
        """Handler of ``learn`` jobs: extract and compare now, write with the job's completion."""
        sess = self.conversations.resolve(str(job.payload["session"]), job.tenant, job.payload.get("user"))
        after = int(job.payload.get("after_seq") or 0)
        messages = [m for m in self.conversations.history(sess) if m.seq > after]
        plan = self._plan(messages, sess.tenant, sess.user_id, sess.project_id, sess.id)
        return lambda: self._report(self._apply(plan))

    # -- the API -----------------------------------------------------------------------
    def learn(
        self,
        source: Session | str | Sequence[Mapping[str, Any] | Message],
        *,
        tenant: str | None = None,
        user: str | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Learn durable memories from a session (id or Session) or a list of messages; returns what happened.

        The result has ``added``, ``updated``, ``skipped`` and ``proposed`` (a changed
        statement of a record a person wrote or pinned: kept as its proposal) lists; each item
        names the memory, the statement and why (see the module docstring).
        """
        if isinstance(source, str) or hasattr(source, "history"):
            sess = self.conversations.resolve(source, tenant, user)  # type: ignore[arg-type]
            with derived_from_reads(self.core, sess.tenant, f"learning from session {sess.id}") as writing:
                messages = self.conversations.history(sess)
                plan = self._plan(messages, sess.tenant, sess.user_id, sess.project_id, sess.id)
                with writing():
                    done = self._apply(plan)
                return self._report(done)
        if isinstance(source, Mapping) or not isinstance(source, Sequence):
            raise InvalidInput(
                "learn() takes a session or a list of messages.",
                hint='Pass funes.learn("SESSION_ID") or funes.learn([{"role": "user", "content": "..."}]).',
            )
        # Messages passed in are the caller's text, not the store's: a forget meanwhile takes nothing they hold.
        messages = [_as_message(m, i) for i, m in enumerate(source)]
        tenant_id, user_id = self.core.tenant_of(tenant), self.core.user_of(user)
        plan = self._plan(messages, tenant_id, user_id, self.core.project_of(project), None)
        with self.core.store.transaction():
            return self._report(self._apply(plan))

    # -- the two phases -------------------------------------------------------------------
    def _candidates(self, messages: Sequence[Message]) -> list[Candidate]:
        llm = self._llm()
        if getattr(llm, "name", "offline") != "offline":
            turns = "\n".join(f"{m.role}: {m.content}" for m in messages if m.role in ("user", "assistant"))
            answer = llm.complete_json(
                "List the durable facts, preferences and decisions the USER states about themselves or their work "
                "in this conversation (not the assistant's suggestions, not questions). One per item, as a short "
                f"third-person statement.\n<input>{turns}</input>",
                CANDIDATES_SCHEMA,
            )
            stated = next((m.created_at for m in reversed(messages) if m.role == "user"), None)
            found = []
            for item in answer.get("memories") or []:
                content = str(item.get("content") or "").strip()
                kind = str(item.get("type") or "fact")
                if content:
                    framed = _frame(content)
                    frame = framed[0] if framed else f"subject:{str(item.get('subject') or '').lower()}"
                    found.append(Candidate(content, kind, frame, bool(framed and framed[2]), stated))
            if found:
                return found
        return statements(messages)

    def _plan(
        self,
        messages: Sequence[Message],
        tenant: str,
        user: str | None,
        project: str | None,
        session: str | None,
    ) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for candidate in self._candidates(messages):
            hits = self.core.search(
                SearchQuery(
                    candidate.content,
                    tenant=tenant,
                    user=user,
                    kinds=["memory"],
                    types=[candidate.memory_type],
                    limit=5,
                    min_relevance=0,
                    track=False,
                )
            )
            step: dict[str, Any] = {
                "candidate": candidate,
                "tenant": tenant,
                "user": user,
                "project": project,
                "session": session,
            }
            for hit in hits:
                old = hit.memory
                if (old.user_id or None) != user:
                    continue  # never rewrite a shared or another user's memory from one user's words
                similarity = hit.explanation.vector_similarity or 0.0
                if same_words(old.content, candidate.content) or similarity >= 0.97:
                    step.update(action="skipped", memory=old, reason="already known (a restatement)")
                    break
                old_frame = _frame(old.content)
                if old_frame is not None and old_frame[0] == candidate.frame:
                    if candidate.exclusive or similarity >= float(self.config.learn_update_similarity):
                        step.update(
                            action="updated",
                            memory=old,
                            reason=f"replaces an earlier statement of the same {candidate.frame} "
                            f"(similarity {similarity:.2f})",
                        )
                        break
            else:
                step.update(action="added", reason=f"a new {candidate.memory_type} ({candidate.frame})")
            if step["action"] != "skipped":
                # Embed now, outside the write transaction; the write finds it in the cache.
                self.core.embedding.embed_records([candidate.content])
            steps.append(step)
        return steps

    def _apply(self, steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        done = []
        seen: set[str] = set()
        for step in steps:
            candidate: Candidate = step["candidate"]
            metadata = {
                "learned_from": step["session"],
                "stated_at": format_time(candidate.stated_at),
                "frame": candidate.frame,
            }
            if step["action"] == "skipped":
                old: Memory = step["memory"]
                self.core.track([AccessEvent(old.id, old.tenant, "restated", query=candidate.content)])
                done.append({**step, "memory": old})
                continue
            if step["action"] == "updated" and step["memory"].id not in seen:
                current = self.core.store.get(step["memory"].id)
                if current is not None:
                    # A person's own record is never rewritten: the new statement is a proposal (issue 25).
                    memory, proposed = Proposals(self.core).write(
                        current,
                        candidate.content,
                        author="llm",
                        reason=step["reason"],
                        metadata=metadata,
                        valid_from=candidate.stated_at,
                    )
                    seen.add(memory.id)
                    done.append({**step, "memory": memory, **({"action": "proposed"} if proposed else {})})
                    continue
            memory = self.core.remember(
                candidate.content,
                type=candidate.memory_type,
                tenant=step["tenant"],
                user=step["user"],
                scope="project" if step["project"] else "team",
                project=step["project"],
                source=SourceRef(
                    type="chat",
                    uri=f"session:{step['session']}" if step["session"] else None,
                    locator={"message_id": candidate.message_id} if candidate.message_id else {},
                ),
                metadata=metadata,
            )
            memory = self._dated(memory, candidate.stated_at)
            seen.add(memory.id)
            if step["action"] == "updated":  # the record it replaced was deleted meanwhile
                step = {**step, "action": "added", "reason": "a new statement (the one it replaced is gone)"}
            done.append({**step, "memory": memory})
        return done

    def _dated(self, memory: Memory, stated_at: datetime | None) -> Memory:
        """A new learned record dated by when it was said, like the message it came from (as_of reads it so)."""
        if stated_at is None or stated_at >= memory.created_at or memory.valid_from is not None:
            return memory
        stored_at = {"recorded_at": format_time(memory.created_at)}  # when Funes stored it, kept for audit
        dated = memory.evolve(created_at=stated_at, valid_from=stated_at, metadata={**memory.metadata, **stored_at})
        self.core.store.put(dated, None)
        return dated

    @staticmethod
    def _report(done: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"added": [], "updated": [], "skipped": [], "proposed": []}
        for step in done:
            out[step["action"]].append(
                {"memory": step["memory"], "statement": step["candidate"].content, "reason": step["reason"]}
            )
        return out


def _as_message(item: Mapping[str, Any] | Message, index: int) -> Message:
    from ..models.messages import Message

    if isinstance(item, Message):
        return item
    if not isinstance(item, Mapping) or not isinstance(item.get("content"), str) or not item.get("role"):
        raise InvalidInput(
            f"Message {index} is not a message.", hint='Each message is {"role": "user", "content": "text"}.'
        )
    return Message(role=str(item["role"]), content=item["content"], id=item.get("id"))


__all__ = ["Candidate", "Learning", "statements"]
