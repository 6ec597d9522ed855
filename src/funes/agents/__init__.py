"""Agent memory: the tool specs and their executor (Anthropic, OpenAI and MCP share them), Claude's
memory tool, ``<save_memory>`` capture and write-back, task summaries and Claude Code hooks.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .capture import Capture as Capture
    from .hooks import Hooks as Hooks
    from .memory_tool import MemoryTool as MemoryTool
    from .specs import TOOLS as TOOLS
    from .specs import TOOLS_BY_NAME as TOOLS_BY_NAME
    from .specs import ToolSpec as ToolSpec
    from .specs import render_tools as render_tools
    from .tasks import Tasks as Tasks
    from .tools import AgentTools as AgentTools
    from .tools import ToolResult as ToolResult

__getattr__, __all__ = lazy_exports(__name__, __file__)
