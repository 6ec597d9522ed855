"""Forgetting you can prove (issue 25): remove a text from every place that holds it, and keep a receipt.

A forget names what goes by ids, by user (everything of one user) or by a
text (``matching``: preview first, then confirm). The plan grows from there:

* the messages indexed as those records, or of the user's sessions, or
  holding the text; the records those messages are indexed as;
* derived records, found through their provenance (:mod:`.provenance`):
  learned facts citing a forgotten message or session, insights of a touched
  session (removed, and their other sessions queued for a fresh ``insights``
  job, so what remains is learned again), entity summaries of a forgotten
  entity, the chunks of a forgotten document;
* documents whose chunks all go, the uploads on disk that fed them, the
  Markdown write-back sections and note lines in memory folders, and every
  job whose payload names any of it.

Files are edited first, then ONE store transaction removes the rows and
writes the tombstone (:meth:`~funes.store.sqlite_forget.ForgetTables.purge`),
then the store scrubs (secure_delete, FTS5 merge, WAL truncate; VACUUM FULL on
PostgreSQL) and the touched folders are synced. The receipt (format in
docs/forgetting.md) holds ids, content hashes, counts per place, time and
actor, and the keyed hashes of the text's distinctive tokens
(:mod:`.forget_scan`), never the text.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import FunesError, InvalidInput, NotFound
from ..knowledge.folders import WRITTEN_BACK
from ..memory.windows import MIN_CHARS
from ..models import Memory, format_time, new_id, to_epoch, utcnow
from .forget_scan import candidate_tokens, files_under, scan_file, seal, unspelled
from .provenance import cites

if TYPE_CHECKING:
    from ..knowledge.folders import Folders
    from ..knowledge.uploads import Uploads
    from ..memory.core import Core
    from ..memory.embedding import Embedding

log = logging.getLogger("funes")
_UPLOAD_KIND = "document-ingest"
# Memory stores (agents/memory_stores.py) mirror each memory to a file: where, and how their records are marked.
_MIRROR_DIR = ".memory_stores"
_STORE_ENTITY = "memory_store"
_MIN_MATCH = 3


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _as_of_now(method: _Method) -> _Method:
    """Run a method with the store's reads as of now: a lagging read replica would miss what another process
    just wrote (a record the plan must take, the tombstone verify reads)."""

    @functools.wraps(method)
    def run(self: Forgetting, *args: Any, **kwargs: Any) -> Any:
        with self.core.store.reading_current():
            return method(self, *args, **kwargs)

    return cast(_Method, run)


class Forgetting:
    """Preview, forget with a receipt, verify a receipt (a feature service over the core, folders and uploads)."""

    def __init__(self, core: Core, folders: Folders, uploads: Uploads) -> None:
        self.core = core
        self.folders = folders
        self.uploads = uploads

    # -- the plan ------------------------------------------------------------------------
    def preview(
        self,
        ids: list[str] | str | None = None,
        *,
        user: str | None = None,
        matching: str | None = None,
        tenant: str | None = None,
        caller: str | None = None,
    ) -> dict[str, Any]:
        """What a forget would remove (changes nothing): records with a snippet, messages, files, jobs."""
        plan = self._plan(ids, user, matching, tenant, caller)
        return {
            "selector": plan["selector"],
            "records": [
                {"id": m.id, "kind": m.kind, "type": m.memory_type, "snippet": m.content[:120]}
                for m in plan["records"].values()
            ],
            "derived": sorted(plan["derived"]),
            "messages": len(plan["messages"]),
            "sessions": sorted(plan["sessions"]),
            "documents": sorted(plan["documents"]),
            "uploads": sorted(plan["uploads"]),
            "markdown_files": sorted(plan["markdown"]),
            "mirror_files": plan["mirrors"],
            "jobs": len(plan["jobs"]),
        }

    def _cached(self, memory: Memory) -> list[str]:
        """The texts of a record the embedding cache may hold vectors of, its parts and passage windows included."""
        texts = _embedded(memory)
        return texts + _pieces(self.core.embedding, texts)

    @_as_of_now
    def _plan(
        self,
        ids: list[str] | str | None,
        user: str | None,
        matching: str | None,
        tenant: str | None,
        caller: str | None,
    ) -> dict[str, Any]:
        store = self.core.store
        tenant_id = self.core.tenant_of(tenant)
        chosen = [s for s in (ids, user, matching) if s not in (None, "", [])]
        if len(chosen) != 1:
            raise InvalidInput(
                "Say what to forget: memory ids, a user, or a text to match (one of them).",
                hint="`funes forget ID...`, `funes forget --user U`, or `funes forget --matching TEXT`.",
            )
        records: dict[str, Memory] = {}
        sessions: set[str] = set()
        documents: set[str] = set()
        text: str | None = None
        if ids is not None and ids != []:
            wanted = [ids] if isinstance(ids, str) else [str(i).strip() for i in ids if str(i).strip()]
            found = store.get_many(wanted)
            missing = [i for i in wanted if not self.core.visible(found.get(i), tenant_id, caller)]
            if missing:
                raise NotFound(
                    f"No memory with id {', '.join(missing[:10])}; nothing was forgotten.",
                    hint="`funes list` shows ids; pass only ids that exist.",
                )
            records = {i: found[i] for i in wanted}
            selector: dict[str, Any] = {"by": "ids", "ids": wanted}
        elif user is not None:
            user = str(user).strip()
            if not user:
                raise InvalidInput("The user to forget is empty.", hint="Pass the user id: `funes forget --user U`.")
            sessions = set(store.sessions_of_user(tenant_id, user))
            documents = set(store.documents_of_user(tenant_id, user))
            records = store.get_many([*store.ids_of_user(tenant_id, user), *store.ids_of_sources(sorted(documents))])
            selector = {"by": "user", "user": user}
        else:
            text = str(matching or "").strip()
            if len(text) < _MIN_MATCH:
                raise InvalidInput(
                    f"The text to match is shorter than {_MIN_MATCH} characters; it would match too much.",
                    hint="Pass a longer, distinctive text: `funes forget --matching 'the exact words'`.",
                )
            records = store.get_many(store.ids_matching(tenant_id, self.core.user_of(caller), text))
            selector = {"by": "matching", "text_hash": _sha(text.casefold())}
        messages = store.messages_to_forget(tenant_id, record_ids=list(records), sessions=sorted(sessions), text=text)
        linked = [r for m in messages for r in m["record_ids"] if r not in records]
        records.update(store.get_many(linked))
        if not records and not messages and not sessions and not documents:
            what = {"user": f"user {user!r}", "matching": "that text"}.get(selector["by"], "those ids")
            raise NotFound(
                f"Nothing of {what} is stored in tenant {tenant_id!r}; nothing was forgotten.",
                hint="Check the spelling, or the tenant (--tenant).",
            )
        gone_messages = {m["id"] for m in messages}
        touched_sessions = {m["session_id"] for m in messages} | sessions
        derived: set[str] = set()
        rebuild: set[tuple[str, str, str]] = set()
        entities = {(m.entity_type, m.entity_id) for m in records.values() if m.entity_type and m.entity_id}
        sources = {m.source.source_id for m in records.values() if m.source and m.source.source_id}
        for other in store.iter_records(tenant_id):
            if other.id in records:
                continue
            why = cites(other, gone_messages, touched_sessions, sessions, sources, entities)
            if why is None:
                continue
            derived.add(other.id)
            if why == "session" and other.kind == "insight":
                for s in other.metadata.get("sessions") or ():
                    if s not in sessions:
                        rebuild.add((str(s), other.user_id or "", other.tenant))
        records.update(store.get_many(sorted(derived)))
        for doc in sources:
            if doc and set(store.ids_of_sources([doc])) <= set(records):
                documents.add(doc)
        uploads, upload_jobs = self._uploads(tenant_id, documents, user if selector["by"] == "user" else None)
        markdown = self._markdown_edits(tenant_id, records, text)
        mirrors = self._mirrors(tenant_id, records)
        needles = [*records, *gone_messages, *sessions, *uploads]
        jobs = set(store.jobs_mentioning(tenant_id, needles)) | upload_jobs
        if text:
            jobs |= set(store.jobs_mentioning(tenant_id, [text]))
        return {
            "tenant": tenant_id,
            "selector": selector,
            "records": records,
            "derived": derived,
            "messages": messages,
            "sessions": sessions,
            "documents": documents,
            "uploads": uploads,
            "markdown": markdown,
            "mirrors": mirrors,
            "jobs": jobs,
            "rebuild": rebuild,
            "text": text,
        }

    def _uploads(self, tenant: str, documents: set[str], user: str | None) -> tuple[dict[str, str], set[str]]:
        """Upload folders on disk (upload id: path) feeding the documents or sent by the user, and their jobs."""
        folders: dict[str, str] = {}
        jobs: set[str] = set()
        for job in self.core.store.list_jobs(tenant, kind=_UPLOAD_KIND, limit=1_000_000):
            fed = (job.result or {}).get("document_id") in documents if isinstance(job.result, dict) else False
            if fed or (user is not None and job.payload.get("user") == user):
                jobs.add(job.id)
                upload = str(job.payload.get("upload") or "")
                if upload:
                    folders[upload] = str(self.uploads.folder / upload)
        return folders, jobs

    def _mirrors(self, tenant: str, records: dict[str, Memory]) -> list[str]:
        """The files a memory store mirrors its forgotten memories to (``<folder>/.memory_stores/<store>/<path>``)."""
        roots = [Path(f.path) / _MIRROR_DIR for f in self.folders.folders(tenant=tenant)]
        out = []
        for memory in records.values():
            if memory.entity_type != _STORE_ENTITY or not memory.project_id or not memory.entity_id:
                continue
            for root in roots:
                target = root / memory.project_id / memory.entity_id.lstrip("/")
                if target.is_file() and target.resolve().is_relative_to(root.resolve()):
                    out.append(str(target))
        return sorted(set(out))

    def _markdown_edits(self, tenant: str, records: dict[str, Memory], text: str | None) -> dict[str, str]:
        """The memory-folder files that hold a forgotten record (a write-back section or a note's lines), new text.

        A matched ``text`` cuts only the note lines holding it (the sync indexes the rest again);
        otherwise a forgotten note loses every line of its chunk.
        """
        edits: dict[str, str] = {}
        roots = [Path(f.path) for f in self.folders.folders(tenant=tenant)]
        by_file: dict[str, list[Memory]] = {}
        for memory in records.values():
            uri = memory.source.uri if memory.source else None
            if uri and any(Path(uri).is_relative_to(r) for r in roots) and Path(uri).is_file():
                by_file.setdefault(uri, []).append(memory)
        for root in roots:
            for path in files_under(root):
                if path.suffix.lower() not in (".md", ".markdown", ".txt"):
                    continue
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    before = path.read_text(encoding="utf-8")
                    after = _without(before, set(records), by_file.get(str(path), []), text)
                    if after != before:
                        edits[str(path)] = after
        return edits

    # -- forgetting ------------------------------------------------------------------------
    def forget(
        self,
        ids: list[str] | str | None = None,
        *,
        user: str | None = None,
        matching: str | None = None,
        confirm: bool = False,
        tenant: str | None = None,
        caller: str | None = None,
        actor: str | None = None,
    ) -> dict[str, Any]:
        """Forget for good and return the receipt (also kept as a tombstone); ``matching`` needs ``confirm=True``."""
        if matching is not None and not confirm:
            self._plan(ids, user, matching, tenant, caller)  # bad input is reported as such first
            raise InvalidInput(
                "Forgetting by matching text needs confirmation; nothing was forgotten.",
                hint="Look at the preview (`funes forget --matching TEXT` without --yes, or Funes.preview_forget), "
                "then confirm with --yes (confirm=True).",
            )
        # Writes derived from stored text (a job's completion, a learn, an ingest in another process) commit before
        # the plan reads, or find its receipt after the purge and write nothing: never in between (store.forgets_held
        # and store.unforgotten_write), so the plan is all there is to remove.
        with self.core.store.forgets_held(self.core.tenant_of(tenant)):
            plan = self._plan(ids, user, matching, tenant, caller)
            store = self.core.store
            records: dict[str, Memory] = plan["records"]
            texts = [t for m in records.values() for t in _embedded(m)] + [m.title or "" for m in records.values()]
            texts += [plan["text"] or ""]
            candidates = candidate_tokens(texts)
            now = utcnow()
            receipt: dict[str, Any] = {
                "id": new_id("fgt"),
                "format": 1,
                "tenant": plan["tenant"],
                "at": format_time(now),
                "at_epoch": to_epoch(now),
                "actor": actor or caller or self.core.config.user or "",
                "selector": plan["selector"],
                "records": [
                    {"id": m.id, "kind": m.kind, "content_hash": m.content_hash, "derived": m.id in plan["derived"]}
                    for m in records.values()
                ],
                "messages": [m["id"] for m in plan["messages"]],
                "sessions": sorted(plan["sessions"]),
                "documents": sorted(plan["documents"]),
                "uploads": sorted(plan["uploads"]),
                # Named below, once the forgotten words are known: a file's path may spell them.
                "markdown_files": [],
                "mirror_files": [],
            }
            for path, text in plan["markdown"].items():
                _rewrite(Path(path), text)
            for mirror in plan["mirrors"]:
                _shred(Path(mirror))
            for folder in plan["uploads"].values():
                _shred(Path(folder))
            counts = self._purge(
                plan["tenant"],
                records,
                message_ids=sorted(receipt["messages"]),
                session_ids=sorted(plan["sessions"]),
                document_ids=sorted(plan["documents"]),
                job_ids=sorted(plan["jobs"]),
                matching=plan["text"],
                receipt=receipt,
            )
            # A mirror file written again between its shredding and the purge (a memory-store write that read its
            # memory before the purge: agents/memory_stores.py reads it again before writing, so none after) goes too.
            for mirror in plan["mirrors"]:
                if Path(mirror).exists():
                    _shred(Path(mirror))
        for session, owner, tenant_id in sorted(plan["rebuild"]):
            self.core.enqueue_job(
                "insights",
                {"session": session, "user": owner or None},
                tenant=tenant_id,
                dedupe_key=f"insights:{tenant_id}:{session}",
            )
        synced = {str(Path(f.path)) for f in self.folders.folders(tenant=plan["tenant"])}
        for folder in sorted(synced):
            if any(Path(p).is_relative_to(folder) for p in plan["markdown"]):
                self.folders.sync(folder, tenant=plan["tenant"])
        storage = store.scrub([plan["tenant"]])
        tokens = candidates - store.words_in_use(sorted(candidates)) - _own_words()
        receipt["counts"] = {
            **counts,
            "derived_removed": len(plan["derived"]),
            "derived_rebuilding": len(plan["rebuild"]),
            "markdown_files": len(plan["markdown"]),
            "uploads": len(plan["uploads"]),
            "mirror_files": len(plan["mirrors"]),
        }
        receipt["storage"] = storage
        receipt["tokens"] = seal(tokens)
        receipt["markdown_files"] = unspelled(sorted(plan["markdown"]), tokens, receipt["tokens"]["salt"])
        receipt["mirror_files"] = unspelled(plan["mirrors"], tokens, receipt["tokens"]["salt"])
        store.save_receipt(receipt)
        return receipt

    def _purge(self, tenant: str, records: dict[str, Memory], **places: Any) -> dict[str, int]:
        """``store.purge`` of these records (with their texts and the cache keys of their vectors) and ``places``."""
        return self.core.store.purge(
            tenant,
            record_ids=sorted(records),
            text_hashes=sorted(
                {hashlib.sha256(t.encode("utf-8")).hexdigest() for m in records.values() for t in self._cached(m)}
            ),
            texts=sorted({t for m in records.values() for t in _embedded(m)}),
            **places,
        )

    # -- proof -----------------------------------------------------------------------------
    def receipt(self, receipt: str | os.PathLike[str] | dict[str, Any], *, tenant: str | None = None) -> dict[str, Any]:
        """A receipt by id (the tombstone), from a JSON file, or as given."""
        if isinstance(receipt, dict):
            return receipt
        text = str(receipt)
        if text.startswith("fgt_"):
            found = self.core.store.get_receipt(text)
            if found is None or found.get("tenant") != self.core.tenant_of(tenant):
                raise NotFound(f"No forget receipt {text!r}.", hint="`funes forget` prints its receipt id.")
            return found
        path = Path(text).expanduser()
        if not path.is_file():
            raise NotFound(
                f"No forget receipt {text!r} (neither a receipt id nor a file).",
                hint="Pass the id `funes forget` printed (fgt_...), or the receipt saved as JSON.",
            )
        import json

        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{path} is not a forget receipt (JSON).", hint="Pass the receipt file.") from exc

    def places(self, tenant: str) -> dict[str, list[Path]]:
        """What verify scans: the store's files, the memory folders and the uploads directory."""
        return {
            "store": self.core.store.storage_files(),
            "folders": [p for f in self.folders.folders(tenant=tenant) for p in files_under(Path(f.path))],
            "uploads": files_under(self.uploads.folder),
        }

    @_as_of_now
    def verify(self, receipt: str | os.PathLike[str] | dict[str, Any], *, tenant: str | None = None) -> dict[str, Any]:
        """Scan every place for the receipt's tokens (and its ids outside the database); 0 found, or where."""
        data = self.receipt(receipt, tenant=tenant)
        tokens = data.get("tokens") or {}
        if "salt" not in tokens:
            raise InvalidInput(
                "This receipt has no token hashes to look for.", hint="Pass a receipt of `funes forget`."
            )
        ids = [r["id"] for r in data.get("records", [])] + list(data.get("uploads", []))
        found: list[dict[str, Any]] = []
        scanned: dict[str, int] = {}
        for place, files in self.places(str(data.get("tenant") or self.core.tenant_of(tenant))).items():
            scanned[place] = len(files)
            for path in files:
                # The tombstone names the ids, so only files outside the database are searched for them.
                needles = ids if place != "store" or ".ann" in str(path.parent) else []
                found += [{**hit, "place": place} for hit in scan_file(path, tokens, needles)]
        words = {h["word"] for h in found if "word" in h}
        live = self.core.store.words_in_use(sorted(words)) if words else set()
        for hit in found:
            if hit.get("word") in live:
                hit["note"] = "a current record holds this word (stored after the forget, or shared)"
        return {
            "receipt": data["id"],
            "tokens": int(tokens.get("count") or 0),
            "files_scanned": scanned,
            "found": len(found),
            "hits": found,
            "ok": not found,
        }


def _without(text: str, ids: set[str], notes: list[Memory], matching: str | None = None) -> str:
    """The Markdown text without the write-back sections of ``ids`` and the lines of ``notes`` (those holding
    ``matching``, when given)."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for i, line in enumerate(lines):
        match = WRITTEN_BACK.search(line)
        if match is None or match.group(1) not in ids:
            continue
        start = i - 1 if i and lines[i - 1].startswith("## ") else i
        end = i + 1
        while end < len(lines) and not lines[end].startswith("## "):
            end += 1
        drop.update(range(start, end))
    for note in notes:
        mine = [i for i, line in enumerate(lines) if len(line.strip()) >= _MIN_MATCH and line.strip() in note.content]
        holding = [i for i in mine if matching is not None and matching.casefold() in lines[i].casefold()]
        # A match spanning lines (or only in the title) takes the note's whole text, as an id does.
        drop.update(holding or [i for i in mine if not lines[i].startswith("#")])
    if not drop:
        return text
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def _pieces(embedding: Embedding, texts: list[str]) -> list[str]:
    """The parts and passage windows of the long ones among ``texts``: the cache holds their vectors too (issue 28)."""
    long = [t for t in texts if len(t) >= MIN_CHARS]
    if not long:
        return []
    try:
        return [p for t in long for p in embedding.pieces(t)]
    except FunesError as exc:  # no embedder to split with: the whole texts' vectors still go
        log.warning("forget: the parts and windows of long texts were not split (%s)", exc)
        return []


def _embedded(memory: Memory) -> list[str]:
    """The texts of a record the embedding cache may hold vectors of (as embedded, and its bare content)."""
    texts = [memory.content, *(v.content for v in memory.previous_versions)]
    if memory.proposal and memory.proposal.get("content"):
        texts.append(str(memory.proposal["content"]))  # a machine's text waiting on the record
    if memory.title:
        texts.append(f"{memory.title}\n{memory.content}")
    return texts


def _rewrite(path: Path, text: str) -> None:
    """Overwrite a file in place (same inode, zeroed first), so its old bytes are not left in a copy."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.write(b"\0" * size)
        fh.flush()
        os.fsync(fh.fileno())
        fh.seek(0)
        fh.truncate()
        fh.write(text.encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())


def _shred(target: Path) -> None:
    """Zero every file of an upload folder (or one file), then remove it."""
    for path in files_under(target):
        with contextlib.suppress(OSError), path.open("r+b") as fh:
            fh.write(b"\0" * path.stat().st_size)
            fh.flush()
            os.fsync(fh.fileno())
    if target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)


@functools.lru_cache(maxsize=1)
def _own_words() -> frozenset[str]:
    """Words Funes's own code and schema spell (table and column names, JSON keys, record kinds and types).

    They sit in every store file beside any user's text (a ``conversation``
    record type, a ``message_id`` key), so finding one proves nothing.
    """
    root = Path(__file__).resolve().parents[1]
    words: set[str] = set()
    for path in [*root.rglob("*.py"), *root.rglob("*.sql")]:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            words.update(w.casefold() for w in re.findall(r"\w+", path.read_text(encoding="utf-8")))
    return frozenset(words)
