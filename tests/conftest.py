"""Shared fixtures: every test gets its own FUNES_HOME; the real model loads once per run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import funes
from funes.embed import HashEmbedder


@pytest.fixture(autouse=True)
def funes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point FUNES_HOME at a fresh directory and clear other FUNES_* settings."""
    for key in list(os.environ):
        if key.startswith("FUNES_"):
            monkeypatch.delenv(key)
    home = tmp_path / "funes-home"
    monkeypatch.setenv("FUNES_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


@pytest.fixture(scope="session")
def local_embedder():  # type: ignore[no-untyped-def]
    """The real all-MiniLM-L6-v2 embedder, loaded once for the whole run."""
    from funes.embed.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[funes.Funes]:
    """A service on a fresh SQLite file with the deterministic hash embedder (for logic tests)."""
    service = funes.open(str(tmp_path / "mem.db"), embedder=HashEmbedder(64))
    yield service
    service.close()


@pytest.fixture
def real_mem(tmp_path: Path, local_embedder) -> Iterator[funes.Funes]:  # type: ignore[no-untyped-def]
    """A service on a fresh SQLite file with the real local model (for retrieval quality)."""
    service = funes.open(str(tmp_path / "real.db"), embedder=local_embedder)
    yield service
    service.close()
