"""Chunkers and readers as plain functions: limits hold, nothing is lost, structure is kept."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from funes.interfaces.cli import main
from funes.knowledge.readers import ReadOptions, detect_kind
from funes.knowledge.readers.markdown import parse_front_matter, read_markdown
from funes.knowledge.readers.pdf import _is_heading
from funes.knowledge.readers.sheets import Grid, format_value, regions, table_chunks
from funes.memory.chunking import Chunker, pack, split_text
from funes.providers.embed import HashEmbedder

COUNT = HashEmbedder().count_tokens
words = st.text(alphabet="abcdefghij", min_size=1, max_size=12)
sentences = st.lists(words, min_size=1, max_size=30).map(lambda ws: " ".join(ws) + ".")
documents = st.lists(st.lists(sentences, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=12).map(
    "\n\n".join
)


@settings(max_examples=60, deadline=None)
@given(documents, st.integers(min_value=8, max_value=80), st.integers(min_value=0, max_value=30))
def test_split_text_respects_the_limit_and_keeps_every_word(text: str, limit: int, overlap: int) -> None:
    chunks = split_text(text, COUNT, limit, overlap)
    assert all(COUNT(c) <= limit for c in chunks)
    joined = set(re.findall(r"\w+", " ".join(chunks)))
    for word in re.findall(r"\w+", text):
        assert word in joined


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=50), max_size=40),
    st.integers(min_value=10, max_value=100),
    st.integers(0, 20),
)
def test_pack_covers_every_unit_in_order(sizes: list[int], limit: int, overlap: int) -> None:
    groups = pack(sizes, limit, overlap)
    firsts = [g for group in groups for g in group]
    assert sorted(set(firsts)) == list(range(len(sizes)))
    for group in groups:
        assert group == sorted(group)
        assert len(group) == 1 or sum(sizes[i] for i in group) <= limit


def test_sentences_are_never_split_when_a_boundary_exists() -> None:
    text = " ".join(f"Sentence number {i} is about a topic." for i in range(60))
    for chunk in split_text(text, COUNT, 40, 10):
        assert chunk.startswith("Sentence") and chunk.endswith(".")


def md_chunks(text: str, limit: int = 60) -> list:  # type: ignore[type-arg]
    parsed = read_markdown(text.encode(), ReadOptions(name="n.md", extension=".md"), Chunker(COUNT, limit, 10))
    return parsed.chunks


def test_markdown_keeps_list_items_whole_and_ignores_hashes_in_code() -> None:
    items = "\n".join(f"- item {i} has several words describing step {i} of the process" for i in range(12))
    text = f"# Guide\n\n## Steps\n\n{items}\n\n```bash\n# not a header\necho hi\n```\n"
    chunks = md_chunks(text)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.title == "# Guide > ## Steps"
        for line in chunk.text.splitlines():
            if line.startswith("- item"):
                assert re.fullmatch(r"- item \d+ has several words describing step \d+ of the process", line)
    assert any("# not a header" in c.text for c in chunks)
    assert all(COUNT(c.text) <= 60 for c in chunks)


def test_markdown_setext_headers_front_matter_and_hashtags() -> None:
    text = "---\ntitle: 'Notes'\ntags:\n  - alpha\n  - beta\ndraft: true\n---\nRelease\n=======\n\nShipped #v2 today, see colour #ff0000.\n"
    meta, _body, lines = parse_front_matter(text)
    assert meta == {"title": "Notes", "tags": ["alpha", "beta"], "draft": True} and lines == 7
    [chunk] = md_chunks(text)
    assert chunk.title == "# Release"
    assert chunk.metadata["tags"] == ["alpha", "beta", "v2"]


def test_pdf_heading_detection() -> None:
    body = "This is a long line of ordinary body text that goes on for quite a while."
    assert _is_heading("2.3 Revenue by Region", body)
    assert _is_heading("RISK FACTORS", body)
    assert _is_heading("Market Overview", body)
    assert not _is_heading("3 capital investment revenue risk cost operating customer", body)
    assert not _is_heading("The results were good.", body)
    assert not _is_heading("Market Overview", "short")


def test_detect_kind_from_content_and_extension() -> None:
    assert detect_kind(b"%PDF-1.7\n...", ".bin") == "pdf"
    assert detect_kind(b"# Title\n\ntext", "") == "markdown"
    assert detect_kind(b'[{"role": "user", "content": "hi"}]', "") == "chat"
    assert detect_kind(b"Alice: hi\nBob: hello there\nAlice: bye\n", ".txt") == "chat"
    assert detect_kind(b"Just some notes.\nNothing else.", ".txt") == "text"
    assert detect_kind(b"a,b\n1,2\n", ".csv") == "sheet"


def test_all_text_tables_take_only_their_first_row_as_header() -> None:
    grid = Grid(name="People")
    rows = [["Name", "Team"], ["Ada", "Core"], ["Grace", "Compilers"], ["Linus", "Kernel"]]
    for r, row in enumerate(rows, 1):
        grid.cells[r] = dict(enumerate(row, 1))
    [region] = regions(grid)
    assert region.header_row == 1 and region.headers == {1: "Name", 2: "Team"}
    [chunk] = table_chunks(grid, [region], Chunker(COUNT, 200), 200)
    assert chunk.text.splitlines() == ["Name | Team", "Ada | Core", "Grace | Compilers", "Linus | Kernel"]
    assert chunk.locator == {"range": "A1:B4", "sheet": "People"}


def test_format_value() -> None:
    assert format_value(3.0) == "3" and format_value(0.1 + 0.2) == "0.3" and format_value(True) == "TRUE"
    assert format_value("  a \n b ") == "a b"


def test_a_chunk_size_over_the_model_limit_is_said_once_at_config_set_ingest_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeds ask for 300-512 tokens; the model reads fewer. Funes caps the size and says so, once per place."""
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    done = runner.invoke(main, ["config", "set", "chunk_tokens", "512"])
    assert done.exit_code == 0, done.output
    assert done.output.count("Note: A chunk size of 512 tokens is over the 254") == 1
    listed = json.loads(runner.invoke(main, ["config", "--json"]).output)["settings"]
    row = next(r for r in listed if r["name"] == "chunk_tokens")
    assert (row["value"], row["effective"]) == (512, 254)
    assert "[effective 254" in runner.invoke(main, ["config"]).output

    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.md", "b.md"):
        (folder / name).write_text(f"# {name}\n\n" + "A sentence about the quarterly plan. " * 80, encoding="utf-8")
    base = ["--db", str(tmp_path / "c.db"), "--embedder", "hash"]
    text = runner.invoke(main, [*base, "ingest", str(folder)])
    assert text.exit_code == 0, text.output
    assert text.output.count("Note: A chunk size of 512 tokens is over the 256") == 1  # once, not per file
    again = json.loads(runner.invoke(main, [*base, "ingest", "--force", "--json", str(folder)]).output)
    assert len(again["notes"]) == 1 and "chunks are 256 tokens" in again["notes"][0]

    project = runner.invoke(main, [*base, "config", "set", "--project", "acme", "chunk_size", "400"])
    assert project.exit_code == 0, project.output
    assert "Note: A chunk size of 400 tokens is over the 256" in project.output
