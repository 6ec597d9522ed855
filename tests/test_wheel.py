"""The built wheel, not the checkout: it installs into a fresh venv and runs demo, ingest and mcp.

A clean copy of the repository (tracked and new, non-ignored files only: no
egg-info, build or venv leftovers) is built with ``python -m build --wheel
--no-isolation`` (no network). The wheel goes into a fresh virtualenv with
``pip install --no-deps``; the venv finds the heavy dependencies (torch, the
model) through a ``.pth`` line pointing at this environment's site-packages,
which comes after its own, so ``funes`` is imported from the wheel. Then the
installed ``funes`` script runs ``demo``, ``ingest`` of a real file and ``mcp``
over stdio with the official MCP client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import anyio
import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _clean_copy(dest: Path) -> Path:
    """The repository's tracked files and its new, non-ignored packaging inputs, copied to ``dest``."""
    try:
        files = []
        # Tracked files, and new ones (not yet committed, not ignored) among the packaging inputs only.
        for extra in ([], ["--others", "--exclude-standard", "--", "src", "pyproject.toml", "README.md"]):
            listed = subprocess.run(
                ["git", "ls-files", "-z", *(extra or ["--cached"])], cwd=REPO, capture_output=True, check=True
            ).stdout.decode()
            files += [f for f in listed.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: the packaging inputs
        files = [str(p.relative_to(REPO)) for p in (REPO / "src").rglob("*") if p.is_file()]
        files += ["pyproject.toml", "README.md"]
    for name in files:
        source = REPO / name
        if source.is_file() and "__pycache__" not in source.parts:
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of the repository."""
    root = tmp_path_factory.mktemp("wheel")
    source = _clean_copy(root / "src-copy")
    out = root / "dist"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        env=env,
    )
    [built] = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel installed (no deps); yields its bin directory."""
    home = tmp_path_factory.mktemp("venv")
    target = home / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Dependencies come from this environment, after the venv's own site-packages.
    (Path(site) / "zz_funes_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
        check=True,
        env=env,
    )
    yield target / "bin"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("FUNES_")}
    env.update(FUNES_HOME=str(home), HF_HUB_OFFLINE="1")
    return env


def test_the_wheel_is_funes_memory_with_its_data_files(wheel: Path) -> None:
    assert wheel.name.startswith("funes_memory-")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"funes/{p.relative_to(REPO / 'src' / 'funes')}" for p in (REPO / "src" / "funes").rglob("*")}
    data = {n for n in expected if n.endswith((".sql", ".md")) or "/static/" in n}
    assert any(n.startswith("funes/store/sql/") for n in data) and "funes/conversations/prompts/agent.md" in data
    assert data <= names, f"missing from the wheel: {sorted(data - names)}"
    code = {n for n in expected if n.endswith(".py")}
    assert code <= names, f"missing from the wheel: {sorted(code - names)}"
    [meta_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(meta_name).decode())
    assert meta["Name"] == "funes-memory"
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"local", "mcp", "pdf", "langgraph", "langchain", "llamaindex", "openai-agents"} <= extras
    assert not [r for r in meta.get_all("Requires-Dist") or [] if r.startswith("funes[")]
    entry = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert entry and "funes = funes.interfaces.cli:main" in zipfile.ZipFile(wheel).read(entry[0]).decode()


def test_funes_is_imported_from_the_wheel_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            "import funes, importlib.metadata as m; print(funes.__file__); print(m.version('funes-memory'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=_env(tmp_path),
        cwd=tmp_path,
    ).stdout.split()
    assert Path(out[0]).is_relative_to(installed.parent), out[0]
    assert not Path(out[0]).is_relative_to(REPO)
    assert out[1] == "0.1.0"


def test_demo_and_ingest_run_from_the_installed_script(installed: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    demo = subprocess.run([str(installed / "funes"), "demo"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.strip()
    notes = tmp_path / "handbook.md"
    notes.write_text(
        "# Handbook\n\n## Expenses\n\nTravel expenses are reimbursed within 30 days of the receipt.\n",
        encoding="utf-8",
    )
    ingest = subprocess.run(
        [str(installed / "funes"), "ingest", str(notes), "--json"], capture_output=True, text=True, env=env
    )
    assert ingest.returncode == 0, ingest.stderr
    found = subprocess.run(
        [str(installed / "funes"), "search", "how long until I get my travel money back?"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert found.returncode == 0, found.stderr
    assert "30 days" in found.stdout and "handbook.md" in found.stdout


def test_mcp_over_stdio_from_the_installed_script(installed: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=str(installed / "funes"), args=["mcp"], env=_env(tmp_path / "home"), cwd=str(tmp_path)
    )

    async def session() -> None:
        async with Client(params) as client:
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("funes", "0.1.0")
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} >= {"create_memory", "search_memories", "memory_search"}

    anyio.run(session)
