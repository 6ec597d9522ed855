"""Spreadsheets: tables with their headers, financial sections, long cells.

A sheet is a :class:`Grid` of non-empty cells. It is cut into regions at two
or more empty rows; each region's header row (the first row of two or more
text or period labels, after any title rows) is repeated at the top of every
chunk of that region, and each chunk records its range (``Sheet1!A1:F25``).
Logical financial sections (Income Statement, Balance Sheet, Cash Flow,
Assumptions) are kept in one chunk when they fit and never share a chunk.
A text cell longer than ``long_cell_chars`` gets its own chunk pointing at
the cell. Workbook-only features (formulas, named ranges, merged and hidden
sheets) live in :mod:`funes.knowledge.readers.workbook`; CSV/TSV is read here.
"""

from __future__ import annotations

import bisect
import csv
import io
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from ...errors import InvalidInput
from ...memory.chunking import Chunker, pack
from .base import Budget, Chunk, Parsed, ReadOptions
from .text import decode, decode_note

_FINANCIAL = re.compile(
    r"^\s*(?:consolidated\s+|pro\s+forma\s+)?("
    r"income\s+statements?|statements?\s+of\s+(?:income|operations|comprehensive\s+income)|"
    r"profit\s+(?:and|&)\s+loss(?:\s+statement)?|p\s*&\s*l|"
    r"balance\s+sheets?|statements?\s+of\s+financial\s+position|"
    r"cash\s+flows?(?:\s+statements?)?|statements?\s+of\s+cash\s+flows?|"
    r"(?:key\s+|model\s+)?assumptions|inputs?\s+(?:and|&)\s+assumptions"
    r")\s*(?:\(.*\))?\s*:?\s*$",
    re.IGNORECASE,
)
_PREVIEW_CHARS = 40


def column_letter(col: int) -> str:
    """1 → A, 27 → AA."""
    out = ""
    while col > 0:
        col, rem = divmod(col - 1, 26)
        out = chr(65 + rem) + out
    return out


def column_index(letters: str) -> int:
    """A → 1, AA → 27."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def cell_name(row: int, col: int) -> str:
    """(2, 3) → C2."""
    return f"{column_letter(col)}{row}"


def range_name(r1: int, c1: int, r2: int, c2: int) -> str:
    """A rectangle as A1 notation (one cell stays one cell)."""
    first, last = cell_name(r1, c1), cell_name(r2, c2)
    return first if first == last else f"{first}:{last}"


def format_value(value: Any) -> str:
    """A cell value as short text: integers without .0, floats rounded, dates in ISO."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{round(value, 6):.6f}".rstrip("0").rstrip(".")
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time(0) else value.isoformat(sep=" ")
    if isinstance(value, (date, time)):
        return value.isoformat()
    return " ".join(str(value).split())


def _is_number(value: Any) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("$", "").replace("%", "").replace("€", "")
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        try:
            float(text)
            return bool(text)
        except ValueError:
            return False
    return False


def _is_label(value: Any) -> bool:
    """Text, a year or a date: what header cells hold."""
    if isinstance(value, (datetime, date)):
        return True
    if isinstance(value, int) and not isinstance(value, bool) and 1900 <= value <= 2200:
        return True
    if isinstance(value, str):
        return bool(value.strip()) and (
            not _is_number(value) or re.fullmatch(r"\s*(19|20|21)\d\d\s*", value) is not None
        )
    return False


@dataclass
class Grid:
    """The non-empty cells of one sheet (values, and formulas where there are any)."""

    name: str | None
    cells: dict[int, dict[int, Any]] = field(default_factory=dict)
    formulas: dict[tuple[int, int], str] = field(default_factory=dict)
    hidden: bool = False

    def get(self, row: int, col: int) -> Any:
        """A cell's value (None when empty)."""
        return self.cells.get(row, {}).get(col)

    def ref(self, a1: str) -> str:
        """A1 reference qualified by the sheet name when there is one."""
        if not self.name:
            return a1
        quoted = self.name if re.fullmatch(r"\w+", self.name) else "'" + self.name.replace("'", "''") + "'"
        return f"{quoted}!{a1}"


@dataclass
class Region:
    """A block of rows separated from others by empty rows, with its header."""

    first_row: int
    last_row: int
    first_col: int
    last_col: int
    header_row: int | None
    headers: dict[int, str]
    title: str | None
    data_rows: list[int]


def regions(grid: Grid) -> list[Region]:
    """The sheet's tables: blocks of rows split at two or more empty rows."""
    rows = sorted(r for r, cols in grid.cells.items() if cols)
    blocks: list[list[int]] = []
    for r in rows:
        if blocks and r - blocks[-1][-1] <= 2:
            blocks[-1].append(r)
        else:
            blocks.append([r])
    out: list[Region] = []
    for block in blocks:
        cols = [c for r in block for c in grid.cells[r]]
        title_parts: list[str] = []
        header_rows: list[int] = []
        start = 0
        for i, r in enumerate(block[:8]):
            values = [v for _, v in sorted(grid.cells[r].items()) if v is not None and format_value(v)]
            if len(values) == 1 and isinstance(values[0], str) and not header_rows and i + 1 < len(block):
                title_parts.append(format_value(values[0]))
                start = i + 1
                continue
            if len(values) >= 2 and all(_is_label(v) for v in values) and i + 1 < len(block) and len(header_rows) < 3:
                header_rows.append(r)
                continue
            if header_rows and len(values) >= 2 and not any(_is_number(v) for v in values):
                # An all-text table: only its first row is the header.
                header_rows = header_rows[:1]
            break
        else:
            header_rows = header_rows[:1]
        if header_rows:
            start = block.index(header_rows[-1]) + 1
        header_row = header_rows[-1] if header_rows else None
        headers: dict[int, str] = {}
        for r in header_rows:
            for c, v in grid.cells[r].items():
                text = format_value(v)
                if text and not headers.get(c, "").endswith(text):
                    headers[c] = f"{headers[c]} {text}" if c in headers else text
        if (
            not headers
            and out
            and out[-1].headers
            and min(out[-1].headers) <= max(cols)
            and min(cols) <= max(out[-1].headers)
        ):
            # A later block without its own header (the next statement below the
            # first) reads under the sheet's period header.
            headers, header_row = dict(out[-1].headers), out[-1].header_row
        out.append(
            Region(
                first_row=block[0],
                last_row=block[-1],
                first_col=min(cols),
                last_col=max(cols),
                header_row=header_row,
                headers=headers,
                title=" — ".join(title_parts) or None,
                data_rows=block[start:],
            )
        )
    return out


class Labeler:
    """Names cells by their column header and row label, for formulas and long cells."""

    def __init__(self, grid: Grid, found: list[Region]) -> None:
        self.grid = grid
        self.regions = found
        self._starts = [reg.first_row for reg in found]

    def region(self, row: int) -> Region | None:
        """The region holding a row."""
        i = bisect.bisect_right(self._starts, row) - 1
        if i >= 0 and self.regions[i].first_row <= row <= self.regions[i].last_row:
            return self.regions[i]
        return None

    def header(self, row: int, col: int) -> str:
        """The column header above a cell ('' if none)."""
        reg = self.region(row)
        return reg.headers.get(col, "") if reg else ""

    def row_label(self, row: int, col: int | None = None) -> str:
        """The first text cell of a row, left of ``col`` when given ('' if none)."""
        for c, v in sorted(self.grid.cells.get(row, {}).items()):
            if col is not None and c >= col:
                break
            if isinstance(v, str) and v.strip() and not _is_number(v):
                return format_value(v)[:60]
        return ""

    def describe(self, r1: int, c1: int, r2: int | None = None, c2: int | None = None) -> str:
        """'Units, row North' for a cell; header and row span for a range."""
        r2 = r1 if r2 is None else r2
        c2 = c1 if c2 is None else c2
        if r1 == r2 and c1 == c2:
            parts = [self.header(r1, c1), self.row_label(r1, c1)]
            head, label = parts
            if head and label:
                return f"{head}, row {label}"
            return head or label
        if c1 == c2:
            head = self.header(r1, c1)
            a, b = self.row_label(r1, c1), self.row_label(r2, c1)
            span = f"rows {a} to {b}" if a and b and a != b else ""
            return ", ".join(p for p in (head, span) if p)
        if r1 == r2:
            label = self.row_label(r1, c1)
            a, b = self.header(r1, c1), self.header(r1, c2)
            span = f"columns {a} to {b}" if a and b and a != b else ""
            return ", ".join(p for p in (label, span) if p)
        a, b = self.header(r1, c1), self.header(r1, c2)
        return f"columns {a} to {b}" if a and b else ""


def _section_of(grid: Grid, row: int, reg: Region) -> str | None:
    """A financial section label on this row, if the row is a section label."""
    values = [v for v in grid.cells.get(row, {}).values() if v is not None and format_value(v)]
    if not values or len(values) > 2 or not isinstance(values[0], str):
        return None
    match = _FINANCIAL.match(values[0])
    return format_value(values[0]).rstrip(":") if match else None


def _render_header(reg: Region) -> str:
    if not reg.headers:
        return ""
    last = max(reg.headers)
    return " | ".join(reg.headers.get(c, "") for c in range(reg.first_col, last + 1))


def _render_row(grid: Grid, row: int, first_col: int, long_chars: int) -> str:
    cells = grid.cells.get(row, {})
    if not cells:
        return ""
    last = max(cells)
    out: list[str] = []
    for c in range(first_col, last + 1):
        text = format_value(cells.get(c))
        if len(text) > long_chars:
            text = text[:_PREVIEW_CHARS].rstrip() + f"… (see {cell_name(row, c)})"
        out.append(text)
    return " | ".join(out).rstrip(" |")


def table_chunks(grid: Grid, found: list[Region], chunker: Chunker, long_chars: int) -> list[Chunk]:
    """Header-plus-rows chunks for every region of a sheet."""
    chunks: list[Chunk] = []
    sheet_section = grid.name if grid.name and _FINANCIAL.match(grid.name) else None
    for reg in found:
        header_text = _render_header(reg)
        groups: list[tuple[str | None, list[int]]] = [(sheet_section or _title_section(reg.title), [])]
        for row in reg.data_rows:
            label = _section_of(grid, row, reg)
            if label and groups[-1][1]:
                groups.append((label, [row]))
            elif label:
                groups[-1] = (label, [row])
            else:
                groups[-1][1].append(row)
        first_chunk = True
        for section, rows in groups:
            if not rows:
                continue
            label = section or reg.title
            title = " — ".join(p for p in (grid.name, label if label != grid.name else None) if p) or None
            budget = chunker.budget(title, header_text)
            texts = [_render_row(grid, r, reg.first_col, long_chars) for r in rows]
            kept = [(r, t) for r, t in zip(rows, texts, strict=True) if t]
            sizes = [chunker.count(t) for _, t in kept]
            parts = pack(sizes, budget)
            for part, group in enumerate(parts, 1):
                body = "\n".join(kept[i][1] for i in group)
                start = kept[group[0]][0]
                if first_chunk:
                    start = reg.first_row
                    first_chunk = False
                end = kept[group[-1]][0]
                a1 = range_name(start, reg.first_col, end, reg.last_col)
                locator: dict[str, Any] = {"range": a1}
                if grid.name:
                    locator["sheet"] = grid.name
                if reg.header_row and start > reg.header_row:
                    locator["header_range"] = range_name(reg.header_row, reg.first_col, reg.header_row, reg.last_col)
                if section:
                    locator["section"] = section
                if len(parts) > 1:
                    locator["part"] = part
                metadata: dict[str, Any] = {"type": "table_section", "rows": len(group)}
                if reg.title:
                    metadata["table"] = reg.title
                if section:
                    metadata["section"] = section
                text = f"{header_text}\n{body}" if header_text else body
                chunks.append(Chunk(text=text, locator=locator, title=title, metadata=metadata))
    return chunks


def _title_section(title: str | None) -> str | None:
    if not title:
        return None
    for part in title.split(" — "):
        if _FINANCIAL.match(part):
            return part.rstrip(":")
    return None


def long_cell_chunks(grid: Grid, labeler: Labeler, chunker: Chunker, long_chars: int) -> list[Chunk]:
    """One chunk per long text cell (split in parts when it is longer than a chunk)."""
    chunks: list[Chunk] = []
    for row, cols in sorted(grid.cells.items()):
        for col, value in sorted(cols.items()):
            if not isinstance(value, str) or len(value) <= long_chars:
                continue
            where = grid.ref(cell_name(row, col))
            context = labeler.describe(row, col)
            title = where + (f" ({context})" if context else "")
            parts = chunker.split(value.strip(), chunker.budget(title))
            for part, text in enumerate(parts, 1):
                locator: dict[str, Any] = {"cell": cell_name(row, col)}
                if grid.name:
                    locator["sheet"] = grid.name
                if len(parts) > 1:
                    locator["part"] = part
                chunks.append(
                    Chunk(text=text, locator=locator, title=title, metadata={"type": "long_text", "context": context})
                )
    return chunks


def read_csv_grid(data: bytes, options: ReadOptions) -> tuple[Grid, str, bool]:
    """A CSV or TSV file as one grid (delimiter sniffed unless the extension says tab)."""
    text, encoding, guessed = decode(data, options.name, options.encoding)
    sample = text[:65536]
    delimiter = "\t" if options.extension.lower() == ".tsv" else None
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    grid = Grid(name=None)
    budget = Budget(options)  # max_sheet_cells and ingest_file_seconds bound a CSV as a workbook (issue 31)
    try:
        for r, row in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), 1):
            budget.spend(len(row) or 1)
            cells = {c: _csv_value(v) for c, v in enumerate(row, 1) if v.strip()}
            if cells:
                grid.cells[r] = cells
    except csv.Error as exc:
        raise InvalidInput(
            f"{options.name} is not valid CSV ({exc}).", hint="Check the quoting, or pass --kind text."
        ) from exc
    return grid, encoding, guessed


def _csv_value(text: str) -> Any:
    stripped = text.strip()
    if re.fullmatch(r"-?\d{1,15}", stripped):
        return int(stripped)
    if re.fullmatch(r"-?\d*\.\d+", stripped):
        return float(stripped)
    return stripped


def read_sheet(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """A CSV or TSV file (workbooks are read by :func:`funes.knowledge.readers.workbook.read_workbook`)."""
    grid, encoding, guessed = read_csv_grid(data, options)
    if not grid.cells:
        raise InvalidInput(f"{options.name} has no cells with values.", hint="Check the file.")
    found = regions(grid)
    labeler = Labeler(grid, found)
    chunks = table_chunks(grid, found, chunker, options.long_cell_chars)
    chunks += long_cell_chunks(grid, labeler, chunker, options.long_cell_chars)
    rows = len(grid.cells)
    return Parsed(
        source_type="sheet",
        chunks=chunks,
        metadata={
            "format": "tsv" if options.extension.lower() == ".tsv" else "csv",
            "rows": rows,
            "encoding": encoding,
        },
        warnings=decode_note(options.name, encoding, guessed),
    )
