"""Healthy memory: version history and restore, entities reconciled by fingerprint, generation,
chat insights merged by topic, learning from conversations, upkeep (dedupe, prune, retention), store health,
forgetting with receipts and provenance.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``, ``funes.memory``,
``funes.knowledge``, ``funes.conversations``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .entities import Entities as Entities
    from .forgetting import Forgetting as Forgetting
    from .generation import Generation as Generation
    from .health import Maintenance as Maintenance
    from .insights import Insights as Insights
    from .learn import Learning as Learning
    from .provenance import Provenance as Provenance
    from .upkeep import Upkeep as Upkeep
    from .versions import Curation as Curation
    from .versions import Version as Version

__getattr__, __all__ = lazy_exports(__name__, __file__)
