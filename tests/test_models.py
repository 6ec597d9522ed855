"""Domain values: ids, attribution rendering."""

from __future__ import annotations

from funes.models import SourceRef, new_id, render_attribution


def test_ids_made_in_one_millisecond_still_sort_in_creation_order() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("mem_") and len(i) == 30 for i in ids[:10])


def test_attributions_render_like_the_issue_examples() -> None:
    assert render_attribution(SourceRef("pdf", "/x/AnnualReport.pdf", locator={"page": 12, "section": "Revenue"})) == (
        "AnnualReport.pdf p.12 §Revenue"
    )
    assert render_attribution(SourceRef("sheet", "Model.xlsx", locator={"sheet": "Sheet1", "range": "A1:F25"})) == (
        "Model.xlsx Sheet1!A1:F25"
    )
    assert render_attribution(
        SourceRef("chat", None, locator={"timestamp": "2026-01-03T10:00:00Z", "role": "user"})
    ) == ("chat 2026-01-03 user")
    assert render_attribution(None) == "memory"
