"""The retrieval sanity test from the foundation issue, with the real model."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_preference_found_by_meaning_and_keyword(real_mem) -> None:  # type: ignore[no-untyped-def]
    pref = real_mem.remember("I prefer US-based vendors with at least 90% energy efficiency", type="preference")
    real_mem.remember("The quarterly budget review happens every March", type="fact")
    real_mem.remember("We deploy the web app on Fridays after the standup", type="decision")
    by_meaning = real_mem.search("which suppliers does the user like?", limit=3)
    assert by_meaning[0].memory.id == pref.id
    by_keyword = real_mem.search("efficiency", limit=3)
    assert by_keyword[0].memory.id == pref.id
    assert by_keyword[0].explanation.keyword_rank == 1
