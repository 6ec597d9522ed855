"""Sessions, messages, usage, context building, retention and promotion.

A message is persisted twice in ONE transaction: as a row of the session's
transcript (the source of history) and as ``message`` records in session
scope (chunked if long), so a turn dropped from the prompt can still be
recalled by search. Token usage per model call is recorded per session.

:meth:`Conversations.build_context` gathers the pieces — history, the
caller's snapshot and recent changes, recalled turns, project facts and
retrieved memories — and hands them to the pure :func:`funes.conversations.assembly.assemble`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import EmbedderUnavailable, InvalidInput, NotFound
from ..memory.neighbours import merge_windows
from ..memory.record_input import check_content
from ..memory.timeline import records_at
from ..models import Memory, SearchQuery, SourceRef, format_time, new_id, utcnow
from ..models.messages import AddedMessages, Message, Recalled, SkippedMessage
from ..store import AccessEvent, vis_key
from .assembly import FORMATS, Budget, BuiltContext, ContextInputs, assemble, mentioned_sources
from .message_input import PendingMessage, check_message, read_each, usage_numbers
from .tokens import TokenCounter, default_counter

if TYPE_CHECKING:
    from ..knowledge.documents import Documents
    from ..memory.core import Core

HISTORY_FETCH = 2000  # messages read for one build; far more than any conversation cap holds
TIERS = ("session", "project", "team")


@dataclass(frozen=True)
class Session:
    """A handle on one conversation: add messages, read history, build context."""

    service: Conversations
    id: str
    tenant: str
    user_id: str | None
    project_id: str | None
    title: str | None
    created_at: datetime
    last_activity: datetime
    message_count: int = 0

    def add_message(self, role: str, content: str, **options: Any) -> Message:
        """Persist a message (see :meth:`Conversations.add_message`)."""
        return self.service.add_message(self, role, content, **options)

    def add_messages(self, messages: Iterable[Mapping[str, Any]], *, atomic: bool = False) -> AddedMessages:
        """Persist a whole conversation in one call (see :meth:`Conversations.add_messages`)."""
        return self.service.add_messages(self, messages, atomic=atomic)

    def history(self, limit: int | None = None) -> list[Message]:
        """The messages, oldest first (the newest ``limit`` when given)."""
        return self.service.history(self, limit=limit)

    def usage(self) -> dict[str, Any]:
        """Token usage totals and the last call's breakdown."""
        return self.service.usage(self)

    def record_usage(self, prompt_tokens: int, completion_tokens: int, **options: Any) -> dict[str, Any]:
        """Record one model call's token usage."""
        return self.service.record_usage(self, prompt_tokens, completion_tokens, **options)

    def build_context(self, query: str, **options: Any) -> BuiltContext:
        """The request for the next model call (see :meth:`Conversations.build_context`)."""
        return self.service.build_context(self, query, **options)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "title": self.title,
            "created_at": format_time(self.created_at),
            "last_activity": format_time(self.last_activity),
            "message_count": self.message_count,
        }


class Conversations:
    """Conversation memory: sessions, messages, usage, context, retention and promotion."""

    def __init__(self, core: Core, docs: Documents) -> None:
        self.core = core
        self.docs = docs
        self.store = core.store
        self.config = core.config
        # Called inside the transaction that stores messages, with (session, messages); see funes.insights.
        self.message_observers: list[Callable[[Session, Sequence[Message]], None]] = []

    # -- sessions --------------------------------------------------------------------
    def session(
        self,
        id: str | None = None,
        *,
        project: str | None = None,
        title: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> Session:
        """Create a session, or resume it when ``id`` exists (its project is kept)."""
        tenant_id = self.core.tenant_of(tenant)
        if id is not None and (not isinstance(id, str) or not id.strip() or len(id) > 200):
            raise InvalidInput(
                f"Invalid session id {id!r}.", hint="Use a short non-empty string, or omit it to get a new id."
            )
        sid = id.strip() if id else new_id("ses")
        row = self.store.get_session(tenant_id, sid)
        if row is not None:
            project_id = self.core.project_of(project)
            if project is not None and row["project_id"] != project_id:
                raise InvalidInput(
                    f"Session {sid!r} belongs to project {row['project_id']!r}, not {project_id!r}.",
                    hint="Resume it without a project, or start a new session for the other project.",
                )
            session = self._session_from(row)
            self._check_session_user(session, user)
            return session
        row = self.store.create_session(
            tenant_id, sid, self.core.user_of(user), self.core.project_of(project), title, utcnow()
        )
        return self._session_from(row)

    def sessions(
        self, *, project: str | None = None, tenant: str | None = None, user: str | None = None, limit: int = 50
    ) -> list[Session]:
        """Sessions by most recent activity."""
        if not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidInput(f"Limit {limit!r} is out of range.", hint="Use a limit from 1 to 10000.")
        rows = self.store.list_sessions(
            self.core.tenant_of(tenant), user_id=self.core.user_of(user), project_id=project, limit=limit
        )
        return [self._session_from(r) for r in rows]

    def _session_from(self, row: Mapping[str, Any]) -> Session:
        return Session(
            service=self,
            id=row["id"],
            tenant=row["tenant"],
            user_id=row["user_id"],
            project_id=row["project_id"],
            title=row["title"],
            created_at=row["created_at"],
            last_activity=row["last_activity"],
            message_count=row["message_count"],
        )

    def _check_session_user(self, session: Session, user: str | None) -> None:
        caller = self.core.user_of(user)
        if caller and session.user_id and session.user_id != caller:
            raise NotFound(f"No session {session.id!r}.", hint="`funes sessions list` shows your sessions.")

    def resolve(self, session: Session | str, tenant: str | None = None, user: str | None = None) -> Session:
        if isinstance(session, Session):
            return session
        if not isinstance(session, str) or not session:
            raise InvalidInput(
                f"Invalid session {session!r}.", hint="Pass a session id or a Session from funes.session()."
            )
        row = self.store.get_session(self.core.tenant_of(tenant), session)
        if row is None:
            raise NotFound(
                f"No session {session!r}.",
                hint="Create it with funes.session(id) (CLI: `funes chat add --session ID ...`); `funes sessions list` shows sessions.",
            )
        found = self._session_from(row)
        self._check_session_user(found, user)
        return found

    # -- messages ----------------------------------------------------------------------
    def add_message(
        self,
        session: Session | str,
        role: str,
        content: str,
        *,
        tool_calls: Sequence[Any] | None = None,
        tool_call_id: str | None = None,
        usage: Any = None,
        at: datetime | str | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> Message:
        """Persist a message and index it as session-scope ``message`` records, in one transaction.

        ``usage`` (a dict or an SDK usage object) records the token usage of
        the model call that produced this message.
        """
        sess = self.resolve(session, tenant, user)
        pending = check_message(role, content, tool_calls=tool_calls, tool_call_id=tool_call_id, usage=usage, at=at)
        if pending.content.strip():
            check_content(pending.content, self.config.max_content_bytes)  # the size limit applies to transcripts too
        return self._write_messages(sess, [pending])[0]

    def add_messages(
        self,
        session: Session | str,
        messages: Iterable[Mapping[str, Any]],
        *,
        tenant: str | None = None,
        user: str | None = None,
        atomic: bool = False,
    ) -> AddedMessages:
        """Persist a whole conversation in one transaction, with one batched embedding; returns the messages.

        ``messages`` are dicts in the OpenAI or Anthropic shape: ``role``,
        ``content`` (text or content blocks) and optionally ``at``,
        ``tool_calls``, ``tool_call_id`` and ``usage`` (see
        :func:`funes.conversations.message_input.read_each`). Every message is
        checked before any is written. An invalid one (empty, an unknown role,
        over the size limit, ...) is left out and reported in ``.skipped`` with
        its index and reason, as ``remember_many`` does; the rest are stored,
        and ``.inputs`` maps each stored message back to its input. With
        ``atomic=True`` one invalid message rejects the call instead (the error
        names it), so the conversation is stored whole or not at all.
        """
        sess = self.resolve(session, tenant, user)
        limit = self.config.max_content_bytes
        pending: list[tuple[int, PendingMessage]] = []
        skipped: list[SkippedMessage] = []
        for index, read in read_each(messages):
            try:
                if isinstance(read, InvalidInput):
                    raise read
                for msg in read:
                    if msg.content.strip():
                        check_content(msg.content, limit)  # the size limit applies to transcripts too
            except InvalidInput as exc:
                error = (
                    exc
                    if exc.message.startswith("Message ")
                    else InvalidInput(f"Message {index}: {exc.message}", hint=exc.hint)
                )
                if atomic:
                    raise error from exc
                skipped.append(SkippedMessage(index, error))
                continue
            pending += [(index, msg) for msg in read]
        if not pending:
            first = skipped[0].error
            raise InvalidInput(f"None of the messages can be added; {first.message}", hint=first.hint)
        stored = self._write_messages(sess, [msg for _, msg in pending])
        return AddedMessages(stored, inputs=[index for index, _ in pending], skipped=skipped)

    def _write_messages(self, sess: Session, pending: Sequence[PendingMessage]) -> list[Message]:
        """Index and store checked messages (their size too): one embedding call, one transaction."""
        planned: list[tuple[PendingMessage, str, list[Memory]]] = []
        for msg in pending:
            message_id = new_id("msg")
            records: list[Memory] = []
            if msg.content.strip():
                pieces = self.core.embedding.parts(msg.content.strip())
                for part, piece in enumerate(pieces, start=1):
                    locator: dict[str, Any] = {
                        "message_id": message_id,
                        "role": msg.role,
                        "timestamp": format_time(msg.at),
                        "session": sess.id,
                    }
                    if sess.title:
                        locator["title"] = sess.title
                    if len(pieces) > 1:
                        locator.update(part=part, parts=len(pieces))
                    memory = self.core.prepare(
                        piece,
                        # The message's date is indexed with it (keyword leg only: in the embedded
                        # text it lowered cosines under the context threshold), so "what did we
                        # decide in May 2023" matches by date too.
                        topic=f"{msg.at.day} {msg.at:%B %Y}",
                        type="conversation",
                        kind="message",
                        scope="session",
                        session=sess.id,
                        project=sess.project_id,
                        tenant=sess.tenant,
                        user=sess.user_id,  # replaced below: the session owner, even when None
                        source=SourceRef(type="chat", uri=f"session:{sess.id}", locator=locator),
                    )
                    records.append(memory.evolve(user_id=sess.user_id, created_at=msg.at, updated_at=msg.at))
            planned.append((msg, message_id, records))
        every = [m for _, _, records in planned for m in records]
        # Embedding is slow: do it, for the whole batch at once, before taking the write lock.
        vectors: list[list[Any]] | None
        try:
            vectors = self.core.embedding.embed_memories(every) if every else []
        except EmbedderUnavailable:
            # The messages are accepted anyway: findable by keyword now, embedded by a job later.
            vectors = None
        out: list[Message] = []
        vectors_of = iter(vectors or [])
        with self.store.transaction():  # one batch of rows per table (issue 29), not statements per message
            seqs = self.store.append_messages(
                sess.tenant,
                sess.id,
                [
                    (i, m.role, m.content, m.tool_calls, m.tool_call_id, m.at, [r.id for r in rs])
                    for m, i, rs in planned
                ],
            )
            items: list[tuple[Memory, Any]] = []
            for (msg, message_id, records), seq in zip(planned, seqs, strict=True):
                for memory in records:
                    located = replace(memory.source, locator={**memory.source.locator, "seq": seq})  # type: ignore[union-attr]
                    items.append((memory.evolve(source=located), None if vectors is None else next(vectors_of)))
                if msg.usage is not None:
                    prompt, completion, model, window = msg.usage
                    self.store.add_usage(sess.tenant, sess.id, message_id, msg.at, model, prompt, completion, window)
                out.append(
                    Message(
                        role=msg.role,
                        content=msg.content,
                        id=message_id,
                        session_id=sess.id,
                        seq=seq,
                        tool_calls=msg.tool_calls,
                        tool_call_id=msg.tool_call_id,
                        created_at=msg.at,
                        record_ids=tuple(m.id for m in records),
                    )
                )
            self.store.put_many(items)
            if vectors is None and every:
                self.core.defer_vectors([m.id for m in every], sess.tenant)
            for observer in self.message_observers:
                observer(sess, out)
        return out

    def history(
        self,
        session: Session | str,
        *,
        limit: int | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> list[Message]:
        """The session's messages, oldest first; with ``limit``, the newest ``limit`` of them."""
        if limit is not None and (not isinstance(limit, int) or not 1 <= limit <= 1_000_000):
            raise InvalidInput(f"Limit {limit!r} is out of range.", hint="Use a number of messages from 1 to 1000000.")
        sess = self.resolve(session, tenant, user)
        return self.store.messages(sess.tenant, sess.id, limit=limit)

    # -- usage ---------------------------------------------------------------------------
    def record_usage(
        self,
        session: Session | str,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        model: str | None = None,
        context_window: int | None = None,
        message_id: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Record the token usage of one model call in the session; returns the new usage summary."""
        sess = self.resolve(session, tenant, user)
        prompt, completion, _, _ = usage_numbers(
            {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
        )
        self.store.add_usage(sess.tenant, sess.id, message_id, utcnow(), model, prompt, completion, context_window)
        return self.usage(sess)

    def usage(self, session: Session | str, *, tenant: str | None = None, user: str | None = None) -> dict[str, Any]:
        """Totals over the session's calls and the last call: context used out of the window, prompt and response tokens."""
        sess = self.resolve(session, tenant, user)
        summary = self.store.usage_summary(sess.tenant, sess.id)
        last = summary.pop("last")
        out: dict[str, Any] = {
            "session": sess.id,
            "calls": summary["calls"],
            "totals": {
                "prompt_tokens": summary["prompt_tokens"],
                "completion_tokens": summary["completion_tokens"],
                "total_tokens": summary["prompt_tokens"] + summary["completion_tokens"],
            },
            "last": None,
        }
        if last is not None:
            window = last["context_window"] or self.config.context_window
            used = last["prompt_tokens"] + last["completion_tokens"]
            out["last"] = {
                **last,
                "context_window": window,
                "context_used": used,
                "context_fraction": used / window if window else None,
            }
        return out

    # -- context -------------------------------------------------------------------------
    def memory_instructions(self) -> str:
        """The memory instructions text (a user override when one exists)."""
        from .prompts import load_prompt

        return load_prompt("memory", prompts_dir=self.config.prompts_dir)

    def context_budget(
        self, model_window: int | None = None, *, project: str | None = None, tenant: str | None = None
    ) -> Budget:
        """The configured caps (for 128k) scaled to a model window; a project's ``retrieval_k`` sets its chunk count."""
        retrieved_chunks = self.config.context_retrieved_chunks
        if project:
            retrieved_chunks = self.core.projects.effective(self.core.tenant_of(tenant), project)["retrieval_k"]
        base = Budget(
            window=128_000,
            system=self.config.context_system_tokens,
            snapshot=self.config.context_snapshot_tokens,
            conversation=self.config.context_conversation_tokens,
            retrieved=self.config.context_retrieved_tokens,
            response=self.config.context_response_tokens,
            retrieved_chunks=retrieved_chunks,
            chunk_tokens=self.config.context_chunk_tokens,
        )
        return Budget.for_window(self.config.context_window if model_window is None else model_window, base)

    def build_context(
        self,
        session: Session | str,
        query: str | None = None,
        *,
        snapshot: Any = None,
        recent_changes: Sequence[Any] | None = None,
        instructions: str | None = None,
        model_window: int | None = None,
        budget: Budget | Mapping[str, int] | None = None,
        format: str = "anthropic",
        counter: TokenCounter | None = None,
        min_similarity: float | None = None,
        tenant: str | None = None,
        user: str | None = None,
        as_of: Any = None,
    ) -> BuiltContext:
        """The request for the next model call: ONE system message, then history, then ``query`` (recalled ``as_of``).

        ``snapshot`` is the application's live state (a dict, list or text);
        ``recent_changes`` the latest edits (dicts with location, old, new, by,
        at; the last 10 are shown). ``budget`` is a :class:`Budget` or a dict
        of caps overriding the configured ones scaled to ``model_window``.
        The result's ``report()`` says what was included and dropped, with
        token counts per section. Without a ``query`` the session's latest user
        message stands for it: the context of the conversation as it is (the
        web UI measures it when a session opens).
        """
        if format not in FORMATS:
            raise InvalidInput(f"Unknown format {format!r}.", hint="Use 'anthropic' or 'openai'.")
        if query is not None and not isinstance(query, str):
            raise InvalidInput(f"The query must be text, got {type(query).__name__}.", hint="Pass the user message.")
        sess = self.resolve(session, tenant, user)
        history = self.store.messages(sess.tenant, sess.id, limit=HISTORY_FETCH)
        if not (query or "").strip():
            said = [m.content for m in history if m.role == "user" and m.content.strip()]
            if not said:
                raise InvalidInput(
                    "The user message is empty and the session has none to stand for it.",
                    hint="Pass the current user message as the query.",
                )
            query = said[-1]
        # Visibility follows the caller, not the session: a session created without a
        # user showed u1's private memories to u2 (issue 9). A caller without a user
        # reads as the session's owner, so nobody else's private records reach this prompt.
        viewer = self.core.user_of(user) or sess.user_id
        caps = self.context_budget(model_window, project=sess.project_id, tenant=sess.tenant)
        if isinstance(budget, Budget):
            caps = budget
        elif budget is not None:
            unknown = sorted(set(budget) - set(Budget.__dataclass_fields__))
            if unknown:
                raise InvalidInput(
                    f"Unknown budget field(s): {', '.join(unknown)}.",
                    hint=f"Use: {', '.join(Budget.__dataclass_fields__)}.",
                )
            caps = replace(caps, **dict(budget))
        caps.check()
        limit = max(caps.retrieved_chunks * 4, 20)
        query = query.strip()
        # A long user message is still answered: its search uses the first max_query_chars characters.
        cap = int(self.config.max_query_chars)
        probe = query[:cap] if cap > 0 else query
        # With the calibrated model, what reaches the prompt is held to a relevance floor
        # (context_min_relevance); with another embedder, when the caller passes
        # min_similarity, or when auto_min_similarity was set (file, env or argument),
        # to a cosine threshold as well: a setting someone set is honoured.
        calibrated = self.core.relevance_calibrated()
        threshold: float | None = float(min_similarity) if min_similarity is not None else None
        if threshold is None and (not calibrated or self.config.origins["auto_min_similarity"] != "default"):
            threshold = float(self.config.auto_min_similarity)
        hits = self.core.search(
            SearchQuery(
                probe,
                tenant=sess.tenant,
                user=viewer,
                project=sess.project_id,
                # Earlier sessions are what an assistant forgets: recall across every session
                # the caller may see, not only this one (the current one is in the history).
                session=None if self.config.context_all_sessions else sess.id,
                min_similarity=threshold,
                min_relevance=float(self.config.context_min_relevance) if calibrated else 0,
                limit=limit,
                track=False,
                as_of=as_of,
            )
        )
        if threshold is not None:
            # Held to the cosine threshold, strong keyword matches included: on LoCoMo the
            # keyword exception added ~2 noise items per off-topic question.
            hits = [h for h in hits if (h.explanation.vector_similarity or -1.0) >= threshold]
        # The message being answered is not its own "relevant history": apps often
        # store it before building context, and it then matched itself at relevance 1.
        hits = [h for h in hits if not (h.memory.session_id == sess.id and _part_of(h.memory.content, query))]
        hits = [h for h in hits if not h.weak]  # e.g. about someone else: the question names whom no memory does
        rel = {h.memory.id: h.relevance if calibrated else None for h in hits}
        recalled = [
            Recalled(h.memory, h.explanation.vector_similarity, "recalled", h.context, rel[h.memory.id])
            for h in hits
            if h.memory.kind == "message"
        ]
        recalled = merge_windows(recalled)
        retrieved = [
            Recalled(h.memory, h.explanation.vector_similarity, "retrieved", relevance=rel[h.memory.id])
            for h in hits
            if h.memory.kind != "message"
        ]
        named = self._named_document_hits(probe, sess, caps.retrieved_chunks, viewer)
        seen = {r.memory.id for r in named}
        retrieved = named + [r for r in retrieved if r.memory.id not in seen]
        fact_vis = ["team"] + ([vis_key("project", sess.project_id, None)] if sess.project_id else [])
        facts = self.store.important_records(
            sess.tenant,
            fact_vis,
            user_id=viewer,
            min_importance=self.config.context_fact_importance,
            exclude_kinds=("message",),
            now=utcnow(),
            limit=caps.retrieved_chunks * 2,
        )
        inputs = ContextInputs(
            query=query,
            history=history,
            instructions=instructions or "",
            memory_instructions=self.memory_instructions(),
            snapshot=snapshot,
            recent_changes=list(recent_changes or ()),
            recalled_history=recalled,
            facts=[Recalled(m, None, "fact") for m in records_at(facts, as_of)],
            retrieved=retrieved,
        )
        built = assemble(inputs, caps, counter or default_counter(), format)
        injected = [
            i["id"] for name in ("relevant_history", "retrieved_context") for i in built.sections[name].included
        ]
        scores = {h.memory.id: h.score for h in hits}
        # Injected memories count as accessed (promotion looks at access counts); facts are always there, so not.
        self.core.track(
            [
                AccessEvent(
                    memory_id=i,
                    tenant=sess.tenant,
                    action="context",
                    query=query[:500],
                    score=scores.get(i),
                    session_id=sess.id,
                )
                for i in injected
            ]
        )
        return built

    def _named_document_hits(self, query: str, sess: Session, limit: int, viewer: str | None) -> list[Recalled]:
        """The best passages of every document the query names (as ``viewer`` may see them), whatever their similarity."""
        # Managed documents first (by their name), then sources of records written directly.
        candidates = [
            (d.kind, d.name or d.uri, d.id)
            for d in self.docs.documents(tenant=sess.tenant, user=viewer, status="indexed")
        ]
        known = {c[2] for c in candidates}
        candidates += [s for s in self.store.document_sources(sess.tenant) if not s[2] or s[2] not in known]
        out: list[Recalled] = []
        for kind, name, source_id in mentioned_sources(query, candidates):

            def same(m: Memory, source_id: str = source_id, name: str = name) -> bool:
                src = m.source
                return src is not None and (src.source_id == source_id if source_id else src.uri == name)

            hits = self.core.search(
                SearchQuery(
                    query,
                    tenant=sess.tenant,
                    user=viewer,
                    project=sess.project_id,
                    session=sess.id,
                    source_types=None if source_id else [kind],
                    source_ids=[source_id] if source_id else None,
                    limit=limit * 3,
                    min_relevance=0,  # a document the user names is wanted whatever its relevance
                    track=False,
                )
            )
            picked = [
                Recalled(h.memory, h.explanation.vector_similarity, "named_document") for h in hits if same(h.memory)
            ]
            if len(picked) < limit:
                # Nothing in the document resembles the question: its opening passages still belong in the prompt.
                if source_id in known:
                    chunks = self.docs.document_chunks(source_id, tenant=sess.tenant, user=viewer)
                else:
                    page = self.core.list(tenant=sess.tenant, user=viewer, source_types=[kind], limit=200)
                    chunks = sorted(page.items, key=lambda m: m.created_at)
                have = {r.memory.id for r in picked}
                visible = [m for m in chunks if same(m) and m.id not in have and self._in_session_view(m, sess)]
                picked.extend(Recalled(m, None, "named_document") for m in visible)
            out.extend(picked[:limit])
        return out

    @staticmethod
    def _in_session_view(memory: Memory, sess: Session) -> bool:
        """Whether a session's searches can see the record (team, its project, or itself)."""
        if memory.scope == "team":
            return True
        if memory.scope == "project":
            return sess.project_id is None or memory.project_id == sess.project_id
        return memory.session_id == sess.id

    # -- tiers ---------------------------------------------------------------------------
    def prune_sessions(
        self,
        *,
        older_than_days: float | None = None,
        now: datetime | None = None,
        tenant: str | None = None,
        dry_run: bool = False,
        all_tenants: bool = False,
    ) -> dict[str, Any]:
        """Clear sessions idle longer than the retention setting: their records (pinned survive), messages and usage.

        Each cleared session gets a cleanup-log row. ``all_tenants`` covers
        every tenant (the scheduled retention job), not just the caller's.
        """
        days = self.config.session_retention_days if older_than_days is None else older_than_days
        if (
            isinstance(days, bool)
            or not isinstance(days, (int, float))
            or not math.isfinite(days)
            or not 0 <= days <= 1_000_000
        ):
            raise InvalidInput(
                f"Retention of {days!r} days is invalid.", hint="Use a number of days from 0 to 1,000,000."
            )
        now = now or utcnow()
        if days == 0 and older_than_days is None:
            return {"retention_days": 0, "cutoff": None, "sessions": [], "dry_run": dry_run, "disabled": True}
        cutoff = now - timedelta(days=days)
        stale = self.store.stale_sessions(cutoff, None if all_tenants else self.core.tenant_of(tenant))
        cleared: list[dict[str, Any]] = []
        if stale and not dry_run:
            with self.store.transaction():
                for tenant_id, sid in stale:
                    cleared.append(self.store.clear_session(tenant_id, sid, now, f"retention {days:g} days"))
        return {
            "retention_days": days,
            "cutoff": format_time(cutoff),
            "sessions": cleared if not dry_run else [{"tenant": t, "session_id": s} for t, s in stale],
            "dry_run": dry_run,
        }

    def clear_session(
        self, session: Session | str, *, tenant: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """Clear one session now: its unpinned records, messages and usage (logged)."""
        sess = self.resolve(session, tenant, user)
        return self.store.clear_session(sess.tenant, sess.id, utcnow(), "cleared by request")

    def pop_message(
        self, session: Session | str, *, tenant: str | None = None, user: str | None = None
    ) -> Message | None:
        """Remove the session's newest message with its indexed records and usage; returns it (None if empty).

        For frameworks whose session protocol can undo the last turn (the OpenAI Agents SDK's ``pop_item``).
        """
        sess = self.resolve(session, tenant, user)
        with self.store.transaction():
            return self.store.delete_last_message(sess.tenant, sess.id)

    def promote(
        self,
        record_ids: Sequence[str] | None = None,
        *,
        to: str | None = None,
        session: str | None = None,
        project: str | None = None,
        min_importance: float | None = None,
        min_access: int | None = None,
        tenant: str | None = None,
        user: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Move records up a tier (session → project → team), keeping ``promoted_from``.

        With ``record_ids``, those records move. Without, the default policy
        picks session records that are pinned, have importance >= the
        ``promote_importance`` setting, or were retrieved ``promote_access_count``
        times or more (of ``session`` when given). A session record goes to its
        project, or to team scope when it has none; ``to`` forces the target.
        """
        if to is not None and to not in TIERS[1:]:
            raise InvalidInput(f"Cannot promote to {to!r}.", hint="Use 'project' or 'team'.")
        tenant_id = self.core.tenant_of(tenant)
        if record_ids is not None:
            if isinstance(record_ids, str):
                record_ids = [record_ids]
            candidates = [self.core.get(i, tenant=tenant, user=user) for i in record_ids]
        else:
            candidates = self.store.important_records(
                tenant_id,
                [vis_key("session", None, session)] if session else None,
                scope="session",
                user_id=self.core.user_of(user),
                min_importance=self.config.promote_importance if min_importance is None else min_importance,
                min_access=self.config.promote_access_count if min_access is None else min_access,
                now=utcnow(),
                limit=10_000,
            )
        promoted: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        moves: list[Memory] = []
        now = utcnow()
        for memory in candidates:
            target = to or ("project" if memory.scope == "session" else "team")
            target_project = project or memory.project_id or self.core.project_of(None)
            if target == "project" and not target_project:
                target = "team" if to is None else target
            if TIERS.index(target) <= TIERS.index(memory.scope):
                skipped.append({"id": memory.id, "why": f"already in {memory.scope} scope"})
                continue
            if target == "project" and not target_project:
                skipped.append({"id": memory.id, "why": "no project to promote to; pass project= or to='team'"})
                continue
            vis = vis_key(target, target_project, None)
            twin = self.store.find_by_hash(memory.tenant, vis, memory.content_hash, memory.kind, memory.user_id)
            if twin is not None:
                skipped.append({"id": memory.id, "why": f"the same content is already {twin.id} in {target} scope"})
                continue
            origin = {
                "scope": memory.scope,
                "session_id": memory.session_id,
                "project_id": memory.project_id,
                "at": format_time(now),
            }
            chain = [*memory.metadata.get("promotion_history", []), origin]
            metadata = {**memory.metadata, "promoted_from": origin, "promotion_history": chain}
            moves.append(
                memory.evolve(
                    scope=target,
                    # Like a new record (Core.prepare), it carries no narrower ids; promoted_from keeps them.
                    project_id=target_project if target == "project" else None,
                    session_id=None,
                    metadata=metadata,
                    updated_at=now,
                )
            )
            promoted.append(
                {
                    "id": memory.id,
                    "from": memory.scope,
                    "to": target,
                    "project": target_project if target == "project" else None,
                }
            )
        if moves and not dry_run:
            # Same vectors; their filter columns follow the scope.
            self.store.put_many((memory, None) for memory in moves)
        return {"promoted": promoted, "skipped": skipped, "dry_run": dry_run}


__all__ = ["Conversations", "Session"]


def _part_of(text: str, query: str) -> bool:
    """Whether a stored message text is the query or one of its parts (a long message is split; short texts must equal)."""
    part, asked = " ".join(text.split()), " ".join(query.split())
    return part == asked or (len(part) >= 40 and part in asked)
