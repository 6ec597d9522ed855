"""Write-back and capture: memories appended to the day's Markdown file, and ``<save_memory>`` tags.

``remember(..., to_markdown=True)`` stores the memory as usual, then appends
it to ``YYYY-MM-DD.md`` in the memory folder as a readable section (time,
type, importance, tags) carrying the marker ``<!-- funes:<id> -->``. The
folder sync leaves marked sections out of the index while the memory they
copy exists unchanged, so the watcher never creates a second copy; a
section edited by hand becomes a note of its own. The file is only ever
appended to, never rewritten.

``capture(text)`` turns ``<save_memory>…</save_memory>`` (or ``<save
memory>``) tags in any text into memories, for models without tool calling.
Attributes such as ``type="preference"`` and ``importance="0.9"`` are
honoured.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ..errors import InvalidInput, NotFound
from ..memory.record_input import RecordFields
from ..models import Memory, RememberResult, SourceRef, to_epoch, utcnow

if TYPE_CHECKING:
    from ..knowledge.folders import Folder, Folders
    from ..memory.core import Core

_TAG = re.compile(r"<save[_ ]memory\b([^>]*)>(.*?)</save[_ ]memory\s*>", re.IGNORECASE | re.DOTALL)
_ATTR = re.compile(r"""([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
#: Tag attributes a capture honours, and the remember() field each sets.
ATTRIBUTES = ("type", "importance", "scope", "project", "session", "title", "topic", "pinned", "tags", "expires_at")


class Capture:
    """Write memories back to Markdown and capture ``<save_memory>`` tags (a feature service)."""

    def __init__(self, core: Core, folders: Folders) -> None:
        self.core = core
        self.folders = folders

    def remember(
        self,
        content: str,
        *,
        to_markdown: bool = False,
        tags: Iterable[str] | None = None,
        folder: str | os.PathLike[str] | None = None,
        **fields: Unpack[RecordFields],
    ) -> Memory:
        """Store a memory (see :meth:`funes.memory.core.Core.remember`); ``to_markdown`` also appends it to the day's file.

        ``tags`` are kept in the record's metadata; ``folder`` is the memory
        folder written to (default: the default memory folder).
        """
        if tags:
            fields["metadata"] = {**(fields.get("metadata") or {}), "tags": [str(t) for t in tags]}
        memory = self.core.remember(content, **fields)
        if to_markdown:
            self.write_back(memory, folder=folder)
        return memory

    def write_back(self, memory: Memory, *, folder: str | os.PathLike[str] | None = None) -> Path:
        """Append a stored memory to today's ``YYYY-MM-DD.md`` in the folder (once) and sync the folder.

        The record is read again first: a copy held from before a forget (or a delete, or an edit) must not
        write words that are gone back into a file, where the sync would index them as a note. The read and the
        append hold the tenant's forget lock (``store.unforgotten_write``): a forget plans after the section is in
        the file (and cuts it), or purges before the read (and nothing is written), never in between.
        """
        with self.core.store.unforgotten_write(memory.tenant, to_epoch(utcnow()), f"writing back {memory.id}"):
            path, registered = self._append(memory, folder)
        self.folders.sync(registered.path, tenant=registered.tenant)
        return path

    def _append(self, memory: Memory, folder: str | os.PathLike[str] | None) -> tuple[Path, Folder]:
        current = self.core.store.get(memory.id)
        if current is None:
            raise NotFound(
                f"No memory {memory.id}: it was deleted or forgotten; nothing was written to Markdown.",
                hint="Remember the text again if it should be kept.",
            )
        memory = current
        registered = self.folders.folder(folder, tenant=memory.tenant)
        root = Path(registered.path)
        root.mkdir(parents=True, exist_ok=True)
        now = datetime.now().astimezone()
        path = root / f"{now:%Y-%m-%d}.md"
        marker = f"<!-- funes:{memory.id} -->"
        if path.exists() and marker in path.read_text(encoding="utf-8", errors="replace"):
            return path, registered  # the same memory remembered twice is one record and one section
        tags = [str(t) for t in (memory.metadata or {}).get("tags") or []]
        lines = [
            f"## {now:%H:%M} {memory.memory_type} (importance {memory.importance:.2f})",
            marker,
            "",
            memory.content,
            "",
        ]
        if tags:
            lines += [f"- tags: {', '.join(tags)}", ""]
        head = "" if path.exists() and path.stat().st_size else f"# {now:%Y-%m-%d}\n\n"
        # Append mode only: another writer's sections (a task summary, a hand edit) are never overwritten.
        with path.open("a", encoding="utf-8") as out:
            out.write(head + "\n".join(lines) + "\n")
        return path, registered

    def capture(
        self, text: str, *, to_markdown: bool = False, folder: str | None = None, **defaults: Unpack[RecordFields]
    ) -> list[RememberResult]:
        """Remember each ``<save_memory>`` (or ``<save memory>``) tag in ``text``; one result per tag, in order.

        A tag with a bad attribute (``importance="high"``) is an ``error``
        result with a hint; the others are still stored.
        """
        items: list[dict[str, Any]] = []
        problems: dict[int, InvalidInput] = {}
        for index, match in enumerate(_TAG.finditer(text)):
            item: dict[str, Any] = {"content": html.unescape(match.group(2)).strip()}
            for name, *values in _ATTR.findall(match.group(1)):
                key, value = name.lower().replace("-", "_"), next((v for v in values if v), "")
                if key not in ATTRIBUTES:
                    problems[index] = InvalidInput(
                        f"<save_memory> has an unknown attribute {name!r}.",
                        hint=f"Use: {', '.join(ATTRIBUTES)}.",
                    )
                elif key == "pinned":
                    item[key] = value.lower() in ("1", "true", "yes")
                elif key == "importance":
                    try:
                        item[key] = float(value)
                    except ValueError:
                        problems[index] = InvalidInput(
                            f"<save_memory> importance {value!r} is not a number.",
                            hint='Use a value from 0 to 1, e.g. importance="0.8".',
                        )
                elif key == "tags":
                    item["metadata"] = {"tags": [t.strip() for t in value.split(",") if t.strip()]}
                else:
                    item[key] = value
            items.append(item)
        # Text the assistant wrote is the agent's, never "user-stated" (issue 25).
        defaults.setdefault("source", SourceRef(type="agent"))
        results = self.core.remember_many(
            [{"content": ""} if i in problems else item for i, item in enumerate(items)], **defaults
        )
        out = [
            RememberResult(i, "error", error=problems[i]) if i in problems else result
            for i, result in enumerate(results)
        ]
        if to_markdown:
            for result in out:
                if result.memory is not None and result.status == "created":
                    self.write_back(result.memory, folder=folder)
        return out
