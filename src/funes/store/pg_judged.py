"""Partial records of PostgreSQL search candidates, read by the statements that find them.

A search judges every candidate (~75 of them) but returns ``limit``: as on
SQLite (:func:`funes.store.sqlite_rows.to_judged`), the candidates are judged
from what judging reads (text, kind, place in a chat, vector count), and only
the hits returned are read whole. On PostgreSQL these columns come with the
rows of the keyword and the vector statement, so no round trip is added: the
third one reads the whole records of the hits instead of every candidate.

The vector statement also returns the stored vectors of its hits that have
several (passage windows): their parts' cosines are worked out in Python, as
for the keyword hits, instead of in a record fetch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..models import JudgedRecord, RankFields
from .sqlite_rows import RANK_COLUMNS, _judged, to_rank_fields

# What judging reads beside the rank columns (created_at and updated_at are among those), in
# sqlite_rows._judged's order after the id.
JUDGE_EXTRA = ("title", "content", "kind", "session_id", "source_type", "source_uri", "source_id", "locator", "author")
_RANK = len(RANK_COLUMNS)
WIDTH = _RANK + len(JUDGE_EXTRA)  # the rank columns, then JUDGE_EXTRA


def columns(alias: str, *, judged: bool = True) -> str:
    """``alias``'s rank columns, then (``judged``) what judging reads of it."""
    names = RANK_COLUMNS + JUDGE_EXTRA if judged else RANK_COLUMNS
    return ", ".join(f"{alias}.{c}" for c in names)


def several_vectors(alias: str, least: int = 2) -> str:
    """The binary vectors (``vector_send``) of ``alias``'s record when it has ``least`` or more, else NULL.

    ``alias`` exposes ``tenant`` and ``rowid``.
    """
    return (
        f"(SELECT CASE WHEN count(*) >= {int(least)} THEN array_agg(vector_send(v.embedding) ORDER BY v.part) END "
        f"FROM memory_vectors v WHERE v.tenant = {alias}.tenant AND v.memory_rowid = {alias}.rowid)"
    )


def vector_count(alias: str) -> str:
    """How many vectors ``alias``'s record has (``alias`` exposes ``tenant`` and ``rowid``)."""
    return f"(SELECT count(*) FROM memory_vectors v WHERE v.tenant = {alias}.tenant AND v.memory_rowid = {alias}.rowid)"


def to_candidate(row: Sequence[Any], vectors: int | None) -> tuple[RankFields, JudgedRecord | None]:
    """A row of :func:`columns` as its rank fields and, when it holds them, its partial record."""
    ranked = to_rank_fields(row[:_RANK])
    if len(row) < WIDTH:
        return ranked, None
    values = (ranked.id, *row[_RANK:WIDTH], None, None, vectors)
    return ranked, _judged(values, ranked.created_at, ranked.updated_at)  # type: ignore[arg-type]


def to_array(value: Any) -> np.ndarray:
    """A pgvector value, its binary form (``vector_send``) or a list of floats, as a float32 array."""
    if isinstance(value, (bytes, memoryview)):
        return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def part_cosines(vectors: Sequence[Any], query: np.ndarray) -> np.ndarray:
    """Each stored part's cosine with the (unit) query, as search works them out from stored vectors."""
    return np.vstack([to_array(v) for v in vectors]) @ query
