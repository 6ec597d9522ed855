"""Import stays in its tenant, reports repeated ids, and validates sizes and references (issue 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import funes
from funes.errors import InvalidInput
from funes.providers.embed import HashEmbedder


def export_of(tmp_path: Path, tenant: str = "acme") -> tuple[list[dict[str, Any]], str]:
    with funes.open(str(tmp_path / "src.db"), embedder=HashEmbedder(64), tenant=tenant) as mem:
        kept = mem.remember("Acme's supplier is Tulip BV")
        mem.remember("Acme's budget is 40k")
        doc = tmp_path / "memo.txt"
        doc.write_text("The Rotterdam warehouse ships pallets on Mondays.", encoding="utf-8")
        mem.ingest(doc)
        mem.session("s1").add_message("user", "Hello there")
        return [json.loads(line) for line in mem.export_lines()], kept.id


def write(tmp_path: Path, lines: list[dict[str, Any]], name: str = "x.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FUNES_HOME": str(home), "FUNES_EMBEDDER": "hash"}
    code = "import sys; from funes.interfaces.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env)


def test_import_as_another_tenant_never_touches_the_owner(tmp_path: Path) -> None:
    lines, kept_id = export_of(tmp_path)
    path = write(tmp_path, lines)
    db = str(tmp_path / "shared.db")
    home = tmp_path / "home"
    first = cli("--db", db, "--embedder", "hash:64", "--tenant", "acme", "import", str(path), home=home)
    assert first.returncode == 0, first.stderr
    # Importing the same file as tenant B used to overwrite acme's record and move it to B.
    second = cli("--db", db, "--embedder", "hash:64", "--tenant", "b", "import", str(path), home=home)
    assert second.returncode == 1 and "another tenant" in second.stderr and "Traceback" not in second.stderr
    with funes.open(db, embedder=HashEmbedder(64), tenant="acme") as mem:
        assert mem.get(kept_id).tenant == "acme"
    with funes.open(db, embedder=HashEmbedder(64), tenant="b") as mem:
        assert not mem.list().items  # nothing half-imported
    # Into a fresh store, --tenant puts everything in that tenant, sessions and documents too.
    fresh = str(tmp_path / "fresh.db")
    moved = cli("--db", fresh, "--embedder", "hash:64", "--tenant", "b", "import", str(path), home=home)
    assert moved.returncode == 0, moved.stderr
    with funes.open(fresh, embedder=HashEmbedder(64), tenant="b") as mem:
        assert len(mem.list().items) >= 3 and mem.documents() and mem.history("s1")
    with funes.open(fresh, embedder=HashEmbedder(64), tenant="acme") as mem:
        assert not mem.list().items


def test_repeated_ids_are_reported_once(tmp_path: Path) -> None:
    lines, kept_id = export_of(tmp_path)
    record = next(line for line in lines if line.get("type") == "memory" and line["record"]["id"] == kept_id)
    changed = json.loads(json.dumps(record))
    changed["record"]["content"] = "Acme's supplier is Iris BV"
    path = write(tmp_path, [*lines, changed])
    with funes.open(str(tmp_path / "d.db"), embedder=HashEmbedder(64)) as mem:
        result = mem.import_(path.read_text(encoding="utf-8").splitlines())
        assert result["duplicates"] == 1
        assert result["imported"] == sum(1 for line in lines if line.get("type") == "memory")
        assert mem.get(kept_id, tenant="acme").content == "Acme's supplier is Iris BV"  # the last line wins


@pytest.mark.parametrize("case", ["orphan chunk", "orphan message", "huge metadata", "empty tenant"])
def test_invalid_input_imports_nothing(tmp_path: Path, case: str) -> None:
    lines, _ = export_of(tmp_path)
    if case == "orphan chunk":
        lines = [line for line in lines if line.get("type") != "document"]
        match = "neither in the file nor in this store"
    elif case == "orphan message":
        lines = [line for line in lines if line.get("type") != "session"]
        match = "refers to session"
    elif case == "huge metadata":
        target = next(line for line in lines if line.get("type") == "memory")
        target["record"]["metadata"] = {"blob": "x" * 2_000_000}  # a 300 MB field was accepted
        match = "metadata over max_content_bytes"
    else:
        target = next(line for line in lines if line.get("type") == "memory")
        target["record"]["tenant"] = " "
        match = "empty tenant"
    path = write(tmp_path, lines)
    with funes.open(str(tmp_path / "d.db"), embedder=HashEmbedder(64)) as mem:
        with pytest.raises(InvalidInput, match=match):
            mem.import_(path.read_text(encoding="utf-8").splitlines())
        assert not mem.list(tenant="acme").items and not mem.documents(tenant="acme")
