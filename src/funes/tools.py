"""Agent tools defined once and rendered for Anthropic, OpenAI and MCP (issue: agent tools)."""

from __future__ import annotations


class ToolsMixin:
    """Tool execution, mixed into :class:`funes.service.Funes`."""
