"""Chat exports: one record per message, with role, timestamp and conversation.

Accepted shapes:

* a JSON list of messages ``[{"role", "content", ...}]`` (OpenAI and
  Anthropic style; content may be a string or a list of content blocks), or
  an object with ``messages``, or a list of such conversations;
* JSONL with one message (or one conversation) per line;
* the ChatGPT ``conversations.json`` export (conversations with a
  ``mapping`` tree; the branch ending at ``current_node`` is read);
* plain ``Speaker: text`` transcripts, optionally with a timestamp before
  the speaker (``[2026-01-03 10:15] Alice: ...``).

Long messages are split into parts that each carry the message's locator.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...errors import InvalidInput
from ...memory.chunking import Chunker
from .base import Budget, Chunk, Parsed, ReadOptions, over_limit
from .text import decode, decode_note

_SPEAKER = re.compile(
    r"^\s*(?:\[?(?P<ts>\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?)\]?\s*[-–]?\s*)?"
    r"(?P<who>[A-Za-z][\w .'’-]{0,30}?)\s*:\s+(?P<text>\S.*)$"
)
_ROLE_ALIASES = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant", "gpt": "assistant"}
_SKIP_ROLES = {"system", "developer"}


@dataclass
class _Message:
    role: str
    text: str
    timestamp: str | None = None
    message_id: str | None = None
    conversation_id: str | None = None
    title: str | None = None


def _iso(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) / 1000 if value > 1e11 else float(value)
        try:
            return datetime.fromtimestamp(seconds, UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return text[:40]
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat()


def _content_text(content: Any) -> str:
    """Text of a message's content: a string, a list of blocks, or ChatGPT's parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_content_text(block) for block in content) if t.strip())
    if isinstance(content, dict):
        for key in ("text", "input_text", "output_text", "content", "parts"):
            if key in content:
                return _content_text(content[key])
        return ""
    return ""


def _role(value: Any) -> str:
    if isinstance(value, dict):  # ChatGPT: {"author": {"role": "user"}}
        value = value.get("role")
    role = str(value or "unknown").strip().lower()
    return _ROLE_ALIASES.get(role, role)


def _message(item: dict[str, Any], conversation: str | None, title: str | None) -> _Message | None:
    role = _role(item.get("role", item.get("author", item.get("sender", item.get("speaker")))))
    text = _content_text(item.get("content", item.get("text", item.get("message"))))
    if not text.strip() or role in _SKIP_ROLES:
        # System and developer prompts are instructions, not what was said.
        return None
    stamp = next((item[k] for k in ("timestamp", "created_at", "create_time", "time", "date") if item.get(k)), None)
    return _Message(
        role=role,
        text=text.strip(),
        timestamp=_iso(stamp),
        message_id=str(item["id"]) if item.get("id") is not None else None,
        conversation_id=conversation,
        title=title,
    )


def _chatgpt(conv: dict[str, Any]) -> list[_Message]:
    mapping: dict[str, Any] = conv.get("mapping") or {}
    conv_id = str(conv.get("conversation_id") or conv.get("id") or "") or None
    title = conv.get("title") or None
    node_id = conv.get("current_node")
    if node_id not in mapping:
        # No current node: follow first children from the root.
        roots = [k for k, v in mapping.items() if not v.get("parent")]
        node_id = roots[0] if roots else None
        chain: list[str] = []
        while node_id:
            chain.append(node_id)
            children = mapping.get(node_id, {}).get("children") or []
            node_id = children[0] if children else None
    else:
        chain = []
        while node_id:
            chain.append(node_id)
            node_id = mapping.get(node_id, {}).get("parent")
        chain.reverse()
    out: list[_Message] = []
    for key in chain:
        raw = (mapping.get(key) or {}).get("message")
        if not raw:
            continue
        meta = raw.get("metadata") or {}
        if meta.get("is_visually_hidden_from_conversation"):
            continue
        msg = _message(
            {
                "role": raw.get("author"),
                "content": raw.get("content"),
                "create_time": raw.get("create_time"),
                "id": raw.get("id", key),
            },
            conv_id,
            title,
        )
        if msg:
            out.append(msg)
    return out


def _conversation(obj: dict[str, Any], index: int) -> list[_Message]:
    if "mapping" in obj:
        return _chatgpt(obj)
    conv_id = str(obj.get("conversation_id") or obj.get("id") or obj.get("uuid") or f"conversation-{index}")
    title = obj.get("title") or obj.get("name") or None
    items = obj.get("messages") or obj.get("chat_messages") or []
    return [m for m in (_message(i, conv_id, title) for i in items if isinstance(i, dict)) if m]


def _from_json(value: Any) -> list[_Message] | None:
    """Messages from parsed JSON, or None when it is not a chat shape."""
    if isinstance(value, dict):
        if "mapping" in value or "messages" in value or "chat_messages" in value:
            return _conversation(value, 1)
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        return None
    if all(("mapping" in v or "messages" in v or "chat_messages" in v) for v in value):
        out: list[_Message] = []
        for i, conv in enumerate(value, 1):
            out += _conversation(conv, i)
        return out
    if all(any(k in v for k in ("role", "author", "sender", "speaker")) for v in value):
        return [m for m in (_message(v, None, None) for v in value) if m]
    return None


def _from_jsonl(text: str) -> list[_Message] | None:
    """Messages from JSON lines; None when the text is not JSON lines at all."""
    values: list[Any] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError as exc:
            if not values:
                return None
            raise InvalidInput(
                f"Line {number} of the chat export is not JSON ({exc}).", hint="Fix or remove that line."
            ) from exc
    if not values:
        return None
    if all(isinstance(v, dict) and ("messages" in v or "mapping" in v) for v in values):
        out: list[_Message] = []
        for i, conv in enumerate(values, 1):
            out += _conversation(conv, i)
        return out
    found = _from_json(values)
    if found is None:
        raise InvalidInput(
            "The JSON lines are not chat messages (each needs a role and content).",
            hint="Pass --kind text to index the file as plain text.",
        )
    return found


def _from_transcript(text: str) -> list[_Message] | None:
    lines = [ln for ln in text.split("\n")]
    messages: list[_Message] = []
    matched = 0
    nonblank = 0
    for line in lines:
        if not line.strip():
            continue
        nonblank += 1
        m = _SPEAKER.match(line)
        if m and len(m.group("who").split()) <= 3:
            matched += 1
            messages.append(
                _Message(role=m.group("who").strip(), text=m.group("text").strip(), timestamp=_iso(m.group("ts")))
            )
        elif messages:
            messages[-1].text += "\n" + line.strip()
    speakers = {m.role.lower() for m in messages}
    if matched < 2 or len(speakers) < 2 or matched * 2 < nonblank:
        return None
    return messages


def looks_like_transcript(text: str) -> bool:
    """Whether plain text is a ``Speaker: text`` transcript."""
    return _from_transcript(text[:20000]) is not None


def read_chat(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """A chat export as one chunk per message (long messages in parts)."""
    text, encoding, guessed = decode(data, options.name, options.encoding)
    stripped = text.strip()
    messages: list[_Message] | None = None
    shape = "transcript"
    if stripped[:1] in "[{":
        try:
            value = json.loads(stripped)
        except ValueError:
            messages = _from_jsonl(stripped)
            shape = "jsonl"
        else:
            messages = _from_json(value)
            shape = "json"
            if messages is None:
                raise InvalidInput(
                    f"{options.name} is JSON but not a chat export (no messages with a role and content).",
                    hint="Pass a message list, JSONL of messages or ChatGPT's conversations.json; "
                    "or ingest it as plain text with --kind text.",
                )
    if messages is None:
        shape = "transcript"
        messages = _from_transcript(text)
        if messages is None:
            raise InvalidInput(
                f"{options.name} is not a chat transcript (expected lines like 'Alice: hello').",
                hint="Pass --kind text to index it as plain text.",
            )
    if not messages:
        raise InvalidInput(f"{options.name} has no messages with text.", hint="Check the export.")
    if 0 < options.max_messages < len(messages):
        raise over_limit(
            options.name,
            f"has {len(messages):,} messages",
            f"{options.max_messages:,}-message",
            "max_chat_messages",
            str(options.max_messages * 4),
        )
    clock = Budget(options)
    chunks: list[Chunk] = []
    conversations: dict[str, int] = {}
    for index, msg in enumerate(messages, 1):
        clock.spend()
        locator: dict[str, Any] = {"role": msg.role, "index": index}
        for key in ("timestamp", "message_id", "conversation_id", "title"):
            value = getattr(msg, key)
            if value:
                locator[key] = value
        if msg.conversation_id:
            conversations[msg.conversation_id] = conversations.get(msg.conversation_id, 0) + 1
        parts = chunker.split(msg.text, chunker.budget(msg.role))
        for part, piece in enumerate(parts, 1):
            loc = dict(locator, part=part) if len(parts) > 1 else locator
            chunks.append(
                Chunk(
                    text=piece,
                    locator=loc,
                    metadata={k: v for k, v in loc.items() if k != "index"} | {"speaker": msg.role},
                    kind="message",
                    memory_type="conversation",
                )
            )
    metadata: dict[str, Any] = {"format": shape, "messages": len(messages), "encoding": encoding}
    if conversations:
        metadata["conversations"] = len(conversations)
    return Parsed(
        source_type="chat", chunks=chunks, metadata=metadata, warnings=decode_note(options.name, encoding, guessed)
    )
