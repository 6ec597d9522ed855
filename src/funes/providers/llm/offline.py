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
* ``title``: from the content itself (a heading, an entity's name, code's leading comment or
  what it defines, a table's columns, the question a chat opens with, the leading sentence),
  under 80 characters and never a ``field: value`` dump;
* ``topic`` / ``primary_topic``: the strongest run of content words (counted by English stem), lowercase;
* ``related_concepts`` / ``concepts`` / ``keywords`` / ``key_terms``: keyword extraction;
* ``knowledge_type`` and ``scope``: cue words, within the schema's enum;
* anything else: the type's empty value (or the enum's first value).

The same input always gives the same answer, so tests and the fallback path
are reproducible.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
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
    after before since still until again already ever never hi hello hey right well now today tomorrow yesterday
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
    chat = _chat_turns(text)
    if chat:
        return summarize_chat(chat)
    if _looks_like_csv(text):
        lines = [line for line in text.splitlines() if line.strip()]
        header = [c.strip() for c in lines[0].split(",")]
        return summarize_table({"name": "CSV", "columns": header, "rows": len(lines) - 1, "cols": len(header)})
    if len(_CODE_CUES.findall(text)) >= 2:
        return summarize_code({"code": text})
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


def _looks_like_csv(text: str) -> bool:
    """A header and at least two rows with the same number of commas, in short cells, not sentences."""
    lines = [line for line in text.splitlines() if line.strip()][:6]
    if len(lines) < 3 or not all(line.count(",") == lines[0].count(",") > 0 for line in lines):
        return False
    cells = [c.strip() for line in lines for c in line.split(",")]
    return all(len(c) <= 40 and not c.endswith((".", "?", "!")) for c in cells)


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
        return summarize_text(_prose(fields))
    return summarize_text(str(data))


# Fields that hold what an entity is about, in the order a reader looks at them; ids and types are labels.
_CONTENT_FIELDS = ("content", "text", "description", "summary", "body", "notes", "query", "sql", "url", "name", "title")
_LABEL_FIELDS = frozenset({"id", "type", "entity_type", "entity_id", "kind", "role", "language", "scope"})


def _prose(fields: dict[str, Any]) -> str:
    """An entity's words as sentences: its content fields first, then any other text; never ``key: value``."""
    ordered = [k for k in _CONTENT_FIELDS if k in fields] + [k for k in fields if k not in _CONTENT_FIELDS]
    parts: list[str] = []
    for key in ordered:
        if key in _LABEL_FIELDS:
            continue
        value = fields[key]
        text = value if isinstance(value, str) else plain_text(json.dumps(value, default=str))
        text = " ".join(str(text).split())
        if text and text not in parts:
            parts.append(text if text[-1] in ".!?" else text + ".")
    return " ".join(parts) or " ".join(str(fields.get(k) or "") for k in ("type", "id")).strip()


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


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_LANGUAGES = {"sql": "SQL", "javascript": "JavaScript", "typescript": "TypeScript", "js": "JavaScript", "r": "R"}
_GREETING = re.compile(r"^(?:hi|hello|hey|thanks|thank you|ok|okay)\b[\s,!.]*", re.I)
_FIELD_PREFIX = re.compile(r"^(?:[A-Za-z_]{2,20}\s*:\s+)+")
TITLE_CHARS = 80


def _clip(text: str, limit: int = TITLE_CHARS - 1) -> str:
    """One line of at most ``limit`` characters, cut at a word, without a trailing stop."""
    line = " ".join(text.split()).strip(" .:;,-")
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0].rstrip(" .:;,-")
    return (cut or line[: limit - 1]) + "…"


def title_of(material: str) -> str:
    """A short title from the content itself: a heading, a name, the subject of a chat or the leading sentence."""
    try:
        data = json.loads(material)
    except ValueError:
        data = None
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return title_of("\n".join(f"{m['role']}: {m.get('content') or ''}" for m in data))
    if isinstance(data, dict):
        fields = {**(data.get("fields") or {}), **{k: v for k, v in data.items() if k != "fields"}}
        return _entity_title(fields) or "Untitled"
    text = material if data is None else str(data)
    heading = _HEADING.search(text)
    if heading:
        return _clip(heading.group(1))
    chat = _chat_turns(text)
    if chat:
        asked = next((t for r, t in chat if r in ("user", "human") and t.strip()), chat[0][1])
        return _clip(_GREETING.sub("", _FIELD_PREFIX.sub("", sentences(asked)[0]))) or _clip(sentences(asked)[0])
    if _looks_like_csv(text):
        columns = [c.strip() for c in text.strip().splitlines()[0].split(",")]
        return _clip("Table of " + ", ".join(columns[:5]))
    first = next((_FIELD_PREFIX.sub("", s) for s in sentences(text) if _WORD.search(s)), "")
    return _clip(first) or _clip(" ".join(keywords(text, 3)).capitalize()) or "Untitled"


def _entity_title(fields: dict[str, Any]) -> str:
    named = next(
        (str(fields[k]) for k in ("title", "name") if isinstance(fields.get(k), str) and fields[k].strip()), ""
    )
    if "code" in fields:
        code = str(fields.get("code") or "")
        raw = str(fields.get("language") or "").strip()
        language = _LANGUAGES.get(raw.lower(), raw.capitalize()) or "Code cell"
        defined = re.findall(r"^\s*(?:def|class|function)\s+([A-Za-z_]\w*)", code, re.M)
        comment = next(
            (ln.strip().lstrip("#/-\"' ").strip() for ln in code.splitlines() if re.match(r"\s*(#|//|--)", ln)), ""
        )
        # The first statement, keyword arguments left out (`plot(s, title='x')` reads as `plot(s, 'x')`).
        head, paren, args = next((ln.strip() for ln in code.splitlines() if ln.strip()), "").partition("(")
        first_line = head + paren + re.sub(r"\b\w+\s*=(?!=)\s*", "", args)
        what = comment or (", ".join(dict.fromkeys(defined)) if defined else "") or named or first_line
        return _clip(f"{language}: {what}" if what else f"{language} {fields.get('id') or ''}".strip())
    if "columns" in fields:
        columns = ", ".join(str(c) for c in (fields.get("columns") or [])[:5])
        label = named or str(fields.get("id") or "Table")
        return _clip(f"{label}: {columns}" if columns else label)
    if "sheet_names" in fields or "sheets" in fields:
        return _clip(f"File {named or fields.get('id') or ''}".strip())
    if named:
        return _clip(named)
    if not any(k not in _LABEL_FIELDS and fields[k] not in (None, "", [], {}) for k in fields):
        kind = str(fields.get("type") or "").replace("_", " ").capitalize()
        return _clip(f"{kind} {fields.get('id') or ''}".strip())
    return title_of(_prose(fields))


_local = threading.local()  # a Snowball stemmer keeps the word it works on in the object: one per thread


def _stemmer() -> Any:
    stemmer = getattr(_local, "english", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _local.english = snowballstemmer.stemmer("english")
    return stemmer


@functools.lru_cache(maxsize=65536)  # a document says the same words again and again
def _stem(word: str) -> str:
    """The word's English stem: "probation", "probationary" and "probations" count as one."""
    return str(_stemmer().stemWord(word))


def topic_of(material: str) -> str:
    """A topic label: the text's most frequent content word (by English stem), with its partner when they recur as a pair.

    One strong word is what two texts on one subject in other words most often
    share ("probation" in "vendors on probation" and "a probationary
    supplier"); a pair that recurs ("offsite catering" twice) is kept whole.
    Documents and notes are labelled by the same rule (:func:`strongest_words`,
    see :mod:`funes.memory.topics`).
    """
    try:
        data = json.loads(material)
    except ValueError:
        data = None
    fields = {**(data.get("fields") or {}), **data} if isinstance(data, dict) else {}
    named = next((fields[k] for k in ("title", "name") if isinstance(fields.get(k), str) and fields[k].strip()), None)
    heading = _HEADING.search(material) if data is None else None
    # A name or a heading says what the rest is about.
    return strongest_words(named or (heading.group(1) if heading else plain_text(material)))


def _stems(text: str) -> tuple[list[str], list[str | None]]:
    tokens = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*|[^\sA-Za-z]", text)]
    stems = [_stem(w) if len(w) > 2 and w[0].isalpha() and w not in _STOP and not w.isdigit() else None for w in tokens]
    return tokens, stems


def strongest_words(text: str, body: str = "", *, ignore: frozenset[str] = frozenset(), said: bool = False) -> str:
    """The label :func:`topic_of` gives ``text``: its strongest content word, or the pair it recurs in.

    Candidates are the words of ``text`` (less those of ``ignore``, by stem),
    ranked by how often ``text`` says them, then how often ``body`` does, then
    length (a rough "more specific"), then order; a pair with the winner that
    recurs (in ``text`` and ``body`` together) is kept whole. With ``said``,
    only words ``body`` says too are candidates.
    """
    tokens, stems = _stems(text)
    ignore = frozenset(_stem(w) for w in ignore)
    counts = Counter(x for x in stems if x and x not in ignore)
    if not counts:
        return ""
    body_tokens, body_stems = _stems(body) if body else ([], [])
    in_body = Counter(x for x in body_stems if x in counts)
    if said:
        counts = Counter({x: n for x, n in counts.items() if in_body[x]})
        if not counts:
            return ""
    first = {stem: i for i, stem in reversed(list(enumerate(stems))) if stem}
    spelled: dict[str, Counter[str]] = {}
    for word, stem in zip([*tokens, *body_tokens], [*stems, *body_stems], strict=True):
        if stem in counts:
            spelled.setdefault(stem, Counter())[word] += 1
    # Ties go to the longer word (a rough "more specific": "postgres" over "picked"), then the earlier.
    top = min(counts, key=lambda x: (-counts[x], -in_body[x], -len(spelled[x].most_common(1)[0][0]), first[x]))
    pairs = Counter(
        (a, b)
        for seq in (stems, body_stems)
        for a, b in itertools.pairwise(seq)
        if a and b and a != b and top in (a, b) and a not in ignore and b not in ignore
    )
    pair = min(pairs, key=lambda p: (-pairs[p], first.get(p[0], len(stems))), default=None)
    chosen = pair if pair is not None and pairs[pair] >= 2 else (top,)
    for stem in chosen:  # a partner that is no candidate itself is spelled as the texts spell it
        if stem not in spelled:
            words = zip([*tokens, *body_tokens], [*stems, *body_stems], strict=True)
            spelled[stem] = Counter(w for w, x in words if x == stem)
    # The commonest spelling; of two as common, the shorter ("vendor" of "vendors" and "vendor").
    return " ".join(min(spelled[x].items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0] for x in chosen)


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
            return title_of(material)
        if key in ("topic", "primary_topic") and kind == "string":
            return topic_of(material) or " ".join(terms()[:2])
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
