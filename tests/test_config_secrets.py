"""`funes config` never prints a PostgreSQL password (issue 31), from the environment or the config file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"
URL = "postgresql://funes:s3cret-pw@db.example:5432/memory"


def _config(home: Path, *args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CLI, "config", *args],
        env={**os.environ, "FUNES_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("args", [(), ("--json",), ("get", "db_url"), ("get", "db_url", "--json")])
def test_the_password_of_a_store_url_is_masked(tmp_path: Path, args: tuple[str, ...]) -> None:
    shown = _config(tmp_path, *args, FUNES_DB_URL=URL)
    assert "s3cret-pw" not in shown and "funes:***@db.example" in shown, shown


def test_a_password_set_in_the_config_file_is_masked_too(tmp_path: Path) -> None:
    written = _config(tmp_path, "set", "db_url", "postgresql://funes@db.example/memory?password=s3cret-pw")
    assert "s3cret-pw" not in written
    assert "s3cret-pw" not in _config(tmp_path) + _config(tmp_path, "get", "db_url")
