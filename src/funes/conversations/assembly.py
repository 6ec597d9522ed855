"""Context assembly as pure functions: one system message plus history, within a budget.

The service gathers the pieces (history, snapshot, recalled memories) and
:func:`assemble` turns them into a request. Invariants owned here:

* the request has exactly ONE system message (seed 000: with two, the API
  ignored the first); for Anthropic it is the ``system`` parameter;
* the system message holds, in order: the base instructions, the memory
  instructions, ``<current_context>``, ``<recent_changes>``,
  ``<relevant_history>``, ``<project_facts>`` and ``<retrieved_context>``;
* then the history, oldest to newest, then the current user message;
* every section stays within its cap, and the whole prompt within
  ``window - response``; history is dropped whole turns at a time, oldest
  first, never the current user message, and every dropped turn is reported;
* recalled memories are fenced as untrusted data, carry their source and
  provenance, and items that read like instructions carry a warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InvalidInput
from ..memory.safety import FENCE_NOTE, WARNING, fence, flag_instruction_like, instruction_flags, is_flagged, provenance
from ..models import Message, Recalled
from .tokens import MESSAGE_OVERHEAD, REPLY_OVERHEAD, TokenCounter, truncate

ROLES = ("user", "assistant", "tool")
FORMATS = ("anthropic", "openai")
SECTIONS = ("current_context", "recent_changes", "relevant_history", "project_facts", "retrieved_context")
DEFAULT_INSTRUCTIONS = "You are a helpful assistant with long-term memory."
MAX_RECENT_CHANGES = 10


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[^\W_]+", text.lower())) + " "


def mentioned_sources(query: str, sources: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The (type, uri, id) sources whose name the query mentions ("according to the Q1 report").

    A source is named when the words of its file name, with or without the
    extension, appear in order in the query: ``Q1_report.pdf`` matches
    "the Q1 report" and "q1-report.pdf".
    """
    said = _words(query)
    found: list[tuple[str, str, str]] = []
    for source in sources:
        name = source[1].rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
        stem = name.rsplit(".", 1)[0] if "." in name else name
        words = _words(stem)
        # A one-word name under 4 letters ("a.txt", "q1.pdf") would match far too often.
        if len(words.split()) == 1 and len(words.strip()) < 4:
            continue
        if words.strip() and (words in said or _words(name) in said):
            found.append(source)
    return found


def _attr(value: Any) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Change:
    """One recent edit, by the user or the assistant: where, old value, new value."""

    location: str
    old: Any = None
    new: Any = None
    by: str | None = None
    at: str | None = None

    @classmethod
    def parse(cls, value: Any) -> Change:
        """A change from a dict (location/cell/target, old/before, new/after, by, at) or a tuple."""
        if isinstance(value, Change):
            return value
        if isinstance(value, (list, tuple)) and 2 <= len(value) <= 5:
            return cls(str(value[0]), *value[1:])
        if isinstance(value, Mapping):
            loc = next((value[k] for k in ("location", "cell", "target", "range", "path", "field") if k in value), None)
            if loc is not None:
                old = next((value[k] for k in ("old", "old_value", "before") if k in value), None)
                new = next((value[k] for k in ("new", "new_value", "after") if k in value), None)
                by = next((value[k] for k in ("by", "actor", "author", "source") if k in value), None)
                at = next((value[k] for k in ("at", "timestamp", "time") if k in value), None)
                return cls(str(loc), old, new, None if by is None else str(by), None if at is None else str(at))
        raise InvalidInput(
            f"Cannot read the change {value!r}.",
            hint='Give each change as {"location": "Sheet1!B5", "old": 100, "new": 120, "by": "user"}.',
        )

    def render(self) -> str:
        """``- [user] Sheet1!B5: 100 → 120 (2026-01-05T10:00Z)``."""
        who = f"[{self.by}] " if self.by else ""
        when = f" ({self.at})" if self.at else ""
        return f"- {who}{self.location}: {_scalar(self.old)} → {_scalar(self.new)}{when}"


@dataclass(frozen=True)
class Budget:
    """Token caps per section; ``window - response`` bounds the whole prompt."""

    window: int = 200_000
    system: int = 2000
    snapshot: int = 3000
    conversation: int = 10_000
    retrieved: int = 5000
    response: int = 10_000
    retrieved_chunks: int = 5
    chunk_tokens: int = 1000

    @property
    def prompt_limit(self) -> int:
        """Most tokens the prompt may take."""
        return self.window - self.response

    def check(self) -> Budget:
        """The budget itself, or InvalidInput saying which number is wrong."""
        for name in (
            "window",
            "system",
            "snapshot",
            "conversation",
            "retrieved",
            "response",
            "retrieved_chunks",
            "chunk_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInput(
                    f"Budget {name} must be a whole number >= 0, got {value!r}.", hint="See `funes config`."
                )
        if self.response >= self.window:
            raise InvalidInput(
                f"The response buffer ({self.response}) leaves nothing of the {self.window}-token window.",
                hint="Lower context_response_tokens or pass a larger model_window.",
            )
        return self

    @classmethod
    def for_window(cls, window: int, base: Budget | None = None) -> Budget:
        """Caps for a model window: ``base`` (seed 002's 128k numbers) scaled to the window.

        At 32k the profile follows seed 002: 3 retrieved chunks of 256 tokens,
        about 12k in all. Between 32k and 128k the caps are interpolated;
        under 32k they shrink in proportion; at 128k ``base`` holds exactly.
        Above 128k the history gets the extra window: the other sections are
        already ample there, and a long conversation is what a larger window is
        bought for (at 200k, history may take 82k tokens instead of 10k).
        """
        base = base or cls()
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
            raise InvalidInput(
                f"The model window must be a positive number of tokens, got {window!r}.", hint="E.g. 200000."
            )
        if window >= LARGE_WINDOW:
            return replace(base, window=window, conversation=base.conversation + window - LARGE_WINDOW)
        small = {
            "system": min(base.system, 2000),
            "snapshot": min(base.snapshot, 1000),
            "conversation": min(base.conversation, 4000),
            "retrieved": min(base.retrieved, 1000),
            "response": min(base.response, 4000),
            "retrieved_chunks": min(base.retrieved_chunks, 3),
            "chunk_tokens": min(base.chunk_tokens, 256),
        }
        if window >= SMALL_WINDOW:
            t = (window - SMALL_WINDOW) / (LARGE_WINDOW - SMALL_WINDOW)
            caps = {k: round(v + t * (getattr(base, k) - v)) for k, v in small.items()}
        else:
            f = window / SMALL_WINDOW
            caps = {k: (v if k == "retrieved_chunks" else max(1, int(v * f))) for k, v in small.items()}
            caps["chunk_tokens"] = min(
                caps["chunk_tokens"], max(1, caps["retrieved"] // max(1, caps["retrieved_chunks"]))
            )
        return cls(window=window, **caps)


LARGE_WINDOW = 128_000
SMALL_WINDOW = 32_000


@dataclass(frozen=True)
class ContextInputs:
    """Everything :func:`assemble` needs, gathered by the service."""

    query: str
    history: Sequence[Message] = ()
    instructions: str = DEFAULT_INSTRUCTIONS
    memory_instructions: str = ""
    snapshot: Any = None
    recent_changes: Sequence[Any] = ()
    recalled_history: Sequence[Recalled] = ()
    facts: Sequence[Recalled] = ()
    retrieved: Sequence[Recalled] = ()


@dataclass
class Section:
    """What one section holds: its tokens, its cap, what went in and what was left out."""

    name: str
    cap: int
    tokens: int = 0
    text: str = ""
    included: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (without the text)."""
        return {"tokens": self.tokens, "cap": self.cap, "included": self.included, "dropped": self.dropped}


@dataclass
class BuiltContext:
    """The request to send, and a report of exactly what is in it."""

    format: str
    request: dict[str, Any]
    system: str
    messages: list[Message]
    sections: dict[str, Section]
    budget: Budget
    total_tokens: int

    @property
    def dropped_turns(self) -> list[dict[str, Any]]:
        """History messages left out to fit the budget, oldest first."""
        return self.sections["history"].dropped

    def report(self) -> dict[str, Any]:
        """Per-section tokens, caps, inclusions and drops, plus the totals."""
        return {
            "format": self.format,
            "window": self.budget.window,
            "response_budget": self.budget.response,
            "prompt_limit": self.budget.prompt_limit,
            "total_tokens": self.total_tokens,
            "conversation_tokens": self.sections["history"].tokens + self.sections["current"].tokens,
            "conversation_cap": self.budget.conversation,
            "sections": {name: s.to_dict() for name, s in self.sections.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        """The request and the report, JSON-ready."""
        return {"request": self.request, "report": self.report()}


# -- rendering ------------------------------------------------------------------------
def _scalar(value: Any) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return str(value)


def render_snapshot(value: Any, indent: int = 0) -> str:
    """Structured state rendered compactly: ``key: value`` lines, rows as ``a | b | c``."""
    pad = "  " * indent
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        lines: list[str] = []
        for key, item in value.items():
            if item is None or item == "" or item == [] or item == {}:
                continue
            if isinstance(item, Mapping) or (
                isinstance(item, (list, tuple)) and any(isinstance(i, (Mapping, list, tuple)) for i in item)
            ):
                lines.append(f"{pad}{key}:")
                lines.append(render_snapshot(item, indent + 1))
            elif isinstance(item, (list, tuple)):
                lines.append(f"{pad}{key}: " + ", ".join(_scalar(i) for i in item))
            else:
                text = _scalar(item)
                lines.append(
                    f"{pad}{key}: {text}"
                    if "\n" not in text
                    else f"{pad}{key}: |\n{pad}  " + text.replace("\n", f"\n{pad}  ")
                )
        return "\n".join(lines)
    if isinstance(value, (list, tuple)):
        lines = []
        for item in value:
            if isinstance(item, (list, tuple)):
                lines.append(pad + " | ".join("" if i is None else _scalar(i) for i in item))
            elif isinstance(item, Mapping):
                body = render_snapshot(item, indent + 1).lstrip()
                lines.append(f"{pad}- {body}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return "\n".join(lines)
    return pad + _scalar(value)


def render_memory(item: Recalled, text: str) -> str:
    """One fenced memory element with its source, provenance and, if flagged, a warning."""
    m = item.memory
    attrs = [f'id="{_attr(m.id)}"', f'source="{_attr(m.attribution)}"', f'provenance="{provenance(m)}"']
    if m.kind == "message" and m.source and m.source.locator.get("timestamp"):
        attrs.append(f'at="{_attr(str(m.source.locator["timestamp"])[:19])}"')
    shown = item.relevance if item.relevance is not None else item.similarity
    if shown is not None:
        attrs.append(f'relevance="{shown:.2f}"')
    if m.pinned:
        attrs.append('pinned="true"')
    if is_flagged(m) or any(instruction_flags(t.content) for t in item.context):
        attrs.append(f'warning="{WARNING}"')
    return f"<memory {' '.join(attrs)}>\n{fence(text)}\n</memory>"


def _wrap(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _fit_text(counter: TokenCounter, tag: str, body: str, cap: int) -> tuple[str, bool]:
    """The section with its body cut so the whole element fits ``cap`` ('' if nothing fits)."""
    text = _wrap(tag, body)
    if counter.count(text) <= cap:
        return text, False
    marker = "\n… [truncated to fit the token budget]"
    room = cap - counter.count(_wrap(tag, marker)) - 1
    if room <= 0:
        return "", True
    cut = truncate(counter, body, room)
    while cut and counter.count(_wrap(tag, cut + marker)) > cap:
        cut = truncate(counter, cut, max(0, counter.count(cut) - 4))
    return (_wrap(tag, cut + marker), True) if cut else ("", True)


def _fill_memories(
    counter: TokenCounter,
    name: str,
    items: Sequence[Recalled],
    cap: int,
    max_items: int,
    chunk_tokens: int,
    note: str = "",
) -> Section:
    """Greedy fill of fenced memories (each cut to ``chunk_tokens``) within ``cap``."""
    section = Section(name, cap)
    parts: list[str] = [note] if note else []
    for item in items:
        entry = {
            "id": item.memory.id,
            "reason": item.reason,
            "similarity": item.similarity,
            "relevance": item.relevance,
        }
        if len(section.included) >= max_items:
            section.dropped.append({**entry, "why": "item limit"})
            continue
        body = item.body()
        truncated = counter.count(body) > chunk_tokens
        if truncated:
            body = truncate(counter, body, chunk_tokens) + " …"
        candidate = _wrap(name, "\n".join([*parts, render_memory(item, body)]))
        if counter.count(candidate) > cap:
            section.dropped.append({**entry, "why": "budget"})
            continue
        parts.append(render_memory(item, body))
        section.included.append({**entry, "truncated": truncated})
    if section.included or note:
        section.text = _wrap(name, "\n".join(parts))
        if counter.count(section.text) > cap:  # only the note is left and it does not fit
            section.text = ""
        section.tokens = counter.count(section.text)
    return section


def _turns(history: Sequence[Message]) -> list[list[Message]]:
    """History grouped into turns: each starts at a user message (tool results stay with their call)."""
    turns: list[list[Message]] = []
    for message in history:
        if message.role == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def message_tokens(counter: TokenCounter, message: Message) -> int:
    """Tokens a message takes in a request, framing included."""
    return counter.count(message.token_text()) + MESSAGE_OVERHEAD


def assemble(inputs: ContextInputs, budget: Budget, counter: TokenCounter, fmt: str = "anthropic") -> BuiltContext:
    """Build the request: one system message, then history oldest→newest, then the query."""
    budget.check()
    if fmt not in FORMATS:
        raise InvalidInput(f"Unknown format {fmt!r}.", hint="Use 'anthropic' or 'openai'.")
    query = inputs.query.strip() if isinstance(inputs.query, str) else ""
    if not query:
        raise InvalidInput("The user message is empty.", hint="Pass the current user message as the query.")
    history = list(inputs.history)
    # The caller may have stored the current message already: it is the query, not history.
    if history and history[-1].role == "user" and history[-1].content.strip() == query:
        history.pop()
    current = Message(role="user", content=query)
    current_tokens = message_tokens(counter, current)
    limit = budget.prompt_limit - REPLY_OVERHEAD
    sections: dict[str, Section] = {}

    # 1. Instructions: base, then memory instructions with the fence rule (cut first if over the cap).
    head = Section("instructions", budget.system)
    base = (inputs.instructions or DEFAULT_INSTRUCTIONS).strip()
    rule = FENCE_NOTE
    mem_text = (inputs.memory_instructions or "").strip()
    head.text = base + "\n\n" + _wrap("memory_instructions", "\n\n".join(p for p in (mem_text, rule) if p))
    if counter.count(head.text) > budget.system:
        head.text = base + "\n\n" + _wrap("memory_instructions", rule)
        room = budget.system - counter.count(head.text) - 2
        if mem_text and room > 0:
            cut = truncate(counter, mem_text, room)
            head.text = base + "\n\n" + _wrap("memory_instructions", "\n\n".join(p for p in (cut, rule) if p))
        head.dropped.append({"what": "memory instructions", "why": "budget", "kept_tokens": max(0, room)})
        if counter.count(head.text) > budget.system:
            raise InvalidInput(
                f"The base instructions take {counter.count(base)} tokens, over the system cap of {budget.system}.",
                hint="Shorten the instructions, or raise context_system_tokens.",
            )
    head.tokens = counter.count(head.text)
    sections["instructions"] = head

    # 2. Live state: recent changes (at most a third of the cap), then the snapshot.
    changes = [Change.parse(c) for c in inputs.recent_changes][-MAX_RECENT_CHANGES:]
    change_cap = budget.snapshot // 3 if inputs.snapshot is not None else budget.snapshot
    recent = Section("recent_changes", change_cap)
    while changes:
        text = _wrap("recent_changes", fence("\n".join(c.render() for c in changes)))
        if counter.count(text) <= change_cap:
            recent.text, recent.tokens = text, counter.count(text)
            recent.included = [{"location": c.location} for c in changes]
            break
        recent.dropped.append({"location": changes.pop(0).location, "why": "budget"})
    snap = Section("current_context", budget.snapshot - recent.tokens)
    if inputs.snapshot is not None:
        body = fence(render_snapshot(inputs.snapshot))
        if body.strip():
            snap.text, cut = _fit_text(counter, "current_context", body, snap.cap)
            snap.tokens = counter.count(snap.text)
            (snap.dropped if cut else snap.included).append(
                {"what": "snapshot", **({"why": "truncated"} if cut else {})}
            )
    sections["current_context"] = snap
    sections["recent_changes"] = recent

    # 3. History: whole turns, newest first, within the conversation cap and what the window leaves.
    fixed = head.tokens + snap.tokens + recent.tokens + MESSAGE_OVERHEAD + 8
    if fixed + current_tokens > limit:
        raise InvalidInput(
            f"The current message ({current_tokens} tokens) does not fit the {budget.window}-token window "
            f"next to the instructions and context ({fixed} tokens) and the response buffer ({budget.response}).",
            hint="Shorten the message, ingest long text as a document (`funes ingest`), or use a larger window.",
        )
    # Recent history outranks recalled memory when the window is tight, so it is sized first.
    hist = Section("history", budget.conversation)
    conv_room = min(max(0, budget.conversation - current_tokens), limit - fixed - current_tokens)
    kept: list[list[Message]] = []
    used = 0
    turns = _turns(history)
    for turn in reversed(turns):
        size = sum(message_tokens(counter, m) for m in turn)
        if used + size > conv_room:
            break
        kept.insert(0, turn)
        used += size
    for turn in turns[: len(turns) - len(kept)]:
        for m in turn:
            hist.dropped.append(
                {"id": m.id, "role": m.role, "seq": m.seq, "tokens": message_tokens(counter, m), "why": "budget"}
            )
    kept_messages = [m for turn in kept for m in turn]
    hist.included = [
        {"id": m.id, "role": m.role, "seq": m.seq, "tokens": message_tokens(counter, m)} for m in kept_messages
    ]
    hist.tokens = used
    retrieved_room = max(0, min(budget.retrieved, limit - fixed - current_tokens - used))
    conv = Section("current", max(budget.conversation, current_tokens), current_tokens, query, [{"role": "user"}])

    # 4. Recalled memories share the retrieved cap: facts (1/4), relevant history (1/3 of the rest), retrieved.
    visible_ids = {m.id for m in kept_messages if m.id}
    dropped_ids = {d["id"] for d in hist.dropped if d["id"]}
    recalled = [
        r
        for r in inputs.recalled_history
        if r.memory.source is None or r.memory.source.locator.get("message_id") not in visible_ids
    ]
    recalled.sort(
        key=lambda r: r.memory.source.locator.get("message_id") not in dropped_ids if r.memory.source else True
    )
    n_dropped = len([t for t in turns[: len(turns) - len(kept)]])
    note = (
        f"{n_dropped} earlier turn(s) of this conversation were left out to fit the token budget; "
        "relevant ones are recalled here. Search memory for others."
        if n_dropped
        else ""
    )
    chunk = budget.chunk_tokens
    n = budget.retrieved_chunks
    facts = _fill_memories(
        counter, "project_facts", inputs.facts, retrieved_room // 4 if inputs.facts else 0, n * 2, chunk
    )
    rest = retrieved_room - facts.tokens
    rel_cap = rest // 3 if inputs.retrieved else rest
    relevant = _fill_memories(
        # Recalled turns are short and come with their neighbours: up to three times as many as retrieved chunks.
        counter,
        "relevant_history",
        recalled,
        rel_cap if (recalled or note) else 0,
        n * 3,
        chunk,
        note,
    )
    fact_ids = {f["id"] for f in facts.included}
    retrieved_items = [r for r in inputs.retrieved if r.memory.id not in fact_ids]
    retrieved = _fill_memories(
        counter, "retrieved_context", retrieved_items, retrieved_room - facts.tokens - relevant.tokens, n, chunk
    )
    sections.update(
        relevant_history=relevant, project_facts=facts, retrieved_context=retrieved, history=hist, current=conv
    )

    # 5. Exact count of the assembled prompt; trim the least important pieces until it fits.
    while True:
        built = _render(fmt, sections, kept_messages, current, budget, counter)
        if built.total_tokens <= budget.prompt_limit:
            return built
        for name in ("retrieved_context", "relevant_history", "project_facts"):
            s = sections[name]
            if s.text:
                s.dropped.extend({**i, "why": "window"} for i in s.included)
                s.included, s.text, s.tokens = [], "", 0
                break
        else:
            if not kept:
                raise InvalidInput(
                    f"The prompt needs {built.total_tokens} tokens, over the limit of {budget.prompt_limit}.",
                    hint="Use a larger model_window or smaller caps.",
                )
            for m in kept.pop(0):
                hist.dropped.append(
                    {"id": m.id, "role": m.role, "seq": m.seq, "tokens": message_tokens(counter, m), "why": "window"}
                )
            kept_messages = [m for turn in kept for m in turn]
            hist.included = [i for i in hist.included if i["id"] in {m.id for m in kept_messages}]
            hist.tokens = sum(message_tokens(counter, m) for m in kept_messages)


def _render(
    fmt: str,
    sections: dict[str, Section],
    history: list[Message],
    current: Message,
    budget: Budget,
    counter: TokenCounter,
) -> BuiltContext:
    order = ("instructions", *SECTIONS)
    system = "\n\n".join(sections[name].text for name in order if sections[name].text)
    messages = [*history, current]
    total = (
        counter.count(system) + MESSAGE_OVERHEAD + sum(message_tokens(counter, m) for m in messages) + REPLY_OVERHEAD
    )
    request = (
        to_anthropic(system, messages, budget.response)
        if fmt == "anthropic"
        else to_openai(system, messages, budget.response)
    )
    return BuiltContext(fmt, request, system, messages, sections, budget, total)


def to_openai(system: str, messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
    """OpenAI Chat Completions arguments: one system message first, then the conversation."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": t.id,
                            "type": "function",
                            "function": {"name": t.name, "arguments": json.dumps(t.arguments)},
                        }
                        for t in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return {"messages": out, "max_completion_tokens": max_tokens}


def to_anthropic(system: str, messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
    """Anthropic Messages arguments: ``system`` plus alternating user/assistant messages."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            blocks.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content or "(empty)"}
            )
        else:
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks.extend({"type": "tool_use", "id": t.id, "name": t.name, "input": t.arguments} for t in m.tool_calls)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            # The API wants alternating roles: consecutive messages of one role become one message.
            prev = out[-1]["content"]
            prev = [{"type": "text", "text": prev}] if isinstance(prev, str) else prev
            out[-1]["content"] = prev + blocks
        elif len(blocks) == 1 and blocks[0]["type"] == "text":
            out.append({"role": role, "content": blocks[0]["text"]})
        else:
            out.append({"role": role, "content": blocks})
    return {"system": system, "messages": out, "max_tokens": max_tokens}


__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "FENCE_NOTE",
    "FORMATS",
    "ROLES",
    "Budget",
    "BuiltContext",
    "Change",
    "ContextInputs",
    "Message",
    "Recalled",
    "Section",
    "assemble",
    "fence",
    "flag_instruction_like",
    "instruction_flags",
    "is_flagged",
    "mentioned_sources",
    "message_tokens",
    "provenance",
    "render_memory",
    "render_snapshot",
    "to_anthropic",
    "to_openai",
]
