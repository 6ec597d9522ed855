"""The offline provider: deterministic heuristics that answer any of Funes' JSON schemas without a model.

It reads the material to work on from the prompt's tagged sections
(``<input>``, and ``<existing>`` / ``<new>`` for merges; see
:mod:`funes.providers.llm.tasks`), then fills each schema property by its name:

* ``summary`` / ``description``: an extractive summary shaped by the input:
  code (language, what it defines and imports, its leading comment, the
  shape of its output), a table (name, columns, rows and columns, bounds),
  a chat (who spoke, what was asked, the key terms) or prose (the leading
  sentences and key terms); for a merge, the union of both summaries'
  sentences without duplicates;
* ``title``, ``topic`` / ``primary_topic``: the leading key terms;
* ``related_concepts`` / ``concepts`` / ``keywords`` / ``key_terms``: keyword extraction;
* ``knowledge_type`` and ``scope``: cue words, within the schema's enum;
* anything else: the type's empty value (or the enum's first value).

The same input always gives the same answer, so tests and the fallback path
are reproducible.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from .base import Call, Usage, estimate_tokens
from .schema import Schema, validate

_SECTION = re.compile(r"<(input|existing|new)>\s*(.*?)\s*</\1>", re.DOTALL)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset(
    """the and for with that this from are was were will would should could have has had not but you your our
    their they them its into onto about over under than then there here what which when where who whom why how
    all any each few more most other some such only own same too very can just also been being did does doing
    per via use used using one two three four five six seven eight nine ten true false none null def return import
    self let var const function print else elif while pass class lambda value values data new old user assistant
    please thanks thank okay yes sure like want need know think make get got say said see way may might must shall
    """.split()
)
_CODE_CUES = re.compile(r"^\s*(def |class |import |from \S+ import |function |const |let |SELECT |#include)", re.M)
_DECISION = re.compile(r"\b(decid\w*|agreed|we will|we'll|going forward|from now on|policy|chose|choose)\b", re.I)
_PREFERENCE = re.compile(r"\b(prefer\w*|favou?rite|i like|i love|i hate|i want|rather)\b", re.I)
_PROCEDURE = re.compile(r"\b(how to|steps?|first|then|run|install|configure|fix(ed)?|workaround)\b", re.I)
_FILE_CUES = re.compile(r"\b(this (file|sheet|notebook|cell|table)|sheet\d*!|[A-Z]{1,3}\d+:[A-Z]{1,3}\d+)\b")


def keywords(text: str, limit: int = 8) -> list[str]:
    """The most frequent content words of a text (ties: first seen first), lowercased."""
    words = [w.lower() for w in _WORD.findall(text)]
    counts = Counter(w for w in words if w not in _STOP and not w.isdigit())
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return ranked[:limit]


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of a text, stripped, empty ones left out."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _norm(sentence: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", sentence.lower()))


def merge_sentences(existing: str, new: str) -> str:
    """The union of two texts' sentences, existing first, each said once (near-identical ones too)."""
    kept: list[str] = []
    seen: list[set[str]] = []
    for sentence in [*sentences(existing), *sentences(new)]:
        norm = _norm(sentence)
        if not norm:
            continue
        words = set(norm.split())
        # A sentence whose words nearly all appear in one already kept says nothing new.
        if any(len(words & other) >= 0.85 * max(len(words), len(other)) for other in seen):
            continue
        kept.append(sentence if sentence[-1] in ".!?" else sentence + ".")
        seen.append(words)
    return " ".join(kept)


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        if "rows" in value or "cols" in value:
            return f"{value.get('rows', '?')} rows x {value.get('cols', '?')} columns"
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " x ".join(str(v) for v in value)
    return str(value)


def summarize_code(fields: dict[str, Any]) -> str:
    """What a code cell is: language, what it defines and imports, its leading comment, its output's shape."""
    code = str(fields.get("code") or "")
    language = str(fields.get("language") or "code").strip() or "code"
    parts = [f"{language.capitalize()} code" + (f" at {fields['id']}" if fields.get("id") else "") + "."]
    defined = re.findall(r"^\s*(?:def|class|function)\s+([A-Za-z_]\w*)", code, re.M)
    imported = re.findall(r"^\s*(?:import|from)\s+([A-Za-z_][\w.]*)", code, re.M)
    comment = next(
        (
            line.strip().lstrip("#/-\"' ").strip()
            for line in code.splitlines()
            if re.match(r"\s*(#|//|--|\"\"\")", line)
        ),
        "",
    )
    if comment:
        parts.append(comment.rstrip(".") + ".")
    if defined:
        parts.append("Defines " + ", ".join(dict.fromkeys(defined)) + ".")
    if imported:
        parts.append("Uses " + ", ".join(dict.fromkeys(m.split(".")[0] for m in imported)) + ".")
    lines = [line for line in code.splitlines() if line.strip()]
    parts.append(f"{len(lines)} lines.")
    output = fields.get("output_shape") or fields.get("output")
    if output:
        parts.append(f"Output: {_shape(output)}.")
    terms = keywords(code, 5)
    if terms:
        parts.append("Key terms: " + ", ".join(terms) + ".")
    return " ".join(parts)


def summarize_table(fields: dict[str, Any]) -> str:
    """What a table is: its name, columns, size and where it sits."""
    columns = [str(c) for c in fields.get("columns") or []]
    name = fields.get("name") or fields.get("id") or "Table"
    rows, cols = fields.get("rows"), fields.get("cols") or (len(columns) or None)
    size = f" of {rows} rows x {cols} columns" if rows is not None else (f" of {cols} columns" if cols else "")
    where = f" at {fields['bounds']}" if fields.get("bounds") else ""
    text = f"Table {name}{size}{where}."
    if columns:
        shown = ", ".join(columns[:12]) + (f" and {len(columns) - 12} more" if len(columns) > 12 else "")
        text += f" Columns: {shown}."
    return text


def summarize_file(fields: dict[str, Any]) -> str:
    """What a file holds: its sheets and how many code cells and tables."""
    name = fields.get("name") or fields.get("id") or "File"
    sheets = [str(s) for s in fields.get("sheet_names") or fields.get("sheets") or []]
    counts = [
        f"{fields[k]} {label}"
        for k, label in (
            ("code_cell_count", "code cells"),
            ("data_table_count", "data tables"),
            ("sheet_table_count", "sheet tables"),
        )
        if fields.get(k)
    ]
    text = f"File {name}"
    if sheets:
        text += f" with sheets {', '.join(sheets)}"
    return text + (": " + ", ".join(counts) if counts else "") + "."


def summarize_chat(turns: list[tuple[str, str]]) -> str:
    """Who spoke, what the user asked first, the assistant's leading explanation, and the key terms."""
    by_role = Counter(role for role, _ in turns)
    parts = [f"Conversation of {len(turns)} messages (" + ", ".join(f"{n} {r}" for r, n in by_role.items()) + ")."]
    asked = next((sentences(t)[0] for r, t in turns if r == "user" and sentences(t)), "")
    if asked:
        parts.append(f"The user asked: {asked}")
    answer = next((sentences(t)[0] for r, t in turns if r == "assistant" and len(t) > 40 and sentences(t)), "")
    if answer:
        parts.append(f"The assistant explained: {answer}")
    terms = keywords(" ".join(t for _, t in turns), 6)
    if terms:
        parts.append("Key terms: " + ", ".join(terms) + ".")
    return " ".join(parts)


def summarize_text(text: str, max_chars: int = 400) -> str:
    """The leading sentences of a text (up to ``max_chars``) and its key terms."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 2 and all(line.count(",") == lines[0].count(",") > 0 for line in lines[:5]):
        header = [c.strip() for c in lines[0].split(",")]
        return summarize_table({"name": "CSV", "columns": header, "rows": len(lines) - 1, "cols": len(header)})
    if len(_CODE_CUES.findall(text)) >= 2:
        return summarize_code({"code": text})
    chat = _chat_turns(text)
    if chat:
        return summarize_chat(chat)
    kept: list[str] = []
    for sentence in sentences(text):
        if kept and len(" ".join([*kept, sentence])) > max_chars:
            break
        kept.append(sentence)
    out = " ".join(kept)[:max_chars]
    terms = keywords(text, 5)
    if terms and len(text) > len(out):
        out += " Key terms: " + ", ".join(terms) + "."
    return out


def _chat_turns(text: str) -> list[tuple[str, str]]:
    turns = [
        (m.group(1).lower(), m.group(2).strip())
        for m in re.finditer(r"^(user|assistant|system|human|ai)\s*:\s*(.+)$", text, re.M | re.I)
    ]
    return turns if len(turns) >= 2 else []


def summarize(material: str) -> str:
    """An extractive summary of the material: an entity's JSON fields, a message list, or text."""
    try:
        data = json.loads(material)
    except ValueError:
        return summarize_text(material)
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return summarize_chat([(str(m["role"]), str(m.get("content") or "")) for m in data])
    if isinstance(data, dict):
        fields = {**(data.get("fields") or {}), **{k: v for k, v in data.items() if k != "fields"}}
        if "code" in fields:
            return summarize_code(fields)
        if "columns" in fields:
            return summarize_table(fields)
        if "sheet_names" in fields or "sheets" in fields:
            return summarize_file(fields)
        if isinstance(fields.get("messages"), list):
            return summarize(json.dumps(fields["messages"]))
        return summarize_text(". ".join(f"{k}: {v}" for k, v in fields.items() if v not in (None, "", [], {})))
    return summarize_text(str(data))


def plain_text(material: str) -> str:
    """The words of the material: a JSON document's string values (its keys are not content), else the text."""
    try:
        data = json.loads(material)
    except ValueError:
        return material
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("type", "role", "id", "language"):
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return "\n".join(found)


class OfflineLLM:
    """Deterministic answers from heuristics: no key, no network, no cost."""

    name = "offline"
    model = "heuristic"

    def __init__(self, usage: Usage | None = None) -> None:
        self.usage = usage or Usage()

    def complete_json(self, prompt: str, schema: Schema) -> dict[str, Any]:
        """An answer valid against ``schema``, filled property by property from the prompt's sections."""
        sections = {name: body for name, body in _SECTION.findall(prompt)}
        material = sections.get("input") or prompt
        merging = "existing" in sections and "new" in sections
        props: dict[str, Schema] = schema.get("properties", {})
        answer: dict[str, Any] = {}
        cache: dict[str, Any] = {}

        def summary() -> str:
            if "summary" not in cache:
                if merging:
                    cache["summary"] = merge_sentences(sections["existing"], sections["new"])
                else:
                    cache["summary"] = summarize(material)
            return str(cache["summary"])

        def terms() -> list[str]:
            if "terms" not in cache:
                source = (
                    f"{sections.get('existing', '')} {sections.get('new', '')}" if merging else plain_text(material)
                )
                cache["terms"] = keywords(source, 8)
            return list(cache["terms"])

        for name, prop in props.items():
            answer[name] = self._fill(name, prop, summary, terms, material)
        answer = {k: v for k, v in answer.items() if v is not None}
        problems = validate(answer, schema)
        if problems:  # our own fill breaking a schema is a bug: say which
            raise ValueError(f"offline answer does not fit the schema: {problems}")
        out_text = json.dumps(answer)
        self.usage.add(Call(self.name, self.model, estimate_tokens(prompt), estimate_tokens(out_text), 0.0))
        return answer

    @staticmethod
    def _fill(name: str, prop: Schema, summary: Any, terms: Any, material: str) -> Any:
        kind = prop.get("type")
        enum = prop.get("enum")
        key = name.lower()
        if key in ("summary", "description", "merged", "merged_summary", "content") and kind == "string":
            return summary()
        if key in ("title", "name", "label") and kind == "string":
            first = sentences(summary())
            return (first[0] if first else "")[:80].rstrip(".")
        if key in ("topic", "primary_topic") and kind == "string":
            return " ".join(terms()[:2])
        if kind == "array" and key in ("related_concepts", "concepts", "keywords", "key_terms", "tags", "topics"):
            return terms()
        if key == "knowledge_type":
            guess = (
                "decision"
                if _DECISION.search(material)
                else "preference"
                if _PREFERENCE.search(material)
                else "procedure"
                if _PROCEDURE.search(material)
                else "fact"
            )
            return guess if not enum or guess in enum else enum[0]
        if key == "scope":
            guess = "file" if _FILE_CUES.search(material) else "team"
            return guess if not enum or guess in enum else enum[0]
        if key == "skip" and kind == "boolean":
            return len(material.strip()) < 20
        if enum:
            return enum[0]
        return {"string": "", "number": 0.0, "integer": 0, "boolean": False, "array": [], "object": {}}.get(
            str(kind), None
        )
