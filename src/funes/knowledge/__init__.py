"""Knowledge: files turned into attributed records: the readers (PDF, spreadsheets, text, Markdown,
chat exports), ingestion and managed documents, Markdown memory folders kept in sync, uploads.

May import: ``funes.errors``, ``funes.models``, ``funes.store``, ``funes.memory``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.lazy import lazy_exports

if TYPE_CHECKING:
    from .documents import Documents
    from .folders import Folder, Folders, FolderStatus, SyncReport
    from .readers import ReadOptions, read
    from .results import Document, IngestProgress, IngestReport, IngestResult
    from .uploads import Uploads

__getattr__ = lazy_exports(
    __name__,
    {
        "Documents": "documents",
        "Document": "results",
        "IngestProgress": "results",
        "IngestReport": "results",
        "IngestResult": "results",
        "ReadOptions": "readers",
        "read": "readers",
        "Folder": "folders",
        "FolderStatus": "folders",
        "Folders": "folders",
        "SyncReport": "folders",
        "Uploads": "uploads",
    },
)

__all__ = [
    "Document",
    "Documents",
    "Folder",
    "FolderStatus",
    "Folders",
    "IngestProgress",
    "IngestReport",
    "IngestResult",
    "ReadOptions",
    "SyncReport",
    "Uploads",
    "read",
]
