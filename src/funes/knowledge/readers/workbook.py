"""Excel workbooks (.xlsx/.xlsm) with openpyxl: formulas, cached values, names.

The workbook is read twice in read-only mode: once for formulas, once for
the values Excel cached when it last calculated. Tables are chunked by
:mod:`funes.knowledge.readers.sheets` with the cached values. Every formula that
references cells, ranges or names becomes a chunk with the formula, its
references named by their column header and row label, and the cached value;
a column of the same relative formula (``=D2*E2``, ``=D3*E3``, ...) is one
chunk for the whole run. Named ranges are chunks too. Merged cells take the
top-left value; hidden sheets are skipped unless asked for; references to
other workbooks are reported and their cached values used.
"""

from __future__ import annotations

import re
import warnings
import zipfile
from collections import defaultdict
from io import BytesIO
from typing import Any

from ...errors import DependencyMissing, InvalidInput
from ...memory.chunking import Chunker
from .base import Budget, Chunk, Parsed, ReadOptions, over_limit
from .sheets import (
    Grid,
    Labeler,
    cell_name,
    column_index,
    format_value,
    long_cell_chunks,
    range_name,
    regions,
    table_chunks,
)

_A1 = re.compile(r"(?<![A-Za-z_\d.\]])(\$?)([A-Z]{1,3})(\$?)(\d{1,7})(?![\d(A-Za-z_])")
_REF = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[^'!:]+)!)?(?P<c1>\$?[A-Z]{1,3})?(?P<r1>\$?\d+)?"
    r"(?::(?P<c2>\$?[A-Z]{1,3})?(?P<r2>\$?\d+)?)?$"
)
_MERGE = re.compile(rb'<mergeCell ref="([A-Z]+)(\d+):([A-Z]+)(\d+)"')
_MAX_NAMED_CELLS = 40
_SAMPLE_VALUES = 3


def _openpyxl() -> Any:
    try:
        import openpyxl
    except ImportError as exc:
        raise DependencyMissing(
            "Reading Excel workbooks needs the openpyxl package.", hint="Run `pip install 'funes-memory[sheets]'`."
        ) from exc
    return openpyxl


def check_archive(data: bytes, name: str, limit: int, shared_limit: int = 0) -> None:
    """Refuse a workbook whose parts unpack to more than ``limit`` bytes, before anything inflates them.

    Its shared-strings table alone may unpack to at most ``shared_limit`` bytes: openpyxl
    holds every string in memory, and 2.9 MB of them grew a server past 2.5 GB (issue 31).

    zipfile never yields more than a member's declared size, so the declared
    sizes bound what openpyxl can unpack (issue 9: a 2 MB zip bomb took 5 GB).
    """
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise InvalidInput(
            f"{name} is not a readable Excel workbook ({type(exc).__name__}: {exc}).",
            hint="Open it in a spreadsheet app and save it again as .xlsx; nothing from it was indexed.",
        ) from exc
    total = sum(max(0, m.file_size) for m in members)
    if limit > 0 and total > limit:
        raise InvalidInput(
            f"{name} unpacks to {total / 1024 / 1024:,.0f} MB, over the {limit / 1024 / 1024:,.0f} MB limit "
            "(max_unpacked_mb); it may be a zip bomb.",
            hint="Nothing from it was indexed. If the workbook is genuine, raise the limit: "
            "funes config set max_unpacked_mb 2000.",
        )
    shared = sum(max(0, m.file_size) for m in members if m.filename.lower().endswith("sharedstrings.xml"))
    if shared_limit > 0 and shared > shared_limit:
        raise over_limit(
            name,
            f"has a shared-strings table of {shared / 1024 / 1024:,.0f} MB unpacked",
            f"{shared_limit / 1024 / 1024:g} MB",
            "max_shared_strings_mb",
            str(max(1, shared_limit * 4 // (1024 * 1024))),
        )


def _load(data: bytes, name: str, data_only: bool) -> Any:
    openpyxl = _openpyxl()
    try:
        with warnings.catch_warnings():
            # openpyxl warns about features it drops (data validation, slicers); reading is unaffected.
            warnings.simplefilter("ignore")
            return openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=data_only, keep_links=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError) as exc:
        raise InvalidInput(
            f"{name} is not a readable Excel workbook ({type(exc).__name__}: {exc}).",
            hint="Open it in a spreadsheet app and save it again as .xlsx; nothing from it was indexed.",
        ) from exc


def _merged(wb: Any, ws: Any) -> list[tuple[int, int, int, int]]:
    """Merged ranges, read from the sheet XML (read-only worksheets do not expose them)."""
    path = getattr(ws, "_worksheet_path", None)
    archive = getattr(wb, "_archive", None)
    if not path or archive is None:
        return []
    try:
        xml = archive.read(path)
    except KeyError:
        return []
    tail = xml[xml.rfind(b"</sheetData>") :] if b"</sheetData>" in xml else xml
    return [
        (int(r1), column_index(c1.decode()), int(r2), column_index(c2.decode()))
        for c1, r1, c2, r2 in _MERGE.findall(tail)
    ]


def _read_grids(
    data: bytes, name: str, budget: Budget
) -> tuple[list[Grid], dict[str, list[tuple[str, str]]], dict[str, str], list[str], int]:
    """Grids with cached values and formulas, defined names and their texts, external links, merged count."""
    formula_wb = _load(data, name, data_only=False)
    grids: list[Grid] = []
    merged_total = 0
    try:
        sheets = [ws for ws in formula_wb.worksheets if hasattr(ws, "iter_rows")]
        for ws in sheets:
            grid = Grid(name=ws.title, hidden=ws.sheet_state != "visible")
            for r, row in enumerate(ws.iter_rows(values_only=True), 1):
                # Every cell read counts, empty ones too: a sheet can declare a huge sparse range.
                budget.spend(len(row) or 1)
                cells: dict[int, Any] = {}
                for c, value in enumerate(row, 1):
                    if value is None:
                        continue
                    if isinstance(value, str):
                        if value.startswith("=") and len(value) > 1:
                            grid.formulas[(r, c)] = value
                            continue
                        if not value.strip():
                            continue
                    elif not isinstance(value, (int, float, bool)) and hasattr(value, "text"):
                        # Array and data-table formulas come as objects holding the text.
                        grid.formulas[(r, c)] = str(value.text)
                        continue
                    cells[c] = value
                if cells:
                    grid.cells[r] = cells
            for r1, c1, r2, c2 in _merged(formula_wb, ws):
                merged_total += 1
                top = grid.get(r1, c1)
                if top is None:
                    continue
                # A merge over A1:XFD1048576 would otherwise copy one value into 17 billion cells.
                budget.spend((r2 - r1 + 1) * (c2 - c1 + 1))
                for r in range(r1, r2 + 1):
                    for c in range(c1, c2 + 1):
                        if (r, c) != (r1, c1):
                            grid.cells.setdefault(r, {})[c] = top
            grids.append(grid)
        links = _external_links(formula_wb)
        names = _defined_names(formula_wb)
        constants = _defined_values(formula_wb)
    finally:
        formula_wb.close()
    if any(g.formulas for g in grids):
        values_wb = _load(data, name, data_only=True)
        try:
            by_name = {g.name: g for g in grids}
            for ws in values_wb.worksheets:
                grid = by_name.get(ws.title)
                if grid is None or not grid.formulas or not hasattr(ws, "iter_rows"):
                    continue
                wanted = defaultdict(list)
                for r, c in grid.formulas:
                    wanted[r].append(c)
                last = max(wanted)
                for r, row in enumerate(ws.iter_rows(values_only=True, max_row=last), 1):
                    budget.spend(len(row) or 1)
                    for c in wanted.get(r, ()):
                        if c <= len(row) and row[c - 1] is not None:
                            grid.cells.setdefault(r, {})[c] = row[c - 1]
        finally:
            values_wb.close()
    return grids, names, constants, links, merged_total


def _external_links(wb: Any) -> list[str]:
    out: list[str] = []
    for link in getattr(wb, "_external_links", []) or []:
        target = getattr(getattr(link, "file_link", None), "Target", None)
        out.append(str(target) if target else "another workbook")
    return out


def _relative(formula: str, row: int, col: int) -> str:
    """A formula in R1C1-like form, so copies down a column compare equal."""

    def repl(m: re.Match[str]) -> str:
        c_abs, letters, r_abs, digits = m.groups()
        c = column_index(letters)
        r = int(digits)
        cs = f"C{c}" if c_abs else f"C[{c - col}]"
        rs = f"R{r}" if r_abs else f"R[{r - row}]"
        return rs + cs

    return _A1.sub(repl, re.sub(r'"[^"]*"', '""', formula))


class _Resolver:
    """Names formula references by header and row label, across sheets."""

    def __init__(self, grids: list[Grid], defined: dict[str, list[tuple[str, str]]], links: list[str]) -> None:
        self.grids = {g.name: g for g in grids}
        self.labelers = {g.name: Labeler(g, regions(g)) for g in grids}
        self.defined = defined
        self.links = links

    def operands(self, formula: str) -> list[str]:
        """The range operands of a formula (cells, ranges, names), in order."""
        from openpyxl.formula import Tokenizer

        try:
            tokens = Tokenizer(formula).items
        except Exception:  # an unparsable formula still gets its regex-found cells
            return [m.group(0) for m in _A1.finditer(formula)]
        return [t.value for t in tokens if t.type == "OPERAND" and t.subtype == "RANGE"]

    def external(self, operand: str) -> str | None:
        """The workbook an operand points into, if it is another one."""
        match = re.search(r"\[([^\]]+)\]", operand.rsplit("!", 1)[0]) if "!" in operand else None
        if not match:
            return None
        key = match.group(1)
        if key.isdigit():
            index = int(key)
            return self.links[index - 1] if 0 < index <= len(self.links) else f"external workbook [{key}]"
        return key

    def describe(self, operand: str, sheet: str) -> tuple[str, Any]:
        """(text naming the reference, its cached value or values)."""
        other = self.external(operand)
        if other:
            return f"{operand} (in another workbook: {other}; not resolved)", None
        if operand in self.defined or operand.upper() in {k.upper() for k in self.defined}:
            key = next(k for k in self.defined if k.upper() == operand.upper())
            targets = self.defined[key]
            if targets:
                text, value = self.describe_target(targets[0][0], targets[0][1])
                return f"{operand} = {text}", value
            return f"{operand} (named value)", None
        match = _REF.match(operand.replace("$", ""))
        if not match or not (match.group("c1") or match.group("r1")):
            return operand, None
        target_sheet = sheet
        if match.group("sheet"):
            target_sheet = match.group("sheet").strip("'").replace("''", "'")
        return self.describe_target(target_sheet, operand.split("!")[-1])

    def describe_target(self, sheet: str, ref: str) -> tuple[str, Any]:
        """A sheet and an A1 reference, named and valued."""
        grid = self.grids.get(sheet)
        match = _REF.match(ref.replace("$", ""))
        if grid is None or not match or not match.group("c1") or not match.group("r1"):
            return f"{sheet}!{ref}" if grid is None else ref, None
        r1, c1 = int(match.group("r1")), column_index(match.group("c1"))
        r2 = int(match.group("r2")) if match.group("r2") else r1
        c2 = column_index(match.group("c2")) if match.group("c2") else c1
        label = self.labelers[sheet].describe(r1, c1, r2, c2)
        where = range_name(r1, c1, r2, c2)
        prefix = grid.ref(where)
        if (r1, c1) == (r2, c2):
            value = grid.get(r1, c1)
            shown = f" = {format_value(value)}" if value is not None else ""
            return f"{prefix}" + (f" ({label})" if label else "") + shown, value
        values = [grid.get(r, c) for r in range(r1, min(r2, r1 + 200) + 1) for c in range(c1, min(c2, c1 + 50) + 1)]
        values = [v for v in values if v is not None]
        return f"{prefix}" + (f" ({label})" if label else ""), values


def _defined_names(wb: Any) -> dict[str, list[tuple[str, str]]]:
    """Workbook and sheet-scoped defined names: name → [(sheet, A1 ref)] (empty for constants)."""
    out: dict[str, list[tuple[str, str]]] = {}
    scopes: list[Any] = [getattr(wb, "defined_names", {})]
    scopes += [getattr(ws, "defined_names", {}) for ws in wb.worksheets]
    for names in scopes:
        for key, defn in dict(names).items():
            if getattr(defn, "hidden", False) or key.startswith("_xlnm."):
                continue
            try:
                targets = [(sheet, ref) for sheet, ref in defn.destinations]
            except Exception:  # a name holding a formula or constant has no destinations
                targets = []
            out[key] = targets
    return out


def _defined_values(wb: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for names in [getattr(wb, "defined_names", {})] + [getattr(ws, "defined_names", {}) for ws in wb.worksheets]:
        for key, defn in dict(names).items():
            out[key] = str(getattr(defn, "attr_text", "") or getattr(defn, "value", ""))
    return out


def _formula_groups(grid: Grid) -> list[tuple[list[tuple[int, int]], str]]:
    """Formulas grouped by relative form into filled rectangles (a column run, a row run, a block).

    Returns (cells in row-major order, the first cell's formula) per group.
    """
    by_form: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (r, c), formula in grid.formulas.items():
        by_form[_relative(formula, r, c)].append((r, c))
    out: list[tuple[list[tuple[int, int]], str]] = []
    for cells in by_form.values():
        cells.sort()
        rows = [r for r, _ in cells]
        cols = [c for _, c in cells]
        area = (max(rows) - min(rows) + 1) * (max(cols) - min(cols) + 1)
        if area == len(cells):
            out.append((cells, grid.formulas[cells[0]]))
            continue
        # Scattered copies: one group per contiguous run down each column.
        runs: list[list[tuple[int, int]]] = []
        for r, c in sorted(cells, key=lambda rc: (rc[1], rc[0])):
            if runs and runs[-1][-1][1] == c and runs[-1][-1][0] == r - 1:
                runs[-1].append((r, c))
            else:
                runs.append([(r, c)])
        out += [(run, grid.formulas[run[0]]) for run in runs]
    out.sort(key=lambda group: group[0][0])
    return out


def formula_chunks(
    grid: Grid, resolver: _Resolver, chunker: Chunker, budget: Budget | None = None
) -> tuple[list[Chunk], int, int]:
    """Chunks for formulas that reference something; (chunks, external refs, missing cached values)."""
    labeler = resolver.labelers[grid.name]
    chunks: list[Chunk] = []
    external = missing = 0
    for cells_of, formula in _formula_groups(grid):
        if budget is not None:
            budget.spend()  # the clock only: a million distinct formulas must not run for minutes
        first, col = cells_of[0]
        operands = resolver.operands(formula)
        if not operands:
            continue
        refs: list[str] = []
        for operand in dict.fromkeys(operands):
            text, _value = resolver.describe(operand, grid.name or "")
            refs.append(text)
            if resolver.external(operand):
                external += 1
        last_row, last_col = cells_of[-1]
        where = range_name(first, col, last_row, last_col)
        context = labeler.describe(first, col)
        cached = [(cell_name(r, c), grid.get(r, c)) for r, c in cells_of[:_SAMPLE_VALUES]]
        if any(v is None for _, v in cached):
            missing += 1
        copies = ""
        if len(cells_of) > 1:
            copies = f" (the same formula in all {len(cells_of)} cells, shown for {cell_name(first, col)})"
        lines = [
            f"Formula in {grid.ref(where)}" + (f" ({context})" if context else "") + f": {formula}" + copies,
            "References: " + "; ".join(refs),
        ]
        shown = [f"{cell} = {format_value(v)}" for cell, v in cached if v is not None]
        lines.append(
            "Cached value: "
            + ("; ".join(shown) if shown else "none (the file was never calculated by a spreadsheet app)")
        )
        title = f"{grid.ref(where)} formula"
        body = "\n".join(lines)
        locator: dict[str, Any] = {"sheet": grid.name, ("cell" if len(cells_of) == 1 else "range"): where}
        metadata: dict[str, Any] = {
            "type": "formula",
            "formula": formula,
            "references": list(dict.fromkeys(operands)),
            "cells": len(cells_of),
        }
        if cached and cached[0][1] is not None:
            metadata["cached_value"] = format_value(cached[0][1])
        for part, text in enumerate(chunker.split(body, chunker.budget(title)), 1):
            loc = dict(locator, part=part) if part > 1 else locator
            chunks.append(Chunk(text=text, locator=loc, title=title, metadata=metadata))
    return chunks, external, missing


def named_range_chunks(
    names: dict[str, list[tuple[str, str]]], values: dict[str, str], resolver: _Resolver, chunker: Chunker
) -> list[Chunk]:
    """One chunk per defined name, with its target and values."""
    chunks: list[Chunk] = []
    for key, targets in sorted(names.items()):
        if not targets:
            body = f"Named value {key} = {values.get(key, '')}"
            locator: dict[str, Any] = {"name": key}
        else:
            sheet, ref = targets[0]
            text, value = resolver.describe_target(sheet, ref)
            shown = value if isinstance(value, list) else None
            body = f"Named range {key} refers to {text}"
            if shown:
                body += ": " + ", ".join(format_value(v) for v in shown[:_MAX_NAMED_CELLS])
                if len(shown) > _MAX_NAMED_CELLS:
                    body += f", … ({len(shown)} values)"
            locator = {"name": key, "sheet": sheet, "range": ref.replace("$", "")}
        for part, text in enumerate(chunker.split(body), 1):
            chunks.append(
                Chunk(
                    text=text,
                    locator=dict(locator, part=part) if part > 1 else locator,
                    title=f"Named range {key}",
                    metadata={"type": "named_range", "name": key},
                )
            )
    return chunks


def read_workbook(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """An .xlsx/.xlsm workbook as table, formula, long-cell and named-range chunks."""
    name = options.name
    check_archive(data, name, options.max_unpacked_bytes, options.max_shared_strings_bytes)
    budget = Budget(options)
    grids, names, constants, links, merged = _read_grids(data, name, budget)
    resolver = _Resolver(grids, names, links)
    chunks: list[Chunk] = []
    notes: list[str] = []
    hidden = [g.name for g in grids if g.hidden]
    external_total = missing_total = 0
    formula_count = 0
    for grid in grids:
        if grid.hidden and not options.hidden_sheets:
            continue
        labeler = resolver.labelers[grid.name]
        chunks += table_chunks(grid, labeler.regions, chunker, options.long_cell_chars)
        chunks += long_cell_chunks(grid, labeler, chunker, options.long_cell_chars)
        budget.spend()
        found, external, missing = formula_chunks(grid, resolver, chunker, budget)
        chunks += found
        external_total += external
        missing_total += missing
        formula_count += len(grid.formulas)
    chunks += named_range_chunks(names, constants, resolver, chunker)
    if hidden and not options.hidden_sheets:
        notes.append(
            f"{name}: skipped hidden sheet(s) {', '.join(map(repr, hidden))}; "
            "pass --hidden-sheets (setting ingest_hidden_sheets) to index them."
        )
    if external_total:
        notes.append(
            f"{name}: {external_total} formula reference(s) point into other workbooks "
            f"({', '.join(links) or 'external files'}); their cached values were used, not the linked files."
        )
    if missing_total:
        notes.append(
            f"{name}: {missing_total} formula(s) have no cached value (the file was never calculated); "
            "open and save it in a spreadsheet app to index computed values."
        )
    if not chunks:
        raise InvalidInput(
            f"{name} has no cells with values" + (" on its visible sheets." if hidden else "."),
            hint="Pass --hidden-sheets to index hidden sheets." if hidden else "Check the workbook.",
        )
    metadata: dict[str, Any] = {
        "format": "xlsx",
        "sheets": [g.name for g in grids],
        "rows": sum(len(g.cells) for g in grids if not g.hidden or options.hidden_sheets),
        "formulas": formula_count,
        "named_ranges": sorted(names),
        "merged_ranges": merged,
    }
    if hidden:
        metadata["hidden_sheets"] = hidden
    if links:
        metadata["external_links"] = links
    return Parsed(source_type="sheet", chunks=chunks, metadata=metadata, warnings=notes)
