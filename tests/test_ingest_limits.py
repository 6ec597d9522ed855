"""Every reader is bounded by bytes, messages, nesting depth and time, with an error naming the setting (issue 31).

Each hostile file is real, on disk, ingested by a `funes ingest` process with
a deadline: before the bounds, these took minutes and gigabytes (a 50 MB
one-line .md, 300,000 chat messages, a deeply nested list) or went through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"


def _ingest(path: Path, db: Path, **env: str) -> str:
    """Ingest one file with the CLI; its output, after asserting it failed for that file alone."""
    done = subprocess.run(
        [sys.executable, "-c", CLI, "--db", str(db), "--embedder", "hash", "ingest", str(path)],
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "Traceback" not in out, out
    return out


def _one_line(path: Path) -> None:
    with path.open("w") as out:
        out.write("# One line\n\n")
        for _ in range(21 * 1024):
            out.write("x" * 1024)


def _words(path: Path) -> None:
    path.write_text("word " * (22 * 1024 * 1024 // 5))


def _sparse(path: Path) -> None:
    with path.open("wb") as out:
        out.write(b"# Sparse\n\n")
        out.truncate(90 * 1024 * 1024)


def _chat(path: Path) -> None:
    with path.open("w") as out:
        for i in range(300_000):
            out.write(json.dumps({"role": "user" if i % 2 else "assistant", "content": f"m{i}"}) + "\n")


def _nested(path: Path) -> None:
    path.write_text("# Nested\n\n" + "\n".join("  " * i + f"- level {i}" for i in range(200)) + "\n")


CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "one-line": ("long.md", _one_line, "max_text_mb"),
    "words": ("words.md", _words, "max_text_mb"),
    "sparse": ("sparse.md", _sparse, "max_text_mb"),
    "chat": ("export.jsonl", _chat, "max_chat_messages"),
    "nested": ("nested.md", _nested, "max_markdown_depth"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_text_file_fails_alone_naming_its_limit(tmp_path: Path, case: str) -> None:
    name, make, setting = CASES[case]
    path = tmp_path / name
    make(path)
    out = _ingest(path, tmp_path / "store.db")
    assert setting in out and f"funes config set {setting}" in out, out


def test_reading_time_is_bounded_for_markdown_too(tmp_path: Path) -> None:
    path = tmp_path / "many.md"
    path.write_text("".join(f"## Section {i}\n\nThe text of section {i}.\n\n" for i in range(3000)))
    out = _ingest(path, tmp_path / "store.db", FUNES_INGEST_FILE_SECONDS="0.000001")
    assert "ingest_file_seconds" in out, out


def _shared_strings_workbook(path: Path, count: int) -> None:
    """A minimal .xlsx whose one column points into a shared-strings table of ``count`` long strings."""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    strings = "".join(f"<si><t>{i:06d} {'distinct text ' * 40}</t></si>" for i in range(count))
    rows = "".join(f'<row r="{i + 1}"><c r="A{i + 1}" t="s"><v>{i}</v></c></row>' for i in range(count))
    parts = {
        "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships'
        '+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override '
        'PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        "_rels/.rels": f'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        f'relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>",
        "xl/workbook.xml": f'<?xml version="1.0"?><workbook {ns} xmlns:r="{rel}"><sheets><sheet name="S" '
        'sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        f'package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
        f'<Relationship Id="rId2" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<?xml version="1.0"?><worksheet {ns}><sheetData>{rows}</sheetData></worksheet>',
        "xl/sharedStrings.xml": f'<?xml version="1.0"?><sst {ns} count="{count}" uniqueCount="{count}">{strings}</sst>',
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)


def test_a_workbook_s_shared_strings_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "strings.xlsx"
    _shared_strings_workbook(path, 3000)
    assert path.stat().st_size < 1024 * 1024  # small on disk: it is the unpacked table that is bounded
    out = _ingest(path, tmp_path / "store.db", FUNES_MAX_SHARED_STRINGS_MB="1")
    assert "max_shared_strings_mb" in out, out


def test_files_under_the_limits_still_ingest(tmp_path: Path) -> None:
    path = tmp_path / "fine.md"
    path.write_text("# Fine\n\n" + "\n".join("  " * i + f"- level {i}" for i in range(10)) + "\n")
    done = subprocess.run(
        [sys.executable, "-c", CLI, "--db", str(tmp_path / "s.db"), "--embedder", "hash", "ingest", str(path)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_csv_is_bounded_by_cells_like_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(",".join(str(c) for c in range(50)) for _ in range(200)) + "\n")
    out = _ingest(path, tmp_path / "store.db", FUNES_MAX_SHEET_CELLS="1000")
    assert "max_sheet_cells" in out, out


def test_a_pdf_is_bounded_by_time(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for page in range(30):
        pdf.add_page()
        pdf.cell(0, 8, f"Page {page}: the quarterly figures.", new_x="LMARGIN", new_y="NEXT")
    path = tmp_path / "report.pdf"
    pdf.output(str(path))
    out = _ingest(path, tmp_path / "store.db", FUNES_INGEST_FILE_SECONDS="0.000001")
    assert "ingest_file_seconds" in out, out
