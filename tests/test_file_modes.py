"""What Funes creates is owner-only: the home 0700, the store, its WAL, the config file and uploads 0600 (issue 31).

A real `funes` process on a fresh home, with the usual umask of 022: before,
the store and its uploads were readable by every local user.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import funes

CLI = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_home_store_config_and_uploads_are_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / "funes-home"
    env = {**os.environ, "FUNES_HOME": str(home), "FUNES_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1"}
    env.pop("FUNES_CONFIG", None)
    env.pop("FUNES_DB_PATH", None)

    def run(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-c", f"import os; os.umask(0o022); {CLI}", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    run("add", "The boiler is in the cellar")
    run("config", "set", "db_url", "postgresql://funes:pw@localhost/db")
    assert _mode(home) == 0o700
    stores = list(home.glob("*.db"))
    assert stores, list(home.iterdir())
    for path in [*stores, *home.glob("*.db-wal"), *home.glob("*.toml")]:
        assert _mode(path) == 0o600, (path, oct(_mode(path)))
    old = os.umask(0o022)
    try:
        with funes.open(str(tmp_path / "team" / "team.db"), embedder="hash", worker="off") as mem:
            mem.upload("report.md", b"# Report\n\nNumbers.\n")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "team") == 0o700 and _mode(tmp_path / "team" / "team.db") == 0o600
    saved = next((tmp_path / "team" / "uploads").rglob("report.md"))
    assert _mode(saved) == 0o600 and _mode(saved.parent) == 0o700
