"""OpenAI Agents SDK: a ``Session`` backed by a Funes session.

Conversation history lives in the same store that recall searches: every item
the runner adds becomes a Funes message (user and assistant text is indexed as
session-scope records), so ``funes search``, the MCP tools and
``build_context`` find what was said in an agent run.

Items map to messages as follows, and back again on :meth:`FunesSession.get_items`:

* a user or assistant message with text content: a ``user`` / ``assistant``
  message with that text (content parts are joined; ids and annotations of
  output messages are not kept, the Responses API accepts the plain form);
* ``function_call``: an assistant message carrying one tool call (call id,
  name, arguments);
* ``function_call_output``: a ``tool`` message answering that call id;
* anything else (reasoning items, system or developer messages, images, hosted
  tool calls): kept whole, as an assistant tool call named
  :data:`RAW_ITEM_TOOL` whose arguments hold the item, and returned verbatim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..models import new_id
from ..models.messages import Message
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
    """The text of a message's content, or None when it holds more than text (images, files, refusals)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in _TEXT_PARTS or part.get("annotations"):
            return None
        texts.append(str(part.get("text") or ""))
    return "".join(texts)


def _raw(item: dict[str, Any]) -> dict[str, Any]:
    call = {"id": str(item.get("id") or new_id("item")), "name": RAW_ITEM_TOOL, "arguments": {"item": item}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def item_to_message(item: Any) -> dict[str, Any]:
    """One Agents SDK input item as a Funes message dict (see the module docstring for the mapping)."""
    data = _plain(item)
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
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.content}]
    items: list[dict[str, Any]] = []
    if message.content:
        items.append({"role": message.role, "content": message.content})
    for call in message.tool_calls:
        if call.name == RAW_ITEM_TOOL and isinstance(call.arguments.get("item"), dict):
            items.append(call.arguments["item"])
        else:
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

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        funes: Funes,
        *,
        tenant: str | None = None,
        user: str | None = None,
        project: str | None = None,
        title: str | None = None,
    ) -> None:
        """``session_id`` names the Funes session (created on the first write, resumed if it exists)."""
        self.session_id = session_id
        self.funes = funes
        self.tenant = tenant
        self.user = user
        self.project = project
        self.title = title

    def _caller(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "user": self.user}

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
        messages = await asyncio.to_thread(self._history, limit)
        items = [i for m in messages for i in message_to_items(m)]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        """Append items to the conversation (one transaction, one batched embedding)."""
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
