"""A store that never fails silently (issue 9): empty files, read-only and full disks, damage, backup and repair.

Read-only and full filesystems are real mounts when the tests run as root
(a read-only bind mount, a tiny tmpfs), else file permissions stand in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import funes
from funes.errors import StoreCorrupt, StoreFull, StoreReadOnly
from funes.providers.embed import HashEmbedder

ROOT = os.geteuid() == 0


def cli(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FUNES_HOME": str(home), "FUNES_EMBEDDER": "hash"}
    code = "import sys; from funes.interfaces.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=env)


def make_store(path: Path, n: int = 3) -> list[str]:
    with funes.open(str(path), embedder=HashEmbedder(64)) as mem:
        results = mem.remember_many([f"Fact number {i} about the Rotterdam warehouse" for i in range(n)])
        return [r.memory.id for r in results if r.memory]


def test_a_zero_byte_store_is_refused_but_a_new_path_is_fine(tmp_path: Path) -> None:
    empty = tmp_path / "funes.db"
    make_store(empty)
    empty.write_bytes(b"")  # truncated: used to come back silently as a new, empty store
    with pytest.raises(StoreCorrupt, match="empty \\(0-byte\\)") as caught:
        funes.open(str(empty), embedder=HashEmbedder(64))
    assert caught.value.hint and "backup" in caught.value.hint
    proc = cli("--db", str(empty), "list", home=tmp_path / "home")
    assert proc.returncode == 1 and "0-byte" in proc.stderr and "Traceback" not in proc.stderr
    with funes.open(str(tmp_path / "new.db"), embedder=HashEmbedder(64)) as mem:
        assert mem.stats()["records"] == 0


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a store, then made read-only (a read-only bind mount as root, chmod otherwise)."""
    src = tmp_path / "data"
    src.mkdir()
    make_store(src / "m.db")
    if ROOT:
        view = tmp_path / "ro"
        view.mkdir()
        subprocess.run(["mount", "--bind", str(src), str(view)], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True)
        yield view
        subprocess.run(["umount", str(view)], check=True)
    else:
        (src / "m.db").chmod(0o444)
        src.chmod(0o555)
        yield src
        src.chmod(0o755)


def test_a_read_only_store_reads_and_refuses_writes_clearly(read_only_dir: Path, tmp_path: Path) -> None:
    db = str(read_only_dir / "m.db")
    home = tmp_path / "home"
    for args in (["list", "--json"], ["search", "Rotterdam", "--json"], ["stats"], ["doctor"], ["export"]):
        proc = cli("--db", db, *args, home=home)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "access log held back" not in proc.stderr
    exported = cli("--db", db, "export", home=home).stdout.splitlines()
    assert len(exported) == 4  # header + 3 records: export above all keeps working
    write = cli("--db", db, "add", "one more", home=home)
    assert write.returncode == 1 and "read-only" in write.stderr and "Traceback" not in write.stderr
    with funes.open(db, embedder=HashEmbedder(64)) as mem:
        assert len(mem.list().items) == 3
        with pytest.raises(StoreReadOnly, match="reads work"):
            mem.remember("refused")


@pytest.mark.skipif(not ROOT or shutil.which("chattr") is None, reason="chattr +i needs root")
def test_an_immutable_store_is_healthy_for_doctor_and_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    make_store(db)
    subprocess.run(["chattr", "+i", str(db)], check=True)
    try:
        doctor = cli("--db", str(db), "doctor", home=tmp_path / "home")
        assert doctor.returncode == 0 and "healthy" in doctor.stdout and "reindex" not in doctor.stdout
        write = cli("--db", str(db), "add", "x", home=tmp_path / "home")
        assert write.returncode == 1 and "chattr -i" in write.stderr
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)


@pytest.mark.skipif(not ROOT, reason="a tiny tmpfs needs root to mount")
def test_a_full_disk_is_a_clear_error_and_doctor_stays_truthful(tmp_path: Path) -> None:
    disk = tmp_path / "small"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    try:
        db = str(disk / "m.db")
        with funes.open(db, embedder=HashEmbedder(64)) as mem:
            kept = mem.remember("Written before the disk filled up")
            with pytest.raises(StoreFull, match="full") as caught:
                for i in range(200):
                    mem.remember(f"Filler {i} " + "x" * 20_000)
            assert caught.value.hint and "Free space" in caught.value.hint
            assert mem.get(kept.id).content == "Written before the disk filled up"
        (disk / "spare").unlink(missing_ok=True)
        proc = cli("--db", db, "add", "y" * 100_000, home=tmp_path / "home")
        assert proc.returncode == 1 and "full" in proc.stderr and "Traceback" not in proc.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _damage(path: Path) -> None:
    """Overwrite pages in the middle of the file, as a bad sector or a stray write would."""
    size = path.stat().st_size
    with path.open("r+b") as handle:
        for offset in (size // 3, size // 2):
            handle.seek(offset - offset % 4096)
            handle.write(b"\xde\xad\xbe\xef" * 1024)


def test_damage_refuses_writes_and_repair_salvages_into_a_new_file(tmp_path: Path) -> None:
    db = tmp_path / "funes.db"
    make_store(db, n=400)
    _damage(db)
    home = tmp_path / "home"
    doctor = cli("--db", str(db), "doctor", home=home)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    # Writes are refused from now on, in later processes too.
    write = cli("--db", str(db), "add", "one more fact", home=home)
    assert write.returncode == 1 and "doctor --repair" in write.stderr, write.stderr
    repaired = cli("--db", str(db), "doctor", "--repair", "--json", home=home)
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    assert 0 < report["records"] <= 400
    new = report["file"]
    with funes.open(new, embedder=HashEmbedder(64)) as mem:
        if report["records_without_vectors"]:
            mem.reindex()
        assert mem.doctor() == []
        assert mem.search("Rotterdam warehouse")
        mem.remember("The repaired store takes writes")


def test_backup_is_consistent_while_another_process_writes(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    make_store(db, n=50)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import funes, sys\n"
            "from funes.providers.embed import HashEmbedder\n"
            f"m = funes.open({str(db)!r}, embedder=HashEmbedder(64))\n"
            "print('ready', flush=True)\n"
            "for i in range(400):\n"
            "    m.remember(f'Concurrent note {i}')\n"
            "m.close()\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        copies = []
        for n in range(3):
            proc = cli("--db", str(db), "backup", str(tmp_path / f"copy{n}.db"), "--json", home=tmp_path / "home")
            assert proc.returncode == 0, proc.stderr
            copies.append(json.loads(proc.stdout))
    finally:
        writer.communicate(timeout=300)
    assert writer.returncode == 0
    for copy in copies:
        with funes.open(copy["file"], embedder=HashEmbedder(64)) as mem:
            assert mem.doctor() == []
            assert mem.stats()["records"] == copy["records"] >= 50
    again = cli("--db", str(db), "backup", copies[0]["file"], home=tmp_path / "home")
    assert again.returncode == 1 and "already exists" in again.stderr
