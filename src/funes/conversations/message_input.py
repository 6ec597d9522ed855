"""Messages as callers give them, checked before anything is written.

:func:`check_message` validates one message (role, text, tool calls, the
answered call, usage, time) into a :class:`PendingMessage`;
:func:`read_each` does the same for each message of a conversation given as
dicts in the OpenAI or Anthropic shape, with the reason for each invalid one,
so :meth:`funes.conversations.sessions.Conversations.add_messages` checks them
all before the first is stored. Pure functions: no store, no embedder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidInput
from ..models import parse_time, utcnow
from ..models.messages import ToolCall, parse_tool_calls
from .assembly import ROLES

#: Keys a message dict may carry (``timestamp`` and ``created_at`` are accepted for ``at``).
MESSAGE_KEYS = ("role", "content", "at", "timestamp", "created_at", "tool_calls", "tool_call_id", "usage", "name")


@dataclass(frozen=True)
class PendingMessage:
    """A validated message, not yet stored."""

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    at: datetime
    usage: tuple[int, int, str | None, int | None] | None


def usage_numbers(usage: Any) -> tuple[int, int, str | None, int | None]:
    """(prompt, completion, model, window) from a dict or an SDK usage object (OpenAI or Anthropic)."""

    def get(key: str) -> Any:
        return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)

    prompt = get("prompt_tokens")
    if prompt is None and get("input_tokens") is not None:
        # Anthropic counts cached prompt tokens separately; they still fill the window.
        prompt = sum(
            int(get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
    completion = get("completion_tokens")
    if completion is None:
        completion = get("output_tokens")
    try:
        p, c = int(prompt), int(completion)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"Cannot read token usage from {usage!r}.",
            hint='Pass {"prompt_tokens": N, "completion_tokens": M} (or the SDK response\'s usage object).',
        ) from exc
    if p < 0 or c < 0:
        raise InvalidInput("Token counts cannot be negative.", hint="Pass the counts the model API reported.")
    window = get("context_window")
    return p, c, get("model"), None if window is None else int(window)


def check_message(
    role: str,
    content: str,
    *,
    tool_calls: Sequence[Any] | None = None,
    tool_call_id: str | None = None,
    usage: Any = None,
    at: datetime | str | None = None,
) -> PendingMessage:
    """Validate one message; raises :class:`InvalidInput` saying what to fix."""
    if role not in ROLES:
        hint = "The system message is built by build_context; pass instructions= there." if role == "system" else ""
        raise InvalidInput(
            f"Invalid role {role!r}.", hint=(hint + " " if hint else "") + f"Use one of: {', '.join(ROLES)}."
        )
    if not isinstance(content, str):
        raise InvalidInput(f"Message content must be text, got {type(content).__name__}.", hint="Pass a string.")
    calls = parse_tool_calls(tool_calls)
    if calls and role != "assistant":
        raise InvalidInput(
            "Only assistant messages carry tool calls.", hint="Pass tool results as role 'tool' with tool_call_id."
        )
    if role == "tool" and not tool_call_id:
        raise InvalidInput("A tool message needs the id of the call it answers.", hint="Pass tool_call_id='call_...'.")
    if not content.strip() and not calls:
        raise InvalidInput("The message is empty.", hint="Pass the message text.")
    try:
        stamp = parse_time(at) if at is not None else None
    except ValueError as exc:
        raise InvalidInput(
            f"The message time {at!r} is not a date.", hint="Use ISO-8601, e.g. 2026-01-03T10:15:00Z."
        ) from exc
    return PendingMessage(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        at=stamp or utcnow(),
        usage=None if usage is None else usage_numbers(usage),
    )


def _blocks(content: Any) -> tuple[str, list[dict[str, Any]], list[tuple[str, str]]]:
    """(text, tool calls, tool results) of Anthropic-style content blocks (or OpenAI content parts)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[tuple[str, str]] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, Mapping):
            raise InvalidInput(f"A content block must be an object, got {block!r}.", hint='Use {"type": "text", ...}.')
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append({"id": block.get("id"), "name": block.get("name"), "input": block.get("input") or {}})
        elif kind == "tool_result":
            inner = block.get("content")
            text = inner if isinstance(inner, str) else _blocks(inner or [])[0]
            results.append((str(block.get("tool_use_id") or ""), text))
        # Images, documents and thinking blocks carry no text worth indexing: left out.
    return "\n".join(t for t in texts if t), calls, results


def read_each(messages: Iterable[Mapping[str, Any]]) -> list[tuple[int, list[PendingMessage] | InvalidInput]]:
    """Each input message (by its index from 0) as the messages it stands for, or the reason it is invalid.

    Accepted per message: ``role``, ``content`` (a string, or Anthropic /
    OpenAI content blocks), ``at`` (or ``timestamp`` / ``created_at``),
    ``tool_calls`` (OpenAI or Anthropic shape), ``tool_call_id`` and
    ``usage``. Anthropic ``tool_use`` blocks become tool calls, and a user
    message of ``tool_result`` blocks becomes one ``tool`` message per result.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise InvalidInput(
            "Messages must be a list of message objects.", hint='Pass [{"role": "user", "content": "..."}].'
        )
    out: list[tuple[int, list[PendingMessage] | InvalidInput]] = []
    for index, item in enumerate(messages):
        try:
            out.append((index, _read_one(item)))
        except InvalidInput as exc:
            out.append((index, InvalidInput(f"Message {index}: {exc.message}", hint=exc.hint)))
    if not out:
        raise InvalidInput("There are no messages to add.", hint='Pass [{"role": "user", "content": "..."}].')
    return out


def _read_one(item: Any) -> list[PendingMessage]:
    if not isinstance(item, Mapping):
        raise InvalidInput(
            f"A message must be an object, got {type(item).__name__}.", hint='Use {"role": "user", "content": "..."}.'
        )
    unknown = sorted(set(item) - set(MESSAGE_KEYS))
    if unknown:
        raise InvalidInput(f"Unknown message field(s): {', '.join(unknown)}.", hint=f"Use: {', '.join(MESSAGE_KEYS)}.")
    role = item.get("role")
    content = item.get("content")
    at = item.get("at", item.get("timestamp", item.get("created_at")))
    calls: Any = item.get("tool_calls")
    if content is None and calls:
        content = ""  # OpenAI: an assistant turn that only calls tools has content null
    if isinstance(content, (list, tuple)):
        text, block_calls, results = _blocks(content)
        if results and not text and not block_calls:
            # Anthropic sends tool results as a user turn; Funes stores each as a tool message.
            return [
                check_message("tool", r, tool_call_id=i or None, at=at, usage=item.get("usage") if n == 0 else None)
                for n, (i, r) in enumerate(results)
            ]
        content, calls = text, [*(calls or []), *block_calls] or None
    return [
        check_message(
            str(role) if role is not None else "",
            content,
            tool_calls=calls,
            tool_call_id=item.get("tool_call_id"),
            usage=item.get("usage"),
            at=at,
        )
    ]


__all__ = ["MESSAGE_KEYS", "PendingMessage", "check_message", "read_each", "usage_numbers"]
