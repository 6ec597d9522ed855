"""Lossless export to JSONL and import from it.

Format, one JSON object per line:

* line 1, the header: ``{"type": "funes-export", "format": 1,
  "embedder": {"model_id", "dimensions"}}``;
* then one ``{"type": "memory", "record": {...}, "vectors": [b64, ...]}`` per
  record, oldest first. ``record`` is :meth:`Memory.to_dict` (every field);
  ``vectors`` are little-endian float32, base64-encoded.

Import keeps ids, timestamps, versions and counters, so export → import →
export gives the same bytes. When the export's embedder differs from the
store's, the vectors are ignored and the records re-embedded.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from .errors import InvalidInput
from .models import EmbedderIdentity, Memory

if TYPE_CHECKING:
    from .service import Funes

FORMAT = 1


def _b64(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _unb64(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


class TransferMixin:
    """Export and import of a whole store (mixed into :class:`funes.service.Funes`)."""

    def export_lines(self: Funes, *, tenant: str | None = None) -> Iterator[str]:  # type: ignore[misc]
        """The export, line by line (without newlines)."""
        ident = self.store.identity() or EmbedderIdentity(self.embedder.model_id, self.embedder.dimensions)
        yield json.dumps(
            {
                "type": "funes-export",
                "format": FORMAT,
                "embedder": {"model_id": ident.model_id, "dimensions": ident.dimensions},
            },
            sort_keys=True,
        )
        batch: list[Memory] = []
        for memory in self.store.iter_records(tenant):
            batch.append(memory)
            if len(batch) >= 200:
                yield from self._export_batch(batch)
                batch = []
        if batch:
            yield from self._export_batch(batch)

    def _export_batch(self: Funes, batch: list[Memory]) -> Iterator[str]:  # type: ignore[misc]
        vectors = self.store.vectors_for([m.id for m in batch])
        for memory in batch:
            record = memory.to_dict()
            record.pop("attribution", None)
            yield json.dumps(
                {"type": "memory", "record": record, "vectors": [_b64(v) for v in vectors.get(memory.id, [])]},
                sort_keys=True,
                ensure_ascii=False,
            )

    def export(self: Funes, out: IO[str], *, tenant: str | None = None) -> int:  # type: ignore[misc]
        """Write the export to a text stream; returns the number of records."""
        count = -1
        for line in self.export_lines(tenant=tenant):
            out.write(line + "\n")
            count += 1
        return count

    def import_(self: Funes, lines: Iterable[str]) -> dict[str, int]:  # type: ignore[misc]
        """Read an export; returns counts of imported, unchanged and re-embedded records.

        The whole import is one transaction: a bad line aborts it with nothing written.
        """
        iterator = iter(enumerate(lines, start=1))
        header: dict[str, Any] | None = None
        for number, line in iterator:
            if line.strip():
                header = _parse(line, number)
                break
        if header is None:
            raise InvalidInput("The import is empty.", hint="Pass a file written by `funes export`.")
        if header.get("type") != "funes-export":
            raise InvalidInput(
                "Line 1 is not a Funes export header.", hint="Pass a file written by `funes export`."
            )
        if header.get("format") != FORMAT:
            raise InvalidInput(
                f"Export format {header.get('format')!r} is not supported (this Funes reads {FORMAT}).",
                hint="Export again with this version of Funes.",
            )
        emb = header.get("embedder") or {}
        same_model = (
            emb.get("model_id") == self.embedder.model_id and emb.get("dimensions") == self.embedder.dimensions
        )
        records: list[tuple[Memory, list[np.ndarray] | None]] = []
        for number, line in iterator:
            if not line.strip():
                continue
            item = _parse(line, number)
            if item.get("type") != "memory" or not isinstance(item.get("record"), dict):
                raise InvalidInput(
                    f"Line {number} is not a memory record.", hint="Pass an unmodified `funes export` file."
                )
            try:
                memory = Memory.from_dict(item["record"])
            except (KeyError, ValueError, TypeError) as exc:
                raise InvalidInput(
                    f"Line {number} has an invalid record ({exc}).", hint="Pass an unmodified `funes export` file."
                ) from exc
            vectors = [_unb64(v) for v in item.get("vectors") or []] if same_model else None
            if vectors is not None and any(len(v) != self.embedder.dimensions for v in vectors):
                vectors = None
            records.append((memory, vectors or None))
        existing = self.store.get_many([m.id for m, _ in records])
        todo: list[tuple[Memory, list[np.ndarray] | None]] = []
        unchanged = 0
        for memory, vectors in records:
            if existing.get(memory.id) == memory:
                unchanged += 1
                continue
            todo.append((memory, vectors))
        need = [i for i, (_, v) in enumerate(todo) if v is None]
        embedded = self.embed_records([self._embed_text(todo[i][0]) for i in need]) if need else []
        for i, vectors in zip(need, embedded, strict=True):
            todo[i] = (todo[i][0], vectors)
        self.store.put_many(todo)
        return {"imported": len(todo), "unchanged": unchanged, "reembedded": len(need)}


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"Line {number} of the import is not JSON ({exc.msg}).", hint="Pass a file written by `funes export`."
        ) from exc
    if not isinstance(value, dict):
        raise InvalidInput(f"Line {number} is not a JSON object.", hint="Pass a file written by `funes export`.")
    return value
