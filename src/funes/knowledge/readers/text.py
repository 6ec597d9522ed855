"""Plain text: decoding (with encoding detection) and sentence-aware chunking."""

from __future__ import annotations

import codecs
import unicodedata

from ...errors import InvalidInput
from ...memory.chunking import Chunker
from .base import Chunk, Parsed, ReadOptions

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_DETECT_BYTES = 256 * 1024
_ENCODING_HINT = "Pass the encoding with --encoding NAME (API: encoding='cp1252'), e.g. cp1252, latin-1 or shift_jis."


def _binary_error(name: str) -> InvalidInput:
    return InvalidInput(
        f"{name} looks like a binary file, not text.",
        hint="Ingest text, Markdown, PDF, .xlsx/.csv or chat exports; if it really is text, "
        "pass its encoding with --encoding NAME.",
    )


def _control_share(text: str) -> float:
    sample = text[:20000]
    if not sample:
        return 0.0
    bad = sum(1 for ch in sample if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")
    return bad / len(sample)


def decode(data: bytes, name: str, encoding: str | None = None) -> tuple[str, str, bool]:
    """Bytes as text: (text, encoding used, whether the encoding was guessed).

    UTF-8 (with or without a BOM) and BOM-marked UTF-16/32 are read as such;
    anything else is detected with charset-normalizer, or refused with a
    message naming the flag to pass.
    """
    if encoding:
        try:
            codecs.lookup(encoding)
        except LookupError as exc:
            raise InvalidInput(f"Unknown encoding {encoding!r}.", hint=_ENCODING_HINT) from exc
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{name} is not valid {encoding} (byte {exc.start}).", hint=_ENCODING_HINT) from exc
        return _check_text(text, name), encoding, False
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return _check_text(data.decode(codec), name), codec, False
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{name} starts with a {codec} marker but is not valid {codec}.", hint=_ENCODING_HINT
                ) from exc
    if b"\x00" in data[:8192]:
        raise _binary_error(name)
    try:
        return _check_text(data.decode("utf-8"), name), "utf-8", False
    except UnicodeDecodeError:
        pass
    guessed = _detect(data)
    if guessed is None:
        raise InvalidInput(f"{name} is not UTF-8 and its encoding could not be detected.", hint=_ENCODING_HINT)
    try:
        text = data.decode(guessed)
    except (UnicodeDecodeError, LookupError) as exc:
        raise InvalidInput(
            f"{name} is not UTF-8; it looks like {guessed} but does not decode as such.", hint=_ENCODING_HINT
        ) from exc
    return _check_text(text, name), guessed, True


def _detect(data: bytes) -> str | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    matches = list(from_bytes(data[:_DETECT_BYTES]))
    if not matches:
        return None
    best = matches[0]
    # Short Western texts score nearly the same in several single-byte code
    # pages; cp1252, by far the most common of them, wins a near tie.
    for match in matches:
        if match.encoding == "cp1252" and match.chaos <= best.chaos + 0.1 and match.coherence >= best.coherence - 0.05:
            return "cp1252"
    return str(best.encoding)


def _check_text(text: str, name: str) -> str:
    if _control_share(text) > 0.05:
        raise _binary_error(name)
    if not text.strip():
        raise InvalidInput(f"{name} is empty.", hint="Add content to the file, or leave it out.")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_note(name: str, encoding: str, guessed: bool) -> list[str]:
    """A warning to show when the encoding was guessed."""
    if not guessed:
        return []
    return [f"{name} is not UTF-8; read it as {encoding} (detected). Pass --encoding NAME if that is wrong."]


def read_text(data: bytes, options: ReadOptions, chunker: Chunker) -> Parsed:
    """Plain text, chunked at paragraph and sentence boundaries."""
    text, encoding, guessed = decode(data, options.name, options.encoding)
    parts = chunker.split(text)
    chunks = [
        Chunk(text=part, locator={"part": i} if len(parts) > 1 else {}, metadata={"part": i, "parts": len(parts)})
        for i, part in enumerate(parts, 1)
    ]
    return Parsed(
        source_type="text",
        chunks=chunks,
        metadata={"encoding": encoding, "characters": len(text)},
        warnings=decode_note(options.name, encoding, guessed),
    )
