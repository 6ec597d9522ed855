"""Hostile files (issue 9): zip bombs, huge sheets, devices, FIFOs and undecodable names fail or skip alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import funes
from funes.errors import InvalidInput
from funes.providers.embed import HashEmbedder


def workbook(path: Path, rows: int = 3, cols: int = 3) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.append([f"Col{c}" for c in range(cols)])
    for r in range(rows):
        ws.append([f"Supplier {r}", *range(cols - 1)])
    wb.save(path)
    return path


def rewrite_member(path: Path, member: str, edit: object, extra: dict[str, bytes] | None = None) -> None:
    """Rewrite one part of a zip (``edit`` maps its bytes to new bytes) and add ``extra`` parts."""
    with zipfile.ZipFile(path) as src:
        parts = {info.filename: src.read(info) for info in src.infolist()}
    parts[member] = edit(parts[member])  # type: ignore[operator]
    parts.update(extra or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in parts.items():
            dst.writestr(name, data)


def run_cli(
    *args: str, home: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "FUNES_HOME": str(home), "FUNES_EMBEDDER": "hash", **(env or {})}
    code = "import sys; from funes.interfaces.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=full_env
    )


@pytest.fixture
def small_limits(tmp_path: Path) -> funes.Funes:
    service = funes.open(
        str(tmp_path / "limits.db"), embedder=HashEmbedder(64), max_unpacked_mb=5, max_sheet_cells=1000
    )
    yield service  # type: ignore[misc]
    service.close()


def test_zip_bomb_workbook_fails_alone_before_it_unpacks(small_limits: funes.Funes, tmp_path: Path) -> None:
    bomb = workbook(tmp_path / "bomb.xlsx")
    # 20 MB of zeros deflates to about 20 KB: the compressed size says nothing.
    rewrite_member(bomb, "xl/worksheets/sheet1.xml", lambda b: b, {"xl/media/pad.bin": b"\0" * (20 * 1024 * 1024)})
    assert bomb.stat().st_size < 200_000
    good = workbook(tmp_path / "good.xlsx")
    report = small_limits.ingest_paths([bomb, good])
    by_name = {Path(r.uri).name: r for r in report.results}
    assert by_name["bomb.xlsx"].status == "failed"
    assert "unpacks to 2" in (by_name["bomb.xlsx"].error or "") and "max_unpacked_mb" in (
        by_name["bomb.xlsx"].hint or ""
    )
    assert by_name["good.xlsx"].status == "indexed"


def test_too_many_cells_fail_alone(small_limits: funes.Funes, tmp_path: Path) -> None:
    big = workbook(tmp_path / "big.xlsx", rows=200, cols=10)  # 2,010 cells > 1,000
    report = small_limits.ingest_paths([big])
    assert report.results[0].status == "failed"
    assert "max_sheet_cells" in (report.results[0].error or "")


def test_a_merge_over_the_whole_sheet_is_bounded(small_limits: funes.Funes, tmp_path: Path) -> None:
    path = workbook(tmp_path / "merged.xlsx")
    # One merged range of 17 billion cells: copying the top-left value into each would never end.
    rewrite_member(
        path,
        "xl/worksheets/sheet1.xml",
        lambda b: b.replace(
            b"</sheetData>", b'</sheetData><mergeCells count="1"><mergeCell ref="A1:XFD1048576"/></mergeCells>'
        ),
    )
    report = small_limits.ingest_paths([path])
    assert report.results[0].status == "failed" and "max_sheet_cells" in (report.results[0].error or "")


def test_time_per_workbook_is_bounded(tmp_path: Path) -> None:
    path = workbook(tmp_path / "slow.xlsx", rows=50)
    with funes.open(str(tmp_path / "t.db"), embedder=HashEmbedder(64), ingest_file_seconds=1e-9) as mem:
        with pytest.raises(InvalidInput, match="ingest_file_seconds"):
            mem.ingest(path)


def test_devices_fifos_and_bad_names_in_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Deploys happen on Tuesdays.", encoding="utf-8")
    (folder / "c.txt").write_text("Rollbacks need two approvals.", encoding="utf-8")
    os.mkfifo(folder / "pipe.md")  # used to hang ingest forever
    os.symlink("/dev/zero", folder / "z.txt")  # used to reach 3 GB in 2 s
    # A name that is not UTF-8 used to abort the run with a UnicodeEncodeError.
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"The Latin-1 named file talks about espresso.")
    proc = run_cli("ingest", str(folder), "--json", home=tmp_path / "home", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    by_status: dict[str, list[dict[str, object]]] = {}
    for r in report["results"]:
        by_status.setdefault(str(r["status"]), []).append(r)
    assert sorted(str(r["name"]) for r in by_status["indexed"]) == ["notes/a.txt", "notes/c.txt", "notes/caf\\xe9.txt"]
    skipped = {str(r["name"]): str(r["error"]) for r in by_status["skipped"]}
    assert "FIFO" in skipped["notes/pipe.md"]
    assert "device" in skipped["notes/z.txt"] and "symbolic link" in skipped["notes/z.txt"]
    assert report["skipped"] == 2 and report["failed"] == 0
    # Re-ingesting finds the undecodable name again (its escaped uri is stable).
    again = json.loads(run_cli("ingest", str(folder), "--json", home=tmp_path / "home", timeout=60).stdout)
    assert again["unchanged"] == 3


def test_a_fifo_named_on_the_command_line_is_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    proc = run_cli("ingest", str(tmp_path / "pipe.txt"), home=tmp_path / "home", timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "skipped" in proc.stdout and "FIFO" in proc.stdout


def _pdf(path: Path, pages: list[list[str]]) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


@pytest.mark.parametrize(
    "lines",
    [
        [f"Sensor reading {v} at station {s}" for v, s in ((17, 4), (23, 9), (8, 2), (41, 7), (12, 5))],
        [f"Invoice {1001 + i} total {250 + 37 * i} EUR" for i in range(5)],  # numbers that climb with the page
    ],
    ids=["random-digits", "climbing-digits"],
)
def test_a_pdf_with_one_digit_varying_line_per_page_is_indexed(
    mem: funes.Funes, tmp_path: Path, lines: list[str]
) -> None:
    path = _pdf(tmp_path / "readings.pdf", [[line] for line in lines])
    result = mem.ingest(path)  # was refused as having no text: every line looked like a running header
    assert result.status == "indexed"
    text = " ".join(m.content for m in mem.document_chunks(result.document.id))
    assert all(line in text for line in lines)


def test_real_running_headers_are_still_dropped(mem: funes.Funes, tmp_path: Path) -> None:
    pages = [
        ["ACME Corp Annual Report", f"Chapter {n} covers the warehouse in city number {n * 7}.", f"Page {n} of 5"]
        for n in range(1, 6)
    ]
    result = mem.ingest(_pdf(tmp_path / "report.pdf", pages))
    text = " ".join(m.content for m in mem.document_chunks(result.document.id))
    assert "ACME Corp Annual Report" not in text and "Page 3 of 5" not in text
    assert "Chapter 3 covers the warehouse" in text
