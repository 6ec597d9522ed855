"""Vector search under filters only the records table can apply (entity, reference, message role).

vec0's metadata columns, the vector cache and the approximate index know
scope, kind, type, source and time, not a record's entity, references or
the role in its locator. A search with those filters must still never
return fewer hits than exist (issue 10: filters never silently cut recall),
so it ranks vectors among the matching records; this mixin of
:class:`~funes.store.sqlite.SqliteStore` does that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from ..models import SearchFilters
from .sqlite_rows import knn_visibility, sql_in

_WIDE = 4  # a role-filtered search first looks at this many times k nearest records without the role
_VEC0_MAX_K = 4096  # sqlite-vec refuses a larger k


class MatchingVectors:
    """Cosine KNN among the records that records-only filters select (mixed into SqliteStore).

    It uses the store's ``vector_search`` and ``_where`` (as ``CjkTables`` does).
    """

    db: Any

    def _vector_search_matching(
        self, vector: np.ndarray, filters: SearchFilters, *, k: int, now: datetime | None
    ) -> list[tuple[str, float]]:
        """Cosine KNN among the records the filters select: never fewer than exist, whatever the filter.

        Entity filters are narrow (few records): their vectors are read and
        scored exactly. A role filter keeps a large share of a chat-heavy
        tenant (about half, for "user"), where reading every matching vector
        cost 50-90 ms at 20k messages; so the ordinary search first takes the
        ``_WIDE`` x k nearest without the role. When k of them pass it and one
        visibility alternative was scanned, they are the k nearest that pass
        (any record left out is farther than all of them: exact on the vec0
        and in-memory paths, as close as the approximate index otherwise);
        when fewer pass (a rare role), the exact scan below runs after all.
        """
        if filters.roles and not (filters.entity_types or filters.entity_ids or filters.references):
            if len(knn_visibility(filters)) == 1:
                wide = min(max(k * _WIDE, 200), _VEC0_MAX_K)
                nearest = self.vector_search(  # type: ignore[attr-defined]
                    vector, replace(filters, roles=None), k=wide, now=now
                )
                passing = self._passing([i for i, _ in nearest], filters, now)
                kept = [(i, sim) for i, sim in nearest if i in passing]
                if len(kept) >= k:
                    return kept[:k]
        params: list[Any] = []
        where = self._where(filters, now, params)  # type: ignore[attr-defined]
        # One statement, records first (CROSS JOIN keeps the filtered memories as the outer
        # loop), and one matrix product: half the time of ids, then vectors_for, then a dot each.
        rows = (
            self.db.reader()
            .execute(
                "SELECT m.id, e.embedding FROM memories m CROSS JOIN memory_vectors v ON v.memory_rowid = m.rowid "
                f"CROSS JOIN vec_memories e ON e.vector_id = v.vector_id WHERE {' AND '.join(where)}",
                params,
            )
            .fetchall()
        )
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
        sims = (matrix @ np.asarray(vector, dtype=np.float32)).tolist()
        best: dict[str, float] = {}
        for (memory_id, _), sim in zip(rows, sims, strict=True):
            if sim == sim and sim > best.get(memory_id, -2.0):  # a NaN (zero vector) is skipped, as in vec0
                best[memory_id] = sim
        return sorted(best.items(), key=lambda kv: kv[1], reverse=True)[:k]

    def _passing(self, memory_ids: Sequence[str], filters: SearchFilters, now: datetime | None) -> set[str]:
        """The given records that every filter admits."""
        out: set[str] = set()
        conn = self.db.reader()
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            params: list[Any] = []
            where = self._where(filters, now, params)  # type: ignore[attr-defined]
            where.append(sql_in("m.id", chunk, params))
            out.update(r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {' AND '.join(where)}", params))
        return out
