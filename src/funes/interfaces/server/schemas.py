"""Request bodies of the REST API (pydantic lives only at the edge: these map onto library calls)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryIn(_Body):
    """A new memory (the create_memory tool's fields)."""

    content: str = Field(min_length=1)
    title: str | None = Field(default=None, max_length=1000)
    memory_type: str | None = Field(default=None, max_length=50)
    scope: Literal["team", "project", "session"] | None = None
    file_id: str | None = Field(default=None, max_length=500)
    session_id: str | None = Field(default=None, max_length=500)
    topic: str | None = Field(default=None, max_length=200)
    importance: float | None = Field(default=None, ge=0, le=1)
    pinned: bool = False
    ttl_days: float | None = Field(default=None, gt=0, le=36500)
    expires_at: str | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] | None = None
    entity_type: str | None = Field(default=None, max_length=100)
    entity_id: str | None = Field(default=None, max_length=500)
    personal: bool = False


class MemoryPatch(_Body):
    """Changes to a memory."""

    title: str | None = Field(default=None, max_length=1000)
    summary: str | None = Field(default=None, max_length=10_000)
    content: str | None = None
    pinned: bool | None = None
    importance: float | None = Field(default=None, ge=0, le=1)
    topic: str | None = Field(default=None, max_length=200)


class RestoreIn(_Body):
    """The version to restore."""

    version: int = Field(ge=1)


class EntityIn(BaseModel):
    """One entity of a file (other fields are kept and fingerprinted too)."""

    model_config = ConfigDict(extra="allow")
    entity_type: str = Field(min_length=1, max_length=100)
    entity_id: str = Field(min_length=1, max_length=500)
    content: str | None = None
    title: str | None = None
    topic: str | None = None
    metadata: dict[str, Any] | None = None


class GenerateIn(_Body):
    """A file's current entities."""

    file_id: str = Field(min_length=1, max_length=500)
    entities: list[EntityIn]
    scope: str | None = None


class RegenerateIn(_Body):
    """The file to regenerate."""

    file_id: str = Field(min_length=1)


class InternalGenerateIn(_Body):
    """A machine-to-machine generation request."""

    team: str = Field(min_length=1)
    entities: list[EntityIn]


class MessageIn(_Body):
    """A message of a session, with the tool calls an assistant made or the call a tool message answers."""

    role: Literal["user", "assistant", "system", "tool"]
    content: str
    tool_calls: list[dict[str, Any]] | None = Field(default=None, max_length=100)
    tool_call_id: str | None = Field(default=None, max_length=200)
    # The model call's token usage, recorded with the message (OpenAI or Anthropic field names).
    usage: dict[str, Any] | None = None
    at: str | None = Field(default=None, max_length=64)


class UsageIn(_Body):
    """One model call's token usage, recorded on its own (not with a message)."""

    prompt_tokens: int = Field(ge=0, le=100_000_000)
    completion_tokens: int = Field(ge=0, le=100_000_000)
    model: str | None = Field(default=None, max_length=200)
    context_window: int | None = Field(default=None, ge=1, le=100_000_000)


class ContextIn(_Body):
    """What to build the next model call's context for."""

    query: str | None = None
    context_window: int | None = Field(default=None, ge=1024, le=10_000_000)
    instructions: str | None = None
    as_of: str | None = Field(default=None, description="Recall memory as it was then (ISO-8601).")


class ClearIn(_Body):
    """What to clear, confirmed by repeating its id (``everything``: the team's name)."""

    file_id: str | None = None
    session_id: str | None = None
    everything: bool = False
    confirm: str


class ForgetIn(_Body):
    """What to forget: ids, a user, or a text (``matching`` needs ``confirm: true`` after a preview)."""

    ids: list[str] | None = Field(default=None, max_length=10000)
    user: str | None = Field(default=None, max_length=200)
    matching: str | None = Field(default=None, max_length=2000)
    confirm: bool = False


class SettingsIn(_Body):
    """A file's settings (any subset)."""

    enabled: bool | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    retrieval_k: int | None = None
    max_records: int | None = None
