"""PDF: page-aware text with sections, read with pypdf (BSD; PyMuPDF is AGPL).

Text is extracted page by page. Running headers and footers (lines repeated
on most pages, page numbers) are dropped, words hyphenated across lines are
joined, and headings (numbered sections, short all-caps or title-case lines
before body text) open sections. Each chunk records the file, the section
title, its first and last page, and its part number within the section.
A PDF without any text layer is refused as scanned rather than indexed empty.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from ...errors import DependencyMissing, InvalidInput
from ...memory.chunking import Chunker, pack, split_sentences
from .base import Budget, Chunk, Parsed, ReadOptions

_NUMBERED = re.compile(r"^(?:(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?)|(?:[IVXLC]{1,6}\.)|(?:[A-H]\.))\s+([A-Z][^\n]{1,80})$")
_KEYWORD = re.compile(r"^(?:chapter|section|part|appendix|article)\s+[\dIVXA-Z]+[.:]?\s*\S.{0,70}$", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_HYPHENATED = re.compile(r"(\w)-\n(\w)")
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "vs", "with"}


@dataclass
class _Section:
    title: str | None
    units: list[tuple[str, int]]  # (sentence, page)


def _pypdf() -> Any:
    try:
        import pypdf
    except ImportError as exc:
        raise DependencyMissing(
            "Reading PDFs needs the pypdf package.", hint="Run `pip install 'funes-memory[pdf]'`."
        ) from exc
    return pypdf


def _is_heading(line: str, following: str | None) -> str | None:
    """The heading text if a line looks like one, else None."""
    text = line.strip()
    if not text or len(text) > 90 or (text.endswith((".", ",", ";", ":")) and not _NUMBERED.match(text)):
        return None
    words = text.split()
    if _NUMBERED.match(text) and len(words) <= 10 and _title_like(words[1:]):
        return text
    if _KEYWORD.match(text) and len(words) <= 14:
        return text
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 3 or len(words) > 10:
        return None
    body_follows = following is not None and len(following.strip()) > len(text)
    if text.isupper() and body_follows:
        return text
    capitalised = all(w[0].isupper() or w.lower() in _SMALL_WORDS or not w[0].isalpha() for w in words)
    if (
        capitalised
        and len(words) <= 8
        and body_follows
        and not text.endswith("?")
        and not any(ch.isdigit() for ch in text[:1])
    ):
        return text
    return None


def _title_like(words: list[str]) -> bool:
    """Whether most words are capitalised (headings) rather than running prose."""
    if not words:
        return False
    caps = sum(1 for w in words if w[0].isupper() or w.lower() in _SMALL_WORDS or not w[0].isalpha())
    return caps * 2 >= len(words)


def _repeated_lines(pages: list[list[str]]) -> set[str]:
    """Lines (digits masked) that appear on most pages: running headers and footers.

    A line counts only when it repeats word for word, or when its numbers move
    with the page (``Page 3 of 10``, ``ACME — 12``). A line whose other numbers
    change from page to page is data, not a header (issue 9: a PDF with one such
    line per page was refused as having no text).
    """
    if len(pages) < 4:
        return set()
    seen: dict[str, list[tuple[int, str]]] = {}
    for index, lines in enumerate(pages):
        keys = {ln.strip() for ln in lines[:3] + lines[-3:] if 0 < len(ln.strip()) <= 80}
        for raw in keys:
            seen.setdefault(re.sub(r"\d+", "#", raw), []).append((index, raw))
    out: set[str] = set()
    for key, hits in seen.items():
        if len({page for page, _ in hits}) < max(3, len(pages) * 3 // 5):
            continue
        if len({raw for _, raw in hits}) == 1:
            out.add(key)
            continue
        # Some number must keep a fixed distance to the page index on every page: a page counter.
        offsets = [{int(n) - page for n in re.findall(r"\d+", raw)} for page, raw in hits]
        if set.intersection(*offsets):
            out.add(key)
    return out


def _has_images(page: Any) -> bool:
    try:
        resources = page.get("/Resources") or {}
        xobjects = resources.get("/XObject") or {}
        return any(obj.get_object().get("/Subtype") == "/Image" for obj in xobjects.values())
    except Exception:  # a damaged resource dictionary just means "unknown"
        return False


def _open(data: bytes, options: ReadOptions) -> Any:
    pypdf = _pypdf()
    name = options.name
    if b"%PDF-" not in data[:1024]:
        raise InvalidInput(f"{name} is not a PDF (no %PDF header).", hint="Check the file, or pass the right --kind.")
    if b"%%EOF" not in data[-4096:]:
        raise InvalidInput(
            f"{name} is a truncated PDF (its end-of-file marker is missing).",
            hint="Download or export the PDF again; nothing from it was indexed.",
        )
    try:
        reader = pypdf.PdfReader(BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt(options.password or "")
            except pypdf.errors.DependencyError as exc:
                raise DependencyMissing(
                    f"{name} is encrypted with AES, which needs the cryptography package.",
                    hint="Run `pip install cryptography`.",
                ) from exc
            if not ok:
                raise InvalidInput(
                    f"{name} is password-protected" + (" and the password is wrong." if options.password else "."),
                    hint="Pass the password with --password (API: password=...), or remove it and ingest again.",
                )
        _ = len(reader.pages)
    except (InvalidInput, DependencyMissing):
        raise
    except Exception as exc:
        raise InvalidInput(
            f"{name} is a corrupt PDF ({type(exc).__name__}: {exc}).",
            hint="Open and re-save it with a PDF viewer, or export it again; nothing from it was indexed.",
        ) from exc
    return reader


def read_pdf(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """A PDF as section-aware chunks with page numbers."""
    name = options.name
    reader = _open(data, options)
    raw_pages: list[list[str]] = []
    image_pages: list[int] = []
    clock = Budget(options)  # ingest_file_seconds bounds every reader (issue 31)
    with warnings.catch_warnings():
        # pypdf warns about minor spec violations; they must not fail the read.
        warnings.simplefilter("ignore")
        for number, page in enumerate(reader.pages, 1):
            clock.spend()
            try:
                text = page.extract_text() or ""
            except Exception as exc:
                raise InvalidInput(
                    f"{name} is a corrupt PDF: page {number} cannot be read ({type(exc).__name__}: {exc}).",
                    hint="Open and re-save it with a PDF viewer; nothing from it was indexed.",
                ) from exc
            text = _HYPHENATED.sub(r"\1\2", text.replace("\r\n", "\n").replace("\r", "\n"))
            lines = [ln.strip() for ln in text.split("\n")]
            raw_pages.append([ln for ln in lines if ln])
            if not raw_pages[-1] and _has_images(page):
                image_pages.append(number)
    total = len(raw_pages)
    if not any(raw_pages):
        if image_pages:
            raise InvalidInput(
                f"{name} is a scanned PDF: its {total} page(s) are images with no text layer.",
                hint="Run OCR on it first (e.g. `ocrmypdf in.pdf out.pdf`) and ingest the result.",
            )
        raise InvalidInput(f"{name} has no extractable text.", hint="Check the file; if it is scanned, run OCR first.")
    repeated = _repeated_lines(raw_pages)
    sections: list[_Section] = [_Section(title=None, units=[])]
    for page_no, lines in enumerate(raw_pages, 1):
        kept = [ln for ln in lines if not _PAGE_NUMBER.match(ln) and re.sub(r"\d+", "#", ln) not in repeated]
        if not kept:
            # A page that would be left empty keeps its repeated lines: they are its content.
            kept = [ln for ln in lines if not _PAGE_NUMBER.match(ln)]
        buffer: list[str] = []

        def flush(page: int = page_no, buf: list[str] = buffer) -> None:
            if buf:
                sections[-1].units.extend((s, page) for s in split_sentences(" ".join(buf)))
                buf.clear()

        for i, line in enumerate(kept):
            heading = _is_heading(line, kept[i + 1] if i + 1 < len(kept) else None)
            if heading:
                flush()
                sections.append(_Section(title=heading, units=[]))
            else:
                buffer.append(line)
        flush()
    chunks: list[Chunk] = []
    titles: list[str] = []
    for section in sections:
        if not section.units:
            continue
        if section.title:
            titles.append(section.title)
        budget = chunker.budget(section.title)
        units: list[tuple[str, int, int]] = []
        for sentence, page in section.units:
            n = chunker.count(sentence)
            if n > budget:
                units.extend((p, chunker.count(p), page) for p in chunker.split(sentence, budget))
            else:
                units.append((sentence, n, page))
        groups = pack([n for _, n, _ in units], budget, chunker.overlap)
        for part, group in enumerate(groups, 1):
            text = " ".join(units[i][0] for i in group)
            first, last = units[group[0]][2], units[group[-1]][2]
            locator: dict[str, Any] = {"page": first}
            if last != first:
                locator["end_page"] = last
            if section.title:
                locator["section"] = section.title
            if len(groups) > 1:
                locator["part"] = part
            chunks.append(
                Chunk(
                    text=text,
                    locator=locator,
                    title=section.title,
                    metadata={"page": first, "end_page": last, "section": section.title or "", "part": part},
                )
            )
    metadata: dict[str, Any] = {"pages": total}
    info = _info(reader)
    if info:
        metadata["info"] = info
    empty = [n for n, lines in enumerate(raw_pages, 1) if not lines]
    warnings_out: list[str] = []
    if empty:
        metadata["empty_pages"] = empty
    if image_pages:
        metadata["image_only_pages"] = image_pages
        warnings_out.append(
            f"{name}: {len(image_pages)} page(s) are images without text ({_page_list(image_pages)}); "
            "run OCR to index them."
        )
    if titles:
        metadata["sections"] = titles[:200]
    return Parsed(source_type="pdf", chunks=chunks, metadata=metadata, warnings=warnings_out, pages=total)


def _page_list(pages: list[int]) -> str:
    shown = ", ".join(str(p) for p in pages[:10])
    return "pages " + shown + (f" and {len(pages) - 10} more" if len(pages) > 10 else "")


def _info(reader: Any) -> dict[str, str]:
    try:
        meta = reader.metadata or {}
        out = {}
        for key in ("/Title", "/Author", "/Subject", "/CreationDate"):
            value = meta.get(key)
            if value:
                out[key[1:].lower()] = str(value)[:300]
        return out
    except Exception:  # document info is optional; a broken one is ignored
        return {}
