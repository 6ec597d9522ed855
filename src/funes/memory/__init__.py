"""Records and search, the core of Funes: remember, get, update, forget, list and hybrid search
(keyword + vector legs, fusion, ranking, calibrated relevance, dates in queries), embedding, the access
log, per-project settings, the durable job runner, API keys, export and import.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .access_log import AccessLog as AccessLog
    from .atlas import Atlas as Atlas
    from .chunking import Chunker as Chunker
    from .chunking import split_text as split_text
    from .core import Core as Core
    from .dates import DateWindow as DateWindow
    from .embedding import Embedding as Embedding
    from .jobs import Jobs as Jobs
    from .keys import Keys as Keys
    from .keys import Principal as Principal
    from .project_settings import ProjectSettings as ProjectSettings
    from .ranking import RankSettings as RankSettings
    from .search import HybridSearch as HybridSearch
    from .transfer import Transfer as Transfer

__getattr__, __all__ = lazy_exports(__name__, __file__)
