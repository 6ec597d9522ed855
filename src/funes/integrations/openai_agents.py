"""OpenAI Agents SDK: a ``Session`` backed by a Funes session.

Conversation history lives in the same store that recall searches: every item
the runner adds becomes a Funes message (user and assistant text is indexed as
session-scope records), so ``funes search``, the MCP tools and
``build_context`` find what was said in an agent run.

Items map to messages as follows, and back again on :meth:`FunesSession.get_items`:

* a user or assistant message with text: a ``user`` / ``assistant`` message
  with that text (the text parts joined), which is what gets indexed;
* ``function_call``: an assistant message carrying one tool call (call id,
  name, arguments);
* ``function_call_output``: a ``tool`` message answering that call id;
* anything else (reasoning items, system or developer messages, images, hosted
  tool calls): an assistant message with a tool call named
  :data:`RAW_ITEM_TOOL` whose arguments hold the item.

Items come back exactly as added: when the plain message would not give the
item back (a list of content parts, ids, statuses, annotations), the item also
rides along whole in a :data:`RAW_ITEM_TOOL` call and is returned verbatim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..models import new_id
from ..models.messages import Message, ToolCall
from . import require

require("agents.memory", "openai-agents", "OpenAI Agents SDK")

if TYPE_CHECKING:
    from agents.memory import SessionSettings

    from ..service import Funes

RAW_ITEM_TOOL = "openai_agents_item"
_TEXT_PARTS = ("input_text", "output_text", "text")


def _plain(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        return dict(item.model_dump(exclude_unset=True, mode="json"))
    return dict(item)


def _text_of(content: Any) -> str | None:
    """The text of a message's content parts, or None when it holds no text (images, files, refusals)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        str(part.get("text") or "") for part in content if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS
    ]
    return "".join(texts) if texts else None


def _raw(item: dict[str, Any]) -> dict[str, Any]:
    call = {"id": str(item.get("id") or new_id("item")), "name": RAW_ITEM_TOOL, "arguments": {"item": item}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def item_to_message(item: Any) -> dict[str, Any]:
    """One Agents SDK input item as a Funes message dict (see the module docstring for the mapping).

    When the message would not give the item back exactly (content parts, ids,
    statuses), the item rides along whole as a :data:`RAW_ITEM_TOOL` call, and
    :func:`message_to_items` returns it verbatim; the text stays the indexed content.
    """
    data = _plain(item)
    message = _mapped(data)
    if _back(message) != [data]:
        if message["role"] == "tool":
            return _raw(data)
        message["tool_calls"] = [*(message.get("tool_calls") or ()), *_raw(data)["tool_calls"]]
    return message


def _back(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in message.get("tool_calls") or ()
    )
    return message_to_items(
        Message(
            role=message["role"],
            content=message["content"],
            tool_calls=calls,
            tool_call_id=message.get("tool_call_id"),
        )
    )


def _mapped(data: dict[str, Any]) -> dict[str, Any]:
    kind = data.get("type") or ("message" if "role" in data else None)
    if kind == "message" and data.get("role") in ("user", "assistant"):
        text = _text_of(data.get("content"))
        if text is not None and text.strip():
            return {"role": data["role"], "content": text}
    elif kind == "function_call" and data.get("call_id") and data.get("name"):
        try:
            arguments = json.loads(data.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = None
        if isinstance(arguments, dict):
            call = {"id": str(data["call_id"]), "name": str(data["name"]), "arguments": arguments}
            return {"role": "assistant", "content": "", "tool_calls": [call]}
    elif kind == "function_call_output" and data.get("call_id") and isinstance(data.get("output"), str):
        return {"role": "tool", "content": data["output"], "tool_call_id": str(data["call_id"])}
    return _raw(data)


def message_to_items(message: Message) -> list[dict[str, Any]]:
    """A stored Funes message as the Agents SDK input items it stands for."""
    raw = [c.arguments["item"] for c in message.tool_calls if c.name == RAW_ITEM_TOOL]
    if raw:
        return raw  # the items exactly as added; the rest of the message is their indexed form
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.content}]
    items: list[dict[str, Any]] = []
    if message.content:
        items.append({"role": message.role, "content": message.content})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments, ensure_ascii=False),
            }
        )
    return items


class FunesSession:
    """An OpenAI Agents SDK ``Session`` (get, add and pop items; clear) stored as a Funes session."""

    def __init__(
        self,
        session_id: str,
        funes: Funes,
        *,
        tenant: str | None = None,
        user: str | None = None,
        project: str | None = None,
        title: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        """``session_id`` names the Funes session (created on the first write, resumed if it exists).

        ``session_settings`` (a ``SessionSettings`` or its fields as a dict) gives
        the default ``limit`` of :meth:`get_items`, as in the SDK's own sessions.
        """
        from agents.memory.session_settings import SessionSettings, coerce_session_settings

        self.session_settings = (
            coerce_session_settings(
                dict(session_settings) if isinstance(session_settings, Mapping) else session_settings
            )
            if session_settings is not None
            else SessionSettings()
        )
        self._closed = False
        self.session_id = session_id
        self.funes = funes
        self.tenant = tenant
        self.user = user
        self.project = project
        self.title = title

    def _caller(self) -> dict[str, Any]:
        if self._closed:
            raise RuntimeError("This FunesSession is closed; open a new one to use the conversation again.")
        return {"tenant": self.tenant, "user": self.user}

    def close(self) -> None:
        """Close the session: later calls raise (the Funes service stays open, it belongs to the caller)."""
        self._closed = True

    def _open(self) -> Any:
        return self.funes.session(self.session_id, project=self.project, title=self.title, **self._caller())

    def _history(self, limit: int | None) -> list[Message]:
        try:
            return list(self.funes.history(self.session_id, limit=limit, **self._caller()))
        except NotFound:
            return []  # never written: an empty conversation

    # -- Session protocol ----------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items, oldest first (the latest ``limit`` when given)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        messages = await asyncio.to_thread(self._history, limit)
        items = [i for m in messages for i in message_to_items(m)]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        """Append items to the conversation (one transaction, one batched embedding)."""
        self._caller()  # a closed session refuses even an empty write
        if not items:
            return
        messages = [item_to_message(i) for i in items]

        def write() -> None:
            self.funes.add_messages(self._open(), messages, **self._caller())

        await asyncio.to_thread(write)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (None when the conversation is empty)."""

        def pop() -> Message | None:
            try:
                return self.funes.pop_message(self.session_id, **self._caller())
            except NotFound:
                return None

        message = await asyncio.to_thread(pop)
        if message is None:
            return None
        items = message_to_items(message)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        """Delete the conversation: its messages and their indexed records (logged, like ``funes`` clears)."""

        def clear() -> None:
            try:
                self.funes.clear_session(self.session_id, **self._caller())
            except NotFound:
                pass  # nothing was ever stored

        await asyncio.to_thread(clear)
