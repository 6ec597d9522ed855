"""Every setting in docs/settings.md does something, and a setting is honoured by every shell alike.

Found before: `FUNES_AUTO_MIN_SIMILARITY` changed nothing in `funes context` or
REST, and REST searched 10 hits whatever `search_limit` said. The walk below
fails on a documented setting that no code reads; the shells below must agree
on one that every shell uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import funes
from funes.interfaces.cli import main
from funes.interfaces.server import create_app
from funes.models import Caller
from funes.models.config import SETTINGS

SRC = Path(funes.__file__).parent


def test_every_documented_setting_is_read_by_the_code() -> None:
    docs = (SRC.parents[1] / "docs" / "settings.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", docs, re.M))
    assert documented == set(SETTINGS)
    config = (SRC / "models" / "config.py").read_text(encoding="utf-8")
    code = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py") if p.name != "config.py")
    # A setting appears once in config.py where it is registered; any other use is a read.
    unread = [
        name for name in SETTINGS if not re.search(rf"\b{name}\b", code) and len(re.findall(rf"\b{name}\b", config)) < 2
    ]
    assert unread == []


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FUNES_EMBEDDER", "hash")
    monkeypatch.setenv("FUNES_SEARCH_LIMIT", "3")
    db = str(tmp_path / "s.db")
    with funes.open(db) as mem:
        for i in range(8):
            mem.remember(f"The Lisbon office note number {i} mentions the quarterly budget.")
    return db


def test_search_limit_is_honoured_by_the_library_cli_rest_and_the_agent_tools(store: str) -> None:
    with funes.open(store) as mem:
        assert len(mem.search("Lisbon budget", min_relevance=0)) == 3
        tool = mem.execute_tool("memory_search", {"query": "Lisbon budget"}, caller=Caller())
        assert len(tool.data["results"]) == 3, tool.data
        with TestClient(create_app(mem, require_keys=False), base_url="http://127.0.0.1") as client:
            hits = client.get("/v1/teams/default/memories/search", params={"q": "Lisbon budget"}).json()["hits"]
            assert len(hits) == 3
    out = CliRunner().invoke(main, ["--db", store, "search", "Lisbon budget", "--min-relevance", "0", "--json"])
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.output)) == 3
