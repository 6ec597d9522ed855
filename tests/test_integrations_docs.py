"""Every example in docs/integrations.md runs, against the real frameworks and the real embedding model.

The examples are read out of the Markdown (each ```python block under a
``##``/``###`` heading) and executed as written, with ``FUNES_HOME`` in a
temporary directory. The OpenAI Agents example reaches a fake model server on
127.0.0.1 through the SDK's own client (``OPENAI_BASE_URL``), so the runner,
the session protocol and the HTTP client are all the real code.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path
from typing import Any

import pytest
from llm_servers import responses_answer, serve

import funes

DOC = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"


def _examples() -> dict[str, str]:
    """The python blocks of the doc, by the heading they stand under."""
    out: dict[str, str] = {}
    heading = ""
    for block in re.finditer(r"^(#{2,3} [^\n]+)$|^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.M | re.S):
        if block.group(1):
            heading = block.group(1).lstrip("# ").strip()
        else:
            assert heading not in out, f"two examples under {heading!r}"
            out[heading] = block.group(2)
    return out


EXAMPLES = _examples()


def _run(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__example__"}
    try:
        exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        for value in namespace.values():
            if isinstance(value, funes.Funes):
                value.close()
        for value in namespace.values():  # stores and adapters hold the service too
            inner = getattr(value, "funes", None)
            if isinstance(inner, funes.Funes):
                inner.close()
        namespace.clear()
        gc.collect()  # a framework object left unclosed warns here, in the example that made it


def test_every_adapter_has_an_example() -> None:
    assert set(EXAMPLES) == {
        "LangGraph: a `BaseStore`",
        "LangMem",
        "LangChain: tools and a retriever",
        "LlamaIndex: a memory block",
        "A vector store: LlamaIndex's `VectorMemoryBlock` on Funes",
        "OpenAI Agents SDK: a session",
    }


@pytest.mark.slow
@pytest.mark.parametrize("heading", [h for h in EXAMPLES if not h.startswith("OpenAI")])
def test_example_runs(heading: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    _run(EXAMPLES[heading], tmp_path, monkeypatch)
    assert capsys.readouterr().out.strip()


@pytest.mark.slow
def test_openai_agents_example_runs_against_a_fake_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    with serve(responses_answer) as server:
        server.reply = {"text": "Booked: a window seat to Tokyo."}
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
        _run(EXAMPLES["OpenAI Agents SDK: a session"], tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "Booked: a window seat to Tokyo." in out and "4 items" in out
    paths = [path for path, _, _ in server.requests]
    assert paths == ["/v1/responses", "/v1/responses"]
    # The second model call carried the first turn, read back from the Funes session.
    second = server.requests[1][2]["input"]
    texts = [str(item.get("content")) for item in second]
    assert any("window seat on long flights" in t for t in texts)
    assert any("Booked: a window seat to Tokyo." in t for t in texts)
