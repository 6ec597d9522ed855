"""Distinctive tokens of forgotten text, kept only as keyed hashes, and the byte scan that looks for them.

A receipt must let ``funes verify-forgotten`` look for the forgotten text
without holding it. So a forget takes the text's *distinctive tokens* (words
of at least 6 characters, or of at least 4 mixing letters and digits; none
that any remaining record holds, none that Funes's own code spells) and
keeps, for each, ``HMAC-SHA256(salt, token)`` cut to 16 hex digits, with a
fresh random salt per receipt. Verifying cuts every file into words, hashes
each word of a kept length with the salt, and reports each match with its
file and byte offset.

What the hashes allow: confirming a guessed word (whoever has the receipt
has the salt, so a guess can be hashed and compared). What they do not:
listing the words. docs/forgetting.md says so.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_BYTES_WORD = re.compile(rb"(?:[A-Za-z0-9_]|[\xc2-\xf4][\x80-\xbf]+)+")
_BLOCK = 8 << 20
_MAX_TOKENS = 2000


def candidate_tokens(texts: Iterable[str]) -> set[str]:
    """The words of ``texts`` long or odd enough to say the text was there (case-folded)."""
    words: set[str] = set()
    for text in texts:
        words.update(_WORD.findall((text or "").casefold()))
    out: set[str] = set()
    for word in words:
        if len(word) < 4 or word.isdigit() or not any(c.isalpha() for c in word):
            continue
        if len(word) >= 6 or any(c.isdigit() for c in word):
            out.add(word)
    return out


def token_hash(salt: bytes, token: str) -> str:
    """The keyed hash kept for one token."""
    return hmac.new(salt, token.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def seal(tokens: Iterable[str]) -> dict[str, Any]:
    """A receipt's ``tokens`` block: salt, hashes and the lengths to hash (the longest tokens first, capped)."""
    chosen = sorted(set(tokens), key=lambda t: (-len(t), t))[:_MAX_TOKENS]
    salt = secrets.token_bytes(16)
    return {
        "scheme": "hmac-sha256/16",
        "salt": salt.hex(),
        "count": len(chosen),
        "lengths": sorted({len(t.encode("utf-8")) for t in chosen}),
        "hashes": sorted(token_hash(salt, t) for t in chosen),
    }


def unspelled(paths: Iterable[str], tokens: set[str], salt: str) -> list[str]:
    """``paths`` for a receipt: a path spelling a forgotten token is kept only as its keyed hash.

    A memory-store mirror is named after the memory's path, and a note's file name
    may be a forgotten word: the tombstone would otherwise hold what it proves gone.
    Whoever holds the receipt (and so its salt) can still check a path they know.
    """
    key = bytes.fromhex(salt)
    return [f"hmac-sha256/16:{token_hash(key, path)}" if candidate_tokens([path]) & tokens else path for path in paths]


def _words(data: bytes, base: int) -> Iterator[tuple[int, bytes]]:
    for match in _BYTES_WORD.finditer(data):
        yield base + match.start(), match.group(0)


def scan_file(path: Path, tokens: dict[str, Any], needles: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every place in one file where a hashed token (any case) or a plain needle (an id) occurs."""
    salt = bytes.fromhex(str(tokens.get("salt") or ""))
    hashes = set(tokens.get("hashes") or ())
    lengths = set(tokens.get("lengths") or ())
    plain = [n.encode("utf-8") for n in needles if n]
    found: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    overlap = max([*lengths, *(len(n) for n in plain), 1])
    try:
        fh = path.open("rb")
    except FileNotFoundError:  # gone since it was listed (a dropped table's file, a checkpointed WAL): holds nothing
        return []
    except OSError as exc:
        return [{"file": str(path), "error": str(exc)}]
    with fh:
        offset = 0
        tail = b""
        while True:
            block = fh.read(_BLOCK)
            if not block:
                break
            data = tail + block
            base = offset - len(tail)
            for at, word in _words(data, base):
                if len(word) not in lengths:
                    continue
                token = word.decode("utf-8", "ignore").casefold()
                digest = token_hash(salt, token)
                if digest in hashes and (at, digest) not in seen:
                    seen.add((at, digest))
                    found.append({"file": str(path), "offset": at, "token_hash": digest, "word": token})
            for needle in plain:
                start = data.find(needle)
                while start != -1:
                    if (base + start, needle.decode()) not in seen:
                        seen.add((base + start, needle.decode()))
                        found.append({"file": str(path), "offset": base + start, "id": needle.decode()})
                    start = data.find(needle, start + 1)
            offset += len(block)
            tail = data[-overlap:]
    return found


def files_under(root: Path) -> list[Path]:
    """Every regular file below ``root`` (none when it does not exist)."""
    if not root.is_dir():
        return [root] if root.is_file() else []
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
