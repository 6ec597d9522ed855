"""Conversations: sessions and their messages, and assembling each model call as ONE system
message plus history inside a token budget (sections, caps, token counting, packaged prompts).

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.memory``, ``funes.knowledge``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .assembly import Budget as Budget
    from .assembly import BuiltContext as BuiltContext
    from .assembly import Change as Change
    from .assembly import ContextInputs as ContextInputs
    from .assembly import assemble as assemble
    from .prompts import load_prompt as load_prompt
    from .sessions import Conversations as Conversations
    from .sessions import Session as Session
    from .tokens import TokenCounter as TokenCounter
    from .tokens import default_counter as default_counter

__getattr__, __all__ = lazy_exports(__name__, __file__)
