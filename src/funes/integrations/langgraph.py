"""A LangGraph ``BaseStore`` over Funes: agent memories in the same index recall searches.

Each item is one Funes record, written as an entity (``entity_type`` ``langgraph``,
``entity_id`` the JSON of namespace and key), so a second ``put`` of the same key
updates the record as a new version. The record keeps:

* ``content``: the text of the item's indexed fields (the whole value by default),
  which is what Funes embeds and keyword-indexes for its own search; ``index=False`` stores the key
  alone as text, so the value stays out of search;
* ``metadata["langgraph"]``: the namespace, key, value (returned verbatim), the
  index setting and the ttl;
* one reference ``(langgraph-ns, <JSON of a namespace prefix>)`` per prefix of the
  namespace, so a namespace-prefix search is a filter inside the index;
* ``expires_at``: now plus ``ttl`` minutes (an expired record is never returned,
  and a read with ``refresh_ttl`` pushes the expiry out again).

Namespaces map to Funes identities through ``namespace_fields``: the i-th entry
names what the i-th namespace element is (``"tenant"``, ``"user"``,
``"project"``, ``"session"``, or ``None`` for a plain label). LangMem's
``("memories", "{langgraph_user_id}")`` becomes ``namespace_fields=(None, "user")``:
each user's memories are Funes records of that user. The scope follows: a
session element gives session scope, a project element project scope, else team.

A ``query`` ranks as LangGraph's stores do: every item under the prefix that
passes the filter is a candidate, each indexed field is embedded on its own
(its vector kept in ``metadata["langgraph"]["vectors"]``), and
``SearchItem.score`` is the similarity of the query and the closest field:
cosine, or what ``index={"distance_type": ...}`` names (``inner_product``,
``l2`` as the negated distance). The embeddings are the
``index={"embed": ...}`` ones when given, else Funes' embedder. ``ttl={...}`` is LangGraph's TTL config (default ttl,
refresh on read, sweeping).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Conflict, InvalidInput, NotFound
from ..models import Memory, SourceRef, utcnow
from . import DISTANCES, pack_vectors, require, similarity, unit_vectors, unpack_vectors

require("langgraph.store.base", "langgraph", "LangGraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path  # noqa: E402

if TYPE_CHECKING:
    from ..service import Funes

ENTITY_TYPE = "langgraph"
PREFIX_REF = "langgraph-ns"
ROLES = ("tenant", "user", "project", "session")
_PAGE = 1000


def _path(parts: Sequence[str]) -> str:
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def _lookup(value: Any, dotted: str) -> Any:
    """``value[a][b]`` for ``"a.b"`` (a key that itself holds a dot wins)."""
    if isinstance(value, Mapping) and dotted in value:
        return value[dotted]
    current = value
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _compare(actual: Any, op: str, expected: Any) -> bool:
    if op == "$eq":
        return bool(actual == expected)
    if op == "$ne":
        return bool(actual != expected)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(actual), float(expected)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidInput(f"Unknown filter operator {op!r}.", hint="Use $eq, $ne, $gt, $gte, $lt or $lte.")


def _matches_value(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_compare(actual, str(op), v) for op, v in expected.items())
        return isinstance(actual, Mapping) and all(_matches_value(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_matches_value(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph JSON filter (equality, or $eq/$ne/$gt/$gte/$lt/$lte)."""
    return all(_matches_value(_lookup(value, str(k)), v) for k, v in (filter or {}).items())


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False)
    if condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    elif condition.match_type != "prefix":
        raise InvalidInput(f"Unknown match type {condition.match_type!r}.", hint="Use 'prefix' or 'suffix'.")
    return all(p == "*" or n == p for n, p in pairs)


class FunesStore(BaseStore):
    """LangGraph's ``BaseStore`` backed by a Funes store (get, search, put, delete, list namespaces, ttl)."""

    supports_ttl = True

    def __init__(
        self,
        funes: Funes,
        *,
        namespace_fields: Sequence[str | None] = (),
        index_fields: Sequence[str] | None = None,
        memory_type: str = "fact",
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        """``namespace_fields`` maps namespace positions to tenant/user/project/session (None: a label).

        ``index_fields`` are the value's paths embedded and keyword-indexed by
        default (LangGraph path syntax, e.g. ``"content"`` or ``"chapters[*].text"``);
        None indexes every top-level field. A ``put`` with ``index=[...]``
        overrides them for that item.

        ``index`` is LangGraph's index config (``embed``: the embeddings that
        score a query against each indexed field, default Funes' embedder;
        ``fields``: the default paths, like ``index_fields``; ``distance_type``:
        ``cosine``, ``inner_product`` or ``l2``, the score). ``ttl`` is its
        TTL config (``default_ttl`` minutes, ``refresh_on_read``,
        ``sweep_interval_minutes`` for :meth:`start_ttl_sweeper`).
        """
        roles = tuple(namespace_fields)
        for role in roles:
            if role is not None and role not in ROLES:
                raise InvalidInput(
                    f"Unknown namespace field {role!r}.", hint=f"Use None or one of: {', '.join(ROLES)}."
                )
        named = [r for r in roles if r is not None]
        if len(named) != len(set(named)):
            raise InvalidInput("A namespace field is named twice.", hint="Name each of tenant/user/project once.")
        self.funes = funes
        self.namespace_fields = roles
        config = dict(index or {})
        self.index_config = config or None
        fields = config.get("fields") or config.get("text_fields") or index_fields
        self.index_fields = list(fields) if fields is not None and list(fields) != ["$"] else None
        self.embeddings = ensure_embeddings(config["embed"]) if config.get("embed") is not None else None
        self.distance = str(config.get("distance_type") or "cosine")
        if self.distance not in DISTANCES:
            raise InvalidInput(f"Unknown distance_type {self.distance!r}.", hint=f"Use one of: {', '.join(DISTANCES)}.")
        self.ttl_config = dict(ttl) if ttl else None  # type: ignore[assignment]
        self.memory_type = memory_type
        self._queued: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Result], Op]]] = {}
        self._drains: set[asyncio.Task[None]] = set()
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # -- mapping -------------------------------------------------------------------------
    def identity(self, namespace: Sequence[str]) -> dict[str, Any]:
        """The Funes identity (tenant, user, project, session, scope) a namespace maps to."""
        found = {role: namespace[i] for i, role in enumerate(self.namespace_fields) if role and i < len(namespace)}
        scope = "session" if "session" in found else ("project" if "project" in found else "team")
        return {
            "tenant": found.get("tenant"),
            "user": found.get("user"),
            "project": found.get("project"),
            "session": found.get("session"),
            "scope": scope,
        }

    def _partition(self, prefix: Sequence[str]) -> dict[str, Any]:
        """The tenant and user a search under ``prefix`` is confined to (None: the configured default)."""
        ident = self.identity([p for p in prefix])
        for role in ("tenant", "user"):
            if ident[role] == "*":
                ident[role] = None
        return {"tenant": ident["tenant"], "user": ident["user"]}

    def _pieces(self, value: Mapping[str, Any], index: Any) -> list[str]:
        """The texts of the indexed fields, each embedded on its own (none for ``index=False``)."""
        if index is False:
            return []
        fields = index if isinstance(index, list) else self.index_fields
        if fields is None:
            pieces = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value.values()]
        else:
            pieces = [t for f in fields for t in get_text_at_path(dict(value), f)]
        return [p for p in pieces if p and p.strip()]

    def _embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """The embeddings' vectors as they come (the distance decides whether their length counts)."""
        if self.embeddings is not None:
            if query:
                return np.atleast_2d(np.asarray(self.embeddings.embed_query(texts[0]), dtype=np.float32))
            return np.atleast_2d(np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32))
        if query:
            return unit_vectors(self.funes.embed_query(texts[0]))
        if all(len(self.funes.parts(t)) == 1 for t in texts):
            return unit_vectors(self.funes.embed(texts))
        return unit_vectors([self.funes.embed_query(t) for t in texts])  # a long field: the mean of its parts

    @staticmethod
    def _entity_id(namespace: Sequence[str], key: str) -> str:
        return _path([*namespace, key])

    @staticmethod
    def _item_of(memory: Memory, score: float | None = None, *, search: bool = False) -> Item:
        data = memory.metadata["langgraph"]
        fields = {
            "namespace": tuple(data["namespace"]),
            "key": data["key"],
            "value": data["value"],
            "created_at": memory.created_at,
            "updated_at": memory.updated_at,
        }
        return SearchItem(**fields, score=score) if search else Item(**fields)

    def _find(self, namespace: Sequence[str], key: str) -> Memory | None:
        ident = self.identity(namespace)
        page = self.funes.list(
            tenant=ident["tenant"],
            user=ident["user"],
            entity_types=[ENTITY_TYPE],
            entity_ids=[self._entity_id(namespace, key)],
            limit=10,
        )
        for memory in page.items:
            data = memory.metadata.get("langgraph") or {}
            if tuple(data.get("namespace") or ()) == tuple(namespace) and data.get("key") == key:
                return memory
        return None

    def _refresh(self, memory: Memory) -> Memory:
        """Push the item's expiry out again (with a TTL config, only when its ``refresh_on_read`` is on)."""
        ttl = (memory.metadata.get("langgraph") or {}).get("ttl")
        if ttl is None or (self.ttl_config is not None and not self.ttl_config.get("refresh_on_read", False)):
            return memory
        for _ in range(2):
            expires = utcnow() + timedelta(minutes=float(ttl))
            try:
                return self.funes.update(memory.id, expires_at=expires, tenant=memory.tenant, user=memory.user_id)
            except NotFound:
                return memory  # deleted since it was read: the read stands, as a read before the delete
            except Conflict:
                # Written meanwhile (a put or another read's refresh): refresh what it is now.
                try:
                    memory = self.funes.get(memory.id, tenant=memory.tenant, user=memory.user_id)
                except NotFound:
                    return memory
        return memory

    # -- operations ----------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        memory = self._find(op.namespace, op.key)
        if memory is None:
            return None
        if op.refresh_ttl:
            memory = self._refresh(memory)
        return self._item_of(memory)

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), str(op.key)
        if op.value is None:
            existing = self._find(namespace, key)
            if existing is not None:
                try:
                    self.funes.forget(existing.id, tenant=existing.tenant, user=existing.user_id)
                except NotFound:
                    pass  # deleted meanwhile: the outcome is the same
            return
        if not namespace:
            raise InvalidInput("A LangGraph namespace cannot be empty.", hint='Use e.g. ("memories", user_id).')
        value = dict(op.value)
        ident = self.identity(namespace)
        ttl = op.ttl if isinstance(op.ttl, (int, float)) else None
        index = op.index if op.index is False or isinstance(op.index, list) else None
        pieces = self._pieces(value, index)
        vectors = pack_vectors(self._embed(pieces)) if pieces else []
        self.funes.remember(
            "\n".join(pieces) or key,
            type=self.memory_type,
            scope=ident["scope"],
            project=ident["project"],
            session=ident["session"],
            tenant=ident["tenant"],
            user=ident["user"],
            title=key,
            entity_type=ENTITY_TYPE,
            entity_id=self._entity_id(namespace, key),
            source=SourceRef(type="agent", uri=f"langgraph:{'/'.join(namespace)}/{key}"),
            expires_at=utcnow() + timedelta(minutes=float(ttl)) if ttl is not None else None,
            metadata={
                "langgraph": {
                    "namespace": list(namespace),
                    "key": key,
                    "value": value,
                    "index": index,
                    "ttl": ttl,
                    "vectors": vectors,
                }
            },
            references=[(PREFIX_REF, _path(namespace[:i])) for i in range(1, len(namespace) + 1)],
        )

    def _prefix_refs(self, prefix: Sequence[str]) -> list[tuple[str, str]]:
        """The reference that confines a search to a namespace prefix (its literal part before any '*')."""
        literal: list[str] = []
        for part in prefix:
            if part == "*":
                break
            literal.append(part)
        return [(PREFIX_REF, _path(literal))] if literal else []

    def _records(self, prefix: Sequence[str]) -> Iterator[Memory]:
        """Every live LangGraph record under a namespace prefix, newest first."""
        cursor: str | None = None
        condition = MatchCondition(match_type="prefix", path=tuple(prefix))
        while True:
            page = self.funes.list(
                **self._partition(prefix),
                entity_types=[ENTITY_TYPE],
                refs=self._prefix_refs(prefix) or None,
                cursor=cursor,
                limit=_PAGE,
            )
            for memory in page.items:
                data = memory.metadata.get("langgraph")
                if data and _namespace_matches(condition, tuple(data["namespace"])):
                    yield memory
            cursor = page.next_cursor
            if not cursor:
                return

    def _search(self, op: SearchOp) -> list[SearchItem]:
        """LangGraph's search: filter the namespace, then rank by the query's best-matching indexed field.

        Every item under the prefix that passes the filter is a candidate (so
        ``limit`` items come back whenever that many match); with a query, an
        item's score is the similarity (the index config's ``distance_type``,
        cosine by default) of the query and its closest indexed field, and items stored with ``index=False`` follow, unscored.
        """
        prefix = tuple(op.namespace_prefix)
        wanted = op.offset + op.limit
        out: list[tuple[Memory, float | None]] = []
        if op.query:
            candidates = [
                m for m in self._records(prefix) if matches_filter(m.metadata["langgraph"]["value"], op.filter)
            ]
            query = self._embed([op.query], query=True)[0]
            scored: list[tuple[float, Memory]] = []
            scoreless: list[Memory] = []
            for memory in candidates:
                packed = memory.metadata["langgraph"].get("vectors") or []
                if not packed:
                    scoreless.append(memory)
                    continue
                vectors = unpack_vectors(packed)
                if vectors.shape[1] != query.shape[0]:
                    vectors = self._embed(self._pieces(memory.metadata["langgraph"]["value"], None))
                scored.append((float(np.max(similarity(vectors, query, self.distance))), memory))
            scored.sort(key=lambda pair: pair[0], reverse=True)
            out = [(m, s) for s, m in scored] + [(m, None) for m in scoreless]
        else:
            for memory in self._records(prefix):
                if matches_filter(memory.metadata["langgraph"]["value"], op.filter):
                    out.append((memory, None))
                    if len(out) >= wanted:
                        break
        page = out[op.offset : wanted]
        if op.refresh_ttl:
            page = [(self._refresh(m), s) for m, s in page]
        return [self._item_of(m, s, search=True) for m, s in page]  # type: ignore[misc]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        # Every record carries a reference per prefix of its namespace, so the store counts the records
        # under each prefix in one grouped statement; a prefix holding more records than its children
        # together holds records of its own, so it is a namespace.
        counts = self.funes.reference_counts(
            PREFIX_REF, entity_types=[ENTITY_TYPE], refs=self._prefix_refs(prefix) or None, **self._partition(prefix)
        )
        under: Counter[tuple[str, ...]] = Counter()
        paths = {tuple(json.loads(ref)): n for ref, n in counts.items()}
        for path, n in paths.items():
            under[path[:-1]] += n
        found = {
            path[: op.max_depth] if op.max_depth is not None else path
            for path, n in paths.items()
            if n > under[path] and all(_namespace_matches(c, path) for c in conditions)
        }
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- TTL -----------------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete the items whose TTL has passed (Funes already hides them); how many were deleted."""
        return self._sweep()

    def _sweep(self) -> int:
        now = utcnow()
        swept = 0
        cursor: str | None = None
        while True:
            page = self.funes.list(
                entity_types=[ENTITY_TYPE], include_expired=True, cursor=cursor, limit=_PAGE, **self._partition(())
            )
            for memory in page.items:
                if memory.expires_at is not None and memory.expires_at <= now:
                    try:
                        self.funes.forget(memory.id, tenant=memory.tenant, user=memory.user_id)
                        swept += 1
                    except NotFound:
                        pass  # deleted meanwhile
            cursor = page.next_cursor
            if not cursor:
                return swept

    async def asweep_ttl(self) -> int:
        """:meth:`sweep_ttl` in a worker thread."""
        return await asyncio.to_thread(self._sweep)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread:
        """Sweep expired items every ``sweep_interval_minutes`` (default: the TTL config's, else 5) until stopped."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        if self._sweeper is not None and self._sweeper.is_alive():
            return self._sweeper
        self._sweeper_stop.clear()

        def run() -> None:
            while not self._sweeper_stop.wait(float(interval) * 60):
                self._sweep()

        self._sweeper = threading.Thread(target=run, name="funes-langgraph-ttl", daemon=True)
        self._sweeper.start()
        return self._sweeper

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it has stopped within ``timeout`` seconds."""
        self._sweeper_stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()

    # -- BaseStore -----------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run a batch as LangGraph's stores do: reads see the state before the batch, then the writes.

        Gets, searches and namespace listings are answered first; the puts
        (deletes when the value is None) follow, the last one per (namespace,
        key) winning. Results come back in the order of ``ops``.
        """
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for position, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[position] = self._get(op)
            elif isinstance(op, SearchOp):
                results[position] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[position] = self._list_namespaces(op)
            elif isinstance(op, PutOp):
                writes.pop((tuple(op.namespace), str(op.key)), None)
                writes[(tuple(op.namespace), str(op.key))] = op
            else:
                raise InvalidInput(
                    f"Unknown store operation {type(op).__name__}.",
                    hint="Pass GetOp, SearchOp, PutOp or ListNamespacesOp.",
                )
        for put in writes.values():
            self._put(put)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the Funes core is synchronous).

        Single operations issued concurrently (``asyncio.gather`` of ``aput``,
        ``aget``, ``asearch``, ...) are coalesced into one batch, as LangGraph's
        batched async stores do, so thousands of them cost a few batches.
        """
        ops = list(ops)
        if len(ops) != 1:
            return await asyncio.to_thread(self.batch, ops)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        queued = self._queued.setdefault(loop, [])
        queued.append((future, ops[0]))
        if len(queued) == 1:
            task = loop.create_task(self._drain(loop))
            self._drains.add(task)  # held until done, so the loop cannot drop it
            task.add_done_callback(self._drains.discard)
        return [await future]

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        await asyncio.sleep(0)  # let the other coroutines of a gather queue their operations
        taken = self._queued.pop(loop, [])
        try:
            results = await asyncio.to_thread(self.batch, [op for _, op in taken])
        except Exception as exc:
            for future, _ in taken:
                if not future.done():
                    future.set_exception(exc)
            return
        for (future, _), result in zip(taken, results, strict=True):
            if not future.done():
                future.set_result(result)
