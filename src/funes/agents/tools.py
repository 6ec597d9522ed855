"""Agent tools: the executor service and tool-use runners.

The tools themselves (names, descriptions, input models, the four renderings)
are defined once in :mod:`funes.agents.specs`, which imports pydantic and is
loaded only when a tool is first used, so ``import funes`` stays light.

Invariants of the executor:

* a tool call never raises into the agent loop: bad arguments, unknown ids,
  another tenant's record and an expired memory all come back as an error
  :class:`ToolResult` whose message says how to fix the call;
* another tenant's (or another user's) record reads exactly like a missing one;
* every record a tool touches gets an access-log row with the caller's
  session and agent ids.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EmbedderUnavailable, FunesError, InvalidInput, NotFound
from ..memory.safety import FENCE_NOTE, WARNING, fence, instruction_flags
from ..models import (
    Caller,
    Memory,
    SearchHit,
    SearchQuery,
    SearchResults,
    SourceRef,
    format_time,
    parse_time,
    turns_around,
    utcnow,
)
from ..store import AccessEvent, vis_key
from .briefs import AGENT_KINDS, memory_brief, recalled, snippet

if TYPE_CHECKING:
    from ..conversations.sessions import Conversations
    from ..memory.core import Core
    from .specs import (
        CreateMemoryArgs,
        DeleteMemoryArgs,
        GetMemoryContextArgs,
        ListMemoriesArgs,
        ListScopesArgs,
        MemorySearchArgs,
        SearchMemoriesArgs,
        UpdateMemoryArgs,
    )

log = logging.getLogger("funes.tools")

# Scope a new memory gets when the agent names none; preferences and facts hold across projects.
DEFAULT_SCOPE_BY_TYPE: dict[str, str] = {
    "preference": "team",
    "fact": "team",
    "decision": "project",
    "context": "project",
    "conversation": "session",
}
_NOT_FOUND_HINT = "Use search_memories to find the right id."


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns: text for the model, the same content as JSON, and whether it failed."""

    tool: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"tool": self.tool, "text": self.text, "data": self.data, "is_error": self.is_error}

    def anthropic_block(self, tool_use_id: str) -> dict[str, Any]:
        """An Anthropic ``tool_result`` content block answering one ``tool_use``."""
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": self.text}
        if self.is_error:
            block["is_error"] = True
        return block

    def openai_message(self, tool_call_id: str) -> dict[str, Any]:
        """An OpenAI Chat Completions ``tool`` message answering one tool call."""
        return {"role": "tool", "tool_call_id": tool_call_id, "content": self.text}

    def responses_item(self, call_id: str) -> dict[str, Any]:
        """An OpenAI Responses API ``function_call_output`` item."""
        return {"type": "function_call_output", "call_id": call_id, "output": self.text}


def _error(tool: str, message: str, code: str = "invalid_input", hint: str | None = None) -> ToolResult:
    text = f"Error: {message}" + (f" {hint}" if hint else "")
    return ToolResult(tool, text, {"error": {"code": code, "message": message, "hint": hint}}, is_error=True)


def _percent(similarity: float) -> int:
    return round(max(0.0, min(1.0, similarity)) * 100)


def _count(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def _normalised(text: str) -> str:
    """Text compared for "the same thing said again": case, spacing and end punctuation ignored."""
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip(".!;,: ")


def _degraded_note(hits: SearchResults) -> str:
    """A first line telling the model the search ran on keywords only (empty for a full search)."""
    if hits.degraded is None:
        return ""
    return (
        f"Note: search is degraded ({hits.degraded}): the embedding server is unreachable, so only keyword "
        "matches are listed; rephrase with the exact words you expect if nothing fits.\n\n"
    )


def _source_types(source_filter: str) -> tuple[str, ...] | None:
    """The source types a memory_search filter selects (ingestion owns the grouping)."""
    from ..models.sources import SOURCE_FILTERS

    return SOURCE_FILTERS[source_filter]


class AgentTools:
    """Agent tool execution: a feature service over the core and the conversations."""

    def __init__(
        self, core: Core, conversations: Conversations, write_back: Callable[[Memory], Path] | None = None
    ) -> None:
        self.core = core
        self.conversations = conversations
        # Appends a stored memory to the day's Markdown file (create_memory's to_markdown; see funes.capture).
        self.write_back = write_back
        self.store = core.store
        self.config = core.config

    # -- public ---------------------------------------------------------------------
    def execute_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        caller: Caller | None = None,
        project: str | None = None,
    ) -> ToolResult:
        """Run one agent tool call for a caller; failures come back as error results, never exceptions.

        ``arguments`` is the tool input as a dict or a JSON string (OpenAI sends
        strings). ``project`` is the current project, resolved by the host (an
        agent cannot know it); it defaults to the configured one.
        """
        from .specs import TOOLS_BY_NAME, parse_args

        spec = TOOLS_BY_NAME.get(name)
        if spec is None:
            return _error(
                str(name), f"Unknown tool {name!r}.", "not_found", f"Available tools: {', '.join(TOOLS_BY_NAME)}."
            )
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return _error(
                    name,
                    f"The arguments are not valid JSON ({exc.msg} at position {exc.pos}).",
                    hint="Send the arguments as one JSON object.",
                )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return _error(
                name,
                f"The arguments must be a JSON object, got {type(arguments).__name__}.",
                hint="Send the arguments as one JSON object.",
            )
        try:
            args = parse_args(spec, dict(arguments))
        except ValueError as exc:
            return _error(name, f"Invalid arguments for {name}: {exc}.", hint=f"Fix them and call {name} again.")
        who = caller or Caller(tenant=self.config.tenant, user_id=self.config.user or None)
        current = self.core.project_of(project)
        handler = getattr(self, f"_tool_{name}")
        try:
            return handler(args, who, current)  # type: ignore[no-any-return]
        except NotFound as exc:
            # The service's hints name CLI commands; a model needs the tool that finds ids.
            hint = _NOT_FOUND_HINT if exc.message.startswith("No memory") else exc.hint
            return _error(name, exc.message, exc.code, hint)
        except FunesError as exc:
            return _error(name, exc.message, exc.code, exc.hint)
        except Exception as exc:  # the agent loop must go on; the log keeps the traceback
            log.exception("tool %s failed", name)
            return _error(
                name,
                f"{name} failed inside Funes ({type(exc).__name__}: {exc}).",
                "internal_error",
                "The call did not complete; retry once, or continue without memory.",
            )

    def run_tool_calls(
        self,
        message: Any,
        *,
        caller: Caller | None = None,
        project: str | None = None,
    ) -> list[dict[str, Any]]:
        """Execute every tool call of an assistant turn and return the matching replies.

        Accepts an Anthropic ``Message`` (or its dict), an OpenAI Chat
        Completions message or completion, or an OpenAI Responses response (or
        its ``output`` list), as SDK objects or plain dicts. Returns Anthropic
        ``tool_result`` blocks (send them as the content of the next user
        message), OpenAI ``tool`` messages, or Responses ``function_call_output``
        items, in call order. A turn without tool calls returns ``[]``.
        """
        from .specs import read_tool_calls

        fmt, calls = read_tool_calls(message)
        out: list[dict[str, Any]] = []
        for call_id, name, arguments in calls:
            result = self.execute_tool(name, arguments, caller=caller, project=project)
            if fmt == "anthropic":
                out.append(result.anthropic_block(call_id))
            elif fmt == "openai":
                out.append(result.openai_message(call_id))
            else:
                out.append(result.responses_item(call_id))
        return out

    def read_memory(self, memory_id: str, *, caller: Caller) -> Memory:
        """One memory as a caller may see it: not found for other tenants, an error once expired; logged."""
        memory = self.core.get(memory_id, tenant=caller.tenant, user=caller.user_id)
        if memory.is_expired():
            raise self._expired_error(memory)
        self.log_tool_access([memory], "read", caller)
        return memory

    # -- helpers ------------------------------------------------------------------
    def log_tool_access(self, memories: Iterable[Memory], action: str, caller: Caller) -> None:
        self.core.track(
            [
                AccessEvent(
                    memory_id=m.id,
                    tenant=m.tenant,
                    action=action,
                    session_id=caller.session_id,
                    agent_id=caller.agent_id,
                )
                for m in memories
            ]
        )

    def _agent_record(self, memory_id: str, caller: Caller, action: str) -> Memory:
        memory = self.core.get(memory_id, tenant=caller.tenant, user=caller.user_id)
        if memory.kind not in AGENT_KINDS:
            raise InvalidInput(
                f"{memory_id} is part of {memory.attribution} ({memory.kind.replace('_', ' ')}), "
                f"which is managed by its source, so it cannot be {action} with a tool.",
                hint="Store a correction with create_memory instead.",
            )
        return memory

    @staticmethod
    def _expired_error(memory: Memory) -> InvalidInput:
        return InvalidInput(
            f"Memory {memory.id} expired on {format_time(memory.expires_at)} and is no longer recalled.",
            hint="To keep it, call update_memory with expires_at set to a later date or 'never'; "
            "or store the current information with create_memory.",
        )

    def _default_scope(self, memory_type: str, project: str | None, session: str | None) -> str:
        scope = DEFAULT_SCOPE_BY_TYPE[memory_type]
        if scope == "session" and not session:
            scope = "project"
        if scope == "project" and not project:
            scope = "team"
        return scope

    def _hit_lines(self, hits: list[SearchHit], *, with_ids: bool) -> list[str]:
        limit = int(self.config.tool_snippet_chars)
        lines = []
        for n, hit in enumerate(hits, 1):
            m = hit.memory
            label = hit.attribution
            if m.kind in AGENT_KINDS:
                label = f"{m.memory_type} · {label} · {m.scope}"
            lines.append(f"{n}. [{label}] {recalled(m, limit)}")
            earlier = m.previously()
            if m.valid_to is not None:  # a past state (as_of / include_superseded)
                lines.append(f"   (superseded {m.valid_to:%Y-%m-%d})")
            elif earlier:  # a changed fact: what it was, and until when (fenced: it is stored text)
                lines.append(f"   <memory>{fence(earlier)}</memory>")
            before, after = turns_around(m, hit.context)  # the turns around a recalled message, fenced like it
            for where, turns in (("before", before), ("after", after)):
                for turn in turns:
                    flag = f" [warning: {WARNING}]" if instruction_flags(turn.content) else ""
                    said = fence(snippet(turn.content, limit))
                    lines.append(f"   ({where}) {turn.role}: <memory>{said}</memory>{flag}")
            tail = f" · id: {m.id}" if with_ids else ""
            weak = " (weak match)" if hit.weak else ""
            lines.append(f"   Relevance: {_percent(hit.relevance)}%{weak}{tail}")
            lines.append("")
        return lines

    @staticmethod
    def _hit_data(hits: list[SearchHit]) -> list[dict[str, Any]]:
        return [
            {**memory_brief(h.memory), "relevance": _percent(h.relevance) / 100, "weak": h.weak, "score": h.score}
            for h in hits
        ]

    def _tool_min_relevance(self) -> float:
        # The setting applies where relevance is calibrated (the store's model); 0 elsewhere, as in search.
        return float(self.config.tool_min_relevance) if self.core.relevance_calibrated() else 0.0

    def _tool_min_similarity(self) -> float | None:
        value = float(self.config.tool_min_similarity)
        return value if value > 0 else None

    # -- the tools ---------------------------------------------------------------
    def _tool_create_memory(self, args: CreateMemoryArgs, caller: Caller, project: str | None) -> ToolResult:
        scope = args.scope or self._default_scope(args.memory_type, project, caller.session_id)
        if scope == "project" and not project:
            raise InvalidInput(
                "There is no current project, so scope 'project' is not available.",
                hint="Use scope 'team' (applies everywhere) or 'session'.",
            )
        if scope == "session" and not caller.session_id:
            raise InvalidInput(
                "This conversation has no session id, so scope 'session' is not available.",
                hint="Use scope 'project' or 'team'.",
            )
        if args.expires_at is not None:
            expiry = parse_time_arg(args.expires_at, "expires_at")
            if expiry is not None and expiry <= utcnow():
                raise InvalidInput(
                    f"expires_at {args.expires_at!r} is in the past.",
                    hint="Give a future date, or leave expires_at empty to keep the memory.",
                )
        metadata: dict[str, Any] = {}
        if args.tags:
            metadata["tags"] = sorted({t.strip() for t in args.tags if t.strip()})
        if caller.agent_id:
            metadata["agent_id"] = caller.agent_id
        references = [(args.reference_type, args.reference_id)] if args.reference_type and args.reference_id else []
        # Only a session record names the conversation that wrote it (see Core.prepare).
        session = caller.session_id if scope == "session" else None
        locator = {k: v for k, v in (("agent", caller.agent_id), ("session", session)) if v}
        memory = self.core.prepare(
            args.content,
            type=args.memory_type,
            importance=args.importance_score,
            scope=scope,
            project=project if scope == "project" else None,
            session=session,
            tenant=caller.tenant,
            user=caller.user_id,
            source=SourceRef(type="agent", locator=locator),
            expires_at=args.expires_at,
            metadata=metadata,
            references=references,
        )
        existing = self.store.find_by_hash(
            memory.tenant,
            vis_key(memory.scope, memory.project_id, memory.session_id),
            memory.content_hash,
            "memory",
            memory.user_id,
        )
        visible = existing is not None and self.core.visible(existing, caller.tenant, caller.user_id)
        if existing is not None and visible and not existing.is_expired():
            self.log_tool_access([existing], "create_duplicate", caller)
            return ToolResult(
                "create_memory",
                f"Already stored as {existing.id} ({existing.memory_type}, {existing.scope} scope); nothing new was "
                "stored.",
                {"memory_id": existing.id, "duplicate": True, "similar": [], "memory": memory_brief(existing)},
            )
        if existing is not None and visible:
            # The same words again after the old record expired: renew that record rather than keep both.
            memory = memory.evolve(id=existing.id, created_at=existing.created_at)
        try:
            vectors: list[Any] | None = self.core.embedding.embed_records([self.core.embedding.embed_text(memory)])[0]
        except EmbedderUnavailable:
            vectors = None  # stored now and findable by keyword; a job embeds it when the server is back
        similar = self._near_duplicates(memory, vectors, caller) if vectors is not None else []
        same = [s for s, _ in similar if _normalised(s.content) == _normalised(memory.content)]
        similar_data = [
            {"id": s.id, "content": s.content, "similarity": round(sim, 4), "scope": s.scope} for s, sim in similar
        ]
        if same:
            self.log_tool_access(same[:1], "create_duplicate", caller)
            return ToolResult(
                "create_memory",
                f"Already stored as {same[0].id} (the same words up to case and punctuation); nothing new was stored.",
                {"memory_id": same[0].id, "duplicate": True, "similar": similar_data, "memory": memory_brief(same[0])},
            )
        with self.store.transaction():
            self.store.put(memory, vectors)
            if vectors is None:
                self.core.defer_vectors([memory.id], memory.tenant)
        self.log_tool_access([memory], "create", caller)
        if args.to_markdown:
            if self.write_back is None:
                raise InvalidInput(
                    f"Stored as {memory.id}, but this server cannot write Markdown notes.",
                    hint="Call create_memory without to_markdown.",
                )
            self.write_back(memory)
        text = (
            f"Stored memory {memory.id} ({memory.memory_type}, {memory.scope} scope, "
            f"importance {memory.importance:.2f})."
        )
        if vectors is None:
            text += " (The embedding server is unreachable: it is findable by keyword now, by meaning later.)"
        if similar:
            first, sim = similar[0]
            text += (
                f' A similar memory already exists: {first.id} "{snippet(first.content, 160)}" '
                f"(similarity {_percent(sim)}%). If the new one replaces it, delete_memory {first.id}; "
                "if it only refines it, keep both."
            )
        return ToolResult(
            "create_memory",
            text,
            {"memory_id": memory.id, "duplicate": False, "similar": similar_data, "memory": memory_brief(memory)},
        )

    def _near_duplicates(self, memory: Memory, vectors: list[Any], caller: Caller) -> list[tuple[Memory, float]]:
        """Visible memories at or above the near-duplicate threshold, most similar first."""
        import numpy as np

        from ..models import SearchFilters

        threshold = float(self.config.tool_similar_threshold)
        vector = np.mean(np.stack(vectors), axis=0)
        norm = float(np.linalg.norm(vector))
        vector = vector / norm if norm else vector
        filters = SearchFilters(
            tenant=memory.tenant,
            user_id=caller.user_id if caller.user_id is not None else self.core.user_of(None),
            kinds=AGENT_KINDS,
            project_id=memory.project_id,
            session_id=caller.session_id,
        )
        nearest = [(i, s) for i, s in self.store.vector_search(vector, filters, k=5, now=utcnow()) if s >= threshold]
        records = self.store.get_many([i for i, _ in nearest])
        return [
            (records[i], s)
            for i, s in nearest
            if i in records and i != memory.id and self.core.visible(records[i], caller.tenant, caller.user_id)
        ]

    def _tool_search_memories(self, args: SearchMemoriesArgs, caller: Caller, project: str | None) -> ToolResult:
        hits = self.core.search(
            SearchQuery(
                args.query,
                tenant=caller.tenant,
                user=caller.user_id,
                scopes=[args.scope] if args.scope else None,
                project=project,
                session=caller.session_id,
                types=args.memory_types or None,
                kinds=AGENT_KINDS,
                limit=args.limit or 10,
                min_similarity=self._tool_min_similarity(),
                min_relevance=self._tool_min_relevance(),
                agent=caller.agent_id,
                entity_types=[args.entity_type] if args.entity_type else None,
                entity_ids=[args.entity_id] if args.entity_id else None,
                refs=[(args.reference_type, args.reference_id)] if args.reference_type and args.reference_id else None,
                as_of=args.as_of or None,
                include_superseded=args.include_superseded,
            )
        )
        data = {"query": args.query, "count": len(hits), "results": self._hit_data(hits), "degraded": hits.degraded}
        if not hits:
            return ToolResult(
                "search_memories",
                _degraded_note(hits)
                + f"No memories match {args.query!r}. If the user tells you something worth keeping, store it with "
                "create_memory.",
                data,
            )
        lines = [f"Found {len(hits)} {'memory' if len(hits) == 1 else 'memories'} for {args.query!r}:", ""]
        lines += self._hit_lines(hits, with_ids=True)
        lines.append(FENCE_NOTE)
        return ToolResult("search_memories", _degraded_note(hits) + "\n".join(lines).rstrip(), data)

    def _tool_update_memory(self, args: UpdateMemoryArgs, caller: Caller, project: str | None) -> ToolResult:
        current = self._agent_record(args.memory_id, caller, "changed")
        expires: Any = _UNSET_EXPIRY
        if args.expires_at is not None:
            never = args.expires_at.lower() in ("never", "none")
            expires = None if never else parse_time_arg(args.expires_at, "expires_at")
            if expires is not None and expires <= utcnow():
                raise InvalidInput(
                    f"expires_at {args.expires_at!r} is in the past.",
                    hint="Give a future date, or 'never' to keep the memory for good.",
                )
        if current.is_expired() and expires is _UNSET_EXPIRY:
            raise self._expired_error(current)
        kwargs: dict[str, Any] = {}
        if expires is not _UNSET_EXPIRY:
            kwargs["expires_at"] = expires
        updated = self.core.update(
            current.id,
            content=args.content,
            importance=args.importance_score,
            pinned=args.pinned,
            tenant=caller.tenant,
            user=caller.user_id,
            author="agent",  # the agent's words supersede; they are not the user's (issue 25)
            **kwargs,
        )
        self.log_tool_access([updated], "update", caller)
        changed = []
        if updated.version != current.version:
            changed.append(f"content (now version {updated.version}; {len(updated.previous_versions)} earlier kept)")
        if updated.importance != current.importance:
            changed.append(f"importance {current.importance:.2f} → {updated.importance:.2f}")
        if updated.pinned != current.pinned:
            changed.append("pinned" if updated.pinned else "unpinned")
        if updated.expires_at != current.expires_at:
            changed.append(f"expires {format_time(updated.expires_at) or 'never'}")
        text = f"Updated {updated.id}: {', '.join(changed)}." if changed else f"{updated.id} already had these values."
        return ToolResult(
            "update_memory", text, {"memory_id": updated.id, "changed": bool(changed), "memory": memory_brief(updated)}
        )

    def _tool_delete_memory(self, args: DeleteMemoryArgs, caller: Caller, project: str | None) -> ToolResult:
        # Deleting an expired memory is allowed: the caller's goal (it is gone) is met either way.
        memory = self._agent_record(args.memory_id, caller, "deleted")
        self.store.delete([memory.id])
        self.log_tool_access([memory], "delete", caller)
        return ToolResult(
            "delete_memory",
            f'Deleted {memory.id}: "{snippet(memory.content, 160)}".',
            {"memory_id": memory.id, "deleted": True, "memory": memory_brief(memory)},
        )

    def _tool_get_memory_context(self, args: GetMemoryContextArgs, caller: Caller, project: str | None) -> ToolResult:
        if args.query:
            return self._built_memory_context(args.query, args.session_id, caller, project)
        return self._ranked_memory_context(args.session_id or caller.session_id, caller, project)

    def _built_memory_context(
        self, query: str, session_id: str | None, caller: Caller, project: str | None
    ) -> ToolResult:
        """The context builder's budgeted memory sections for this query."""
        from ..conversations.assembly import SECTIONS
        from ..conversations.sessions import Session

        if session_id:  # the model named a conversation: it must exist and be the caller's
            try:
                session = self.conversations.resolve(session_id, caller.tenant, caller.user_id)
            except NotFound as exc:
                raise NotFound(exc.message, hint="Leave session_id empty to use the current conversation.") from exc
        else:
            # The host's conversation may not be recorded in Funes; a transient handle reads the same memories.
            now = utcnow()
            sid = caller.session_id or "tool-context"
            stored = self.store.get_session(caller.tenant, sid) if caller.session_id else None
            session = (
                self.conversations.resolve(sid, caller.tenant, caller.user_id)
                if stored is not None
                else Session(
                    self.conversations, sid, caller.tenant, self.core.user_of(caller.user_id), project, None, now, now
                )
            )
        built = self.conversations.build_context(
            session,
            query,
            min_similarity=self._tool_min_similarity(),
            tenant=caller.tenant,
            user=caller.user_id,
        )
        sections = {name: built.sections[name] for name in SECTIONS if name in built.sections}
        block = "\n\n".join(s.text for s in sections.values() if s.text)
        facts = sections.get("project_facts")
        if facts is not None and facts.included:
            # The builder logs what it retrieves; facts are logged here, with the agent that asked.
            records = self.store.get_many([str(i["id"]) for i in facts.included if "id" in i])
            self.log_tool_access(list(records.values()), "context", caller)
        data = {
            "query": query,
            "session_id": session.id,
            "project": session.project_id,
            "context": block,
            "sections": {name: s.to_dict() for name, s in sections.items()},
        }
        text = (
            f"{block}\n\n{FENCE_NOTE}"
            if block
            else "Memory holds nothing relevant to this yet. Store what the user tells you with create_memory."
        )
        return ToolResult("get_memory_context", text, data)

    def _ranked_memory_context(self, session: str | None, caller: Caller, project: str | None) -> ToolResult:
        """Without a query: pinned memories, then the most important, newest first among equals."""
        limit = int(self.config.search_limit)
        common: dict[str, Any] = {
            "tenant": caller.tenant,
            "user": caller.user_id,
            "kinds": AGENT_KINDS,
            "project": project,
            "session": session,
        }
        pinned = list(self.core.list(pinned=True, limit=limit, **common).items)
        seen = {m.id for m in pinned}
        recent = [m for m in self.core.list(limit=50, **common).items if m.id not in seen]
        ranked = sorted(recent, key=lambda m: (m.importance, m.updated_at), reverse=True)[:limit]
        self.log_tool_access(pinned + ranked, "context", caller)
        snippet = int(self.config.tool_snippet_chars)
        lines: list[str] = []
        for title, group in (("Pinned:", pinned), ("Most important:", ranked)):
            if group:
                lines.append(title)
                lines += [f"- [{m.memory_type} · {m.attribution}] {recalled(m, snippet)} (id: {m.id})" for m in group]
        if lines:
            lines.append(FENCE_NOTE)
        else:
            lines = ["Memory holds nothing for this yet. Store what the user tells you with create_memory."]
        data = {
            "query": None,
            "session_id": session,
            "project": project,
            "pinned": [memory_brief(m) for m in pinned],
            "memories": [memory_brief(m) for m in ranked],
        }
        return ToolResult("get_memory_context", "\n".join(lines), data)

    def _tool_memory_search(self, args: MemorySearchArgs, caller: Caller, project: str | None) -> ToolResult:
        source_filter = args.source_filter or "all"
        hits = self.core.search(
            SearchQuery(
                args.query,
                tenant=caller.tenant,
                user=caller.user_id,
                project=project,
                session=caller.session_id,
                source_types=_source_types(source_filter),
                roles=[args.role] if args.role else None,
                limit=int(self.config.search_limit),
                min_similarity=self._tool_min_similarity(),
                min_relevance=self._tool_min_relevance(),
                agent=caller.agent_id,
            )
        )
        data = {
            "query": args.query,
            "source_filter": source_filter,
            "role": args.role,
            "result_count": len(hits),
            "sources": sorted({h.attribution for h in hits}),
            "results": self._hit_data(hits),
            "degraded": hits.degraded,
        }
        if not hits:
            where = "" if source_filter == "all" else f" in {source_filter}"
            where += f" among {args.role} messages" if args.role else ""
            return ToolResult(
                "memory_search",
                _degraded_note(hits) + f"No relevant information found{where} for {args.query!r}.",
                data,
            )
        lines = ["Found relevant information:", "", *self._hit_lines(hits, with_ids=False), FENCE_NOTE]
        return ToolResult("memory_search", _degraded_note(hits) + "\n".join(lines).rstrip(), data)

    def _tool_list_memories(self, args: ListMemoriesArgs, caller: Caller, project: str | None) -> ToolResult:
        from .listing import list_memories

        text, data, listed = list_memories(self.core, args, caller, project, int(self.config.tool_snippet_chars))
        self.log_tool_access(listed, "list", caller)
        return ToolResult("list_memories", text, data)

    def _tool_list_scopes(self, args: ListScopesArgs, caller: Caller, project: str | None) -> ToolResult:
        counts: dict[tuple[str, str | None], int] = {}
        now = utcnow()
        for m in self.store.iter_records(caller.tenant):
            if m.is_expired(now) or not self.core.visible(m, caller.tenant, caller.user_id):
                continue
            key = (m.scope, m.project_id if m.scope == "project" else m.session_id if m.scope == "session" else None)
            counts[key] = counts.get(key, 0) + 1
        counts.setdefault(("team", None), 0)
        if project:
            counts.setdefault(("project", project), 0)
        if caller.session_id:
            counts.setdefault(("session", caller.session_id), 0)
        order = {"team": 0, "project": 1, "session": 2}
        rows = []
        for (scope, ident), n in sorted(counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1] or "")):
            current = (
                scope == "team"
                or (scope == "project" and ident == project)
                or (scope == "session" and ident == caller.session_id)
            )
            rows.append({"scope": scope, "id": ident, "records": n, "current": current})
        lines = [f"Current project: {project or '(none: project scope is unavailable)'}"]
        if caller.session_id:
            lines.append(f"Current session: {caller.session_id}")
        lines.append("")
        for row in rows:
            if row["scope"] == "team":
                lines.append(f"- team (everywhere, all projects): {_count(row['records'])}")
            else:
                mark = " (current)" if row["current"] else ""
                lines.append(f"- {row['scope']} {row['id']}{mark}: {_count(row['records'])}")
        lines.append("")
        lines.append("create_memory takes scope team, project (the current project) or session (this conversation).")
        return ToolResult(
            "list_scopes",
            "\n".join(lines),
            {"project": project, "session_id": caller.session_id, "scopes": rows},
        )


_UNSET_EXPIRY: Any = object()


def render_tools(fmt: str = "anthropic", names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every agent tool (or the named ones) as ``anthropic``, ``openai``, ``responses`` or ``mcp`` definitions."""
    from .specs import render_tools as render

    return render(fmt, names)


def parse_time_arg(value: str, name: str) -> Any:
    """An ISO-8601 argument as an aware datetime, or InvalidInput saying the accepted form."""
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidInput(
            f"{name} {value!r} is not an ISO-8601 date.", hint="Use a form like 2026-12-31 or 2026-12-31T18:00:00Z."
        ) from exc


__all__ = ["AGENT_KINDS", "AgentTools", "ToolResult", "render_tools"]
