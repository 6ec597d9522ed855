"""Managed document sources: ingest files into attributed records.

Each ingested file (or named blob of bytes) is a **document**: an id, its
uri (the absolute path), a content hash of its bytes, a version, a status
(``indexed``, or ``failed`` with the reason), its chunk count and when it
was indexed. Its chunks are ordinary memory records whose
``source.source_id`` is the document id, so search filters by source id and
type work unchanged.

Invariants:

* Re-ingesting an unchanged file (same bytes, same chunking settings) does
  nothing. A changed file is read and embedded first, then its old chunks
  are swapped for the new ones and the version bumped in ONE transaction:
  searches never see half a document, or two versions at once.
* A file that cannot be read is recorded as ``failed`` with the reason and
  indexes nothing; if an older version was indexed, it stays searchable.
* Removing a document removes its chunks and their vectors.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack, cast

import numpy as np

from ..errors import EmbedderUnavailable, ForgetCrossed, FunesError, InvalidInput, NotFound
from ..memory.chunking import Chunker, chunk_size_for
from ..memory.record_input import check_scope
from ..memory.topics import document_topics
from ..models import Memory, SourceRef, new_id, to_epoch, utcnow
from ..store import vis_key
from .paths import InputFile, document_uri, expand_paths, file_date, read_regular
from .readers import EXTENSIONS, READER_VERSION, Parsed, ReadOptions, normalize_kind, read
from .results import Document, IngestProgress, IngestReport, IngestResult, ProgressCallback
from .revisions import revised

if TYPE_CHECKING:
    from ..memory.core import Core

EMBED_SLICE = 256  # chunks embedded between progress reports


class DocumentStore(Protocol):
    """What documents need from a store, beyond the record operations."""

    def get_document(self, doc_id: str) -> dict[str, Any] | None:
        """A document row by id."""
        ...

    def find_document(self, tenant: str, user_id: str | None, vis: str, uri: str) -> dict[str, Any] | None:
        """The document of a uri in a tenant, user space and visibility."""
        ...

    def find_documents_by_uri(self, tenant: str, uri: str) -> list[dict[str, Any]]:
        """Every document of a uri in a tenant."""
        ...

    def list_documents(
        self, tenant: str | None, *, user_id: str | None = None, status: str | None = None, kind: str | None = None
    ) -> list[dict[str, Any]]:
        """Document rows ordered by uri."""
        ...

    def document_chunk_ids(self, doc_id: str) -> list[str]:
        """Ids of a document's records."""
        ...

    def save_document(self, doc: dict[str, Any]) -> None:
        """Insert or update a row without touching chunks."""
        ...

    def replace_document(
        self, doc: dict[str, Any], items: Sequence[tuple[Memory, Sequence[np.ndarray] | None]]
    ) -> None:
        """Swap a document's chunks and update its row in one transaction."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Delete a document with its chunks; returns chunks removed."""
        ...


class IngestOptions(TypedDict, total=False):
    """Options of :meth:`DocumentsMixin.ingest` and :meth:`DocumentsMixin.ingest_paths`.

    kind forces a reader (text, markdown, pdf, sheet, csv, chat); scope,
    project, session, tenant and user place the chunks; encoding and password
    open difficult files; hidden_sheets includes hidden worksheets; force
    re-indexes an unchanged file; metadata is added to every chunk.
    """

    kind: str | None
    scope: str | None
    project: str | None
    session: str | None
    tenant: str | None
    user: str | None
    encoding: str | None
    password: str | None
    hidden_sheets: bool | None
    force: bool
    metadata: dict[str, Any] | None


class Documents:
    """Ingestion and document management: a feature service over the core."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.store = core.store
        self.config = core.config

    # -- helpers ---------------------------------------------------------------
    def _doc_store(self) -> DocumentStore:
        return cast(DocumentStore, self.store)

    def _chunker(self, tenant: str | None = None, project: str | None = None) -> Chunker:
        """The chunker of a project's documents: its chunk_size/chunk_overlap, else the store-wide settings."""
        settings = self.core.projects.effective(self.core.tenant_of(tenant), project)
        size, _ = chunk_size_for(settings["chunk_size"], self.core.embedding.embedder.max_tokens)
        overlap = max(0, min(int(settings["chunk_overlap"]), size // 2))
        return Chunker(self.core.embedding.embedder.count_tokens, size, overlap)

    def chunk_note(self, tenant: str | None = None, project: str | None = None) -> str | None:
        """Why chunks are smaller than the settings ask, when the embedding model's limit caps them (else None)."""
        settings = self.core.projects.effective(self.core.tenant_of(tenant), project)
        return chunk_size_for(settings["chunk_size"], self.core.embedding.embedder.max_tokens)[1]

    def _pipeline(self, hidden: bool, tenant: str | None = None, project: str | None = None) -> str:
        c = self._chunker(tenant, project)
        return (
            f"r{READER_VERSION}:t{c.max_tokens}:o{c.overlap}:l{self.config.long_cell_chars}:"
            f"h{int(hidden)}:{self.core.embedding.embedder.model_id}"
        )

    # -- ingest ------------------------------------------------------------------
    def ingest(
        self,
        source: str | os.PathLike[str] | bytes,
        *,
        name: str | None = None,
        **options: Unpack[IngestOptions],
    ) -> IngestResult:
        """Ingest one file (a path) or bytes as a managed document.

        Bytes need a ``name`` (it is the document's uri, so ingesting the
        same name again updates that document). Raises the reason when the
        input cannot be indexed; the failure is also recorded on the document.
        """
        if isinstance(source, (bytes, bytearray)):
            label = name or "stdin"
            item = InputFile(
                uri=label, name=label, data=bytes(source), size=len(source), extension=Path(label).suffix.lower()
            )
        else:
            items = expand_paths([source])
            if len(items) != 1 or (items[0].path is None and items[0].error is None):
                raise InvalidInput(
                    f"{os.fspath(source)} names {len(items)} files.",
                    hint="Use Funes.ingest_paths() (CLI: funes ingest PATH...) for folders and globs.",
                )
            item = items[0]
            if name:
                item.name = name
        result, error = self._ingest_one(item, **options)
        if error is not None:
            raise error
        note = self.chunk_note(options.get("tenant"), options.get("project"))
        return replace(result, warnings=(note, *result.warnings)) if note and result.chunks else result

    def ingest_paths(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        progress: ProgressCallback | None = None,
        sync: bool = False,
        **options: Unpack[IngestOptions],
    ) -> IngestReport:
        """Ingest files, folders (recursively) and globs; each failure is reported and the rest carry on.

        With ``sync``, each folder named is mirrored: documents ingested from
        under it whose file no longer exists are removed with their chunks.
        """
        paths = list(paths)
        report = self._ingest_items(expand_paths(paths), progress, dict(options))
        note = self.chunk_note(options.get("tenant"), options.get("project"))
        if note and report.indexed:
            report = replace(report, notes=(note,))
        if not sync:
            return report
        removed: list[IngestResult] = []
        for raw in paths:
            folder = Path(os.fspath(raw)).expanduser()
            if folder.is_dir():
                removed += self.prune_missing(folder, tenant=options.get("tenant"), user=options.get("user"))
        return replace(report, results=(*report.results, *removed))

    def prune_missing(
        self, folder: str | os.PathLike[str] | None = None, *, tenant: str | None = None, user: str | None = None
    ) -> list[IngestResult]:
        """Remove the documents (under ``folder``, or all) whose file no longer exists; one result each."""
        root = Path(folder).expanduser().resolve() if folder is not None else None
        out: list[IngestResult] = []
        for doc in self.documents(tenant=tenant, user=user):
            path = Path(doc.uri)
            # Bytes ingested under a name (stdin) have no file to miss.
            if not path.is_absolute() or (root is not None and not path.is_relative_to(root)):
                continue
            if os.path.lexists(path):
                continue
            removed = self._doc_store().delete_document(doc.id)
            out.append(
                IngestResult(uri=doc.uri, name=doc.name, status="removed", document=replace(doc, chunk_count=removed))
            )
        return out

    def _ingest_items(
        self,
        items: list[InputFile],
        progress: ProgressCallback | None,
        options: dict[str, Any] | Callable[[InputFile], dict[str, Any]],
    ) -> IngestReport:
        started = time.monotonic()
        total_bytes = sum(i.size for i in items)
        results: list[IngestResult] = []
        state = {"chunks": 0, "bytes": 0.0}

        def report(current: str | None, extra_bytes: float = 0.0) -> None:
            if progress is not None:
                progress(
                    IngestProgress(
                        files_done=len(results),
                        files_total=len(items),
                        chunks_done=state["chunks"],
                        bytes_done=state["bytes"] + extra_bytes,
                        bytes_total=total_bytes,
                        current=current,
                        elapsed=time.monotonic() - started,
                    )
                )

        for item in items:
            report(item.name)
            base_chunks = state["chunks"]

            def on_chunks(done: int, total: int, item: InputFile = item, base: int = int(base_chunks)) -> None:
                state["chunks"] = base + done
                report(item.name, item.size * (done / total if total else 1.0))

            kwargs = options(item) if callable(options) else options
            result, _ = self._ingest_one(item, on_chunks=on_chunks, **kwargs)
            results.append(result)
            state["chunks"] = base_chunks + (result.chunks if result.status in ("indexed", "updated") else 0)
            state["bytes"] += item.size
            report(None)
        return IngestReport(results=tuple(results), seconds=time.monotonic() - started)

    def _ingest_one(
        self,
        item: InputFile,
        *,
        kind: str | None = None,
        scope: str | None = None,
        project: str | None = None,
        session: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
        encoding: str | None = None,
        password: str | None = None,
        hidden_sheets: bool | None = None,
        force: bool = False,
        metadata: dict[str, Any] | None = None,
        on_chunks: Callable[[int, int], None] | None = None,
        writes: list[Callable[[], None]] | None = None,
        keep: Callable[[Memory], bool] | None = None,
    ) -> tuple[IngestResult, FunesError | None]:
        started, since = time.monotonic(), to_epoch(utcnow())  # what is written rests on the reads from now on
        if item.skipped is not None:
            # Devices and FIFOs are left out before anything reads or records them (issue 9).
            return (
                IngestResult(
                    uri=item.uri,
                    name=item.name,
                    status="skipped",
                    error=item.skipped,
                    hint="Copy its content into a regular file to ingest it.",
                ),
                None,
            )
        tenant_id = self.core.tenant_of(tenant)
        user_id = self.core.user_of(user)
        project_id = self.core.project_of(project)
        scope_name = check_scope(scope, project_id, session)
        if scope_name != "team" and project_id and not self.core.projects.enabled(tenant_id, project_id):
            return (
                IngestResult(uri=item.uri, name=item.name, status="skipped", error=f"project {project_id} is disabled"),
                InvalidInput(
                    f"Project {project_id!r} is disabled: it neither stores nor recalls.",
                    hint=f"Enable it with `funes config set --project {project_id} enabled true`.",
                ),
            )
        vis = vis_key(scope_name, project_id, session)
        store = self._doc_store()
        existing = store.find_document(tenant_id, user_id, vis, item.uri)
        hidden = bool(self.config.ingest_hidden_sheets if hidden_sheets is None else hidden_sheets)
        pipeline = self._pipeline(hidden, tenant_id, project_id)
        requested_kind = normalize_kind(kind)
        data: bytes | None = None

        def fail(error: FunesError) -> tuple[IngestResult, FunesError]:
            doc = None
            # A forget crossed the swap (ForgetCrossed): `existing` may be a forgotten row, so nothing is written.
            if not isinstance(error, ForgetCrossed) and (
                existing is not None or (item.path is not None and item.path.exists()) or item.data is not None
            ):
                doc = self._record_failure(
                    existing, item, error, tenant_id, user_id, scope_name, project_id, session, vis, data
                )
            return (
                IngestResult(
                    uri=item.uri,
                    name=item.name,
                    status="failed",
                    document=doc,
                    error=error.message,
                    hint=error.hint,
                    seconds=time.monotonic() - started,
                ),
                error,
            )

        if item.error is not None:
            return fail(item.error)
        try:
            data = self._load_bytes(item)
        except FunesError as exc:
            return fail(exc)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if (
            existing is not None
            and not force
            and existing["status"] == "indexed"
            and existing["content_hash"] == digest
            and existing["pipeline"] == pipeline
        ):
            doc = Document.from_row(existing)
            return (
                IngestResult(
                    uri=item.uri,
                    name=item.name,
                    status="unchanged",
                    document=doc,
                    pages=doc.pages,
                    warnings=doc.warnings,
                    seconds=time.monotonic() - started,
                ),
                None,
            )
        options = ReadOptions(
            name=item.name,
            extension=item.extension,
            encoding=encoding,
            password=password,
            hidden_sheets=hidden,
            long_cell_chars=int(self.config.long_cell_chars),
            max_unpacked_bytes=int(self.config.max_unpacked_mb) * 1024 * 1024,
            max_cells=int(self.config.max_sheet_cells),
            max_seconds=float(self.config.ingest_file_seconds),
            max_text_bytes=int(self.config.max_text_mb) * 1024 * 1024,
            max_messages=int(self.config.max_chat_messages),
            max_depth=int(self.config.max_markdown_depth),
            max_shared_strings_bytes=int(self.config.max_shared_strings_mb) * 1024 * 1024,
        )
        try:
            parsed = read(data, options, self._chunker(tenant_id, project_id), requested_kind)
            chunks = [c for c in parsed.chunks if c.text.strip()]
            if not chunks:
                raise InvalidInput(f"{item.name} has no text to index.", hint="Check the file's content.")
            doc_id = existing["id"] if existing else new_id("doc")
            version = int(existing["version"]) + 1 if existing else 1
            records = self._chunk_records(
                parsed, chunks, item, doc_id, version, tenant_id, user_id, scope_name, project_id, session, metadata
            )
            if keep is not None:  # e.g. a memory folder leaves out sections that are copies of stored memories
                records = [m for m in records if keep(m)]
            if existing is not None:  # an edited section is the next version of its record (revisions.py)
                records = revised(self.store.get_many(self._doc_store().document_chunk_ids(doc_id)).values(), records)
            vectors: list[list[np.ndarray] | None] = []
            texts = [self.core.embedding.embed_text(m) for m in records]
            try:
                for start in range(0, len(texts), EMBED_SLICE):
                    vectors.extend(self.core.embedding.embed_records(texts[start : start + EMBED_SLICE]))
                    if on_chunks is not None:
                        on_chunks(min(start + EMBED_SLICE, len(texts)), len(texts))
            except EmbedderUnavailable as exc:
                # Accept the document anyway: its chunks are keyword-searchable
                # now, and a durable job embeds the rest when the server is back.
                missing = len(texts) - len(vectors)
                vectors.extend([None] * missing)
                parsed.warnings.append(
                    f"The embedding server was unreachable ({exc.message}); {missing} chunks are searchable by "
                    "keyword now and get their vectors when it answers again (`funes jobs list`)."
                )
            pending = [m.id for m, v in zip(records, vectors, strict=True) if v is None]
            now = utcnow()
            doc_metadata = dict(parsed.metadata)
            doc_metadata["options"] = {k: v for k, v in (("kind", requested_kind), ("encoding", encoding)) if v}
            if metadata:
                doc_metadata["user"] = metadata
            row = {
                "id": doc_id,
                "tenant": tenant_id,
                "user_id": user_id or "",
                "scope": scope_name,
                "project_id": project_id,
                "session_id": session,
                "vis": vis,
                "uri": item.uri,
                "name": item.name,
                "kind": parsed.source_type,
                "content_hash": digest,
                "size_bytes": len(data),
                "version": version,
                "status": "indexed",
                "error": None,
                "chunk_count": len(records),
                "pages": parsed.pages,
                "pipeline": pipeline,
                "metadata": doc_metadata,
                "warnings": parsed.warnings,
                "created_at": existing["created_at"] if existing else to_epoch(now),
                "updated_at": to_epoch(now),
                "indexed_at": to_epoch(now),
            }
            swap = self._swap(row, list(zip(records, vectors, strict=True)), pending, tenant_id, since)
            if writes is not None:
                writes.append(swap)  # the caller swaps it in later, in its own transaction (a folder batch)
            else:
                swap()
        except FunesError as exc:
            return fail(exc)
        except Exception as exc:  # a reader bug on one odd file must not stop the others
            error = InvalidInput(
                f"{item.name} could not be read ({type(exc).__name__}: {exc}).",
                hint="Nothing from it was indexed; please report this file's shape as a Funes bug.",
            )
            error.__cause__ = exc
            return fail(error)
        doc = Document.from_row(row)
        return (
            IngestResult(
                uri=item.uri,
                name=item.name,
                status="updated" if existing and existing["version"] else "indexed",
                document=doc,
                chunks=len(records),
                pages=parsed.pages,
                warnings=tuple(parsed.warnings),
                seconds=time.monotonic() - started,
            ),
            None,
        )

    def _swap(
        self,
        row: dict[str, Any],
        items: list[tuple[Memory, list[np.ndarray] | None]],
        pending: list[str],
        tenant: str,
        since: float,
    ) -> Callable[[], None]:
        """The write of a file read at ``since`` with its stored chunks (an edited section is the next version of
        one): a forget of the tenant since then writes nothing (ForgetCrossed: run it again)."""

        def swap() -> None:
            with self.store.unforgotten_write(tenant, since, f"indexing {row['name']}"):
                self._doc_store().replace_document(row, items)
                if pending:
                    self.core.defer_vectors(pending, tenant)

        return swap

    def prepare_paths(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        keep: Callable[[Memory], bool] | None = None,
        **options: Unpack[IngestOptions],
    ) -> tuple[IngestReport, Callable[[], None]]:
        """Read and embed files now, and return a callable that swaps their chunks in.

        The slow half of :meth:`ingest_paths`, for callers that write a batch
        in one transaction of their own (folder sync jobs): call the returned
        function inside ``store.transaction()``. Unchanged files need no write.
        ``keep`` leaves out the chunks it returns False for.
        """
        started = time.monotonic()
        writes: list[Callable[[], None]] = []
        results = [self._ingest_one(item, writes=writes, keep=keep, **options)[0] for item in expand_paths(paths)]
        return IngestReport(results=tuple(results), seconds=time.monotonic() - started), _all(writes)

    def prepare_bytes(
        self, data: bytes, name: str, **options: Unpack[IngestOptions]
    ) -> tuple[IngestResult, Callable[[], None]]:
        """Read and embed uploaded bytes now; return the result and a callable that swaps the chunks in.

        The slow half of :meth:`ingest` for job handlers (the team server's
        ``document-ingest`` jobs): call the returned function inside
        ``store.transaction()``. Raises the reason when the bytes cannot be
        indexed (the failure is recorded on the document too).
        """
        item = InputFile(uri=name, name=name, data=bytes(data), size=len(data), extension=Path(name).suffix.lower())
        writes: list[Callable[[], None]] = []
        result, error = self._ingest_one(item, writes=writes, **options)
        if error is not None:
            raise error
        return result, _all(writes)

    def _load_bytes(self, item: InputFile) -> bytes:
        limit = int(self.config.max_file_mb) * 1024 * 1024
        if item.data is not None:
            data = item.data
        else:
            assert item.path is not None
            data = read_regular(
                item.path,
                item.name,
                limit,
                over=f"the {self.config.max_file_mb} MB limit",
                hint="Split the file, or raise the limit: funes config set max_file_mb 500.",
            )
        if len(data) > limit:
            raise InvalidInput(
                f"{item.name} is {len(data) / 1024 / 1024:,.1f} MB, over the {self.config.max_file_mb} MB limit.",
                hint="Split the input, or raise the limit: funes config set max_file_mb 500.",
            )
        if not data or data.isspace():
            raise InvalidInput(f"{item.name} is empty.", hint="Add content to the file, or leave it out.")
        return data

    def _chunk_records(
        self,
        parsed: Parsed,
        chunks: list[Any],
        item: InputFile,
        doc_id: str,
        version: int,
        tenant: str,
        user: str | None,
        scope: str,
        project: str | None,
        session: str | None,
        metadata: dict[str, Any] | None,
    ) -> list[Memory]:
        records: list[Memory] = []
        dated = file_date(item) if parsed.source_type == "chat" else None
        for index, chunk in enumerate(chunks):
            # The short name keeps attributions readable (the uri is an absolute path).
            locator = {**chunk.locator, "display_name": item.name}
            if dated:
                locator["file_date"] = dated
            chunk_meta = {**(metadata or {}), **chunk.metadata, "document_version": version, "chunk_index": index}
            records.append(
                self.core.prepare(
                    chunk.text,
                    type=chunk.memory_type,
                    kind=chunk.kind,
                    scope=scope,
                    project=project,
                    session=session,
                    tenant=tenant,
                    user=user,
                    title=chunk.title,
                    source=SourceRef(type=parsed.source_type, uri=item.uri, source_id=doc_id, locator=locator),
                    metadata=chunk_meta,
                )
            )
        return document_topics(records, name=item.name, title=parsed.metadata.get("title"))  # memory/topics.py

    def _record_failure(
        self,
        existing: dict[str, Any] | None,
        item: InputFile,
        error: FunesError,
        tenant: str,
        user: str | None,
        scope: str,
        project: str | None,
        session: str | None,
        vis: str,
        data: bytes | None,
    ) -> Document:
        now = to_epoch(utcnow())
        reason = error.message + (f" {error.hint}" if error.hint else "")
        if existing is not None:
            # An older indexed version stays searchable; the row says why the new one is not.
            row = dict(existing, status="failed", error=reason, updated_at=now)
        else:
            row = {
                "id": new_id("doc"),
                "tenant": tenant,
                "user_id": user or "",
                "scope": scope,
                "project_id": project,
                "session_id": session,
                "vis": vis,
                "uri": item.uri,
                "name": item.name,
                "kind": EXTENSIONS.get(item.extension, "text"),
                "content_hash": "sha256:" + hashlib.sha256(data).hexdigest() if data is not None else "",
                "size_bytes": item.size,
                "version": 0,
                "status": "failed",
                "error": reason,
                "chunk_count": 0,
                "pages": None,
                "pipeline": "",
                "metadata": {},
                "warnings": [],
                "created_at": now,
                "updated_at": now,
                "indexed_at": None,
            }
        self._doc_store().save_document(row)
        return Document.from_row(row)

    # -- management ----------------------------------------------------------------
    def documents(
        self,
        *,
        tenant: str | None = None,
        user: str | None = None,
        status: str | None = None,
        kind: str | None = None,
    ) -> list[Document]:
        """Managed documents of the tenant, ordered by uri; filter by status or kind."""
        if status is not None and status not in ("indexed", "failed"):
            raise InvalidInput(f"Unknown status {status!r}.", hint="Use 'indexed' or 'failed'.")
        rows = self._doc_store().list_documents(
            self.core.tenant_of(tenant), user_id=self.core.user_of(user), status=status, kind=normalize_kind(kind)
        )
        return [Document.from_row(r) for r in rows]

    def document(self, ref: str, *, tenant: str | None = None, user: str | None = None) -> Document:
        """A document by id, or by the path or name it was ingested from."""
        tenant_id = self.core.tenant_of(tenant)
        user_id = self.core.user_of(user)
        store = self._doc_store()
        row = store.get_document(ref)
        candidates = [row] if row is not None else []
        if not candidates:
            uri = document_uri(ref)
            candidates = store.find_documents_by_uri(tenant_id, uri) or store.find_documents_by_uri(tenant_id, ref)
        visible = [
            r
            for r in candidates
            if r["tenant"] == tenant_id and (not user_id or not r.get("user_id") or r["user_id"] == user_id)
        ]
        if not visible:
            raise NotFound(f"No document {ref!r}.", hint="`funes docs list` shows document ids.")
        if len(visible) > 1:
            raise InvalidInput(
                f"{ref!r} was ingested into {len(visible)} scopes.",
                hint="Pass the document id (see `funes docs list`).",
            )
        return Document.from_row(visible[0])

    def document_chunks(self, ref: str, *, tenant: str | None = None, user: str | None = None) -> list[Memory]:
        """The records of a document, in reading order."""
        doc = self.document(ref, tenant=tenant, user=user)
        ids = self._doc_store().document_chunk_ids(doc.id)
        found = self.store.get_many(ids)
        return [found[i] for i in ids if i in found]

    def chunk_ids(self, document_id: str) -> list[str]:
        """The record ids of a document (by its id), in reading order."""
        return list(self._doc_store().document_chunk_ids(document_id))

    def remove_document(self, ref: str, *, tenant: str | None = None, user: str | None = None) -> Document:
        """Remove a document with its chunks and their vectors; returns what was removed."""
        doc = self.document(ref, tenant=tenant, user=user)
        removed = self._doc_store().delete_document(doc.id)
        return replace(doc, chunk_count=removed)

    def reindex_document(
        self,
        ref: str,
        *,
        password: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
    ) -> IngestResult:
        """Read a document's file again and rebuild its chunks (even when the file is unchanged)."""
        doc = self.document(ref, tenant=tenant, user=user)
        report = self.reindex_documents([doc.id], password=password, tenant=tenant, user=user)
        result = report.results[0]
        return result

    def reindex_documents(
        self,
        refs: Sequence[str] | None = None,
        *,
        password: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Re-read and rebuild several documents (all of the tenant's when ``refs`` is None).

        Rebuilding all of them also removes those whose file no longer exists
        (issue 11: a deleted note must stop turning up in searches).
        """
        pruned = self.prune_missing(tenant=tenant, user=user) if refs is None else []
        docs = (
            [self.document(r, tenant=tenant, user=user) for r in refs]
            if refs is not None
            else self.documents(tenant=tenant, user=user)
        )
        items: list[InputFile] = []
        by_uri: dict[int, Document] = {}
        for doc in docs:
            path = Path(doc.uri)
            item = InputFile(
                uri=doc.uri, name=doc.name, path=path if path.is_absolute() else None, extension=path.suffix.lower()
            )
            if item.path is None or not item.path.is_file():
                item.error = InvalidInput(
                    f"{doc.name} can no longer be read from {doc.uri}.",
                    hint=f"Ingest it again from where it is now, or drop it with `funes docs rm {doc.id}`.",
                )
            else:
                item.size = item.path.stat().st_size
            by_uri[id(item)] = doc
            items.append(item)

        def options(item: InputFile) -> dict[str, Any]:
            doc = by_uri[id(item)]
            saved = doc.metadata.get("options") or {}
            return {
                "kind": saved.get("kind"),
                "encoding": saved.get("encoding"),
                "scope": doc.scope,
                "project": doc.project_id,
                "session": doc.session_id,
                "tenant": doc.tenant,
                "user": doc.user_id,
                "password": password,
                "force": True,
                "metadata": doc.metadata.get("user"),
            }

        report = self._ingest_items(items, progress, options)
        return replace(report, results=(*report.results, *pruned)) if pruned else report


__all__ = [
    "Document",
    "DocumentStore",
    "Documents",
    "IngestProgress",
    "IngestReport",
    "IngestResult",
    "ProgressCallback",
    "expand_paths",
]


def _all(writes: list[Callable[[], None]]) -> Callable[[], None]:
    """One callable that makes the prepared writes in turn (call it inside a store transaction)."""

    def apply() -> None:
        for write in writes:
            write()

    return apply
