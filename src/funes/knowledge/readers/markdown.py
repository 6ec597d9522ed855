"""Markdown: header-aware chunks with metadata.

A document is cut into sections at ATX (``## Title``) and setext headers;
each chunk carries its section's header path (``## 2026-01-28 > ### Changes``)
as its title and in its locator. A long section is split between blocks
(paragraphs, whole lists, code fences, tables), then between list items,
then between sentences. Metadata: dates in headers, tags (``- tag: x`` lines
and ``#tags``), commit hashes (``**Commit**: abc123``) and YAML front matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...memory.chunking import Chunker, pack
from .base import Budget, Chunk, Parsed, ReadOptions, over_limit
from .text import decode, decode_note

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])[ \t]+")
_TABLE_ROW = re.compile(r"^\s*\|")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_TAG_LINE = re.compile(r"^\s*(?:[-*+]\s+)?tags?\s*:\s*(.+?)\s*$", re.IGNORECASE)
_HASHTAG = re.compile(r"(?<![\w&#/=])#([A-Za-z][\w/-]{0,48})")
_HEX_COLOR = re.compile(r"[0-9a-fA-F]{3}|[0-9a-fA-F]{6}")
_COMMIT = re.compile(r"\*\*commit\*\*\s*:?\s*\**\s*:?\s*`?([0-9a-f]{7,40})\b`?", re.IGNORECASE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


@dataclass
class _Section:
    headers: list[tuple[int, str]]
    start_line: int
    lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return " > ".join(f"{'#' * level} {text}" for level, text in self.headers)


def parse_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """YAML front matter (a simple subset: scalars and lists) and the text after it."""
    if not text.startswith("---"):
        return {}, text, 0
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, 0
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text, 0
    data: dict[str, Any] = {}
    key: str | None = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s*(.*)$", line)
        if item and key is not None:
            if not isinstance(data.get(key), list):
                data[key] = []
            data[key].append(_scalar(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z0-9_][\w .-]*?)\s*:\s*(.*)$", line)
        if not pair:
            continue
        key, value = pair.group(1).strip(), pair.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            data[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            data[key] = _scalar(value) if value else ""
    return data, "\n".join(lines[end + 1 :]), end + 1


def _scalar(value: str) -> Any:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    lowered = value.lower()
    if lowered in ("true", "yes"):
        return True
    if lowered in ("false", "no"):
        return False
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def _sections(body: str, first_line: int) -> list[_Section]:
    lines = body.split("\n")
    sections = [_Section(headers=[], start_line=first_line + 1)]
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence_match = _FENCE.match(line)
        if fence is not None:
            sections[-1].lines.append(line)
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            i += 1
            continue
        if fence_match:
            fence = fence_match.group(1)
            sections[-1].lines.append(line)
            i += 1
            continue
        header: tuple[int, str] | None = None
        atx = _ATX.match(line)
        if atx:
            header = (len(atx.group(1)), atx.group(2).strip())
        elif (
            i + 1 < len(lines)
            and line.strip()
            and not _LIST_ITEM.match(line)
            and _SETEXT.match(lines[i + 1])
            and (i == 0 or not lines[i - 1].strip())
        ):
            header = (1 if lines[i + 1].strip().startswith("=") else 2, line.strip())
            i += 1
        if header is None:
            sections[-1].lines.append(line)
            i += 1
            continue
        parent = [h for h in sections[-1].headers if h[0] < header[0]]
        sections.append(_Section(headers=[*parent, header], start_line=first_line + i + 1))
        i += 1
    return sections


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A section's body as blocks: ('list', items), ('code'|'table'|'para', [text])."""
    blocks: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            j = i + 1
            while j < len(lines) and not (
                _FENCE.match(lines[j]) and _FENCE.match(lines[j]).group(1)[0] == fence.group(1)[0]  # type: ignore[union-attr]
            ):
                j += 1
            blocks.append(("code", ["\n".join(lines[i : j + 1])]))
            i = j + 1
            continue
        if _LIST_ITEM.match(line):
            items: list[str] = []
            while i < len(lines):
                current = lines[i]
                if _LIST_ITEM.match(current):
                    items.append(current.rstrip())
                elif current.strip() and (current.startswith((" ", "\t")) or not _blank_before(lines, i)):
                    items[-1] += "\n" + current.rstrip()
                elif not current.strip():
                    # A blank line ends the list unless another item follows.
                    nxt = next((k for k in range(i + 1, len(lines)) if lines[k].strip()), None)
                    if nxt is None or not (_LIST_ITEM.match(lines[nxt]) or lines[nxt].startswith(("  ", "\t"))):
                        break
                else:
                    break
                i += 1
            blocks.append(("list", items))
            continue
        kind = "table" if _TABLE_ROW.match(line) else "para"
        j = i
        while (
            j < len(lines)
            and lines[j].strip()
            and not _FENCE.match(lines[j])
            and (kind == "table" or not _LIST_ITEM.match(lines[j]) or j == i)
        ):
            j += 1
        blocks.append((kind, ["\n".join(x.rstrip() for x in lines[i:j])]))
        i = j
    return blocks


def _blank_before(lines: list[str], i: int) -> bool:
    return i > 0 and not lines[i - 1].strip()


def _units(blocks: list[tuple[str, list[str]]], chunker: Chunker, budget: int) -> list[tuple[str, int, bool]]:
    """Blocks as packable units (text, tokens, starts a new block); oversized ones split."""
    units: list[tuple[str, int, bool]] = []
    for kind, parts in blocks:
        whole = "\n".join(parts)
        n = chunker.count(whole)
        if n <= budget:
            units.append((whole, n, True))
            continue
        first = True
        pieces = parts if kind == "list" else [whole]
        for piece in pieces:
            for sub in chunker.split(piece, budget) if chunker.count(piece) > budget else [piece]:
                units.append((sub, chunker.count(sub), first))
                first = False
    return units


def _strip_code(text: str) -> str:
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0]:
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        out.append(_INLINE_CODE.sub(" ", line))
    return "\n".join(out)


def _tags(text: str) -> list[str]:
    tags: list[str] = []
    for line in _strip_code(text).split("\n"):
        tag_line = _TAG_LINE.match(line)
        if tag_line:
            tags += [t.strip().lstrip("#") for t in re.split(r"[,;]", tag_line.group(1)) if t.strip()]
            continue
        if _ATX.match(line):
            continue
        for tag in _HASHTAG.findall(line):
            if _HEX_COLOR.fullmatch(tag) and any(ch.isdigit() for ch in tag):
                continue
            tags.append(tag)
    return list(dict.fromkeys(t for t in tags if t))


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]
    if isinstance(value, str) and value.strip():
        return [v.strip() for v in value.split(",") if v.strip()]
    return []


def nesting_depth(text: str, stop: int) -> int:
    """The deepest nesting of lists and block quotes outside code fences (an indent of 2 or one ``>`` a level).

    Stops counting at ``stop``: the check must stay cheap on the very file it guards against.
    """
    deepest, fence = 0, None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if opened:
            marker = opened.group(1)[0]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence or not line.strip():
            continue
        prefix = line[: len(line) - len(line.lstrip(" \t>"))]
        depth = prefix.count(">") + len(prefix.replace(">", "").expandtabs(4)) // 2
        deepest = max(deepest, depth)
        if deepest > stop:
            break
    return deepest


def read_markdown(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """Markdown sections as chunks titled by their header path."""
    text, encoding, guessed = decode(data, options.name, options.encoding)
    if options.max_depth > 0 and nesting_depth(text, options.max_depth) > options.max_depth:
        raise over_limit(
            options.name,
            f"nests lists or quotes more than {options.max_depth} levels deep",
            f"{options.max_depth}-level",
            "max_markdown_depth",
            str(options.max_depth * 2),
        )
    clock = Budget(options)
    front, body, offset = parse_front_matter(text)
    front_tags = _as_list(front.get("tags", front.get("tag")))
    front_date = str(front["date"]) if front.get("date") else None
    chunks: list[Chunk] = []
    all_tags: list[str] = list(front_tags)
    all_dates: list[str] = []
    all_commits: list[str] = []
    for section in _sections(body, offset):
        clock.spend()
        section_text = "\n".join(section.lines)
        if not section_text.strip():
            continue
        path = section.path or None
        dates = [d for _, h in section.headers for d in _DATE.findall(h)]
        date = dates[-1] if dates else front_date
        tags = list(dict.fromkeys([*front_tags, *_tags(section_text)]))
        commits = list(dict.fromkeys(_COMMIT.findall(section_text)))
        all_tags += tags
        all_dates += dates
        all_commits += commits
        budget = chunker.budget(path)
        units = _units(_blocks(section.lines), chunker, budget)
        groups = pack([n for _, n, _ in units], budget, chunker.overlap)
        for part, group in enumerate(groups, 1):
            clock.spend()
            body_text = ""
            for index in group:
                piece, _, new_block = units[index]
                if body_text:
                    body_text += "\n\n" if new_block else "\n"
                body_text += piece
            if not body_text.strip():
                continue
            locator: dict[str, Any] = {"line": section.start_line}
            if path:
                locator["header_path"] = path
            if len(groups) > 1:
                locator["part"] = part
            metadata: dict[str, Any] = {"header_path": path or "", "headers": [h for _, h in section.headers]}
            if date:
                metadata["date"] = date
            if tags:
                metadata["tags"] = tags
            if commits:
                metadata["commits"] = commits
            if front:
                metadata["front_matter"] = front
            chunks.append(Chunk(text=body_text, locator=locator, title=path, metadata=metadata, kind="markdown"))
    doc_meta: dict[str, Any] = {"encoding": encoding}
    if front:
        doc_meta["front_matter"] = front
        if front.get("title"):
            doc_meta["title"] = str(front["title"])
    for key, values in (("tags", all_tags), ("dates", all_dates), ("commits", all_commits)):
        unique = list(dict.fromkeys(values))
        if unique:
            doc_meta[key] = unique
    return Parsed(
        source_type="markdown",
        chunks=chunks,
        metadata=doc_meta,
        warnings=decode_note(options.name, encoding, guessed),
    )
