"""Anthropic's memory stores, served locally: path-addressed text memories with immutable versions.

The shapes follow Anthropic's memory-stores API (``/v1/memory_stores``; the
``anthropic`` SDK's ``client.beta.memory_stores``), so an application written
against it can point its base URL at ``funes serve``. Each method returns the
API's JSON object as a dict.

How it maps onto Funes:

* a **memory store** is a row of ``memory_stores`` owned by one tenant;
* a **memory** is an ordinary record (id ``mem_...``, project = the store id,
  ``entity_type`` ``memory_store``, ``entity_id`` and title = its path), so
  ``funes search`` finds it like any other. Its exact text is the record's
  content (an empty memory keeps its path as the record's text, flagged in
  the metadata, since a record needs words);
* every change appends one immutable row to ``memory_store_versions``
  (``created``, ``modified``, ``deleted``); only redaction changes a row
  afterwards, erasing its content and path and keeping its time, hash and
  author. The record's own kept versions are redacted with it
  (:func:`funes.memory.versioning.redacted`);
* when the tenant has a registered memory folder, each memory is also
  written to ``<folder>/.memory_stores/<store id>/<path>``, readable on disk.
  The hidden directory keeps the folder sync from indexing it twice.

Invariants: a path starts with ``/``, is at most 1,024 bytes, NFC, with no
empty, ``.`` or ``..`` segment and no control or format character; content is
at most 102,400 bytes (:mod:`.memory_store_rules`). Bad input raises
:class:`InvalidInput` and writes nothing. An update or delete with a
``content_sha256`` precondition that no longer holds raises
:class:`PreconditionFailed` (HTTP 409) and writes nothing, unless the memory
already has exactly the requested content and path.
Writes to one store take turns (its row is locked first).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Conflict, EmbedderUnavailable, InvalidInput, NotFound, PathConflict, PreconditionFailed
from ..knowledge.paths import write_atomic
from ..memory.versioning import next_version, redacted
from ..models import Memory, content_hash, new_id, utcnow
from ..store.sqlite_memory_stores import ACTOR_IDS
from .memory_store_rules import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    OPERATIONS,
    api_time,
    check_id,
    check_limit,
    check_order,
    check_path,
    check_precondition,
    check_text,
    check_time,
    check_view,
    next_page,
    read_page,
    sha256_hex,
)

if TYPE_CHECKING:
    from ..knowledge.folders import Folders
    from ..memory.core import Core

log = logging.getLogger("funes.memory_stores")

ENTITY_TYPE = "memory_store"
MIRROR_DIR = ".memory_stores"
_UNSET: Any = object()


class MemoryStores:
    """Anthropic-style memory stores over Funes records (a feature service over the core and folders)."""

    def __init__(self, core: Core, folders: Folders) -> None:
        self.core = core
        self.folders = folders

    @property
    def _rows(self) -> Any:
        return self.core.store

    def _actor(self, actor: dict[str, Any] | None) -> dict[str, Any]:
        """Who writes: the given actor (checked: a known type with its id), else the local user."""
        if actor is None:
            return {"type": "user_actor", "user_id": self.core.config.user or "local"}
        field = ACTOR_IDS.get(actor.get("type")) if isinstance(actor, dict) else None
        if field is None or not isinstance(actor.get(field), str) or not actor[field]:
            raise InvalidInput(
                f"Unknown actor {actor!r}.", hint='Pass e.g. {"type": "session_actor", "session_id": "sesn_..."}.'
            )
        return actor

    # -- stores ---------------------------------------------------------------------------------
    def _store_row(self, store_id: str, tenant: str, *, lock: bool = False) -> dict[str, Any]:
        row = self._rows.get_memory_store(tenant, store_id, lock=lock) if isinstance(store_id, str) else None
        if row is None:
            raise NotFound(f"No memory store {store_id!r}.", hint="GET /v1/memory_stores lists the stores.")
        return row

    @staticmethod
    def _store_dict(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "memory_store",
            "id": row["id"],
            "name": row["name"],
            "description": row["description"] or "",
            "metadata": row["metadata"] or {},
            "created_at": api_time(row["created_at"]),
            "updated_at": api_time(row["updated_at"]),
            "archived_at": api_time(row["archived_at"]),
        }

    @staticmethod
    def _store_fields(name: Any, description: Any, metadata: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if name is not _UNSET:
            if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME_CHARS or not name.isprintable():
                raise InvalidInput(
                    "A memory store's name is 1 to 255 printable characters.", hint='Send e.g. "User preferences".'
                )
            fields["name"] = name
        if description is not _UNSET and description is not None:
            if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
                raise InvalidInput("The description is text of at most 1,024 characters.", hint="Shorten it.")
            fields["description"] = description
        if metadata is not _UNSET and metadata is not None:
            if (
                not isinstance(metadata, dict)
                or len(metadata) > 16
                or not all(isinstance(k, str) and 1 <= len(k) <= 64 for k in metadata)
                or not all(isinstance(v, str) and len(v) <= 512 for v in metadata.values())
            ):
                raise InvalidInput(
                    "Metadata is at most 16 text pairs (keys 1-64 characters, values up to 512).",
                    hint='Send e.g. {"user": "ana"}.',
                )
            fields["metadata"] = metadata
        return fields

    def create_store(
        self,
        name: str,
        *,
        description: str | None = None,
        metadata: dict[str, str] | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """Create an empty memory store."""
        fields = self._store_fields(name, description, metadata)
        now = utcnow().timestamp()
        row = {
            "id": new_id("memstore"),
            "tenant": self.core.tenant_of(tenant),
            "description": "",
            "metadata": {},
            **fields,
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._rows.save_memory_store(row)
        return self._store_dict(row)

    def get_store(self, store_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """A memory store."""
        return self._store_dict(self._store_row(store_id, self.core.tenant_of(tenant)))

    def list_stores(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        include_archived: bool = False,
        created_at_gte: Any = None,
        created_at_lte: Any = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """The tenant's memory stores, oldest first, a page at a time (archived ones on request).

        ``created_at_gte``/``created_at_lte`` (RFC 3339, inclusive) keep the stores created in that span.
        """
        size = check_limit(limit, "basic")
        after = (read_page(page) or {}).get("after", 0)
        if isinstance(after, bool) or not isinstance(after, int):
            raise InvalidInput("The page cursor is not one this server gave.", hint="Pass `next_page` as given.")
        rows = self._rows.list_memory_stores(
            self.core.tenant_of(tenant),
            after=after,
            limit=size + 1,
            include_archived=bool(include_archived),
            created_from=check_time(created_at_gte, "created_at[gte]"),
            created_to=check_time(created_at_lte, "created_at[lte]"),
        )
        more = len(rows) > size
        rows = rows[:size]
        return {
            "data": [self._store_dict(r) for r in rows],
            "next_page": next_page({"after": rows[-1]["_seq"]}) if more else None,
        }

    def update_store(
        self,
        store_id: str,
        *,
        name: Any = _UNSET,
        description: Any = _UNSET,
        metadata: Any = _UNSET,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """Rename a store or change its description or metadata (refused once it is archived).

        ``metadata`` is a change: keys left out keep their values, a key set to
        None is removed; at most 16 pairs remain.
        """
        if metadata is not _UNSET and metadata is not None:
            if not isinstance(metadata, dict) or not all(v is None or isinstance(v, str) for v in metadata.values()):
                raise InvalidInput(
                    "Metadata changes are text values, or null to remove a key.", hint='Send e.g. {"user": null}.'
                )
        with self._rows.transaction():
            row = self._writable(store_id, self.core.tenant_of(tenant))
            if metadata is not _UNSET and metadata is not None:
                merged = {**(row["metadata"] or {}), **metadata}
                metadata = {k: v for k, v in merged.items() if v is not None}
            fields = self._store_fields(_UNSET if name is None else name, description, metadata)
            row = {**row, **fields, "updated_at": utcnow().timestamp()}
            self._rows.save_memory_store(row)
        return self._store_dict(row)

    def archive_store(self, store_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """Make a store read-only (there is no unarchive)."""
        with self._rows.transaction():
            row = self._store_row(store_id, self.core.tenant_of(tenant), lock=True)
            if row["archived_at"] is None:
                now = utcnow().timestamp()
                row = {**row, "archived_at": now, "updated_at": now}
                self._rows.save_memory_store(row)
        return self._store_dict(row)

    def delete_store(self, store_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """Delete a store with its memories (records) and every version."""
        tenant = self.core.tenant_of(tenant)
        with self._rows.transaction():
            self._store_row(store_id, tenant, lock=True)
            ids = [memory_id for _, memory_id in self._rows.memory_store_paths(tenant, store_id)]
            if ids:
                self._rows.delete(ids)
            self._rows.delete_memory_store(store_id)
        self._mirror_remove_store(store_id, tenant)
        return {"type": "memory_store_deleted", "id": store_id}

    # -- memories -------------------------------------------------------------------------------
    def _record(self, store_id: str, memory_id: str, tenant: str) -> Memory:
        memory = self._rows.get(memory_id) if isinstance(memory_id, str) else None
        if (
            memory is None
            or memory.tenant != tenant
            or memory.project_id != store_id
            or memory.entity_type != ENTITY_TYPE
        ):
            raise NotFound(
                f"No memory {memory_id!r} in store {store_id}.",
                hint=f"GET /v1/memory_stores/{store_id}/memories lists its memories.",
            )
        return memory

    @staticmethod
    def _content(memory: Memory) -> str:
        return "" if memory.metadata.get("memory_store_empty") else memory.content

    def _memory_dict(self, memory: Memory, view: str) -> dict[str, Any]:
        text = self._content(memory)
        return {
            "type": "memory",
            "id": memory.id,
            "memory_store_id": memory.project_id,
            "path": memory.entity_id,
            "content": text if view == "full" else None,
            "content_sha256": sha256_hex(text),
            "content_size_bytes": len(text.encode("utf-8")),
            "memory_version_id": memory.metadata.get("memory_version_id"),
            "created_at": api_time(memory.created_at.timestamp()),
            "updated_at": api_time(memory.updated_at.timestamp()),
        }

    @staticmethod
    def _version_dict(row: dict[str, Any], view: str) -> dict[str, Any]:
        gone = row["redacted_at"] is not None or row["operation"] == "deleted"
        return {
            "type": "memory_version",
            "id": row["id"],
            "memory_store_id": row["store_id"],
            "memory_id": row["memory_id"],
            "operation": row["operation"],
            "path": None if row["redacted_at"] is not None else row["path"],
            "content": None if gone or view != "full" else row["content"],
            "content_sha256": None if gone else row["content_sha256"],
            "content_size_bytes": None if gone else row["content_size_bytes"],
            "created_at": api_time(row["created_at"]),
            "created_by": row["created_by"],
            "redacted_at": api_time(row["redacted_at"]),
            "redacted_by": row["redacted_by"],
        }

    def _writable(self, store_id: str, tenant: str) -> dict[str, Any]:
        row = self._store_row(store_id, tenant, lock=True)
        if row["archived_at"] is not None:
            raise Conflict(
                f"Memory store {store_id} is archived and read-only.",
                hint="Create a new store to write memories; archiving cannot be undone (reads, deletes and "
                "redactions still work).",
            )
        return row

    def _check_free(self, store_id: str, tenant: str, path: str, memory_id: str | None = None) -> None:
        other = self._rows.find_entity(tenant, None, store_id, ENTITY_TYPE, path)
        if other is not None and other.id != memory_id:
            raise PathConflict(
                f"Memory {other.id} already has the path {path}.",
                hint="Update that memory by its id, or pick another path.",
                memory_id=other.id,
                path=path,
            )

    def _vectors(self, memory: Memory) -> Any:
        try:
            return self.core.embedding.embed_records([self.core.embedding.embed_text(memory)])[0]
        except EmbedderUnavailable as exc:
            log.warning("embedder unavailable, memory %s is stored for keyword search first: %s", memory.id, exc)
            return None

    def _version_row(
        self, memory: Memory, operation: str, content: str | None, actor: dict[str, Any], version_id: str
    ) -> dict[str, Any]:
        return {
            "id": version_id,
            "tenant": memory.tenant,
            "store_id": memory.project_id,
            "memory_id": memory.id,
            "operation": operation,
            "path": memory.entity_id,
            "content": content,
            "content_sha256": None if content is None else sha256_hex(content),
            "content_size_bytes": None if content is None else len(content.encode("utf-8")),
            "record_version": memory.version,
            "created_at": utcnow().timestamp(),
            "created_by": actor,
            "redacted_at": None,
            "redacted_by": None,
        }

    @staticmethod
    def _labelled(memory: Memory, path: str, content: str, version_id: str, *, fresh: bool = False) -> Memory:
        """``memory`` carrying ``content`` at ``path`` (an empty text keeps the path as its words).

        A changed text is the record's next version (the old one kept), unless ``fresh``.
        """
        text = content if content.strip() else path
        changes: dict[str, Any] = {}
        if fresh:
            changes = {"content": text, "content_hash": content_hash(text)}
        elif text != memory.content:
            changes = next_version(memory, text)
        return memory.evolve(
            **changes,
            title=path,
            entity_id=path,
            metadata={
                **memory.metadata,
                "memory_store_id": memory.project_id,
                "memory_version_id": version_id,
                "memory_store_empty": not content.strip(),
            },
            updated_at=utcnow(),
        )

    def create_memory(
        self,
        store_id: str,
        path: str,
        content: str,
        *,
        view: str | None = None,
        tenant: str | None = None,
        actor: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create a memory at a path; :class:`PathConflict` when another memory has it."""
        tenant = self.core.tenant_of(tenant)
        view = check_view(view, "basic")
        path, content = check_path(path), check_text(content)
        version_id = new_id("memver")
        draft = self.core.prepare(
            content if content.strip() else path, tenant=tenant, scope="project", project=store_id
        )
        draft = draft.evolve(id=new_id("mem"), user_id=None, entity_type=ENTITY_TYPE)
        memory = self._labelled(draft, path, content, version_id, fresh=True)
        vectors = self._vectors(memory)
        with self._rows.transaction():
            self._writable(store_id, tenant)
            self._check_free(store_id, tenant, path)
            self._rows.put(memory, vectors)
            self._rows.add_memory_version(self._version_row(memory, "created", content, self._actor(actor), version_id))
            if vectors is None:
                self.core.defer_vectors([memory.id], tenant)
            self.core.written(tenant, 1)
        self._mirror(memory, content)
        return self._memory_dict(memory, view)

    def get_memory(
        self, store_id: str, memory_id: str, *, view: str | None = None, tenant: str | None = None
    ) -> dict[str, Any]:
        """A memory, with its content unless ``view="basic"``."""
        tenant = self.core.tenant_of(tenant)
        self._store_row(store_id, tenant)
        return self._memory_dict(self._record(store_id, memory_id, tenant), check_view(view, "full"))

    def list_memories(
        self,
        store_id: str,
        *,
        path_prefix: str | None = None,
        depth: int | None = None,
        view: str | None = None,
        limit: int | None = None,
        page: str | None = None,
        order: str | None = None,
        order_by: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """A store's memories in path order (``order="desc"`` reverses it); with ``depth``, deeper ones roll up.

        Each page is read from the store's path index, a few rows at a time:
        everything below ``P/`` sorts in ``[P/, P0)`` (``0`` follows ``/``),
        so a rolled-up ``memory_prefix`` is one item and the next read starts
        past it. The cursor holds the last item shown and the listing's
        filters; a cursor of another listing is refused.
        """
        tenant = self.core.tenant_of(tenant)
        view = check_view(view, "basic")
        size = check_limit(limit, view)
        descending = check_order(order, order_by)
        if path_prefix is not None and (
            not isinstance(path_prefix, str) or not path_prefix.startswith("/") or not path_prefix.endswith("/")
        ):
            raise InvalidInput(
                f"path_prefix {path_prefix!r} must start and end with '/'.", hint="Send e.g. path_prefix=/notes/."
            )
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
            raise InvalidInput(
                f"depth {depth!r} must be 0 or more.", hint="0 lists everything below; 1 lists children."
            )
        prefix = path_prefix or "/"
        listing = [prefix, depth or 0, descending]
        cursor = read_page(page) or {}
        if cursor and (cursor.get("listing") != listing or not isinstance(cursor.get("after"), str)):
            raise InvalidInput(
                "The page cursor belongs to a listing with other filters.",
                hint="Pass next_page with the same path_prefix, depth and order, or start again without page.",
            )
        self._store_row(store_id, tenant)
        low, high, low_inclusive = prefix, prefix[:-1] + "0", True
        after = cursor.get("after")
        if after is not None:
            if descending:
                high = after
            elif after.endswith("/"):
                low = after[:-1] + "0"
            else:
                low, low_inclusive = after, False
        items: list[tuple[str, str | None]] = []  # (path, memory id) or (rolled-up prefix, None)
        while len(items) <= size:
            want = size + 1 - len(items)
            rows = self._rows.memory_store_path_page(
                tenant, store_id, low=low, high=high, low_inclusive=low_inclusive, descending=descending, limit=want
            )
            for path, memory_id in rows:
                parts = path[len(prefix) :].split("/")
                if depth and len(parts) > depth:
                    key = prefix + "/".join(parts[:depth]) + "/"
                    items.append((key, None))
                    # Skip every path below the rolled-up prefix, then read on.
                    low, high, low_inclusive = (low, key, low_inclusive) if descending else (key[:-1] + "0", high, True)
                    break
                items.append((path, memory_id))
                low, high, low_inclusive = (low, path, low_inclusive) if descending else (path, high, False)
            else:
                if len(rows) < want:
                    break
        shown = items[:size]
        found = self._rows.get_many([m for _, m in shown if m is not None])
        data = [
            {"type": "memory_prefix", "path": key} if m is None else self._memory_dict(found[m], view)
            for key, m in shown
            if m is None or m in found
        ]
        more = len(items) > size
        return {"data": data, "next_page": next_page({"after": shown[-1][0], "listing": listing}) if more else None}

    def update_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        path: str | None = None,
        precondition: dict[str, Any] | None = None,
        view: str | None = None,
        tenant: str | None = None,
        actor: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Change a memory's content and/or path (a rename keeps its id), as one new version.

        With ``precondition={"type": "content_sha256", "content_sha256": H}``
        the change applies only while the stored content hashes to ``H``;
        otherwise :class:`PreconditionFailed`, unless the memory already has
        exactly the requested content and path. No change, no new version.
        """
        tenant = self.core.tenant_of(tenant)
        view = check_view(view, "basic")
        new_path = None if path is None else check_path(path)
        new_content = None if content is None else check_text(content)
        expected = check_precondition(precondition)
        current = self._record(store_id, memory_id, tenant)
        version_id = new_id("memver")
        target_path = new_path or str(current.entity_id)
        target_content = self._content(current) if new_content is None else new_content
        updated = self._labelled(current, target_path, target_content, version_id)
        vectors = (
            self._vectors(updated) if updated.content != current.content or target_path != current.entity_id else None
        )
        with self._rows.transaction():
            self._writable(store_id, tenant)
            stored = self._record(store_id, memory_id, tenant)  # read again under the store's lock
            same = self._content(stored) == target_content and stored.entity_id == target_path
            if expected is not None and sha256_hex(self._content(stored)) != expected and not same:
                raise PreconditionFailed(
                    f"Memory {memory_id} no longer has the content_sha256 {expected}; nothing was written.",
                    hint="Read the memory again and retry against its current content_sha256.",
                )
            if same:
                return self._memory_dict(stored, view)
            if target_path != stored.entity_id:
                self._check_free(store_id, tenant, target_path, memory_id)
            if stored.version != current.version:
                updated = self._labelled(stored, target_path, target_content, version_id)
                vectors = self._vectors(updated)
            self._rows.put(updated, vectors)
            self._rows.add_memory_version(
                self._version_row(updated, "modified", target_content, self._actor(actor), version_id)
            )
            self.core.written(tenant, 1)
        if target_path != current.entity_id:
            self._mirror_remove(current)
        self._mirror(updated, target_content)
        return self._memory_dict(updated, view)

    def delete_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        expected_content_sha256: str | None = None,
        tenant: str | None = None,
        actor: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Delete a memory (its record); its versions stay, ending with a ``deleted`` one."""
        tenant = self.core.tenant_of(tenant)
        expected = None
        if expected_content_sha256 is not None:
            expected = check_precondition({"type": "content_sha256", "content_sha256": expected_content_sha256})
        with self._rows.transaction():
            self._store_row(store_id, tenant, lock=True)  # an archived store's memories can still be deleted
            memory = self._record(store_id, memory_id, tenant)
            if expected is not None and sha256_hex(self._content(memory)) != expected:
                raise PreconditionFailed(
                    f"Memory {memory_id} no longer has the content_sha256 {expected}; nothing was deleted.",
                    hint="Read the memory again and retry against its current content_sha256.",
                )
            self._rows.delete([memory.id])
            self._rows.add_memory_version(
                self._version_row(memory, "deleted", None, self._actor(actor), new_id("memver"))
            )
        self._mirror_remove(memory)
        return {"type": "memory_deleted", "id": memory.id}

    # -- versions -------------------------------------------------------------------------------
    def list_versions(
        self,
        store_id: str,
        *,
        memory_id: str | None = None,
        operation: str | None = None,
        api_key_id: str | None = None,
        session_id: str | None = None,
        service_account_id: str | None = None,
        created_at_gte: Any = None,
        created_at_lte: Any = None,
        view: str | None = None,
        limit: int | None = None,
        page: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """A store's versions, newest first, a page at a time, filtered in the query.

        Filters: ``memory_id``, ``operation``, the author (``api_key_id``,
        ``session_id`` or ``service_account_id`` of ``created_by``) and
        ``created_at_gte``/``created_at_lte`` (RFC 3339, inclusive).
        """
        tenant = self.core.tenant_of(tenant)
        view = check_view(view, "basic")
        size = check_limit(limit, view)
        if operation is not None and operation not in OPERATIONS:
            raise InvalidInput(f"Unknown operation {operation!r}.", hint=f"Use one of: {', '.join(OPERATIONS)}.")
        authors = [
            (kind, check_id(value, field))
            for kind, field, value in (
                ("api_actor", "api_key_id", api_key_id),
                ("session_actor", "session_id", session_id),
                ("service_account_actor", "service_account_id", service_account_id),
            )
            if value is not None
        ]
        if len(authors) > 1:
            raise InvalidInput(
                "Filter by one author at a time.", hint="Send only one of api_key_id, session_id, service_account_id."
            )
        created_from = check_time(created_at_gte, "created_at[gte]")
        created_to = check_time(created_at_lte, "created_at[lte]")
        before = (read_page(page) or {}).get("before")
        if before is not None and (isinstance(before, bool) or not isinstance(before, int)):
            raise InvalidInput("The page cursor is not one this server gave.", hint="Pass `next_page` as given.")
        self._store_row(store_id, tenant)
        rows = self._rows.list_memory_versions(
            store_id,
            memory_id=check_id(memory_id, "memory_id"),
            operation=operation,
            author=authors[0] if authors else None,  # type: ignore[arg-type]
            created_from=created_from,
            created_to=created_to,
            before=before,
            limit=size + 1,
        )
        more = len(rows) > size
        rows = rows[:size]
        return {
            "data": [self._version_dict(r, view) for r in rows],
            "next_page": next_page({"before": rows[-1]["_seq"]}) if more else None,
        }

    def _version(self, store_id: str, version_id: str, tenant: str) -> dict[str, Any]:
        self._store_row(store_id, tenant)
        row = self._rows.get_memory_version(store_id, version_id) if isinstance(version_id, str) else None
        if row is None or row["tenant"] != tenant:
            raise NotFound(
                f"No version {version_id!r} in memory store {store_id}.",
                hint=f"GET /v1/memory_stores/{store_id}/memory_versions lists them.",
            )
        return row

    def get_version(
        self, store_id: str, version_id: str, *, view: str | None = None, tenant: str | None = None
    ) -> dict[str, Any]:
        """One version, with its content unless ``view="basic"`` (a redacted one has none)."""
        tenant = self.core.tenant_of(tenant)
        return self._version_dict(self._version(store_id, version_id, tenant), check_view(view, "full"))

    def redact_version(
        self, store_id: str, version_id: str, *, tenant: str | None = None, actor: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Erase a version's content and path for good; its time, hash, size and author stay.

        The memory's current version cannot be redacted (:class:`Conflict`):
        update or delete the memory first. The record's kept copy of that
        version is redacted in the same transaction. Redacting twice changes nothing.
        """
        tenant = self.core.tenant_of(tenant)
        with self._rows.transaction():
            self._store_row(store_id, tenant, lock=True)
            row = self._version(store_id, version_id, tenant)
            if row["redacted_at"] is not None:
                return self._version_dict(row, "basic")
            memory = self._rows.get_for_update(row["memory_id"])
            if memory is not None and memory.metadata.get("memory_version_id") == version_id:
                raise Conflict(
                    f"Version {version_id} is the current content of memory {memory.id}.",
                    hint="Update the memory (or delete it) first; then its earlier version can be redacted.",
                )
            if memory is not None and row["record_version"] is not None:
                kept = next((v for v in memory.previous_versions if v.version == row["record_version"]), None)
                if kept is not None:
                    self._rows.put(redacted(memory, kept.version, utcnow()), None)
            self._rows.redact_memory_version(version_id, utcnow().timestamp(), self._actor(actor))
        return self._version_dict(self._version(store_id, version_id, tenant), "basic")

    # -- the folder mirror --------------------------------------------------------------------------
    def _mirror_root(self, store_id: str, tenant: str) -> Path | None:
        folders = self.folders.folders(tenant=tenant)
        return Path(folders[0].path) / MIRROR_DIR / store_id if folders else None

    def _mirror(self, memory: Memory, content: str) -> None:
        """Write the memory's file under the tenant's first memory folder, if any (best effort).

        The file is written after the memory's transaction (or a page of them, in :meth:`mirror_all`), so the
        memory is read again first: one forgotten or deleted since, or changed again (its own write mirrors
        it), writes nothing; a forget shreds the file, and a copy held from before must not write it back.
        """
        root = self._mirror_root(str(memory.project_id), memory.tenant)
        current = self._rows.get_many([memory.id]).get(memory.id) if root is not None else None
        if (
            root is None
            or current is None
            or self._content(current) != content
            or current.entity_id != memory.entity_id
        ):
            return
        target = root / str(memory.entity_id).lstrip("/")
        try:
            if not target.resolve().is_relative_to(root.resolve()):
                return
            write_atomic(target, content)
        except OSError as exc:
            log.warning("memory %s was stored but its file %s could not be written: %s", memory.id, target, exc)

    def mirror_all(self, *, tenant: str | None = None, every_tenant: bool = False) -> int:
        """Write each memory of the tenant's stores (or of every tenant's) to its folder's mirror; files written.

        Memories are mirrored as they are written; this catches up after a
        folder is registered or an import, rewriting only files that differ.
        """
        tenants = self._rows.memory_store_tenant_ids() if every_tenant else [self.core.tenant_of(tenant)]
        written = 0
        for tenant_id in tenants:
            after, page = 0, []
            while self._mirror_root("", tenant_id) is not None:
                page = self._rows.list_memory_stores(tenant_id, after=after, limit=100, include_archived=True)
                for row in page:
                    ids = [m for _, m in self._rows.memory_store_paths(tenant_id, row["id"])]
                    for start in range(0, len(ids), 200):
                        for memory in self._rows.get_many(ids[start : start + 200]).values():
                            root = self._mirror_root(row["id"], tenant_id)
                            target = root / str(memory.entity_id).lstrip("/")  # type: ignore[operator]
                            text = self._content(memory)
                            if not target.is_file() or target.read_bytes() != text.encode("utf-8"):
                                self._mirror(memory, text)
                                written += 1
                if len(page) < 100:
                    break
                after = page[-1]["_seq"]
        return written

    def _mirror_remove(self, memory: Memory) -> None:
        root = self._mirror_root(str(memory.project_id), memory.tenant)
        if root is None:
            return
        target = root / str(memory.entity_id).lstrip("/")
        try:
            if target.resolve().is_relative_to(root.resolve()) and target.is_file():
                target.unlink()
        except OSError as exc:
            log.warning("the file %s of deleted memory %s could not be removed: %s", target, memory.id, exc)

    def _mirror_remove_store(self, store_id: str, tenant: str) -> None:
        root = self._mirror_root(store_id, tenant)
        if root is None or not root.is_dir():
            return
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        if os.path.isdir(root):
            log.warning("the files of deleted memory store %s could not all be removed from %s", store_id, root)
