"""LlamaIndex: a ``BaseMemoryBlock`` backed by a Funes session.

LlamaIndex's ``Memory`` keeps the recent turns itself and flushes older ones
into its memory blocks. :class:`FunesMemoryBlock` stores what it is given as
messages of one Funes session (indexed, so recall and every other shell find
them), and answers with Funes' budgeted context for the latest user message:
the memory section of :meth:`funes.Funes.build_context` (relevant earlier
history, important facts, retrieved documents and memories, each fenced as
data and attributed), within the block's token budget. The stored turns are
the ones LlamaIndex no longer holds, so none is repeated as plain history:
the relevant ones come back as recalled history.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import InvalidInput
from ..memory.safety import FENCE_NOTE
from . import require

require("llama_index.core.memory", "llamaindex", "LlamaIndex")

from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import BaseMemoryBlock  # noqa: E402
from pydantic import ConfigDict, Field  # noqa: E402

_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}


def _text(message: ChatMessage) -> str:
    return message.content if isinstance(message.content, str) else ""


def to_funes_message(message: ChatMessage) -> dict[str, Any] | None:
    """A LlamaIndex chat message as a Funes message dict (None for system prompts and empty turns)."""
    role = _ROLES.get(message.role)
    if role is None:  # system / developer: the prompt, not conversation
        return None
    text = _text(message)
    calls = message.additional_kwargs.get("tool_calls") or None
    if role == "tool":
        call_id = message.additional_kwargs.get("tool_call_id") or message.additional_kwargs.get("name")
        if not call_id:
            # A tool result nobody can pair with its call is kept as the assistant's observation.
            return {"role": "assistant", "content": f"Tool result: {text}"} if text.strip() else None
        return {"role": "tool", "content": text, "tool_call_id": str(call_id)}
    if not text.strip() and not calls:
        return None
    out: dict[str, Any] = {"role": role, "content": text}
    if calls and role == "assistant":
        out["tool_calls"] = [c.model_dump() if hasattr(c, "model_dump") else c for c in calls]
    return out


class FunesMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block: stores flushed messages in a Funes session, returns Funes' context."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="funes_memory", description="The name of the memory block.")
    funes: Any = Field(description="The funes.Funes service.")
    session_id: str = Field(description="The Funes session the messages are stored in (created on first use).")
    tenant: str | None = Field(default=None, description="Whose memory (default: the configured tenant).")
    user: str | None = Field(default=None, description="The user within the tenant (default: the configured one).")
    project: str | None = Field(default=None, description="The project of the session, when it is created.")
    token_limit: int = Field(default=1500, description="Tokens at most for the memory sections of the context.")

    def _session(self) -> Any:
        return self.funes.session(self.session_id, project=self.project, tenant=self.tenant, user=self.user)

    def _context(self, query: str) -> str:
        session = self._session()
        # LlamaIndex keeps the recent turns itself; the turns stored here are the older ones, so none goes in
        # as plain history (conversation 0) and the relevant ones come back as recalled history.
        budget = {"retrieved": max(int(self.token_limit), 1), "conversation": 0}
        built = self.funes.build_context(session, query, budget=budget, tenant=self.tenant, user=self.user)
        names = ("relevant_history", "project_facts", "retrieved_context")
        parts = [built.sections[n].text for n in names if n in built.sections and built.sections[n].text.strip()]
        # The fence rule travels with the fenced sections: the block lands in someone else's system prompt.
        return "\n\n".join([FENCE_NOTE, *parts]) if parts else ""

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = next((_text(m) for m in reversed(messages or []) if m.role == MessageRole.USER and _text(m)), "")
        if not query.strip():
            return ""
        return await asyncio.to_thread(self._context, query)

    def _store(self, messages: list[ChatMessage]) -> None:
        converted = [m for m in (to_funes_message(msg) for msg in messages) if m is not None]
        if converted:
            self.funes.add_messages(self._session(), converted, tenant=self.tenant, user=self.user)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not isinstance(messages, list):
            raise InvalidInput("Messages must be a list of ChatMessage.", hint="Pass [ChatMessage(...), ...].")
        await asyncio.to_thread(self._store, messages)
