"""Readers: turn a file's bytes into attributed chunks.

Each reader takes the raw bytes, :class:`ReadOptions` and a token-aware
:class:`~funes.memory.chunking.Chunker`, and returns a :class:`Parsed`: the
chunks, each with a ``locator`` that says where in the file it came from
(page and section, sheet and range, message, header path), plus document
metadata and warnings. Readers never touch the store or the embedder; the
service (:mod:`funes.knowledge.documents`) turns chunks into records.

A reader either returns a complete result or raises
:class:`~funes.errors.InvalidInput` saying what is wrong with the file and
what to do, so nothing is ever indexed halfway. Heavy libraries (pypdf,
openpyxl) are imported inside the reader that needs them.
"""

from __future__ import annotations

import json
import re
import zipfile
from io import BytesIO

from ...errors import InvalidInput
from ...memory.chunking import Chunker
from .base import Chunk, Parsed, Reader, ReadOptions, over_limit

#: Accepted ``kind`` values and the reader each maps to.
KIND_ALIASES: dict[str, str] = {
    "text": "text",
    "txt": "text",
    "markdown": "markdown",
    "md": "markdown",
    "pdf": "pdf",
    "sheet": "sheet",
    "xlsx": "sheet",
    "xlsm": "sheet",
    "csv": "sheet",
    "tsv": "sheet",
    "chat": "chat",
    "json": "chat",
    "jsonl": "chat",
}

#: File extensions picked up when a folder is ingested.
EXTENSIONS: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".rst": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".pdf": "pdf",
    ".xlsx": "sheet",
    ".xlsm": "sheet",
    ".csv": "sheet",
    ".tsv": "sheet",
    ".json": "chat",
    ".jsonl": "chat",
    ".ndjson": "chat",
}

#: Bumped when a reader's output changes, so unchanged files are re-chunked once.
READER_VERSION = 1


_MARKDOWN_HINTS = re.compile(r"^(#{1,6} \S|```|---\s*$|\s*[-*] \[[ x]\] )", re.MULTILINE)


def detect_kind(data: bytes, extension: str) -> str:
    """The reader for a file, from its content first and its extension second."""
    head = data[:2048]
    ext = extension.lower()
    if head.lstrip().startswith(b"%PDF-") or ext == ".pdf":
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        if _is_workbook(data):
            return "sheet"
        raise InvalidInput(
            "This is a zip archive but not an Excel workbook (.xlsx/.xlsm).",
            hint="Funes reads text, Markdown, PDF, .xlsx/.xlsm, .csv/.tsv and chat exports; "
            "save Word or other documents as PDF first.",
        )
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        raise InvalidInput(
            "This is a legacy .xls workbook or a password-protected Office file, which Funes cannot read.",
            hint="Open it in a spreadsheet app, remove the password if any, and save it as .xlsx.",
        )
    if ext in EXTENSIONS and EXTENSIONS[ext] != "text":
        return EXTENSIONS[ext]
    text = data[:20000].decode("utf-8", errors="ignore")
    if ext not in EXTENSIONS:
        if text.lstrip()[:1] in "[{" and _looks_like_json(data):
            return "chat"
        if _MARKDOWN_HINTS.search(text[:2048]):
            return "markdown"
    from .chats import looks_like_transcript

    return "chat" if looks_like_transcript(text) else "text"


def _is_workbook(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except zipfile.BadZipFile:
        return False


def _looks_like_json(data: bytes) -> bool:
    text = data.decode("utf-8", errors="ignore").strip()
    first = text.split("\n", 1)[0]
    for candidate in (text, first):
        try:
            json.loads(candidate)
            return True
        except ValueError:
            continue
    return False


def reader_for(kind: str) -> Reader:
    """The reader function of a kind (imports its module on first use)."""
    if kind == "text":
        from .text import read_text

        return read_text
    if kind == "markdown":
        from .markdown import read_markdown

        return read_markdown
    if kind == "pdf":
        from .pdf import read_pdf

        return read_pdf
    if kind == "sheet":
        from .sheets import read_sheet
        from .workbook import read_workbook

        def read_any_sheet(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
            """A workbook (.xlsx/.xlsm, a zip archive) or a CSV/TSV file."""
            if data[:4] == b"PK\x03\x04":
                return read_workbook(data, options, chunker)
            return read_sheet(data, options, chunker)

        return read_any_sheet
    if kind == "chat":
        from .chats import read_chat

        return read_chat
    raise InvalidInput(f"Unknown kind {kind!r}.", hint=f"Use one of: {', '.join(sorted(set(KIND_ALIASES)))}.")


def normalize_kind(kind: str | None) -> str | None:
    """A user-given kind as a reader name (None stays None: detect it)."""
    if kind is None:
        return None
    key = kind.strip().lower().lstrip(".")
    if key not in KIND_ALIASES:
        raise InvalidInput(
            f"Unknown kind {kind!r}.",
            hint=f"Use one of: {', '.join(sorted(set(KIND_ALIASES)))}, or leave it out to detect it.",
        )
    return KIND_ALIASES[key]


def read(data: bytes, options: ReadOptions, chunker: Chunker, kind: str | None = None) -> Parsed:
    """Read a file with the reader its kind (given or detected) names."""
    if not data or data.isspace():
        raise InvalidInput(f"{options.name} is empty.", hint="Add content to the file, or leave it out.")
    reader_kind = normalize_kind(kind) or detect_kind(data, options.extension)
    limit = options.max_text_bytes
    if reader_kind in ("text", "markdown", "chat") and 0 < limit < len(data):
        raise over_limit(
            options.name,
            f"is {len(data) / 1024 / 1024:,.1f} MB of text",
            f"{limit / 1024 / 1024:g} MB",
            "max_text_mb",
            str(max(1, limit * 4 // (1024 * 1024))),
        )
    return reader_for(reader_kind)(data, options, chunker)


__all__ = [
    "EXTENSIONS",
    "KIND_ALIASES",
    "READER_VERSION",
    "SOURCE_FILTERS",
    "SOURCE_FILTER_LABELS",
    "SOURCE_TYPES",
    "Chunk",
    "Parsed",
    "ReadOptions",
    "describe_source_filters",
    "detect_kind",
    "normalize_kind",
    "read",
    "reader_for",
    "source_types_for",
]
