"""Managed document sources: ingest files into attributed records (issue: knowledge ingestion)."""

from __future__ import annotations


class DocumentsMixin:
    """Ingestion and document management, mixed into :class:`funes.service.Funes`."""
