"""A PostgreSQL primary and its streaming replica on 127.0.0.1, run with the local PostgreSQL package's binaries
(tests/local_postgres.py; tests and benches).

``Cluster.setup()`` runs ``initdb`` for a primary (``wal_level=replica``, TCP
on 127.0.0.1, trust authentication), creates the ordinary role ``funes_test``
and a database ``funes`` with pgvector, clones it with ``pg_basebackup -R``
into a hot standby and starts that on another port. Under root, both run as
the package's system user (PostgreSQL refuses root), as the package does.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path

from local_postgres import bin_dir, system_user

from funes.store.consistency import wal_position

__all__ = ["ROLE", "Cluster", "bin_dir"]

ROLE = "funes_test"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A primary and its streaming replica, run with the local package's binaries (as its user under root)."""

    def __init__(self, bin_dir: Path, base: Path) -> None:
        self.bin = bin_dir
        self.base = base
        self.user = system_user()  # PostgreSQL refuses to run as root: the package's own user then
        self.primary_dir, self.replica_dir = base / "primary", base / "replica"
        self.primary_port, self.replica_port = free_port(), free_port()

    def run(self, name: str, *args: str) -> None:
        subprocess.run([str(self.bin / name), *args], check=True, capture_output=True, user=self.user, timeout=120)

    def own(self, path: Path) -> None:
        path.mkdir(mode=0o700)
        if self.user is not None:
            shutil.chown(path, self.user, self.user)

    def url(self, port: int, user: str = "postgres", db: str = "postgres") -> str:
        password = f":{user}" if user == ROLE else ""
        return f"postgresql://{user}{password}@127.0.0.1:{port}/{db}"

    def start(self, data: Path) -> None:
        self.run("pg_ctl", "-D", str(data), "-l", str(data / "log"), "-w", "-t", "60", "start")

    def stop(self, data: Path) -> None:
        with contextlib.suppress(Exception):
            self.run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")

    def setup(self) -> None:
        self.base.chmod(0o755)
        self.own(self.primary_dir)
        self.run(
            "initdb", "-D", str(self.primary_dir), "--auth=trust", "-U", "postgres", "--encoding=utf8", "--no-sync"
        )
        with (self.primary_dir / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.primary_port}\nunix_socket_directories = ''\n"
                "wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\nfsync = off\n"
            )
        self.start(self.primary_dir)
        import psycopg

        with psycopg.connect(self.url(self.primary_port), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{ROLE}' NOSUPERUSER NOBYPASSRLS")
            conn.execute(f"CREATE DATABASE funes OWNER {ROLE}")
        with psycopg.connect(self.url(self.primary_port, db="funes"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        self.own(self.replica_dir)
        # -R: standby.signal and primary_conninfo, so the copy starts as a streaming hot standby;
        # a fast checkpoint, or pg_basebackup waits for the next spread one (minutes).
        self.run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres",
            "-D", str(self.replica_dir), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
        )  # fmt: skip
        with (self.replica_dir / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {self.replica_port}\n")
        self.start(self.replica_dir)

    def admin(self, port: int) -> object:
        import psycopg

        return psycopg.connect(self.url(port, db="funes"), autocommit=True)

    def wait_for_replay(self) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        with self.admin(self.primary_port) as conn:  # type: ignore[attr-defined]
            target = wal_position(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        with self.admin(self.replica_port) as conn:  # type: ignore[attr-defined]
            for _ in range(600):
                if wal_position(conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()[0]) >= target:
                    return
                time.sleep(0.05)
        raise AssertionError("the replica did not replay the primary's WAL within 30 s")

    def replay(self, on: bool) -> None:
        """Pause or resume the replica's replay (it keeps receiving WAL, it stops applying it)."""
        with self.admin(self.replica_port) as conn:  # type: ignore[attr-defined]
            conn.execute("SELECT pg_wal_replay_resume()" if on else "SELECT pg_wal_replay_pause()")
