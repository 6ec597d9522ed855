"""Conversations: sessions and their messages, and assembling each model call as ONE system
message plus history inside a token budget (sections, caps, token counting, packaged prompts).

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.memory``, ``funes.knowledge``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .assembly import Budget, BuiltContext, Change, ContextInputs, assemble
    from .prompts import load_prompt
    from .sessions import Conversations, Session
    from .tokens import TokenCounter, default_counter

__getattr__ = lazy_exports(
    __name__,
    {
        "Conversations": "sessions",
        "Session": "sessions",
        "Budget": "assembly",
        "BuiltContext": "assembly",
        "Change": "assembly",
        "ContextInputs": "assembly",
        "assemble": "assembly",
        "TokenCounter": "tokens",
        "default_counter": "tokens",
        "load_prompt": "prompts",
    },
)

__all__ = [
    "Budget",
    "BuiltContext",
    "Change",
    "ContextInputs",
    "Conversations",
    "Session",
    "TokenCounter",
    "assemble",
    "default_counter",
    "load_prompt",
]
