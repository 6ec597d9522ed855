"""Each format is ingested from a file the test writes, and a fact in it is found with its attribution.

Retrieval runs on the real all-MiniLM-L6-v2 model; PDFs are written with
fpdf2, workbooks with openpyxl (cached formula values are added to the XML
the way a spreadsheet app saves them, since openpyxl does not calculate).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FILLER = (
    "The company continued to invest in its platform and in the training of its staff. "
    "Management reviewed the operating plan with the board at every quarterly meeting. "
)


def write_report_pdf(path: Path) -> Path:
    """A four-page annual report with numbered sections; the revenue fact is on page 3."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(True, 15)
    sections = [
        ("1. Introduction", "This annual report covers fiscal year 2025 for Acme Corporation. " + FILLER * 4),
        ("2. Operations", "Acme operates four plants and two distribution centres. " + FILLER * 5),
        (
            "3. Revenue",
            "Total revenue grew 17 percent to 48.2 million dollars, driven by subscription sales in Europe. "
            + FILLER * 3,
        ),
        ("4. Risks", "Currency fluctuations and supplier concentration remain the main risks. " + FILLER * 4),
    ]
    for title, body in sections:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 15)
        pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def add_cached_values(data: bytes, values: dict[str, dict[str, object]]) -> bytes:
    """Write cached results into formula cells, as Excel does on save."""
    src = zipfile.ZipFile(io.BytesIO(data))
    titles = re.findall(r'<sheet [^>]*name="([^"]+)"', src.read("xl/workbook.xml").decode())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            match = re.fullmatch(r"xl/worksheets/sheet(\d+)\.xml", info.filename)
            if match:
                text = body.decode()
                for cell, value in values.get(titles[int(match.group(1)) - 1], {}).items():
                    text = re.sub(
                        rf'(<c r="{cell}"[^>]*>)<f>([^<]*)</f><v\s*(?:/>|></v>)', rf"\1<f>\2</f><v>{value}</v>", text
                    )
                body = text.encode()
            dst.writestr(info, body)
    return out.getvalue()


def write_model_xlsx(path: Path) -> Path:
    """A financial model: merged headers, formulas, a named range, a hidden sheet, an external link."""
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws = wb.active
    ws.title = "Model"
    ws["A1"] = "Income Statement"
    ws["B2"] = "Fiscal year"
    ws.merge_cells("B2:C2")
    ws.append(["Line item", 2024, 2025])
    ws.append(["Revenue", 100, 120])
    ws.append(["Cost of goods sold", 60, 70])
    ws.append(["Gross profit", "=B4-B5", "=C4-C5"])
    ws.append(["Income tax", "=B6*TaxRate", "=C6*TaxRate"])
    ws["A8"] = "Notes"  # the note below is over 200 characters: a chunk of its own
    ws["B8"] = (
        "Management expects the new factory in Leipzig to lower unit costs by a fifth once it reaches full "
        "capacity in the second half of 2026, although energy prices remain a risk that the board reviews "
        "with the auditors every quarter."
    )
    ws["A11"] = "Balance Sheet"
    ws["A12"] = "Cash"
    ws["B12"] = 35
    ws["C12"] = 41
    ws["A13"] = "Inventory"
    ws["B13"] = 12
    ws["C13"] = 15
    sheet = wb.create_sheet("Assumptions")
    sheet.append(["Assumption", "Value"])
    sheet.append(["Corporate tax rate", 0.25])
    sheet.append(["EUR/USD exchange rate", "=[1]Rates!B2"])
    wb.defined_names["TaxRate"] = DefinedName("TaxRate", attr_text="Assumptions!$B$2")
    hidden = wb.create_sheet("Scratch")
    hidden.append(["Secret codename", "Bluebird"])
    hidden.append(["Owner", "Finance"])
    hidden.sheet_state = "hidden"
    buf = io.BytesIO()
    wb.save(buf)
    cached = {"Model": {"B6": 40, "C6": 50, "B7": 10, "C7": 12.5}, "Assumptions": {"B3": 1.08}}
    path.write_bytes(add_cached_values(buf.getvalue(), cached))
    return path


def test_pdf_fact_is_found_with_its_page_and_section(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pdf = write_report_pdf(tmp_path / "AnnualReport.pdf")
    result = real_mem.ingest(pdf)
    assert result.status == "indexed" and result.pages == 4
    assert result.document.metadata["sections"] == ["1. Introduction", "2. Operations", "3. Revenue", "4. Risks"]
    hits = real_mem.search("How much did revenue grow in 2025?", limit=3)
    top = hits[0]
    assert "48.2 million" in top.memory.content
    assert top.attribution == "AnnualReport.pdf p.3 §3. Revenue"
    assert top.memory.source.source_id == result.document.id
    assert top.memory.kind == "document_chunk" and top.memory.memory_type == "context"


def test_scanned_pdf_is_reported_not_indexed(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fpdf import FPDF
    from PIL import Image

    pdf = FPDF()
    pdf.add_page()
    pdf.image(Image.new("RGB", (200, 100), "white"), x=10, y=10, w=100)
    path = tmp_path / "scan.pdf"
    pdf.output(str(path))
    with pytest.raises(Exception) as info:
        real_mem.ingest(path)
    assert "scanned PDF" in str(info.value) and "OCR" in str(info.value)
    [doc] = real_mem.documents()
    assert doc.status == "failed" and doc.chunk_count == 0 and "scanned" in doc.error


def test_workbook_facts_formulas_and_names(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_model_xlsx(tmp_path / "Model.xlsx")
    result = real_mem.ingest(path)
    assert result.status == "indexed"
    notes = " ".join(result.warnings)
    assert "hidden sheet" in notes and "Scratch" in notes
    assert "other workbooks" in notes
    doc = result.document
    assert doc.metadata["hidden_sheets"] == ["Scratch"] and doc.metadata["named_ranges"] == ["TaxRate"]
    chunks = real_mem.document_chunks(doc.id)
    # The table chunk: the merged header is spread over its columns and the section is recognised.
    table = next(m for m in chunks if m.source.locator.get("range") == "A1:C8")
    assert table.attribution == "Model.xlsx Model!A1:C8"
    assert table.content.splitlines()[0] == "Line item | Fiscal year 2024 | Fiscal year 2025"
    assert table.source.locator["section"] == "Income Statement"
    balance = next(m for m in chunks if m.source.locator.get("section") == "Balance Sheet")
    assert balance.content.splitlines()[0] == "Line item | Fiscal year 2024 | Fiscal year 2025"
    assert "Cash | 35 | 41" in balance.content and "Revenue" not in balance.content
    # Hidden sheets are not indexed.
    assert not any("Bluebird" in m.content for m in chunks)
    # A formula chunk: cell, formula, references named by labels, cached values.
    tax = next(m for m in chunks if m.metadata.get("formula") == "=B6*TaxRate")
    assert tax.attribution == "Model.xlsx Model!B7:C7"
    assert "Gross profit" in tax.content and "Corporate tax rate" in tax.content and "= 0.25" in tax.content
    assert "B7 = 10" in tax.content and "C7 = 12.5" in tax.content
    fx = next(m for m in chunks if m.metadata.get("formula") == "=[1]Rates!B2")
    assert "another workbook" in fx.content and "B3 = 1.08" in fx.content
    # Search finds facts with their range.
    hit = real_mem.search("What corporate tax rate does the model assume?", limit=3)[0]
    assert hit.attribution.startswith("Model.xlsx Assumptions!")
    assert "0.25" in hit.memory.content
    # The long note is its own chunk pointing at its cell (the table row only previews it).
    factory = real_mem.search("When will the new factory reach full capacity?", limit=3)
    cell = next(h for h in factory if h.attribution == "Model.xlsx Model!B8")
    assert "second half of 2026" in cell.memory.content
    gross = real_mem.search("how is gross profit calculated", limit=3)
    assert any(h.memory.metadata.get("formula") == "=B4-B5" for h in gross)


def test_workbook_hidden_sheets_on_request(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_model_xlsx(tmp_path / "Model.xlsx")
    result = real_mem.ingest(path, hidden_sheets=True)
    hits = real_mem.search("secret codename", limit=3)
    assert hits[0].attribution == "Model.xlsx Scratch!A1:B2"
    assert result.document.metadata["hidden_sheets"] == ["Scratch"]


def test_csv_rows_keep_their_header(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = ["Region,Product,Units,Unit price"]
    rows += [f"Region {i},Widget {i},{i * 3},{i}.50" for i in range(1, 400)]
    rows.insert(250, "Antarctica,Snow shovel,7,19.99")
    path = tmp_path / "sales.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = real_mem.ingest(path)
    assert result.chunks > 3
    for chunk in real_mem.document_chunks(result.document.id):
        assert chunk.content.splitlines()[0] == "Region | Product | Units | Unit price"
    hit = real_mem.search("How many snow shovels were sold in Antarctica?", limit=3)[0]
    assert "Antarctica | Snow shovel | 7 | 19.99" in hit.memory.content
    first, last = re.fullmatch(r"sales\.csv A(\d+):D(\d+)", hit.attribution).groups()  # type: ignore[union-attr]
    assert int(first) <= 251 <= int(last)


def test_markdown_sections_and_metadata(real_mem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2026-01-28.md").write_text(
        "---\ntitle: Daily log\ntags: [funes, release]\n---\n"
        "# Log\n\n## 2026-01-28\n\n### Changes\n\n- Added the spreadsheet reader\n- tag: ingestion\n"
        "- Fixed the PDF section detector #bugfix\n\n**Commit**: 9f3c2ab\n\n"
        "### Task Summary\n\nThe staging database was migrated to Postgres 16 over the weekend without downtime.\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    report = real_mem.ingest_paths([notes])
    assert [r.status for r in report.results] == ["indexed"]
    hit = real_mem.search("Which Postgres version does staging run?", limit=3)[0]
    assert hit.attribution == "notes/2026-01-28.md # Log > ## 2026-01-28 > ### Task Summary"
    assert hit.memory.kind == "markdown"
    changes = real_mem.search("spreadsheet reader added", limit=3)[0]
    meta = changes.memory.metadata
    assert meta["header_path"] == "# Log > ## 2026-01-28 > ### Changes"
    assert meta["date"] == "2026-01-28"
    assert meta["commits"] == ["9f3c2ab"]
    assert set(meta["tags"]) == {"funes", "release", "ingestion", "bugfix"}
    assert meta["front_matter"]["title"] == "Daily log"


def test_chat_exports_each_message_is_a_record(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    openai_style = [
        {"role": "system", "content": "You are helpful."},
        {
            "role": "user",
            "content": "My cat is called Pixel and she hates thunderstorms.",
            "timestamp": "2026-01-03T09:12:00Z",
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Noted: Pixel, storm-averse."}],
            "timestamp": "2026-01-03T09:12:05Z",
        },
    ]
    (tmp_path / "messages.json").write_text(json.dumps(openai_style), encoding="utf-8")
    chatgpt = [
        {
            "title": "Trip planning",
            "conversation_id": "c-42",
            "current_node": "n3",
            "mapping": {
                "n1": {"message": None, "parent": None, "children": ["n2"]},
                "n2": {
                    "message": {
                        "id": "m2",
                        "author": {"role": "user"},
                        "create_time": 1767600000,
                        "content": {"content_type": "text", "parts": ["We land in Lisbon on March 14 at 6am."]},
                    },
                    "parent": "n1",
                    "children": ["n3"],
                },
                "n3": {
                    "message": {
                        "id": "m3",
                        "author": {"role": "assistant"},
                        "create_time": 1767600010,
                        "content": {"content_type": "text", "parts": ["Then book the 8am train to Porto."]},
                    },
                    "parent": "n2",
                    "children": [],
                },
            },
        }
    ]
    (tmp_path / "conversations.json").write_text(json.dumps(chatgpt), encoding="utf-8")
    (tmp_path / "anthropic.jsonl").write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Our API rate limit is 600 requests per minute."}],
                },
                {"role": "assistant", "content": "Understood."},
            ]
        ),
        encoding="utf-8",
    )
    (tmp_path / "standup.txt").write_text(
        "[2026-02-02 09:00] Dana: I finished the invoice export yesterday.\n"
        "[2026-02-02 09:01] Lee: Nice. I am still blocked on the SSO certificate renewal.\n"
        "It expires on Friday.\n[2026-02-02 09:02] Dana: I will ping IT.\n",
        encoding="utf-8",
    )
    report = real_mem.ingest_paths([tmp_path])
    # The folder also holds the store's own files: listed as skipped (unsupported type), not read.
    assert {r.name.rsplit("/", 1)[-1]: r.status for r in report.results if r.status != "skipped"} == {
        "anthropic.jsonl": "indexed",
        "conversations.json": "indexed",
        "messages.json": "indexed",
        "standup.txt": "indexed",
    }
    assert {d.kind for d in real_mem.documents()} == {"chat"}
    pet = real_mem.search("what is the name of the user's cat", limit=3)[0]
    # Hits name the export file and the date (issue 8).
    folder = tmp_path.name
    assert pet.attribution == f"chat {folder}/messages.json 2026-01-03 user" and pet.memory.kind == "message"
    assert pet.memory.memory_type == "conversation"
    trip = real_mem.search("When do we arrive in Lisbon?", limit=3)[0]
    assert trip.attribution == f"chat {folder}/conversations.json Trip planning 2026-01-05 user"
    assert trip.memory.source.locator["conversation_id"] == "c-42" and trip.memory.source.locator["message_id"] == "m2"
    limit = real_mem.search("API rate limit", limit=3)[0]
    assert "600 requests" in limit.memory.content and limit.memory.source.locator["role"] == "user"
    sso = real_mem.search("which certificate is expiring?", limit=3)[0]
    assert (
        sso.attribution == f"chat {folder}/standup.txt 2026-02-02 Lee" and "It expires on Friday." in sso.memory.content
    )
    only_chat = real_mem.search("Lisbon", source_types=["chat"], limit=5)
    assert only_chat and all(h.memory.source.type == "chat" for h in only_chat)


def test_plain_text_chunks_never_split_sentences(real_mem, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sentences = [f"Paragraph {i} talks about routine maintenance of the fleet and its schedule." for i in range(120)]
    sentences.insert(77, "The spare key for the server room is kept in the blue cabinet behind reception.")
    path = tmp_path / "handbook.txt"
    path.write_text("\n\n".join(" ".join(sentences[i : i + 3]) for i in range(0, len(sentences), 3)), encoding="utf-8")
    result = real_mem.ingest(path)
    chunks = real_mem.document_chunks(result.document.id)
    assert len(chunks) > 5
    embedder = real_mem.embedder
    for chunk in chunks:
        assert embedder.count_tokens(chunk.content) <= 200
        assert chunk.content.endswith(".")
    hit = real_mem.search("where is the spare key to the server room?", limit=3)[0]
    assert "blue cabinet" in hit.memory.content
    assert re.fullmatch(r"handbook\.txt part \d+", hit.attribution)
