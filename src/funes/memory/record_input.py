"""What a caller may pass as a record, checked: choices, importance, dates, references, bulk items.

Every check raises :class:`~funes.errors.InvalidInput` with a hint saying
what to pass instead; the core builds records only from checked values.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from ..errors import InvalidInput
from ..models import (
    KINDS,
    MEMORY_TYPES,
    MESSAGE_ROLES,
    METADATA_MAX_DEPTH,
    SCOPES,
    Reference,
    SearchFilters,
    SourceRef,
    metadata_depth,
    parse_time,
)


def check_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` when it is one of ``allowed``, else an error listing them."""
    if value not in allowed:
        raise InvalidInput(f"Invalid {name} {value!r}.", hint=f"Use one of: {', '.join(allowed)}.")
    return value


def message_roles(roles: Sequence[str] | None) -> tuple[str, ...] | None:
    """A search's message-role filter, checked (None: no filter)."""
    if isinstance(roles, str):
        raise InvalidInput("Roles take a list.", hint='Pass roles=["user"].')
    for role in roles or ():
        check_choice("message role", role, MESSAGE_ROLES)
    return tuple(dict.fromkeys(roles)) if roles else None


def check_importance(value: float) -> float:
    """An importance as a float in [0, 1], or an error saying so."""
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"Importance must be a number, got {value!r}.", hint="Use a value from 0 to 1.") from exc
    if not 0.0 <= number <= 1.0 or number != number:
        raise InvalidInput(f"Importance {value!r} is out of range.", hint="Use a value from 0 to 1, e.g. 0.7.")
    return number


def as_time(value: datetime | str | None, name: str) -> datetime | None:
    """An ISO-8601 text or datetime as an aware datetime, or an error naming the field."""
    try:
        return parse_time(value)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(
            f"{name} {value!r} is not a date.", hint="Use ISO-8601, e.g. 2026-12-31 or 2026-12-31T18:00:00Z."
        ) from exc


class RecordFields(TypedDict, total=False):
    """Optional fields of a new record (see :meth:`Funes.prepare`)."""

    type: str
    importance: float | None
    scope: str | None
    project: str | None
    session: str | None
    tenant: str | None
    user: str | None
    kind: str
    title: str | None
    topic: str | None
    entity_type: str | None
    entity_id: str | None
    source: SourceRef | None
    pinned: bool
    expires_at: datetime | str | None
    metadata: dict[str, Any] | None
    references: Iterable[Reference | tuple[str, str] | dict[str, str]]


def expand_source_types(names: Sequence[str] | None) -> tuple[str, ...] | None:
    """Source filter names (documents, sheets, chat, markdown, all) or raw types as source types."""
    if not names:
        return None
    from ..models.sources import source_types_for

    out: list[str] = []
    for name in names:
        types = source_types_for(name)
        if types is None:
            return None
        out.extend(t for t in types if t not in out)
    return tuple(out)


def as_reference(value: Reference | tuple[str, str] | dict[str, str]) -> Reference:
    """A reference from a Reference, a (type, id) pair or a {"type", "id"} dict."""
    if isinstance(value, Reference):
        return value
    if isinstance(value, dict):
        try:
            return Reference(type=str(value["type"]), id=str(value["id"]))
        except KeyError as exc:
            raise InvalidInput(
                "A reference needs 'type' and 'id'.", hint='Use {"type": "vendor", "id": "V-12"}.'
            ) from exc
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Reference(type=str(value[0]), id=str(value[1]))
    raise InvalidInput(f"Cannot read reference {value!r}.", hint="Use (type, id), e.g. ('vendor', 'V-12').")


def parse_reference(value: Reference | tuple[str, str] | dict[str, str] | str) -> Reference:
    """A reference from :func:`as_reference`'s forms or ``"TYPE:ID"`` text (``rfp:RFP-7``)."""
    if isinstance(value, str):
        kind, sep, ident = value.partition(":")
        if not sep or not kind.strip() or not ident.strip():
            raise InvalidInput(f"Cannot read reference {value!r}.", hint="Use TYPE:ID, e.g. rfp:RFP-7.")
        return Reference(type=kind.strip(), id=ident.strip())
    return as_reference(value)


def with_entity_filters(
    filters: SearchFilters,
    entity_types: Sequence[str] | None,
    entity_ids: Sequence[str] | None,
    refs: Sequence[Reference | tuple[str, str] | dict[str, str] | str] | None,
) -> SearchFilters:
    """The filters narrowed to entity types, entity ids and references (each reference required)."""
    if isinstance(entity_types, str) or isinstance(entity_ids, str):
        raise InvalidInput("Entity filters take lists.", hint='Pass entity_types=["CODE_CELL"], entity_ids=["A1"].')
    parsed = tuple(parse_reference(r) for r in ([refs] if isinstance(refs, str) else refs or ()))
    return dataclasses.replace(
        filters,
        entity_types=tuple(entity_types) if entity_types else None,
        entity_ids=tuple(entity_ids) if entity_ids else None,
        references=parsed or None,
    )


_ITEM_FIELDS = frozenset(RecordFields.__optional_keys__) | {"content"}


def remember_fields(item: Any, defaults: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(content, fields) of one remember_many item: a string, or a dict of content and remember's fields."""
    if isinstance(item, str):
        return item, dict(defaults)
    if not isinstance(item, Mapping):
        raise InvalidInput(
            f"An item must be text or a dict, got {type(item).__name__}.",
            hint='Pass "text" or {"content": "text", "type": "fact"}.',
        )
    unknown = sorted(set(item) - _ITEM_FIELDS)
    if unknown:
        raise InvalidInput(
            f"Unknown field(s) {', '.join(map(str, unknown))}.", hint=f"Use: {', '.join(sorted(_ITEM_FIELDS))}."
        )
    if "content" not in item:
        raise InvalidInput("The item has no content.", hint='Give it a "content" key with the text to remember.')
    fields = {**defaults, **{k: v for k, v in item.items() if k != "content"}}
    # Items often come from files: a wrong type is that item's error, not a crash of the batch.
    for name, value in fields.items():
        allowed = _FIELD_TYPES.get(name)
        if value is not None and allowed is not None and not isinstance(value, allowed):
            expected = " or ".join(t.__name__ for t in allowed)
            raise InvalidInput(
                f"{name} must be {expected}, got {type(value).__name__} {value!r:.40}.",
                hint=f"Pass {name} as {expected}, or leave it out.",
            )
    return item["content"], fields


_TEXT_FIELDS = (
    "type",
    "scope",
    "project",
    "session",
    "tenant",
    "user",
    "kind",
    "title",
    "topic",
    "entity_type",
    "entity_id",
)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(_TEXT_FIELDS, (str,)),
    "importance": (int, float),
    "pinned": (bool,),
    "expires_at": (str, datetime),
    "metadata": (Mapping,),
    "source": (SourceRef,),
    "references": (list, tuple),
}


def check_search(
    query: Any, max_chars: int, limit: int, min_relevance: float | None, min_similarity: float | None
) -> None:
    """The arguments of a search, each refused with what to do instead."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("The search query is empty.", hint="Pass the words or question to search for.")
    if max_chars > 0 and len(query) > max_chars:
        # A 1 MB query took 63 s and a 10 MB one never answered over stdio (issue 9).
        raise InvalidInput(
            f"The search query is {len(query):,} characters, over the {max_chars:,} limit (max_query_chars).",
            hint="Search with the key words or a short question; raise the limit with "
            "`funes config set max_query_chars N` if you really need longer queries.",
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            "The search query is not valid Unicode text (it has a lone surrogate).",
            hint="Decode the text properly before searching.",
        ) from exc
    if not 1 <= limit <= 1000:
        raise InvalidInput(f"Limit {limit} is out of range.", hint="Use a limit from 1 to 1000.")
    if min_relevance is not None and not 0.0 <= float(min_relevance) <= 1.0:
        raise InvalidInput(
            f"min_relevance {min_relevance} is out of range.", hint="Use a probability from 0 to 1, e.g. 0.3."
        )
    if min_similarity is not None and not -1.0 <= float(min_similarity) <= 1.0:
        raise InvalidInput(
            f"min_similarity {min_similarity} is out of range.", hint="Use a cosine value from -1 to 1, e.g. 0.4."
        )


def check_content(content: Any, max_bytes: int) -> str:
    """A record's text, stripped; refused when it is not text, empty, not Unicode, or over ``max_bytes``."""
    if not isinstance(content, str):
        raise InvalidInput(f"Content must be text, got {type(content).__name__}.", hint="Pass a string.")
    if not content.strip():
        raise InvalidInput("Content is empty.", hint="Pass the text to remember.")
    if "\x00" in content:
        # PostgreSQL cannot store NUL in text, and no reader or terminal shows it (issue 31).
        raise InvalidInput("Content holds a NUL character (\\x00).", hint="Remove the NUL characters from the text.")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            "Content is not valid Unicode text (it has a lone surrogate).",
            hint="Decode the text properly (e.g. with errors='replace') before remembering it.",
        ) from exc
    if size > max_bytes:
        raise InvalidInput(
            f"Content is {size:,} bytes, over the limit of {max_bytes:,}.",
            hint="Ingest large texts as documents (`funes ingest FILE`), or raise max_content_bytes.",
        )
    return content.strip()


#: The longest each short text field of a record may be, in characters (issue 31: a title of
#: any length was stored as given). The file and session ids are names, never documents.
LABEL_MAX_CHARS = {"title": 1000, "topic": 200, "entity_type": 100, "entity_id": 500, "project": 500, "session": 500}


def check_labels(**labels: Any) -> None:
    """Refuse a short text field (title, topic, entity_type, ...) that holds a NUL or is over its limit."""
    for name, value in labels.items():
        if not isinstance(value, str):
            continue
        if "\x00" in value:
            raise InvalidInput(f"The {name} holds a NUL character (\\x00).", hint=f"Remove it from the {name}.")
        limit = LABEL_MAX_CHARS[name]
        if len(value) > limit:
            raise InvalidInput(
                f"The {name} is {len(value):,} characters, over the limit of {limit:,}.",
                hint=f"Shorten the {name}; put longer text in the content.",
            )


METADATA_MAX_BYTES = 65_536  # a record's metadata as JSON; larger data belongs in content or a document
METADATA_MAX_KEYS = 256


def check_metadata(metadata: Any) -> dict[str, Any]:
    """A record's metadata: a JSON object of at most 64 KiB and 256 keys, nesting at most 32 levels, no NaN.

    Refused at write time, because a record stored with 254+ levels answered
    every later listing and search with 500 (issue 31).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"Metadata must be an object, got {type(metadata).__name__}.", hint='Pass {"key": "value"}.')
    depth = metadata_depth(metadata)
    if depth > METADATA_MAX_DEPTH:
        raise InvalidInput(
            f"Metadata nests more than {METADATA_MAX_DEPTH} levels deep.",
            hint=f"Flatten it to at most {METADATA_MAX_DEPTH} levels (e.g. dotted keys such as 'a.b.c').",
        )
    if len(metadata) > METADATA_MAX_KEYS:
        raise InvalidInput(
            f"Metadata has {len(metadata):,} keys, over the limit of {METADATA_MAX_KEYS}.",
            hint="Keep metadata to a few descriptive keys; store bulk data as content or a document.",
        )
    try:
        text = json.dumps(metadata, allow_nan=False, default=str)
    except ValueError as exc:
        raise InvalidInput(
            "Metadata holds NaN or Infinity, which JSON cannot carry.",
            hint="Use null, or a string such as 'NaN', for a missing number.",
        ) from exc
    if len(text.encode()) > METADATA_MAX_BYTES:
        raise InvalidInput(
            f"Metadata is {len(text.encode()):,} bytes as JSON, over the limit of {METADATA_MAX_BYTES:,}.",
            hint="Keep metadata small; store bulk data as content or a document.",
        )
    return dict(metadata)


def check_scope(scope: str | None, project: str | None, session: str | None) -> str:
    """The record's scope: the one given, checked, or the narrowest its project and session allow."""
    if scope is None:
        scope = "session" if session and not project else ("project" if project else "team")
    check_choice("scope", scope, SCOPES)
    if scope == "project" and not project:
        raise InvalidInput(
            "Scope 'project' needs a project.", hint="Pass project=... (CLI: --project NAME) or use scope 'team'."
        )
    if scope == "session" and not session:
        raise InvalidInput("Scope 'session' needs a session id.", hint="Pass session=... (CLI: --session ID).")
    return scope


def search_filters(
    tenant: str,
    user: str | None,
    types: Sequence[str] | None,
    kinds: Sequence[str] | None,
    scopes: Sequence[str] | None,
    project: str | None,
    session: str | None,
    source_types: Sequence[str] | None = None,
    source_ids: Sequence[str] | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    roles: Sequence[str] | None = None,
) -> SearchFilters:
    """The filters of a listing or search (the caller resolved tenant and user), each choice checked."""
    for t in types or ():
        check_choice("memory type", t, MEMORY_TYPES)
    for k in kinds or ():
        check_choice("kind", k, KINDS)
    for s in scopes or ():
        check_choice("scope", s, SCOPES)
    return SearchFilters(
        tenant=tenant,
        user_id=user,
        scopes=tuple(scopes) if scopes else None,
        project_id=project,
        session_id=session,
        memory_types=tuple(types) if types else None,
        kinds=tuple(kinds) if kinds else None,
        source_types=expand_source_types(source_types),
        source_ids=tuple(source_ids) if source_ids else None,
        created_after=as_time(since, "since"),
        created_before=as_time(until, "until"),
        roles=message_roles(roles),
    )
