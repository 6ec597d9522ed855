"""Conversation values: messages, the tool calls in them, and a record recalled into a model's context.

Stored by the store, assembled by :mod:`funes.conversations`, read by the adapters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import FunesError, InvalidInput
from .records import Memory, format_time
from .search import Turn, turns_around


# -- plain data -------------------------------------------------------------------
@dataclass(frozen=True)
class ToolCall:
    """A tool call made by the assistant."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


def parse_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    """Tool calls from Funes, OpenAI (``function.arguments`` JSON) or Anthropic (``input``) shapes."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(
            "tool_calls must be a list.", hint='Pass [{"id": "call_1", "name": "search", "arguments": {}}].'
        )
    out: list[ToolCall] = []
    for item in value:
        if isinstance(item, ToolCall):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise InvalidInput(f"A tool call must be an object, got {item!r}.", hint="Give id, name and arguments.")
        fn = item.get("function") if isinstance(item.get("function"), Mapping) else {}
        name = item.get("name") or fn.get("name")
        args: Any = item.get("arguments", item.get("input", fn.get("arguments", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"Tool call arguments are not JSON: {args[:80]!r}.", hint="Pass a JSON object."
                ) from exc
        if not item.get("id") or not name or not isinstance(args, Mapping):
            raise InvalidInput(
                f"Tool call {dict(item)!r} needs an id, a name and object arguments.",
                hint='Use {"id": "call_1", "name": "search", "arguments": {"q": "..."}}.',
            )
        out.append(ToolCall(id=str(item["id"]), name=str(name), arguments=dict(args)))
    return tuple(out)


@dataclass(frozen=True)
class Message:
    """One message of a conversation."""

    role: str
    content: str
    id: str | None = None
    session_id: str | None = None
    seq: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    created_at: datetime | None = None
    record_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "tool_calls": [t.to_dict() for t in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "created_at": format_time(self.created_at),
            "record_ids": list(self.record_ids),
        }

    def token_text(self) -> str:
        """Everything of the message a model reads (content and tool calls)."""
        if not self.tool_calls:
            return self.content
        calls = json.dumps([t.to_dict() for t in self.tool_calls], ensure_ascii=False, sort_keys=True)
        return f"{self.content}\n{calls}" if self.content else calls


@dataclass(frozen=True)
class Recalled:
    """A record chosen for the system message, with why and how well it matched."""

    memory: Memory
    similarity: float | None = None
    reason: str = "retrieved"
    # A recalled chat message's neighbouring turns (SearchHit.context), shown around it.
    context: tuple[Turn, ...] = ()
    # The calibrated relevance of the search hit (None when the embedder is not calibrated).
    relevance: float | None = None

    def body(self) -> str:
        """The text shown: the record, or a recalled message within its turns (``role: text`` lines)."""
        if not self.context:
            # A fact that changed names its superseded value, so "what did I prefer before?" is answerable.
            # Only stated facts: a re-summarised document or insight has no "before" worth a line.
            earlier = self.memory.previously() if self.memory.kind == "memory" else None
            return self.memory.content if earlier is None else f"{self.memory.content}\n({earlier})"
        src = self.memory.source
        role = (src.locator.get("role") if src else None) or "message"
        before, after = turns_around(self.memory, self.context)
        lines = [f"{t.role}: {t.content}" for t in before]
        lines.append(f"{role}: {self.memory.content}")
        lines += [f"{t.role}: {t.content}" for t in after]
        return "\n".join(lines)


@dataclass(frozen=True)
class SkippedMessage:
    """An input of ``add_messages`` that was not stored: its index (from 0) and why."""

    index: int
    error: FunesError

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the index and the error (message and hint)."""
        return {"index": self.index, "error": self.error.to_dict()}


class AddedMessages(list[Message]):
    """The messages ``add_messages`` stored, oldest first, with the inputs it left out.

    ``inputs[i]`` is the index of the input message that ``self[i]`` came from
    (one input can become several messages: Anthropic ``tool_result`` blocks
    are one tool message each), so a skipped turn leaves no gap in ``seq``
    and is mapped through ``inputs``. ``skipped`` lists each invalid input
    with its reason.
    """

    def __init__(
        self, messages: Iterable[Message] = (), *, inputs: Iterable[int] = (), skipped: Iterable[SkippedMessage] = ()
    ) -> None:
        super().__init__(messages)
        self.inputs = tuple(inputs)
        self.skipped = tuple(skipped)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the stored messages (each with its input index) and the skipped inputs."""
        return {
            "messages": [{**m.to_dict(), "input": i} for m, i in zip(self, self.inputs, strict=True)],
            "skipped": [s.to_dict() for s in self.skipped],
        }
