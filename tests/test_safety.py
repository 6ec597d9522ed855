"""Bad input and safety: clear errors, corrupt files, concurrent writers, crashes mid-write."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.interfaces.cli import main
from funes.providers.embed import HashEmbedder


def run_python(code: str, home: Path, *args: str) -> subprocess.Popen[str]:
    """Start a Python subprocess running ``code`` with FUNES_HOME set."""
    env = {**os.environ, "FUNES_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- bad input -------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   ", "\n\t\n"])
def test_empty_content_is_refused(mem: funes.Funes, content: str) -> None:
    with pytest.raises(funes.InvalidInput) as info:
        mem.remember(content)
    assert "empty" in info.value.message and info.value.hint


def test_non_text_content_is_refused(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput):
        mem.remember(b"bytes")  # type: ignore[arg-type]


def test_lone_surrogates_are_refused(mem: funes.Funes) -> None:
    with pytest.raises(funes.InvalidInput):
        mem.remember("broken \ud800 text")
    with pytest.raises(funes.InvalidInput):
        mem.search("broken \udfff query")


def test_content_over_the_default_maximum_is_refused(mem: funes.Funes) -> None:
    assert mem.config.max_content_bytes == 1_000_000
    with pytest.raises(funes.InvalidInput) as info:
        mem.remember("é" * 500_001)  # 1,000,002 bytes in UTF-8
    assert "1,000,002 bytes" in info.value.message and "max_content_bytes" in (info.value.hint or "")
    assert mem.stats()["records"] == 0


def test_the_maximum_is_configurable(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "small.db"), embedder=HashEmbedder(8), max_content_bytes=10) as service:
        service.remember("0123456789")
        with pytest.raises(funes.InvalidInput):
            service.remember("0123456789!")


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"type": "opinion"}, "memory type"),
        ({"scope": "galaxy"}, "scope"),
        ({"scope": "project"}, "project"),
        ({"scope": "session"}, "session"),
        ({"kind": "tweet"}, "kind"),
        ({"importance": 1.5}, "Importance"),
        ({"importance": -0.1}, "Importance"),
        ({"importance": float("nan")}, "Importance"),
        ({"importance": "high"}, "Importance"),
        ({"expires_at": "next tuesday"}, "expires_at"),
        ({"references": [("only-one",)]}, "reference"),
    ],
)
def test_invalid_fields_are_refused_with_a_hint(mem: funes.Funes, kwargs: dict[str, object], word: str) -> None:
    with pytest.raises(funes.InvalidInput) as info:
        mem.remember("valid content", **kwargs)  # type: ignore[arg-type]
    assert word in info.value.message and info.value.hint
    assert mem.stats()["records"] == 0


def test_invalid_update_changes_nothing(mem: funes.Funes) -> None:
    memory = mem.remember("keep me intact")
    for kwargs in ({"importance": 2}, {"type": "rumour"}, {"content": " "}, {"expires_at": "soonish"}):
        with pytest.raises(funes.InvalidInput):
            mem.update(memory.id, **kwargs)  # type: ignore[arg-type]
    assert mem.get(memory.id) == memory


@pytest.mark.parametrize("call", ["get", "update", "forget", "pin", "unpin"])
def test_unknown_id_is_not_found_with_a_hint(mem: funes.Funes, call: str) -> None:
    method = getattr(mem, call)
    with pytest.raises(funes.NotFound) as info:
        if call == "update":
            method("mem_nope", importance=0.5)
        else:
            method("mem_nope")
    assert "mem_nope" in info.value.message and "funes list" in (info.value.hint or "")


@pytest.mark.parametrize(
    "kwargs",
    [{"limit": 0}, {"limit": 5000}, {"min_similarity": 3.0}, {"scopes": ["galaxy"]}, {"kinds": ["tweet"]}],
)
def test_invalid_search_arguments(mem: funes.Funes, kwargs: dict[str, object]) -> None:
    with pytest.raises(funes.InvalidInput) as info:
        mem.search("anything", **kwargs)  # type: ignore[arg-type]
    assert info.value.hint


def test_malformed_fts_query_is_just_text(mem: funes.Funes) -> None:
    memory = mem.remember('the "foo" AND bar NEAR( baz')
    for query in ['"foo', "AND OR NOT", "*", "-x", "NEAR(", "bar)"]:
        mem.search(query)
    assert mem.search('"foo AND')[0].memory.id == memory.id
    with pytest.raises(funes.InvalidInput):
        mem.search("   ")


# -- corrupt files ---------------------------------------------------------------


def test_garbage_file_is_store_corrupt_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    data = b"this is not a database at all " * 500
    path.write_bytes(data)
    for _ in range(2):  # the same clear error every time; no retry loop, no repair attempt
        with pytest.raises(funes.StoreCorrupt) as info:
            funes.open(str(path), embedder=HashEmbedder(8))
        assert str(path) in info.value.message and "funes import" in (info.value.hint or "")
    assert path.read_bytes() == data


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (x)")
    conn.commit()
    conn.close()
    with pytest.raises(funes.StoreCorrupt) as info:
        funes.open(str(path), embedder=HashEmbedder(8))
    assert "another application" in info.value.message and info.value.hint


def test_corrupt_file_through_the_cli_exits_1_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(os.urandom(8192))
    for args in (["list"], ["search", "x"], ["add", "x"], ["doctor"], ["stats"]):
        result = CliRunner().invoke(main, ["--db", str(path), "--embedder", "hash", *args])
        assert result.exit_code == 1, (args, result.output)
        assert "Error:" in result.output and "Hint:" in result.output
        assert "Traceback" not in result.output


def test_damaged_pages_are_reported_by_doctor_and_never_crash_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    with funes.open(str(path), embedder=HashEmbedder(16)) as service:
        for n in range(300):
            service.remember(f"note {n} " + "words " * 50)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(bytes(range(256)) * 160)
    runner = CliRunner()
    base = ["--db", str(path), "--embedder", "hash:16"]
    doctor = runner.invoke(main, [*base, "doctor", "--json"])
    assert doctor.exit_code == 1 and '"ok": false' in doctor.output
    for args in (["add", "a new note"], ["search", "note"], ["list", "-n", "1000"], ["stats"]):
        result = runner.invoke(main, [*base, *args])
        assert result.exit_code in (0, 1), (args, result.output)
        assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
        if result.exit_code == 1:
            assert "Hint:" in result.output


# -- concurrency and crashes --------------------------------------------------------

WRITER = """
import sys
import funes
from funes.providers.embed import HashEmbedder

path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with funes.open(path, embedder=HashEmbedder(32), busy_timeout_ms=30000) as mem:
    for n in range(count):
        mem.remember(f"writer {tag} note {n} about shared topics", project=tag if n % 2 else None)
        if n % 10 == 0:
            mem.search("shared topics")
print("done", tag)
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path, funes_home: Path) -> None:
    path = str(tmp_path / "shared.db")
    with funes.open(path, embedder=HashEmbedder(32)):
        pass  # create the schema once, so both writers start on a ready store
    count = 60
    procs = [run_python(WRITER, funes_home, path, tag, str(count)) for tag in ("a", "b")]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err.lower() and "Traceback" not in err
        assert out.startswith("done")
    with funes.open(path, embedder=HashEmbedder(32)) as service:
        assert service.stats()["records"] == 2 * count
        contents = {m.content for m in service.store.iter_records()}
        assert all(f"writer {t} note {n} about shared topics" in contents for t in "ab" for n in range(count))
        assert service.doctor() == []


SAME_TEXT_WRITER = """
import sys
import funes
from funes.providers.embed import HashEmbedder

path, count = sys.argv[1], int(sys.argv[2])
with funes.open(path, embedder=HashEmbedder(32), busy_timeout_ms=30000) as mem:
    ids = {mem.remember(f"shared fact number {n % 10}").id for n in range(count)}
print("done", len(ids))
"""


def test_two_processes_remembering_the_same_text_store_it_once(tmp_path: Path, funes_home: Path) -> None:
    path = str(tmp_path / "same.db")
    with funes.open(path, embedder=HashEmbedder(32)):
        pass
    procs = [run_python(SAME_TEXT_WRITER, funes_home, path, "40") for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.startswith("done")
    with funes.open(path, embedder=HashEmbedder(32)) as service:
        contents = [m.content for m in service.store.iter_records()]
        assert sorted(contents) == sorted(f"shared fact number {n}" for n in range(10))
        assert service.doctor() == []


CRASHER = """
import os
import sys
import funes
from funes.providers.embed import HashEmbedder

path, mode = sys.argv[1], sys.argv[2]
mem = funes.open(path, embedder=HashEmbedder(16, max_tokens=20))
mem.remember("committed before the crash")
mem.close()
mem = funes.open(path, embedder=HashEmbedder(16, max_tokens=20))
db = mem.store.db
assert hasattr(db, "_writer"), "the crash hook needs the writer connection"


class CrashOnSecondVector:
    # Dies (no cleanup, like a power cut or kill -9) on the second vector insert,
    # after the row, its keyword entry and a first vector were written.
    def __init__(self, conn):
        self._conn = conn
        self._vectors = 0

    def _check(self, sql):
        if "vec_memories" in sql and sql.lstrip().upper().startswith("INSERT"):
            self._vectors += 1
            if self._vectors >= 2:
                os._exit(3)

    def execute(self, sql, *args):
        self._check(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql, *args):
        self._check(sql)
        self._check(sql)
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


if mode == "reindex":
    for n in range(5):
        mem.remember(f"indexed record {n}")
    mem.close()
    mem = funes.open(path, embedder=HashEmbedder(8, max_tokens=20), check_embedder=False)
    db = mem.store.db
db._writer = CrashOnSecondVector(db._writer)
if mode == "reindex":
    mem.reindex()
elif mode == "remember":
    mem.remember(" ".join(f"half written sentence {n}." for n in range(30)))
else:
    items = []
    for n in range(5):
        m = mem.prepare(f"batch record {n}")
        items.append((m, mem.embed_records([m.content])[0]))
    mem.store.put_many(items)
print("not reached")
"""


def test_a_crash_mid_reindex_keeps_the_old_index(tmp_path: Path, funes_home: Path) -> None:
    path = str(tmp_path / "reindex.db")
    proc = run_python(CRASHER, funes_home, path, "reindex")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    with funes.open(path, embedder=HashEmbedder(16, max_tokens=20)) as service:
        assert service.stats()["records"] == 6
        assert service.doctor() == []
        assert service.search("indexed record 3")[0].explanation.vector_rank is not None


@pytest.mark.parametrize("mode", ["remember", "put_many"])
def test_a_crash_mid_write_leaves_no_half_record(tmp_path: Path, funes_home: Path, mode: str) -> None:
    path = str(tmp_path / "crash.db")
    proc = run_python(CRASHER, funes_home, path, mode)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert "not reached" not in out
    with funes.open(path, embedder=HashEmbedder(16, max_tokens=20)) as service:
        assert [m.content for m in service.store.iter_records()] == ["committed before the crash"]
        assert service.doctor() == []
        for query in ("half written sentence", "batch record"):
            assert {h.memory.content for h in service.search(query)} <= {"committed before the crash"}
        again = service.remember("written after the crash")
        assert service.get(again.id).content == "written after the crash"
        assert service.doctor() == []
