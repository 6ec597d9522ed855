"""Facets: how many records carry each value of a reference type, counted by the store.

A caller that groups records by a reference (LangGraph's namespaces, an
integration's projects, a CRM's accounts) asks the store for the counts in one
grouped statement instead of reading every record to count them itself. The
filters are a listing's (tenant, user, types, entity types, references), so a
count agrees with what :meth:`funes.memory.core.Core.list` would page through.

May import: ``funes.errors``, ``funes.models``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..models import Reference, utcnow
from .record_input import search_filters, with_entity_filters

if TYPE_CHECKING:
    from .core import Core


class Facets:
    """Counts of records by reference (``Funes.reference_counts``)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def reference_counts(
        self,
        ref_type: str,
        *,
        tenant: str | None = None,
        user: str | None = None,
        types: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        entity_types: Sequence[str] | None = None,
        refs: Sequence[Reference | tuple[str, str] | dict[str, str] | str] | None = None,
        include_expired: bool = False,
    ) -> dict[str, int]:
        """For each id of a ``ref_type`` reference, how many records carry it (``{"RFP-7": 3, ...}``).

        The other arguments narrow the records counted as in :meth:`Funes.list`;
        ``refs`` must all be carried too. Ids no record carries are absent.
        """
        if not isinstance(ref_type, str) or not ref_type.strip():
            raise InvalidInput("A reference type is needed.", hint='Pass the type of the references, e.g. "rfp".')
        core = self.core
        filters = search_filters(core.tenant_of(tenant), core.user_of(user), types, kinds, None, None, None)
        filters = with_entity_filters(filters, entity_types, None, refs)
        return core.store.reference_counts(filters, ref_type, now=utcnow(), include_expired=include_expired)
