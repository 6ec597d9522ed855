"""``python -m funes``: the ``funes`` command."""

from .interfaces.cli import main

main()
