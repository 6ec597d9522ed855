"""Keyword matching for Chinese, Japanese and Korean text over the trigram index (migration 008).

The word index (unicode61) cannot split CJK text: a sentence without spaces
is one token. ``memories_cjk`` indexes the CJK records by trigram. A query's
CJK runs are matched as trigrams (FTS5 MATCH, bm25), and a run of two
characters, the commonest length of a Chinese word, by LIKE on the same
table (a trigram index cannot look up fewer than three characters, so this
scans the CJK records only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..models import SearchFilters

# The ranges migration 008 indexes: radicals, kana, ideographs, Hangul, compatibility ideographs.
CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def merge_hits(
    words: Sequence[tuple[str, float]], cjk: Iterable[tuple[str, float]], limit: int
) -> list[tuple[str, float]]:
    """The word index's hits joined with the CJK matches: a record found by both keeps its better score."""
    merged = dict(words)
    for memory_id, score in cjk:
        merged[memory_id] = max(merged.get(memory_id, 0.0), score)
    return sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def cjk_runs(terms: Sequence[str]) -> list[str]:
    """The CJK character runs inside the terms (a term may mix scripts: "API超时")."""
    return list(dict.fromkeys(run for t in terms for run in CJK.findall(t)))


def trigrams(run: str) -> list[str]:
    """The overlapping 3-character grams of a run of 3 or more characters."""
    return [run[i : i + 3] for i in range(len(run) - 2)]


class CjkTables:
    """Mixin of SqliteStore: the CJK keyword leg."""

    def _cjk_search(
        self, conn: Any, terms: Sequence[str], filters: SearchFilters, limit: int, scan_cap: int, now: datetime | None
    ) -> list[tuple[str, float]]:
        """Records matching the query's CJK runs, best first, as (id, score) (higher is better)."""
        runs = cjk_runs(terms)
        if not runs:
            return []
        scores: dict[str, float] = {}
        grams = list(dict.fromkeys(g for r in runs if len(r) >= 3 for g in trigrams(r)))
        if grams:
            params: list[Any] = [" OR ".join('"' + g.replace('"', '""') + '"' for g in grams)]
            where = ["memories_cjk MATCH ?", *self._where(filters, now, params)]  # type: ignore[attr-defined]
            params.append(scan_cap)
            sql = (
                "SELECT m.id, bm25(memories_cjk, 2.0, 1.0) FROM memories_cjk "
                "CROSS JOIN memories m ON m.rowid = memories_cjk.rowid "
                f"WHERE {' AND '.join(where)} ORDER BY memories_cjk.rowid DESC LIMIT ?"
            )
            for memory_id, bm25 in conn.execute(sql, params):
                scores[memory_id] = max(scores.get(memory_id, 0.0), -float(bm25))
        short = [r for r in runs if len(r) == 2]
        if short:
            # Each 2-character word found counts like one trigram match of a rare gram.
            best = max(scores.values(), default=1.0)
            params = []
            likes = " + ".join("(instr(coalesce(m.title, '') || ' ' || m.content, ?) > 0)" for _ in short)
            params.extend(short)
            where = ["memories_cjk.rowid = m.rowid", *self._where(filters, now, params)]  # type: ignore[attr-defined]
            params.append(scan_cap)
            sql = (
                f"SELECT m.id, {likes} AS found FROM memories_cjk CROSS JOIN memories m "
                f"WHERE {' AND '.join(where)} AND found > 0 ORDER BY memories_cjk.rowid DESC LIMIT ?"
            )
            for memory_id, found in conn.execute(sql, params):
                scores[memory_id] = scores.get(memory_id, 0.0) + best * found / len(short)
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        return ranked[:limit]
