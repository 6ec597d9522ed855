"""Knowledge: files turned into attributed records: the readers (PDF, spreadsheets, text, Markdown,
chat exports), ingestion and managed documents, Markdown memory folders kept in sync, uploads.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.memory``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .documents import Documents as Documents
    from .folders import Folder as Folder
    from .folders import Folders as Folders
    from .folders import FolderStatus as FolderStatus
    from .folders import SyncReport as SyncReport
    from .readers import ReadOptions as ReadOptions
    from .readers import read as read
    from .results import Document as Document
    from .results import IngestProgress as IngestProgress
    from .results import IngestReport as IngestReport
    from .results import IngestResult as IngestResult
    from .uploads import Uploads as Uploads

__getattr__, __all__ = lazy_exports(__name__, __file__)
