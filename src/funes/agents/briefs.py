"""How the agent tools show a memory: the JSON brief, and the fenced text a model reads.

Shared by the tool executor (:mod:`funes.agents.tools`) and list_memories
(:mod:`funes.agents.listing`); the brief's JSON schema is
:data:`funes.agents.output_schemas.MEMORY`.
"""

from __future__ import annotations

from typing import Any

from ..memory.safety import WARNING, fence, is_flagged
from ..models import Memory, format_time

# Kinds an agent may change or delete; document chunks and messages belong to their source.
AGENT_KINDS: tuple[str, ...] = ("memory", "insight")


def snippet(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def recalled(memory: Memory, limit: int) -> str:
    """Memory text as handed to a model: fenced as data, with a warning when it reads like an instruction.

    Issue 9: these tools returned raw text, so a memory could close the fence and pose as a rule.
    """
    body = f"<memory>{fence(snippet(memory.content, limit))}</memory>"
    return body + (f" [warning: {WARNING}]" if is_flagged(memory) else "")


def memory_brief(memory: Memory) -> dict[str, Any]:
    """One memory as the tools' structured results carry it."""
    return {
        "id": memory.id,
        "content": memory.content,
        "memory_type": memory.memory_type,
        "kind": memory.kind,
        "scope": memory.scope,
        "project_id": memory.project_id,
        "importance": memory.importance,
        "pinned": memory.pinned,
        "expires_at": format_time(memory.expires_at),
        "version": memory.version,
        "source": memory.attribution,
        "tags": list(memory.metadata.get("tags") or []),
        "instruction_like": is_flagged(memory),
        "references": [{"type": r.type, "id": r.id} for r in memory.references],
        "created_at": format_time(memory.created_at),
        "updated_at": format_time(memory.updated_at),
        "author": memory.written_by,
        "valid_from": format_time(memory.valid_since),
        "valid_to": format_time(memory.valid_to),
    }
