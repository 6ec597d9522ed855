"""Keyword-leg planning on stores larger than the scan cap: common terms give way to rare ones."""

from __future__ import annotations

from pathlib import Path

import funes
from funes.embed import HashEmbedder
from funes.models import SearchFilters, utcnow

CAP = 50


def fill(tmp_path: Path) -> funes.Funes:
    mem = funes.open(str(tmp_path / "kw.db"), embedder=HashEmbedder(32), keyword_scan_cap=CAP)
    mem.remember("The zeppelin hangar report lists the project budget")  # oldest: outside the newest CAP
    for n in range(200):
        mem.remember(f"Weekly project update number {n} about the project budget")
    return mem


def test_a_rare_term_is_ranked_over_the_whole_store_not_just_the_newest_matches(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        hits = mem.store.keyword_search(
            ["zeppelin", "project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert [mem.get(i).content for i, _ in hits] == ["The zeppelin hangar report lists the project budget"]
        # Without planning, the oldest record is past the cap of newest matches and is never seen.
        capped = mem.store.keyword_search(
            ["zeppelin", "project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0
        )
        assert "The zeppelin hangar report lists the project budget" not in [mem.get(i).content for i, _ in capped]


def test_a_query_of_only_common_words_still_finds_matches(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        hits = mem.store.keyword_search(
            ["project", "budget"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert len(hits) == 5
        assert all("budget" in mem.get(i).content for i, _ in hits)


def test_terms_that_match_nothing_are_dropped_and_all_unknown_returns_nothing(tmp_path: Path) -> None:
    with fill(tmp_path) as mem:
        none = mem.store.keyword_search(
            ["qwertyuiop", "asdfghjkl"], SearchFilters(), limit=5, scan_cap=CAP, now=utcnow(), common_ratio=0.1
        )
        assert none == []
        some = mem.search("zeppelin qwertyuiop", limit=3, track=False)
        assert some[0].memory.content.startswith("The zeppelin hangar")
        assert some[0].explanation.keyword_rank == 1
