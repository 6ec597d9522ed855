"""The team server: Funes's REST API (``/v1``), MCP for teams (``/mcp``) and the web UI (``/ui``).

Only :mod:`funes.interfaces.cli` imports this package, and only for ``funes serve``
(FastAPI and uvicorn are the ``server`` extra).
"""

from .app import create_app, serve

__all__ = ["create_app", "serve"]
