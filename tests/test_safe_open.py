"""Every reader opens files one safe way: no device, FIFO or link out of the folder is read (issue 31).

`funes ingest` refused them already; folder sync, the memory tool and uploads
did not: ``x.md -> /dev/zero`` grew past 3 GB, a FIFO ``pipe.md`` hung
``folders add`` and the memory tool's create, and ``notes.md -> ~/.aws/credentials``
was indexed. Each scenario runs `funes` as a real process with a deadline and
an address-space cap, so the old behaviour fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import funes

CLI = "import sys; from funes.interfaces.cli import run; sys.exit(run(sys.argv[1:]))"
SECRET = "aws_secret_access_key = wJalrXUtnFEMI-K7MDENG-bPxRfiCY"


def _cap_memory() -> None:
    # 4 GB of address space: far above what Funes needs here, far below what /dev/zero fills.
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _funes(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", CLI, *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_cap_memory,
    )


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A notes folder with one good note, a link to /dev/zero, a FIFO and a link to a secret outside it."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("# Good\n\nThe heron nests by the lake.\n")
    (notes / "x.md").symlink_to("/dev/zero")
    os.mkfifo(notes / "pipe.md")
    secret = tmp_path / "credentials"
    secret.write_text(f"[default]\n{SECRET}\n")
    (notes / "notes.md").symlink_to(secret)
    return notes


def test_folder_sync_reads_only_the_folder_s_regular_files(hostile: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "f.db")
    added = _funes("--db", db, "--embedder", "hash", "folders", "add", str(hostile))
    assert added.returncode == 0, added.stderr
    with funes.open(db, embedder="hash", worker="off") as mem:
        contents = " ".join(m.content for m in mem.list(limit=100).items)
        assert "heron" in contents
        assert "wJalrXUtnFEMI" not in contents
        assert {Path(d.uri).name for d in mem.documents()} == {"good.md"}


def test_the_memory_tool_refuses_hostile_files_with_errors(hostile: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert _funes("--db", db, "--embedder", "hash", "folders", "add", str(hostile)).returncode == 0
    base = ["--db", db, "--embedder", "hash", "memory-tool", "--folder", str(hostile)]
    created = _funes(*base, stdin=json.dumps({"command": "create", "path": "/memories/new.md", "file_text": "hi"}))
    assert created.returncode == 0, created.stdout + created.stderr
    for path in ("/memories/x.md", "/memories/pipe.md", "/memories/notes.md"):
        viewed = _funes(*base, stdin=json.dumps({"command": "view", "path": path}))
        assert viewed.returncode == 1, (path, viewed.stdout, viewed.stderr)
        assert "Traceback" not in viewed.stderr and "wJalrXUtnFEMI" not in viewed.stdout + viewed.stderr
        edit = {"command": "str_replace", "path": path, "old_str": "a", "new_str": "b"}
        edited = _funes(*base, stdin=json.dumps(edit))
        assert edited.returncode == 1 and "Traceback" not in edited.stderr, (path, edited.stderr)
    assert (hostile / "notes.md").resolve().read_text().endswith(f"{SECRET}\n")


@pytest.mark.parametrize("target", ["/dev/zero", "secret"])
def test_an_upload_whose_saved_file_became_a_link_is_refused(tmp_path: Path, target: str) -> None:
    secret = tmp_path / "credentials"
    secret.write_text(SECRET)
    with funes.open(str(tmp_path / "u.db"), embedder="hash", worker="off") as mem:
        accepted = mem.upload("report.md", b"# Report\n\nQuarterly numbers.\n")
        saved = next((tmp_path / "uploads").rglob("report.md"))
        saved.unlink()
        saved.symlink_to(secret if target == "secret" else target)
        mem.jobs.run_pending()
        job = mem.jobs.get(accepted["job_id"])
        assert job.status in ("failed", "queued") and job.last_error, job
        assert "regular file" in job.last_error or "outside its folder" in job.last_error, job.last_error
        assert not [m for m in mem.list(limit=100).items if "wJalrXUtnFEMI" in m.content]


HOSTILE_COMMANDS = [
    {"command": "create", "path": "/memories/" + "a" * 300 + ".md", "file_text": "x"},
    {"command": "create", "path": "/memories/good.md/inner.md", "file_text": "x"},
    {"command": "create", "path": "/memories/x/" + "b/" * 3000 + "c.md", "file_text": "x"},
    {"command": "rename", "old_path": "/memories/sub", "new_path": "/memories/sub/inner"},
    {"command": "create", "path": "/memories/bad.md", "file_text": "x\ud800"},
    {"command": "view", "path": "/memories/a\x00.md"},
]


@pytest.mark.parametrize(
    "command", HOSTILE_COMMANDS, ids=["long-name", "file-as-folder", "deep", "into-itself", "surrogate", "nul"]
)
def test_hostile_memory_tool_paths_answer_with_errors(tmp_path: Path, command: dict[str, str]) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "good.md").write_text("# Good\n")
    with funes.open(str(tmp_path / "t.db"), embedder="hash", worker="off") as mem:
        mem.add_folder(folder)
        answer = mem.claude_memory.memory_tool(command, folder=folder)
    assert answer.startswith("Error: "), answer
    assert str(tmp_path) not in answer
