"""What every reader shares: the options it reads with and what it returns.

Kept apart from the package ``__init__`` (which picks a reader) so that the
readers import these types without importing the module that imports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidInput
from ...memory.chunking import Chunker


@dataclass(frozen=True)
class Chunk:
    """One piece of a document, with where it came from."""

    text: str
    locator: dict[str, Any]
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = "document_chunk"
    memory_type: str = "context"


@dataclass
class Parsed:
    """What a reader got out of one file."""

    source_type: str
    chunks: list[Chunk]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    pages: int | None = None


@dataclass(frozen=True)
class ReadOptions:
    """Per-file reading options."""

    name: str
    extension: str = ""
    encoding: str | None = None
    password: str | None = None
    hidden_sheets: bool = False
    long_cell_chars: int = 200
    #: Bounds on one file, so a small hostile file (a zip bomb, a million formulas) fails alone (issue 9).
    max_unpacked_bytes: int = 500 * 1024 * 1024
    max_cells: int = 2_000_000
    max_seconds: float = 300.0
    #: Bounds on text formats (issue 31: a 50 MB one-line .md, 300,000 chat messages, a list nested
    #: thousands deep each took minutes and gigabytes); 0 turns one off.
    max_text_bytes: int = 20 * 1024 * 1024
    max_messages: int = 100_000
    max_depth: int = 32
    max_shared_strings_bytes: int = 64 * 1024 * 1024


class Budget:
    """The cells and time one file may still use; readers call :meth:`spend` as they go."""

    def __init__(self, options: ReadOptions) -> None:
        self.name = options.name
        self.max_cells = options.max_cells
        self.max_seconds = options.max_seconds
        self.cells = 0
        self.deadline = time.monotonic() + options.max_seconds if options.max_seconds > 0 else None

    def spend(self, cells: int = 0) -> None:
        """Count cells read and check the clock; raise InvalidInput once over either bound."""
        self.cells += cells
        if self.max_cells > 0 and self.cells > self.max_cells:
            raise InvalidInput(
                f"{self.name} has more than {self.max_cells:,} cells to read (the max_sheet_cells limit).",
                hint="Nothing from it was indexed. Split the workbook, or raise the limit: "
                "funes config set max_sheet_cells 5000000.",
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise InvalidInput(
                f"{self.name} took longer than {self.max_seconds:g} s to read (the ingest_file_seconds limit).",
                hint="Nothing from it was indexed. Split the file, or raise the limit: "
                "funes config set ingest_file_seconds 1200.",
            )


def over_limit(name: str, what: str, limit: str, setting: str, raise_to: str) -> InvalidInput:
    """The error of a file over one of the reading bounds: what, the limit, and the setting that raises it."""
    return InvalidInput(
        f"{name} {what}, over the {limit} limit ({setting}).",
        hint=f"Nothing from it was indexed. Split the file, or raise the limit: funes config set {setting} {raise_to}.",
    )


Reader = Callable[[bytes, ReadOptions, Chunker], Parsed]
