"""Records and search, the core of Funes: remember, get, update, forget, list and hybrid search
(keyword + vector legs, fusion, ranking, calibrated relevance, dates in queries), embedding, the access
log, per-project settings, the durable job runner, API keys, export and import.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.providers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .access_log import AccessLog
    from .chunking import Chunker, split_text
    from .core import Core
    from .dates import DateWindow
    from .embedding import Embedding
    from .jobs import Jobs
    from .keys import Keys, Principal
    from .project_settings import ProjectSettings
    from .ranking import RankSettings
    from .search import HybridSearch
    from .transfer import Transfer

__getattr__ = lazy_exports(
    __name__,
    {
        "Core": "core",
        "HybridSearch": "search",
        "Embedding": "embedding",
        "Jobs": "jobs",
        "Keys": "keys",
        "Principal": "keys",
        "Transfer": "transfer",
        "AccessLog": "access_log",
        "ProjectSettings": "project_settings",
        "RankSettings": "ranking",
        "DateWindow": "dates",
        "Chunker": "chunking",
        "split_text": "chunking",
    },
)

__all__ = [
    "AccessLog",
    "Chunker",
    "Core",
    "DateWindow",
    "Embedding",
    "HybridSearch",
    "Jobs",
    "Keys",
    "Principal",
    "ProjectSettings",
    "RankSettings",
    "Transfer",
    "split_text",
]
