"""Topic labels of a document's passages and a note's sections, from the content itself (issue 26).

Chat insights are labelled by the offline provider's :func:`topic_of` (a
short lowercase label: the strongest content word, or the pair it recurs
in); documents and Markdown notes get labels from the same heuristic, so a
note and a chat on one subject can meet under one topic on the knowledge map.

What a document is labelled by, first found first:

1. its title: a note's front-matter ``title``, else its top-level heading;
2. its file name (``ramen-visits.md`` reads "ramen visits"), with generic
   names (``notes``, ``readme``, ``untitled``, ``report``...) left out;
   a spreadsheet's sheet and table names count here too;
3. its text alone, when neither says anything.

The document's text ranks the title's words: of "Ramen bar visits", the
word the note says most is its topic. One document, one topic: every chunk
of a PDF, a sheet or a text file shares it, and so do a note's sections,
except in a note of several top-level headings that each name a subject
(``# Ramen`` ... ``# Taxes``): each such heading labels the sections under
it. A heading with no content words (a date, ``# Notes``) labels nothing and
its sections keep the note's topic. Chat messages are left alone (their
insights carry the topics).

Labels are lowercase, like chat topics, at most two words, never a field
name or a Markdown marker. Only records without a topic are labelled: a topic
a person set stays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..models import Memory
from ..providers.llm.offline import strongest_words

#: Document kinds whose records get topics; chat messages do not.
LABELLED_KINDS = ("document_chunk", "markdown")
#: The job kind that labels a tenant's stored passages and sections without a topic (funes.knowledge.topics).
TOPICS_JOB = "document-topics"
#: Words that name a kind of file, not a subject: never a topic by themselves.
GENERIC = frozenset(
    """note notes readme untitled document documents doc docs file files draft final copy misc todo index
    introduction abstract overview summary contents appendix references chapter section part page sheet table
    report export scan img image dataset""".split()
)
_MARKS = re.compile(r"^\s*#{1,6}\s*|\s*#+\s*$")


def file_words(name: str) -> str:
    """A file name as words: ``ramen_visits-2026.md`` reads ``ramen visits 2026``."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", name.rsplit("/", 1)[-1])
    return " ".join(re.split(r"[\W_]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", stem))).strip()


def _headings(memory: Memory) -> list[str]:
    locator = memory.source.locator if memory.source is not None else {}
    path = str(locator.get("header_path") or "")
    return [_MARKS.sub("", part).strip() for part in path.split(" > ") if part.strip()] if path else []


def label(subjects: Sequence[str], body: str) -> str:
    """The topic of a text titled by ``subjects`` (most telling first): the first one with a content word decides."""
    for subject in subjects:
        found = strongest_words(subject, body, ignore=GENERIC)
        if found:
            return found
    return strongest_words(body, ignore=GENERIC)


def document_topics(records: Sequence[Memory], *, name: str, title: str | None = None) -> list[Memory]:
    """``records`` (one document's chunks, in order) with a topic on each labellable record that has none."""
    wanted = [m for m in records if m.kind in LABELLED_KINDS and not m.topic]
    if not wanted:
        return list(records)
    body = "\n".join(m.content for m in wanted)
    tops = {id(m): (_headings(m) or [""])[0] for m in wanted}
    # A note's own headings, in order; the first is its title when it has only one (or no front-matter title).
    headed = list(dict.fromkeys(t for t in tops.values() if t and label([t], "") and not title))
    subjects = [
        s for s in (title, headed[0] if len(headed) == 1 else None, file_words(name), *sheet_names(wanted)) if s
    ]
    whole = label(subjects, body)
    by_heading: dict[str, str] = {}
    if len(headed) > 1:  # several top-level subjects: each labels its own sections
        for heading in headed:
            text = "\n".join(m.content for m in wanted if tops[id(m)] == heading)
            by_heading[heading] = label([heading], text)
    out: list[Memory] = []
    for memory in records:
        if memory.kind in LABELLED_KINDS and not memory.topic:
            topic = by_heading.get(tops.get(id(memory), ""), "") or whole
            out.append(memory.evolve(topic=topic[:200]) if topic else memory)
        else:
            out.append(memory)
    return out


def unlabelled(memory: Memory) -> bool:
    """Whether a stored record is a document's passage or section still without a topic."""
    return memory.kind in LABELLED_KINDS and not memory.topic and bool(memory.source and memory.source.source_id)


def sheet_names(records: Sequence[Memory]) -> list[str]:
    """The sheet and table names a spreadsheet's chunks carry in their locators, in order."""
    names: list[str] = []
    for memory in records:
        locator: dict[str, Any] = memory.source.locator if memory.source is not None else {}
        names += [str(v) for v in (locator.get("sheet"), memory.metadata.get("table")) if v]
    return list(dict.fromkeys(names))


__all__ = [
    "GENERIC",
    "LABELLED_KINDS",
    "TOPICS_JOB",
    "document_topics",
    "file_words",
    "label",
    "sheet_names",
    "unlabelled",
]
