"""Reading records as they were: the state valid at a time, and the states a record went through (issue 25).

A record's current text is valid from ``valid_from`` (its creation when not
recorded); each kept version carries its own ``valid_from``/``valid_to``
(:func:`funes.models.timed_versions` fills them in for older histories).
The versions live in the record's own row, so reading a hit as of a time is
a walk over at most :data:`~funes.models.MAX_PREVIOUS_VERSIONS` values the
search already loaded: no second query per hit.

* :func:`as_of_time` reads the ``as_of`` a caller gave: a date without a time
  means the end of that day (issue 28), and a time in the future is refused.
* :func:`state_at` is one record as it was at a time (None: no kept state then).
* :func:`at_time` maps search hits to their state at ``as_of`` and, with
  ``include_superseded``, adds the earlier states after each hit, marked by
  their ``valid_to``.

May import: ``funes.models``, ``funes.errors``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from ..errors import InvalidInput
from ..models import Memory, PreviousVersion, SearchHit, SearchResults, parse_time, utcnow

_DATE_ONLY = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
# A caller's clock may run a little ahead of ours: that much future is read as now.
_CLOCK_SLACK = timedelta(minutes=5)


def as_of_time(value: datetime | str | None, now: datetime | None = None) -> datetime | None:
    """The instant an ``as_of`` names: a bare date is the end of that day; the future is an error."""
    if value is None or value == "":
        return None
    try:
        when = parse_time(value)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(
            f"as_of {value!r} is not a date.", hint="Use ISO-8601, e.g. 2026-05-01 or 2026-05-01T18:00:00Z."
        ) from exc
    assert when is not None
    now = now or utcnow()
    if when > now + _CLOCK_SLACK:
        raise InvalidInput(
            f"as_of {value!r} is in the future; memory cannot be read as of a time that has not come.",
            hint="Leave as_of out to read the current state, or give a past time.",
        )
    if isinstance(value, str) and _DATE_ONLY.match(value):
        when = when + timedelta(days=1) - timedelta(microseconds=1)  # the whole day: messages later that day count
    return min(when, now)


def _as_state(memory: Memory, old: PreviousVersion) -> Memory:
    return memory.evolve(
        content=old.content,
        content_hash=old.content_hash,
        version=old.version,
        importance=old.importance,
        valid_from=old.valid_from,
        valid_to=old.valid_to,
        author=old.author,
        proposal=None,
        previous_versions=tuple(v for v in memory.history if v.version < old.version),
        updated_at=old.updated_at,
    )


def state_at(memory: Memory, when: datetime) -> Memory | None:
    """The record as it was at ``when``: the version valid then, or None when no kept version was."""
    if memory.valid_since <= when:
        return memory
    for old in reversed(memory.history):
        assert old.valid_from is not None and old.valid_to is not None
        if old.valid_from <= when < old.valid_to:
            return _as_state(memory, old)
    return None


def past_states(memory: Memory) -> list[Memory]:
    """The record's earlier states, newest first, each marked by its ``valid_to``."""
    return [_as_state(memory, old) for old in reversed(memory.history)]


def at_time(hits: SearchResults, when: datetime | None, include_superseded: bool) -> SearchResults:
    """Each hit as its record was at ``when`` (None: now), with its earlier states after it when asked."""
    if when is None and not include_superseded:
        return hits
    out: list[SearchHit] = []
    for hit in hits:
        state = hit.memory if when is None else state_at(hit.memory, when)
        if state is None:
            continue  # it existed then, but the text of that time is no longer kept
        out.append(hit if state is hit.memory else replace(hit, memory=state))
        if include_superseded:
            out.extend(replace(hit, memory=old) for old in past_states(state))
    return SearchResults(out, degraded=hits.degraded)


def records_at(records: Iterable[Memory], as_of: datetime | str | None) -> list[Memory]:
    """Records (read without a search: pinned and important facts) as they were at ``as_of`` (None: now)."""
    when = as_of_time(as_of)
    if when is None:
        return list(records)
    states = (state_at(m, when) for m in records if m.created_at <= when)
    return [m for m in states if m is not None]


__all__ = ["as_of_time", "at_time", "past_states", "records_at", "state_at"]
