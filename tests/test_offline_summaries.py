"""The offline provider's titles and topics, read as a person would, on fifty payloads written for this."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from offline_payloads import CHATS, DOCUMENTS, OTHER_SUBJECT, PAYLOADS, SAME_SUBJECT, SAME_SUBJECT_DOCUMENTS

import funes
from funes.curation.entities import SUMMARY_SCHEMA
from funes.providers.llm.offline import OfflineLLM, summarize, title_of, topic_of

FIELD_NAMES = re.compile(r"\b(content|id|type|fields|columns|code|language|name|title|rows)\s*[:=]", re.I)


@pytest.mark.parametrize("payload", PAYLOADS, ids=[f"payload-{i}" for i in range(len(PAYLOADS))])
def test_every_title_is_short_readable_and_free_of_field_names(payload: str) -> None:
    title = title_of(payload)
    assert title.strip(), payload
    assert len(title) < 80, title
    assert not FIELD_NAMES.search(title), title
    assert "\n" not in title


def test_there_are_fifty_payloads() -> None:
    assert len(PAYLOADS) == 50


def test_an_entity_is_titled_by_its_content_not_its_fields() -> None:
    """Seen before: `content: … . id: Sales:A1. type: CODE_CELL` as a title."""
    entity = json.dumps(
        {"type": "CODE_CELL", "id": "Sales:A1", "fields": {"content": "Total revenue per region for Q3"}}
    )
    answer = OfflineLLM().complete_json(f"Summarise.\n<input>{entity}</input>", SUMMARY_SCHEMA)
    assert answer["title"] == "Total revenue per region for Q3"
    assert "id:" not in answer["summary"] and "type:" not in answer["summary"]


@pytest.mark.parametrize("chat", CHATS, ids=[f"chat-{i}" for i in range(len(CHATS))])
def test_a_chat_is_never_summarised_as_a_table(chat: str) -> None:
    """Seen before: a chat with a comma per line summarised as "Table CSV of 1 rows x 2 columns"."""
    assert summarize(chat).startswith("Conversation of"), summarize(chat)


def test_a_real_csv_is_still_a_table() -> None:
    csv = "date,bar,rating\n2026-01-03,Ichiran,4\n2026-01-10,Afuri,5"
    assert summarize(csv).startswith("Table CSV of 2 rows x 3 columns")


def test_topics_are_short_lowercase_labels_from_the_content() -> None:
    for payload in PAYLOADS:
        topic = topic_of(payload)
        assert topic == topic.lower() and len(topic.split()) <= 2, (payload, topic)
    assert topic_of("# Ramen bar visits\n\nWe went to Ichiran twice.") in ("ramen", "visits")
    assert topic_of(SAME_SUBJECT[6][0][0][1] + " " + SAME_SUBJECT[6][0][1][1]) == "offsite catering"
    assert (
        topic_of("user: How do I rotate the API keys?\nassistant: Create new API keys, then revoke the old keys.")
        == "api keys"
    )


@pytest.mark.slow
def test_same_subject_chats_are_nearer_than_any_two_subjects(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    """The insight merge compares topics with the real model at seed 001's 0.85.

    Measured on these 8 + 8 pairs: every same-subject pair's topics are nearer
    than every different-subject pair's, and no two subjects merge.
    """

    def second_plan(first: list[tuple[str, str]], second: list[tuple[str, str]], name: str) -> dict[str, object]:
        with funes.open(str(tmp_path / f"{name}.db"), embedder=local_embedder, worker="off") as mem:
            for sid, chat in (("s0", first), ("s1", second)):
                mem.add_messages(mem.session(sid), [{"role": r, "content": t} for r, t in chat])
                if sid == "s0":
                    assert mem.process_chat(sid)["status"] == "created"
            return mem.insights._plan("s1", "default", None)

    same = [second_plan(a, b, f"same{i}") for i, (a, b) in enumerate(SAME_SUBJECT)]
    other = [second_plan(a, b, f"other{i}") for i, (a, b) in enumerate(OTHER_SUBJECT)]
    assert not [p for p in other if p["status"] == "merged"]
    assert min(float(p["similarity"]) for p in same) > max(float(p["similarity"]) for p in other)  # type: ignore[arg-type]


def _document_topics(tmp_path: Path, name: str, text: str) -> list[str | None]:
    """The topics ``funes ingest`` gives the records of one file (a store of its own, the hash embedder)."""
    from funes.providers.embed import HashEmbedder

    folder = tmp_path / f"doc{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    with funes.open(str(folder / "store.db"), embedder=HashEmbedder(64), worker="off") as mem:
        mem.ingest(folder / name)
        return [m.topic for m in mem.list(limit=50).items]


@pytest.mark.parametrize(("name", "text"), DOCUMENTS, ids=[name for name, _ in DOCUMENTS])
def test_every_document_and_note_gets_a_short_readable_topic(tmp_path: Path, name: str, text: str) -> None:
    """Seen before: 11 of 12 cards of the knowledge map under "No topic" (documents and notes had none)."""
    topics = _document_topics(tmp_path, name, text)
    assert topics, name
    for topic in topics:
        assert topic and topic.strip(), (name, topic)
        assert len(topic) < 80 and "\n" not in topic and "#" not in topic, topic
        assert not FIELD_NAMES.search(topic) and topic not in ("content", "id", "type"), topic
        assert topic == topic.lower() and len(topic.split()) <= 2, topic  # as chat topics are


def test_a_documents_records_share_its_topic_unless_its_headings_name_subjects(tmp_path: Path) -> None:
    assert set(_document_topics(tmp_path, *DOCUMENTS[-1])) == {"call"}  # one heading: one note, one topic
    assert sorted(_document_topics(tmp_path, *DOCUMENTS[9])) == ["journal", "ramen", "tax"]  # three subjects


def test_documents_on_one_subject_share_a_topic_at_the_measured_rate(tmp_path: Path) -> None:
    """Measured on these 8 pairs written in other words: 3 share their label (api keys, revenue, vendor).

    Two documents share a topic only when their titles (or names) and texts
    share the strongest word; a title in other words ("Where we ate" beside
    "Ramen bar visits") gives another label. No two subjects share one.
    """
    labels = [
        (set(_document_topics(tmp_path, *a)), set(_document_topics(tmp_path, *b))) for a, b in SAME_SUBJECT_DOCUMENTS
    ]
    assert all(len(x) == 1 and len(y) == 1 for x, y in labels)
    same = sum(x == y for x, y in labels)
    assert same >= 3, labels
    firsts = [next(iter(x)) for x, _ in labels]
    assert len(set(firsts)) == len(firsts)  # different subjects, different labels
