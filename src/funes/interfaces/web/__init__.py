"""The web UI: static HTML, CSS and JavaScript modules served at ``/ui``.

The UI talks only to the REST API (``/v1``) with ``fetch``; it never reaches
into storage. ``STATIC_DIR`` is the folder the server mounts.
"""

from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"

__all__ = ["STATIC_DIR"]
