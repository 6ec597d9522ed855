"""Lossless export to JSONL and import from it.

Format, one JSON object per line:

* line 1, the header: ``{"type": "funes-export", "format": 1,
  "embedder": {"model_id", "dimensions"}}``;
* then one ``{"type": "document", "document": {...}}`` per managed document
  source (its row: uri, hash, version, status, ...); files without these
  lines (older exports) import unchanged;
* then ``{"type": "memory_store" | "memory_store_version", <type>: {...}}``
  lines, the memory-store tables as stored (issue 27): stores, then their
  immutable versions oldest first, redacted ones with their metadata and
  without their text;
* then ``{"type": "session" | "message" | "usage", <type>: {...}}`` lines, the
  conversation tables as stored (sessions, then messages, then token usage);
* then one ``{"type": "memory", "record": {...}, "vectors": [b64, ...]}`` per
  record, oldest first. ``record`` is :meth:`Memory.to_dict` (every field);
  ``vectors`` are little-endian float32, base64-encoded.

Import keeps ids, timestamps, versions and counters, so export → import →
export gives the same bytes. When the export's embedder differs from the
store's, the vectors are ignored and the records re-embedded.

Import never undoes a redaction or a forget: a version redacted in the store
stays redacted (a record's kept version, a memory-store version), a record
whose current text the store has redacted keeps the store's copy, and the
records a forget receipt of the tenant lists (with their memory-store
versions) are left out and counted as ``forgotten``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from ..models import KINDS, MEMORY_TYPES, SCOPES, EmbedderIdentity, Memory, content_hash
from ..store.base import vector_problem
from .passages import WINDOWS_JOB
from .topics import TOPICS_JOB, unlabelled
from .transfer_rows import check_store_rows, keep_redactions, store_row
from .windows import long_enough

if TYPE_CHECKING:
    from .core import Core

FORMAT = 1


def _b64(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _unb64(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float32)


class Transfer:
    """Export and import of a whole store: a feature service over the core."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.store = core.store
        self.config = core.config

    def export_lines(self, *, tenant: str | None = None, user: str | None = None) -> Iterator[str]:
        """The export, line by line (without newlines); with ``user``, only what that user may see."""
        viewer = None if user is None else self.core.user_of(user)
        if tenant is not None:
            tenant = self.core.tenant_of(tenant)

        def visible(owner: Any) -> bool:
            # Another user's private records, documents and sessions stay out (issue 9).
            return viewer is None or not owner or owner == viewer

        self.core.sync_access()  # counters from recent searches belong in the export
        ident = self.store.identity() or EmbedderIdentity(
            self.core.embedding.embedder.model_id, self.core.embedding.embedder.dimensions
        )
        yield json.dumps(
            {
                "type": "funes-export",
                "format": FORMAT,
                "embedder": {"model_id": ident.model_id, "dimensions": ident.dimensions},
            },
            sort_keys=True,
        )
        # Document sources (issue 3) travel with their chunks, so `funes docs` still knows them after import.
        for doc in getattr(self.store, "iter_documents", lambda _t: iter(()))(tenant):
            if not visible(doc.get("user_id")):
                continue
            yield json.dumps({"type": "document", "document": doc}, sort_keys=True, ensure_ascii=False)
        # Memory stores and their immutable versions (issue 27): team-wide, so every viewer's export has them.
        for kind, row in getattr(self.store, "iter_memory_store_rows", lambda _t: iter(()))(tenant):
            yield json.dumps({"type": kind, kind: row}, sort_keys=True, ensure_ascii=False)
        # Sessions, their messages and token usage (issue 4), so `funes chat history` survives a restore.
        hidden: set[tuple[Any, Any]] = set()
        for kind, row in getattr(self.store, "iter_conversation_rows", lambda _t: iter(()))(tenant):
            if kind == "session" and not visible(row.get("user_id")):
                hidden.add((row.get("tenant"), row.get("id")))
            if (row.get("tenant"), row.get("id" if kind == "session" else "session_id")) in hidden:
                continue
            yield json.dumps({"type": kind, kind: row}, sort_keys=True, ensure_ascii=False)
        batch: list[Memory] = []
        for memory in self.store.iter_records(tenant):
            if not visible(memory.user_id):
                continue
            batch.append(memory)
            if len(batch) >= 200:
                yield from self._export_batch(batch)
                batch = []
        if batch:
            yield from self._export_batch(batch)

    def _export_batch(self, batch: list[Memory]) -> Iterator[str]:
        vectors = self.store.vectors_for([m.id for m in batch])
        for memory in batch:
            record = memory.to_dict()
            record.pop("attribution", None)
            yield json.dumps(
                {"type": "memory", "record": record, "vectors": [_b64(v) for v in vectors.get(memory.id, [])]},
                sort_keys=True,
                ensure_ascii=False,
            )

    def export(self, out: IO[str], *, tenant: str | None = None, user: str | None = None) -> int:
        """Write the export to a text stream; returns the number of records."""
        count = 0
        for line in self.export_lines(tenant=tenant, user=user):
            out.write(line + "\n")
            count += line.startswith('{"record"')
        return count

    def import_(self, lines: Iterable[str], *, tenant: str | None = None) -> dict[str, int]:
        """Read an export; returns counts of imported, unchanged, re-embedded and duplicate records.

        With ``tenant``, everything is imported into that tenant, and an id that
        belongs to another tenant of this store is an error (issue 9: importing
        as tenant B overwrote acme's record and moved it to B). Without it, each
        record keeps the tenant it was exported from. A repeated id is reported
        (the last line wins, counted once). The whole import is one
        transaction and is validated first: invalid input imports nothing.
        """
        into = None if tenant is None else self.core.tenant_of(tenant)
        iterator = iter(enumerate(lines, start=1))
        header: dict[str, Any] | None = None
        for number, line in iterator:
            if line.strip():
                header = _parse(line, number)
                break
        if header is None:
            raise InvalidInput("The import is empty.", hint="Pass a file written by `funes export`.")
        if header.get("type") != "funes-export":
            raise InvalidInput("Line 1 is not a Funes export header.", hint="Pass a file written by `funes export`.")
        if header.get("format") != FORMAT:
            raise InvalidInput(
                f"Export format {header.get('format')!r} is not supported (this Funes reads {FORMAT}).",
                hint="Export again with this version of Funes.",
            )
        emb = header.get("embedder") or {}
        same_model = (
            emb.get("model_id") == self.core.embedding.embedder.model_id
            and emb.get("dimensions") == self.core.embedding.embedder.dimensions
        )
        records: list[tuple[Memory, list[np.ndarray] | None]] = []
        lines_of: dict[str, list[int]] = {}
        documents: list[dict[str, Any]] = []
        conversations: list[tuple[str, dict[str, Any]]] = []
        store_rows: dict[str, list[dict[str, Any]]] = {"memory_store": [], "memory_store_version": []}
        for number, line in iterator:
            if not line.strip():
                continue
            item = _parse(line, number)
            if item.get("type") == "document" and isinstance(item.get("document"), dict):
                doc = _document(item["document"], number)
                documents.append(doc if into is None else {**doc, "tenant": into})
                continue
            if item.get("type") in store_rows and isinstance(item.get(item["type"]), dict):
                row = store_row(item["type"], item[item["type"]], number)
                store_rows[item["type"]].append(row if into is None else {**row, "tenant": into})
                continue
            if item.get("type") in CONVERSATION_ROWS and isinstance(item.get(item["type"]), dict):
                row = _conversation_row(item["type"], item[item["type"]], number)
                conversations.append((item["type"], row if into is None else {**row, "tenant": into}))
                continue
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
            memory = _validated(memory, number, self.config.max_content_bytes)
            if into is not None:
                memory = memory.evolve(tenant=into)
            lines_of.setdefault(memory.id, []).append(number)
            raw_vectors = _vectors(item.get("vectors"), number)
            vectors = raw_vectors if same_model else None
            if vectors is not None and any(len(v) != self.core.embedding.embedder.dimensions for v in vectors):
                vectors = None
            records.append((memory, vectors or None))
        # A repeated id: the last line wins, and the report says so instead of counting it twice.
        latest = {m.id: (m, v) for m, v in records}
        duplicates = len(records) - len(latest)
        records = list(latest.values())
        existing = self.store.get_many([m.id for m, _ in records])
        self._check_references(records, existing, documents, conversations, lines_of)
        check_store_rows(self.store, store_rows)
        gone = self._forgotten(
            {m.tenant for m, _ in records} | {r["tenant"] for r in store_rows["memory_store_version"]}
        )
        forgotten = sum(m.id in gone for m, _ in records)
        records = [(m, v) for m, v in records if m.id not in gone]
        versions = [r for r in store_rows["memory_store_version"] if r["memory_id"] not in gone]
        todo: list[tuple[Memory, list[np.ndarray] | None]] = []
        unchanged = 0
        for memory, vectors in records:
            there = existing.get(memory.id)
            memory = memory if there is None else keep_redactions(memory, there)
            if there == memory:
                unchanged += 1
                continue
            todo.append((memory, vectors))
        need = [i for i, (_, v) in enumerate(todo) if v is None]
        embedded = self.core.embedding.embed_memories([todo[i][0] for i in need]) if need else []
        for i, vectors in zip(need, embedded, strict=True):
            todo[i] = (todo[i][0], vectors)
        # One transaction for everything: a failure leaves the store as it was.
        with self.store.transaction():
            if conversations:
                self.store.import_conversation_rows(conversations)  # type: ignore[attr-defined]
            if documents:
                self.store.import_documents(documents, todo)  # type: ignore[attr-defined]
            else:
                self.store.put_many(todo)
            if store_rows["memory_store"] or versions:
                self.store.import_memory_store_rows(store_rows["memory_store"], versions)  # type: ignore[attr-defined]
            for tenant in sorted({m.tenant for m, _ in todo if unlabelled(m)}):  # an export made before topics
                self.core.enqueue_job(TOPICS_JOB, {}, tenant=tenant, dedupe_key=f"{TOPICS_JOB}:{tenant}")
            # Vectors of an export made before passage windows: the job adds the windows the records lack.
            for tenant in sorted({m.tenant for m, v in todo if v and len(v) == 1 and long_enough(m)}):
                self.core.enqueue_job(WINDOWS_JOB, {}, tenant=tenant, dedupe_key=f"{WINDOWS_JOB}:{tenant}")
        result = {"imported": len(todo), "unchanged": unchanged, "reembedded": len(need), "duplicates": duplicates}
        # Only when the file had them, so the counts of an export without memory stores stay as they were.
        extra = {
            "memory_stores": len(store_rows["memory_store"]),
            "memory_store_versions": len(versions),
            "forgotten": forgotten + len(store_rows["memory_store_version"]) - len(versions),
        }
        return result | {k: v for k, v in extra.items() if v}

    def _forgotten(self, tenants: set[str]) -> set[str]:
        """The record ids a forget receipt of these tenants lists: an import must not bring them back."""
        receipts = getattr(self.store, "list_receipts", None)
        if receipts is None:
            return set()
        return {
            r["id"] for t in tenants for receipt in receipts(t, limit=1_000_000) for r in receipt.get("records", [])
        }

    def _check_references(
        self,
        records: list[tuple[Memory, list[np.ndarray] | None]],
        existing: dict[str, Memory],
        documents: list[dict[str, Any]],
        conversations: list[tuple[str, dict[str, Any]]],
        lines_of: dict[str, list[int]],
    ) -> None:
        """Refuse ids owned by another tenant, chunks of unknown documents and messages of unknown sessions."""
        hint = "Fix the file or export again; nothing was imported."
        for memory, _ in records:
            line = lines_of[memory.id][-1]
            there = existing.get(memory.id)
            if there is not None and there.tenant != memory.tenant:
                raise InvalidInput(
                    f"Line {line}: record {memory.id} belongs to another tenant in this store; nothing was imported.",
                    hint="Import it into that tenant (--tenant), or into a new store (--db NEW.db).",
                )
        doc_ids = {d["id"] for d in documents}
        get_document = getattr(self.store, "get_document", None)
        for memory, _ in records:
            source = memory.source
            if memory.kind != "document_chunk" or source is None or not source.source_id:
                continue
            if source.source_id in doc_ids:
                continue
            known = get_document(source.source_id) if get_document is not None else None
            if known is None or known.get("tenant") != memory.tenant:
                raise InvalidInput(
                    f"Line {lines_of[memory.id][-1]}: document chunk {memory.id} belongs to document "
                    f"{source.source_id}, which is neither in the file nor in this store.",
                    hint=hint,
                )
        sessions = {(r["tenant"], r["id"]) for kind, r in conversations if kind == "session"}
        for kind, row in conversations:
            if kind == "session" or (row["tenant"], row["session_id"]) in sessions:
                continue
            if self.store.get_session(row["tenant"], row["session_id"]) is None:
                raise InvalidInput(
                    f"A {kind} row refers to session {row['session_id']!r}, which is neither in the file nor in "
                    "this store.",
                    hint=hint,
                )


def _vectors(raw: Any, number: int) -> list[np.ndarray]:
    """The vectors of an export line, checked: base64 text of float32 values, finite and not all zero."""
    hint = 'Fix that line, or drop its "vectors" to have the record re-embedded.'
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise InvalidInput(f'Line {number} has "vectors" that are not a list of base64 strings.', hint=hint)
    out: list[np.ndarray] = []
    for part, text in enumerate(raw, 1):
        try:
            vector = _unb64(text)
        except (ValueError, binascii.Error) as exc:
            raise InvalidInput(
                f"Line {number} has vector {part} that is not base64 float32 data ({exc}).", hint=hint
            ) from exc
        problem = vector_problem(vector) if len(vector) else "is empty"
        if problem is not None:
            raise InvalidInput(f"Line {number} has vector {part} that {problem}.", hint=hint)
        out.append(vector)
    return out


def _validated(memory: Memory, number: int, max_bytes: int) -> Memory:
    """The record if every field is acceptable (the same rules as remember), else an error naming the line."""
    hint = "Fix that line or export again with `funes export`."
    problem = None
    if not isinstance(memory.content, str) or not memory.content.strip():
        problem = "empty content"
    elif len(memory.content.encode("utf-8", "surrogatepass")) > max_bytes:
        problem = f"content over max_content_bytes ({max_bytes:,})"
    elif memory.memory_type not in MEMORY_TYPES:
        problem = f"memory type {memory.memory_type!r} (use one of {', '.join(MEMORY_TYPES)})"
    elif memory.scope not in SCOPES:
        problem = f"scope {memory.scope!r} (use one of {', '.join(SCOPES)})"
    elif memory.kind not in KINDS:
        problem = f"kind {memory.kind!r} (use one of {', '.join(KINDS)})"
    elif not 0.0 <= memory.importance <= 1.0:
        problem = f"importance {memory.importance!r} (use 0 to 1)"
    elif memory.scope == "project" and not memory.project_id:
        problem = "scope 'project' without a project_id"
    elif memory.scope == "session" and not memory.session_id:
        problem = "scope 'session' without a session_id"
    elif not isinstance(memory.id, str) or not memory.id or not isinstance(memory.tenant, str):
        problem = "id and tenant must be text"
    elif not memory.tenant.strip():
        problem = "an empty tenant"
    elif len(json.dumps(memory.metadata, ensure_ascii=False, default=str)) > max_bytes:
        problem = f"metadata over max_content_bytes ({max_bytes:,})"  # a 300 MB field was accepted (issue 9)
    if problem:
        raise InvalidInput(f"Line {number} has an invalid record: {problem}.", hint=hint)
    try:
        memory.content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"Line {number} has content that is not valid Unicode text.", hint=hint) from exc
    # A hand-edited export may carry a stale hash; dedupe relies on it being right.
    fresh = content_hash(memory.content)
    return memory if memory.content_hash == fresh else memory.evolve(content_hash=fresh)


CONVERSATION_ROWS: dict[str, tuple[str, ...]] = {
    "session": ("tenant", "id", "created_at", "last_activity"),
    "message": ("id", "tenant", "session_id", "seq", "role", "content", "created_at"),
    "usage": ("tenant", "session_id", "at", "prompt_tokens", "completion_tokens"),
}


def _conversation_row(kind: str, row: dict[str, Any], number: int) -> dict[str, Any]:
    """A session, message or usage row from an export line, checked for the fields the store needs."""
    missing = [k for k in CONVERSATION_ROWS[kind] if row.get(k) in (None, "")]
    if missing:
        raise InvalidInput(
            f"Line {number} has an invalid {kind} (missing {', '.join(missing)}).",
            hint="Pass an unmodified `funes export` file.",
        )
    return row


def _document(row: dict[str, Any], number: int) -> dict[str, Any]:
    """A document source row from an export line, checked for the fields the store needs."""
    required = ("id", "tenant", "scope", "vis", "uri", "name", "kind", "status", "created_at", "updated_at")
    missing = [k for k in required if row.get(k) in (None, "")]
    if missing:
        raise InvalidInput(
            f"Line {number} has an invalid document (missing {', '.join(missing)}).",
            hint="Pass an unmodified `funes export` file.",
        )
    return row


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
