"""Deep metadata: refused at write time, and a record stored before that never breaks a team's reads (issue 31).

A memory whose metadata nested 254+ levels answered 500 yet was stored, and
from then on the team's listing and every search that returned it answered
500 as well. A real `funes serve` on SQLite; the old record is planted
straight into the store, as an older version would have left it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import funes_serve

import funes
from funes.errors import InvalidInput
from funes.models import METADATA_MAX_DEPTH


def _nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


def test_deep_metadata_is_refused_and_an_old_deep_record_reads_fine(tmp_path: Path) -> None:
    db = str(tmp_path / "team.db")
    with funes.open(db, embedder="hash", worker="off") as service:
        key = service.keys.create("t", "write")[0]
        old = service.remember("The deep one: the archive password is in the safe", tenant="t")
        # An older Funes stored such metadata as given.
        service.store.put(old.evolve(metadata=_nested(300)), None)
        assert service.remember("fine", tenant="t", metadata=_nested(METADATA_MAX_DEPTH)).metadata
    headers = {"Authorization": f"Bearer {key}"}
    with funes_serve(db, tmp_path / "home") as base, httpx.Client(base_url=base, headers=headers) as http:
        refused = http.post("/v1/teams/t/memories", json={"content": "deeper", "metadata": _nested(300)})
        assert refused.status_code == 400, refused.text
        assert "32 levels" in refused.json()["error"]["message"] and refused.json()["error"]["hint"]
        listed = http.get("/v1/teams/t/memories")
        assert listed.status_code == 200, listed.text
        assert "deeper" not in [m["content"] for m in listed.json()["items"]]
        found = http.get("/v1/teams/t/memories/search", params={"q": "archive password"})
        assert found.status_code == 200, found.text
        one = http.get(f"/v1/teams/t/memories/{old.id}")
        assert one.status_code == 200, one.text
        assert "too deeply" in one.text
        assert http.get("/v1/health").status_code == 200


@pytest.mark.parametrize(
    "metadata",
    [
        _nested(METADATA_MAX_DEPTH + 1),
        {"x": math.nan},
        {"x": [math.inf]},
        {f"k{i}": i for i in range(300)},
        {"blob": "x" * 70_000},
    ],
    ids=["deep", "nan", "inf", "keys", "bytes"],
)
def test_bad_metadata_is_refused_on_create_and_update(mem: funes.Funes, metadata: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as refused:
        mem.remember("a memory", metadata=metadata)
    assert refused.value.hint
    record = mem.remember("a memory")
    with pytest.raises(InvalidInput):
        mem.update(record.id, metadata=metadata)
    assert mem.get(record.id).metadata == record.metadata
