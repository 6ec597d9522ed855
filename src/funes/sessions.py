"""Sessions, messages, usage and context building (issue: conversations and context assembly)."""

from __future__ import annotations


class SessionsMixin:
    """Conversation memory, mixed into :class:`funes.service.Funes`."""
