"""LangChain's standard retriever and tool tests, run in a pytest of their own (see langchain_standard_suite.py).

langchain-tests brings pytest plugins (pytest-asyncio, pytest-socket, syrupy)
that must not load in the rest of the suite, so it is not a test dependency
of the venv: the README's test command installs it apart, pinned, into
``build/langchain-tests`` (or point ``FUNES_LANGCHAIN_TESTS`` at another directory)::

    pip install --no-deps --target build/langchain-tests -r tests/langchain-tests.txt

This test runs the suite in a subprocess with that directory on its path and
requires every test to pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from funes.agents.specs import TOOLS

ROOT = Path(__file__).resolve().parents[1]
SITE = os.environ.get("FUNES_LANGCHAIN_TESTS") or str(ROOT / "build" / "langchain-tests")


@pytest.mark.slow
def test_langchain_standard_tests_pass_for_the_retriever_and_every_tool(tmp_path: Path) -> None:
    if not (Path(SITE) / "langchain_tests").is_dir():
        pytest.skip(
            f"langchain-tests is not installed in {SITE}: pip install --no-deps --target {SITE} "
            "-r tests/langchain-tests.txt"
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SITE, str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    # langchain-tests marks its chat-model tests for plugins this run does not load (benchmark, vcr).
    options = ["-o", "addopts=", "-W", "ignore::pytest.PytestUnknownMarkWarning", "-o", "asyncio_mode=auto"]
    options += ["-o", "asyncio_default_fixture_loop_scope=function", "--basetemp", str(tmp_path / "inner")]
    suite = str(ROOT / "tests" / "langchain_standard_suite.py")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, suite]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    # langchain-tests 1.1: 5 retriever tests and 11 per tool (unit and integration), none skipped or failed:
    # 82 with the seven tools of issue 27, 93 with list_memories.
    assert passed == 5 + 11 * len(TOOLS), summary
