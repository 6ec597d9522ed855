"""Documents hold their own (issue 28): a sentence that answers is not buried under table chunks sharing its words.

A mixed store built here: a PDF report, two spreadsheets full of the same
business words (revenue, growth, costs, vendors, headcount), and Markdown
notes; 30 questions, each answered by one passage. With the real model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import funes

# Each (question, words only the answering passage holds).
REPORT = [
    ("Revenue grew by 14 percent last year, to 8.2 million euros.", "How much did revenue grow?"),
    ("Operating costs fell by 3 percent because the Leipzig plant used less energy.", "Why did costs go down?"),
    ("The company hired 41 engineers, mostly in Porto and Krakow.", "How many engineers joined the company?"),
    ("Acme Logistics was placed on probation after the supplier audit.", "Which supplier is on probation?"),
    ("The board approved a dividend of 0.30 euros per share.", "What dividend will shareholders receive?"),
    ("Customer churn dropped to 4 percent after the support team doubled.", "Did fewer customers leave?"),
    ("The new warehouse in Rotterdam opens in September.", "When does the Rotterdam site open?"),
    ("Gross margin improved to 38 percent thanks to cheaper packaging.", "What happened to the gross margin?"),
    ("Exports to Brazil doubled after the trade agreement.", "How did sales to Brazil change?"),
    ("The chief financial officer, Marta Silva, retires in March.", "Who is leaving the finance team?"),
]
NOTES = [
    ("Deploys happen on Tuesdays after the QA sign-off.", "When do we deploy?"),
    ("The vendor review meeting moved to the second floor room Atlas.", "Where is the vendor review held?"),
    ("We chose Stripe over Adyen for card payments.", "Which payment provider did we pick?"),
    ("Laptops are replaced every three years.", "How often do laptops get replaced?"),
    ("The marketing budget for the spring campaign is 40,000 euros.", "How much can the spring campaign spend?"),
    ("Interns start on the first Monday of July.", "When do the interns begin?"),
    ("Support tickets older than 30 days are escalated to the team lead.", "What happens to old tickets?"),
    ("Security training is mandatory for every new hire in the first week.", "Is security training required?"),
    ("The Lisbon office closes at 6 pm on Fridays.", "What time does the Lisbon office shut on Friday?"),
    ("Travel above 500 euros needs approval from a director.", "Who must approve expensive trips?"),
]
# Sheet answers: (row, question); the row's cells answer it.
SHEET_ROWS = [
    (["Northwind", "Packaging", 120_000, "Active"], "How much do we spend with Northwind?"),
    (["Globex", "Freight", 95_000, "On hold"], "What is the status of Globex?"),
    (["Initech", "Software", 48_000, "Active"], "What does Initech supply?"),
    (["Umbrella", "Cleaning", 12_500, "Terminated"], "Was the Umbrella contract ended?"),
    (["Hooli", "Cloud hosting", 210_000, "Active"], "Which vendor provides cloud hosting?"),
    (["Stark Industries", "Machinery", 330_000, "Active"], "How much is the Stark Industries contract worth?"),
    (["Wayne Enterprises", "Security services", 77_000, "Review"], "Who handles security services?"),
    (["Soylent", "Catering", 18_000, "Active"], "Which company does our catering?"),
    (["Cyberdyne", "Robotics", 150_000, "Review"], "Which vendor makes robots for us?"),
    (["Tyrell", "Biotech samples", 64_000, "Active"], "Who sends us biotech samples?"),
]


def _pdf(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 7, "Annual report 2025", new_x="LMARGIN", new_y="NEXT")
    for sentence, _ in REPORT:
        pdf.multi_cell(0, 7, sentence, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    pdf.output(str(path))
    return path


def _sheets(path: Path) -> Path:
    """Two sheets heavy with the report's words: revenue, growth, costs, engineers, margin, vendors."""
    from openpyxl import Workbook

    wb = Workbook()
    kpis = wb.active
    kpis.title = "KPIs"
    kpis.append(["Metric", "2023", "2024", "2025", "Growth"])
    for metric in ("Revenue", "Revenue growth", "Operating costs", "Gross margin", "Engineers hired", "Churn"):
        for region in ("North", "South", "East", "West"):
            kpis.append([f"{metric} {region}", 1.1, 1.2, 1.3, "3 percent"])
    vendors = wb.create_sheet("Vendors")
    vendors.append(["Vendor", "Category", "Annual spend (euros)", "Status"])
    for row, _ in SHEET_ROWS:
        vendors.append(row)
    wb.save(str(path))
    return path


def fill(service: funes.Funes, folder: Path) -> None:
    """Ingest the mixed store's three files, written into ``folder`` (bench/passage_windows.py reuses it)."""
    service.ingest(_pdf(folder / "annual-report.pdf"))
    service.ingest(_sheets(folder / "finance.xlsx"))
    notes = folder / "team-notes.md"
    notes.write_text(
        "# Team notes\n\n" + "\n\n".join(f"## Note {n}\n\n{text}" for n, (text, _) in enumerate(NOTES, 1)) + "\n",
        encoding="utf-8",
    )
    service.ingest(notes)


def cases() -> list[tuple[str, str]]:
    """The 30 (question, text only the answer holds)."""
    return [(q, s[:40]) for s, q in REPORT + NOTES] + [(q, str(row[0])) for row, q in SHEET_ROWS]


@pytest.fixture
def store(tmp_path: Path, local_embedder: Any) -> Iterator[funes.Funes]:
    service = funes.open(str(tmp_path / "docs.db"), embedder=local_embedder)
    fill(service, tmp_path)
    yield service
    service.close()


def _answer_rank(hits: Any, needle: str) -> int | None:
    return next((n for n, h in enumerate(hits) if needle in h.memory.content), None)


@pytest.mark.slow
def test_thirty_questions_on_a_mixed_store_find_their_passage_first(store: funes.Funes) -> None:
    assert len(cases()) == 30
    first = 0
    for question, needle in cases():
        hits = store.search(question, limit=10)
        rank = _answer_rank(hits, needle)
        assert rank is not None and rank <= 2, question  # the default floor never hides the answer
        assert _descending([h.relevance for h in hits]), question
        first += rank == 0
    # Measured 29 of 30 first (docs/benchmarks.md, "Passage windows"): the PDF's one chunk of ten sentences
    # is matched by its best sentence too, so one question's cosine is no longer diluted by the other nine
    # (26 of 30 without windows). The miss: "How much did revenue grow?" is 2nd, behind the KPI sheet's
    # "Revenue growth" rows, which are an answer of a kind too.
    assert first >= 29


@pytest.mark.slow
def test_the_revenue_question_keeps_the_pdf_sentence_beside_the_spreadsheet(store: funes.Funes) -> None:
    hits = store.search("How much did revenue grow?", limit=5)
    rank = _answer_rank(hits, "Revenue grew by 14 percent")
    assert rank is not None and rank <= 1  # was 5th behind four spreadsheet chunks (issue 28)
    assert hits[rank].attribution.startswith("annual-report.pdf")


def _descending(values: list[float]) -> bool:
    return values == sorted(values, reverse=True)
