"""The shells people and programs talk to: the ``funes`` CLI (``cli/``), the team server (``server/``:
REST under ``/v1``, MCP over HTTP, API keys), the MCP stdio server and the web UI's static files.

Each is thin: it parses, calls the :class:`funes.Funes` facade, and renders. Never ``funes.integrations``.
May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``, ``funes.curation``, ``funes.agents``, ``funes.service``.
"""
