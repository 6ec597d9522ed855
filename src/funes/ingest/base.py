"""What every reader shares: the options it reads with and what it returns.

Kept apart from the package ``__init__`` (which picks a reader) so that the
readers import these types without importing the module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .chunking import Chunker


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


Reader = Callable[[bytes, ReadOptions, Chunker], Parsed]
