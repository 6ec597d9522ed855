"""Healthy memory: version history and restore, entities reconciled by fingerprint, generation,
chat insights merged by topic, learning from conversations, upkeep (dedupe, prune, retention) and store health.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .entities import Entities
    from .generation import Generation
    from .health import Maintenance
    from .insights import Insights
    from .learn import Learning
    from .upkeep import Upkeep
    from .versions import Curation, Version

__getattr__ = lazy_exports(
    __name__,
    {
        "Curation": "versions",
        "Version": "versions",
        "Entities": "entities",
        "Generation": "generation",
        "Insights": "insights",
        "Learning": "learn",
        "Upkeep": "upkeep",
        "Maintenance": "health",
    },
)

__all__ = [
    "Curation",
    "Entities",
    "Generation",
    "Insights",
    "Learning",
    "Maintenance",
    "Upkeep",
    "Version",
]
