"""Export to JSONL and import from it: lossless, transactional, re-embedding when the model differs."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funes
from funes.models import SourceRef, utcnow
from funes.providers.embed import HashEmbedder


def export_text(service: funes.Funes) -> str:
    """The whole export as one string."""
    out = io.StringIO()
    service.export(out)
    return out.getvalue()


def fill(service: funes.Funes) -> None:
    """Records using every field, with history, access counts and several vectors."""
    pdf = SourceRef(
        type="pdf", uri="/docs/Annual Report.pdf", source_id="src-1", locator={"page": 12, "section": "Revenue"}
    )
    first = service.remember(
        "Revenue grew 12% in 2025",
        type="fact",
        project="acme",
        title="Revenue",
        topic="finance",
        entity_type="FILE",
        entity_id="f-9",
        source=pdf,
        metadata={"pages": [12, 13], "ünïcode": "✓"},
        references=[("vendor", "V-12")],
        expires_at=utcnow() + timedelta(days=400),
    )
    service.update(first.id, content="Revenue grew 13% in 2025 (restated)")
    service.remember("I prefer tea", type="preference", pinned=True, user="ana")
    service.remember("Talked about the launch", type="conversation", session="s-1", kind="message")
    service.remember(" ".join(f"word{n}." for n in range(400)))  # several vectors
    service.search("revenue tea launch")
    service.close()  # flush access counters


def test_round_trip_is_byte_identical(tmp_path: Path) -> None:
    source = funes.open(str(tmp_path / "a.db"), embedder=HashEmbedder(64))
    fill(source)
    source = funes.open(str(tmp_path / "a.db"), embedder=HashEmbedder(64))
    first = export_text(source)
    source.close()
    target = funes.open(str(tmp_path / "b.db"), embedder=HashEmbedder(64))
    result = target.import_(io.StringIO(first))
    assert result == {"imported": 4, "unchanged": 0, "reembedded": 0, "duplicates": 0}
    assert export_text(target) == first
    assert target.import_(io.StringIO(first)) == {"imported": 0, "unchanged": 4, "reembedded": 0, "duplicates": 0}
    assert target.doctor() == []
    target.close()
    header = json.loads(first.splitlines()[0])
    assert header["embedder"] == {"model_id": "funes-hash-64", "dimensions": 64}


def test_import_with_another_embedder_reembeds(tmp_path: Path) -> None:
    source = funes.open(str(tmp_path / "a.db"), embedder=HashEmbedder(64))
    fill(source)
    source = funes.open(str(tmp_path / "a.db"), embedder=HashEmbedder(64))
    text = export_text(source)
    source.close()
    with funes.open(str(tmp_path / "c.db"), embedder=HashEmbedder(32)) as target:
        assert target.import_(io.StringIO(text)) == {"imported": 4, "unchanged": 0, "reembedded": 4, "duplicates": 0}
        assert target.doctor() == []
        assert target.search("tea", track=False)[0].memory.content == "I prefer tea"
        again = json.loads(export_text(target).splitlines()[1])["record"]
        original = json.loads(text.splitlines()[1])["record"]
        assert again == original


BAD_LINES = [
    ("not json at all", "Line 2"),
    ("[1, 2]", "Line 2"),
    ('{"type": "note"}', "Line 2"),
    ('{"type": "memory", "record": {"content": "no id"}}', "Line 2"),
    ('{"type": "memory", "record": {"id": "m1", "content": "x", "scope": "galaxy"}}', "Line 2"),
    ('{"type": "memory", "record": {"id": "m1", "content": "x", "importance": 7}}', "Line 2"),
    ('{"type": "memory", "record": {"id": "m1", "content": "x", "memory_type": "rumour"}}', "Line 2"),
    ('{"type": "memory", "record": {"id": "m1", "content": "x", "created_at": "last week"}}', "Line 2"),
    ('{"type": "memory", "record": {"id": "m1", "content": "   "}}', "Line 2"),
]


@pytest.mark.parametrize(("line", "named"), BAD_LINES)
def test_a_bad_line_is_named_and_nothing_is_written(mem: funes.Funes, line: str, named: str) -> None:
    good = json.dumps({"type": "memory", "record": {"id": "mem_ok", "content": "a fine record"}, "vectors": []})
    header = json.dumps({"type": "funes-export", "format": 1, "embedder": {"model_id": "x", "dimensions": 3}})
    with pytest.raises(funes.InvalidInput) as info:
        mem.import_([header, line, good])
    assert named in info.value.message and info.value.hint
    assert mem.stats()["records"] == 0


def test_a_bad_line_after_good_ones_writes_nothing(mem: funes.Funes) -> None:
    header = json.dumps({"type": "funes-export", "format": 1, "embedder": {"model_id": "x", "dimensions": 3}})
    lines = [header] + [
        json.dumps({"type": "memory", "record": {"id": f"mem_{n}", "content": f"record {n}"}}) for n in range(5)
    ]
    with pytest.raises(funes.InvalidInput) as info:
        mem.import_([*lines, "{broken"])
    assert "Line 7" in info.value.message
    assert mem.stats()["records"] == 0


@pytest.mark.parametrize(
    "first",
    ["", '{"type": "memory"}', '{"type": "funes-export", "format": 99}'],
)
def test_bad_headers_are_refused(mem: funes.Funes, first: str) -> None:
    with pytest.raises(funes.InvalidInput) as info:
        mem.import_([first] if first else [])
    assert info.value.hint


# NUL is refused in content and titles since issue 31 (PostgreSQL cannot store it), so it is left out here.
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=80
).filter(lambda t: t.strip())
record_specs = st.lists(
    st.fixed_dictionaries(
        {
            "content": texts,
            "type": st.sampled_from(["preference", "fact", "decision", "context", "conversation"]),
            "importance": st.one_of(st.none(), st.floats(0, 1)),
            "project": st.one_of(st.none(), st.sampled_from(["acme", "globex"])),
            "title": st.one_of(st.none(), texts),
            "metadata": st.dictionaries(
                st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5), st.booleans())
            ),
            "pinned": st.booleans(),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=record_specs)
def test_round_trip_of_arbitrary_records(tmp_path_factory: pytest.TempPathFactory, specs: list[dict]) -> None:
    base = tmp_path_factory.mktemp("rt")
    with funes.open(str(base / "src.db"), embedder=HashEmbedder(16)) as source:
        for spec in specs:
            source.remember(spec.pop("content"), **spec)
        first = export_text(source)
    with funes.open(str(base / "dst.db"), embedder=HashEmbedder(16)) as target:
        target.import_(io.StringIO(first))
        assert export_text(target) == first
