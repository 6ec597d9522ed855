"""The knowledge map as a map: memories placed in 2-D by their embeddings, linked to their nearest neighbours.

The layout is the first two principal components of the records' vectors (a
record of several parts counts as the mean of its parts), scaled into
[0.05, 0.95] on both axes, so related memories sit near each other. Each
memory is linked to its nearest neighbours whose cosine reaches
``link_similarity``. Document passages and chat messages have their own pages
and are left out, as in the grouped map; records still waiting for their
vector are counted, not placed. Deterministic: the same store draws the same map.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from ..models import KINDS

if TYPE_CHECKING:
    from .core import Core

#: Kinds the map shows: knowledge, not passages or messages.
MAP_KINDS = tuple(k for k in KINDS if k not in ("document_chunk", "message"))
NEIGHBOURS = 2


class Atlas:
    """The 2-D layout of a tenant's memories (``Funes.memory_map``)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def layout(
        self,
        *,
        tenant: str | None = None,
        user: str | None = None,
        project: str | None = None,
        limit: int = 300,
        link_similarity: float = 0.5,
    ) -> dict[str, Any]:
        """Nodes ``{id, x, y, title, topic, kind, scope, entity_type}`` and links ``{source, target, similarity}``."""
        if not 1 <= int(limit) <= 1000:
            raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
        if not -1.0 <= float(link_similarity) <= 1.0:
            raise InvalidInput(
                f"link_similarity {link_similarity} is out of range.", hint="Use a cosine from -1 to 1, e.g. 0.5."
            )
        scopes = ["project"] if project else None
        page = self.core.list(tenant=tenant, user=user, kinds=MAP_KINDS, scopes=scopes, project=project, limit=limit)
        vectors = self.core.store.vectors_for([m.id for m in page.items])
        placed, rows = [], []
        for memory in page.items:
            parts = vectors.get(memory.id)
            if parts:
                mean = np.mean(np.stack(parts), axis=0)
                norm = float(np.linalg.norm(mean))
                if norm > 0:
                    placed.append(memory)
                    rows.append(mean / norm)
        nodes: list[dict[str, Any]] = []
        links: list[dict[str, Any]] = []
        if rows:
            unit = np.stack(rows).astype(np.float64)
            coords = _principal_plane(unit)
            for memory, (x, y) in zip(placed, coords, strict=True):
                nodes.append(
                    {
                        "id": memory.id,
                        "x": round(float(x), 4),
                        "y": round(float(y), 4),
                        "title": memory.title,
                        "content": memory.content[:200],
                        "topic": memory.topic,
                        "kind": memory.kind,
                        "scope": memory.scope,
                        "entity_type": memory.entity_type,
                    }
                )
            links = _neighbour_links(unit, [m.id for m in placed], float(link_similarity))
        return {"nodes": nodes, "links": links, "unplaced": len(page.items) - len(placed)}


def _principal_plane(unit: np.ndarray) -> np.ndarray:
    """Each row's place on the plane of the two largest principal components, scaled into [0.05, 0.95]."""
    n = unit.shape[0]
    if n == 1:
        return np.array([[0.5, 0.5]])
    centred = unit - unit.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    plane = centred @ vt[:2].T
    if plane.shape[1] == 1:
        plane = np.hstack([plane, np.zeros((n, 1))])
    # A component's sign is arbitrary: fix it so the same store always draws the same way round.
    plane *= np.where(plane[np.abs(plane).argmax(axis=0), range(2)] < 0, -1.0, 1.0)
    low, high = plane.min(axis=0), plane.max(axis=0)
    span = np.where(high - low > 1e-12, high - low, 1.0)
    return 0.05 + 0.9 * (plane - low) / span


def _neighbour_links(unit: np.ndarray, ids: list[str], floor: float) -> list[dict[str, Any]]:
    """Each memory's nearest neighbours at or above ``floor``, each pair once, strongest first."""
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    seen: dict[tuple[int, int], float] = {}
    for i in range(len(ids)):
        for j in np.argsort(-sims[i])[:NEIGHBOURS]:
            if sims[i, j] >= floor:
                seen[(min(i, int(j)), max(i, int(j)))] = float(sims[i, j])
    return [
        {"source": ids[a], "target": ids[b], "similarity": round(s, 4)}
        for (a, b), s in sorted(seen.items(), key=lambda item: -item[1])
    ]


__all__ = ["MAP_KINDS", "Atlas"]
