"""Agent memory: the tool specs and their executor (Anthropic, OpenAI and MCP share them), Claude's
memory tool, ``<save_memory>`` capture and write-back, task summaries and Claude Code hooks.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .capture import Capture
    from .hooks import Hooks
    from .memory_tool import MemoryTool
    from .specs import TOOLS, TOOLS_BY_NAME, ToolSpec, render_tools
    from .tasks import Tasks
    from .tools import AgentTools, ToolResult

__getattr__ = lazy_exports(
    __name__,
    {
        "AgentTools": "tools",
        "ToolResult": "tools",
        "TOOLS": "specs",
        "TOOLS_BY_NAME": "specs",
        "ToolSpec": "specs",
        "render_tools": "specs",
        "MemoryTool": "memory_tool",
        "Capture": "capture",
        "Tasks": "tasks",
        "Hooks": "hooks",
    },
)

__all__ = [
    "TOOLS",
    "TOOLS_BY_NAME",
    "AgentTools",
    "Capture",
    "Hooks",
    "MemoryTool",
    "Tasks",
    "ToolResult",
    "ToolSpec",
    "render_tools",
]
