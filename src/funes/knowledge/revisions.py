"""An edited note keeps its records: a section whose text changed becomes the next version of its record.

Re-reading a changed Markdown file (a note edited on disk and picked up by
folder sync or ``funes watch``, or ingested again) used to replace every
chunk with a new record: the old text was gone from history and nothing said
when it stopped being true. Now each new chunk is paired with the stored
chunk of the same section (the same header path and part, in order of
occurrence when a heading repeats). A pair keeps the stored record (its id,
creation time, pin and access counts); a changed text becomes its next
version, the old one kept valid until the edit (issue 25: every path that
replaces a fact supersedes). Unpaired chunks are new records; stored chunks
left unpaired go with the swap, as before.

Only chunks that carry a header path are paired: a PDF's or a sheet's chunk
boundaries move with an edit, so "the same place" would pair unrelated text.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from typing import Any

from ..memory.versioning import superseded
from ..models import Memory


def _section(memory: Memory) -> tuple[str, Any] | None:
    """Where a chunk sits in its note, without its line (lines move when text is added above)."""
    locator = memory.source.locator if memory.source is not None else {}
    path = locator.get("header_path")
    if not path:
        return None
    return str(path), locator.get("part")


def revised(stored: Iterable[Memory], records: Sequence[Memory]) -> list[Memory]:
    """``records`` (a document's new chunks) with each one that takes a stored chunk's place made its next state."""
    waiting: dict[tuple[str, Any], deque[Memory]] = defaultdict(deque)
    for old in sorted(stored, key=lambda m: int(m.metadata.get("chunk_index", 0))):
        key = _section(old)
        if key is not None:
            waiting[key].append(old)
    out: list[Memory] = []
    for new in records:
        key = _section(new)
        old = waiting[key].popleft() if key is not None and waiting.get(key) else None
        if old is None:
            out.append(new)
            continue
        # The stored record, moved to the new text (a version when it changed), with the new chunk's place.
        out.append(superseded(old, new).evolve(metadata=dict(new.metadata), source=new.source, kind=new.kind))
    return out
