"""The input rules of Anthropic's memory-stores API: paths, content, views, limits, cursors, preconditions.

Pure functions; each refuses bad input with :class:`InvalidInput` saying what
to send instead (HTTP 400 ``invalid_request_error``). Used by
:mod:`funes.agents.memory_stores`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import unicodedata
from typing import Any

from ..errors import InvalidInput
from ..models import format_time, from_epoch, parse_time

MAX_PATH_BYTES = 1024
MAX_PATH_SEGMENTS = 20
MAX_CONTENT_BYTES = 102_400
MAX_NAME_CHARS = 255
MAX_DESCRIPTION_CHARS = 1024
VIEWS = ("basic", "full")
OPERATIONS = ("created", "modified", "deleted")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def sha256_hex(text: str) -> str:
    """The API's ``content_sha256``: lowercase hex SHA-256 of the UTF-8 bytes, no normalisation."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_path(path: Any, field: str = "path") -> str:
    """A memory path as the API accepts it, or :class:`InvalidInput` saying what is wrong."""
    example = "e.g. /projects/foo/notes.md"
    if not isinstance(path, str):
        raise InvalidInput(f"`{field}` must be text.", hint=f"Send a path starting with /, {example}.")
    if not path.startswith("/"):
        raise InvalidInput(f"The {field} {path[:80]!r} does not start with '/'.", hint=f"Send {example}.")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"The {field} is not valid Unicode.", hint="Send UTF-8 text.") from exc
    if size > MAX_PATH_BYTES:
        raise InvalidInput(
            f"The {field} is {size:,} bytes, over the limit of {MAX_PATH_BYTES:,}.",
            hint="Use a shorter path; put long text in the content.",
        )
    segments = path[1:].split("/")
    if path == "/" or "" in segments:
        raise InvalidInput(f"The {field} {path[:80]!r} has an empty segment.", hint=f"Name every segment, {example}.")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise InvalidInput(
            f"The {field} has {len(segments)} segments, over the limit of {MAX_PATH_SEGMENTS}.",
            hint="Use a flatter path, e.g. /projects/foo/notes.md.",
        )
    if any(s in (".", "..") for s in segments):
        raise InvalidInput(
            f"The {field} {path[:80]!r} has a '.' or '..' segment.",
            hint=f"Send the path without relative parts, {example}.",
        )
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in path):
        raise InvalidInput(
            f"The {field} holds a control or format character.", hint="Send a path of printable characters."
        )
    if unicodedata.normalize("NFC", path) != path:
        raise InvalidInput(f"The {field} is not NFC-normalized.", hint="Normalize it to NFC before sending it.")
    return path


def check_text(content: Any, field: str = "content") -> str:
    """A memory's content: text of at most 102,400 UTF-8 bytes (empty is allowed)."""
    if not isinstance(content, str):
        raise InvalidInput(f"`{field}` must be text.", hint='Send a string ("" for an empty memory).')
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"The {field} is not valid Unicode (a lone surrogate).", hint="Send UTF-8 text.") from exc
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(
            f"The {field} is {size:,} bytes, over the limit of {MAX_CONTENT_BYTES:,} (100 kB).",
            hint="Split it over several memories.",
        )
    if "\x00" in content:
        raise InvalidInput(f"The {field} holds a NUL character.", hint="Remove the NUL characters.")
    return content


def check_view(view: Any, default: str) -> str:
    view = default if view is None else view
    if view not in VIEWS:
        raise InvalidInput(f"Unknown view {view!r}.", hint="Use view=basic (no content) or view=full.")
    return str(view)


def check_limit(limit: Any, view: str) -> int:
    if limit is None:
        return 20
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise InvalidInput(f"Limit {limit!r} is out of range.", hint="Use a limit from 1 to 100.")
    return min(limit, 20) if view == "full" else limit


def read_page(page: Any) -> dict[str, Any] | None:
    """A decoded ``page_...`` cursor (None for the first page)."""
    if page is None or page == "":
        return None
    try:
        if not isinstance(page, str) or not page.startswith("page_"):
            raise ValueError(page)
        data = json.loads(base64.urlsafe_b64decode(page[5:] + "=" * (-len(page[5:]) % 4)))
        if not isinstance(data, dict):
            raise ValueError(page)
        return data
    except ValueError as exc:
        raise InvalidInput(
            "The page cursor is not one this server gave.", hint="Pass `next_page` of the previous response."
        ) from exc


def next_page(data: dict[str, Any]) -> str:
    return "page_" + base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def api_time(epoch: float | None) -> str | None:
    return format_time(from_epoch(epoch)).replace("+00:00", "Z") if epoch is not None else None  # type: ignore[union-attr]


def check_precondition(precondition: Any) -> str | None:
    """The expected ``content_sha256`` of a precondition object (None: none given)."""
    if precondition is None:
        return None
    if not isinstance(precondition, dict) or precondition.get("type") != "content_sha256":
        raise InvalidInput(
            "The precondition must be an object of type content_sha256.",
            hint='Send {"type": "content_sha256", "content_sha256": "<64 hex characters>"}.',
        )
    expected = precondition.get("content_sha256")
    if not isinstance(expected, str) or not _SHA256.match(expected):
        raise InvalidInput(
            "content_sha256 must be 64 lowercase hexadecimal characters.",
            hint="Send the content_sha256 a read or list returned.",
        )
    return expected


def check_time(value: Any, field: str) -> float | None:
    """An RFC 3339 time of a list filter (``created_at[gte]``) as epoch seconds (None: not given).

    The bound is widened by a microsecond (``[gte]`` down, ``[lte]`` up): the API
    shows times to the microsecond, so a time read from an answer must match
    the object it came from, inclusive.
    """
    if value is None or value == "":
        return None
    try:
        moment = parse_time(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise InvalidInput(
            f"{field} {str(value)[:80]!r} is not an RFC 3339 time.", hint=f"Send e.g. {field}=2026-07-22T00:00:00Z."
        )
    return moment.timestamp() + (1e-6 if field.endswith("[lte]") else -1e-6)


def check_order(order: Any, order_by: Any) -> bool:
    """Whether a memory listing runs in descending path order (``order=desc``); paths are the only key."""
    if order_by not in (None, "", "path"):
        raise InvalidInput(f"Unknown order_by {order_by!r}.", hint="Memories are listed by path: order_by=path.")
    if order not in (None, "", "asc", "desc"):
        raise InvalidInput(f"Unknown order {order!r}.", hint="Use order=asc (the default) or order=desc.")
    return order == "desc"


def check_id(value: Any, field: str) -> str | None:
    """An id given as a list filter (api_key_id, session_id, ...): non-empty text, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise InvalidInput(f"{field} must be a non-empty id.", hint=f"Send the {field} of a version's created_by.")
    return value
