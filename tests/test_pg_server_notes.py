"""Advice on the PostgreSQL server's own settings in the store's health notes (issue 29).

``shared_buffers`` smaller than the HNSW index plus the vectors' table made every search read their pages into
PostgreSQL's buffers again (docs/postgres.md, "The PostgreSQL server's own settings"); ``funes doctor`` says so.
"""

from __future__ import annotations

import pytest

import funes
from funes.providers.embed import HashEmbedder
from funes.store.postgres_extras import buffers_note

pytestmark = pytest.mark.postgres

MB = 1024 * 1024


def test_the_note_asks_for_more_shared_buffers_only_when_the_vectors_do_not_fit() -> None:
    assert buffers_note(1024 * MB, 360 * MB) is None
    assert buffers_note(360 * MB, 360 * MB) is None
    note = buffers_note(128 * MB, 360 * MB)
    assert note is not None and "(128 MB)" in note and "(360 MB)" in note and "shared_buffers = '1GB'" in note


def test_the_store_reads_its_server_s_buffers_and_a_small_store_fits(pg_url: str) -> None:
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    try:
        service.remember_many([f"note {n}: the budget review is on Friday" for n in range(20)])
        store = service.core.store
        buffers, needed = (
            store.db.reader()
            .native("SELECT current_setting('shared_buffers'), pg_relation_size('memory_vectors')")
            .fetchone()
        )
        assert buffers and int(needed) > 0
        assert store.server_notes() == []  # a few vectors fit in any shared_buffers
        assert not any("shared_buffers" in n for n in service.health()["notes"])
    finally:
        service.close()
