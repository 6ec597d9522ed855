"""Where records come from, as words: source types, provenance types and the user-facing source filters.

Shared by the checks of a search, the CLI, the agent tools and MCP; the readers write these types.
"""

from __future__ import annotations

from ..errors import InvalidInput

#: Source types written by ingestion (``SourceRef.type``), one per reader.
SOURCE_TYPES: tuple[str, ...] = ("text", "markdown", "pdf", "sheet", "chat")


#: Source types of memories that were not ingested: stated by a user, created
#: by an agent, or imported.
PROVENANCE_TYPES: tuple[str, ...] = ("user", "agent", "import")


#: User-facing source filters and the source types each one selects.
#: ``all`` selects everything. Shared by the CLI, the agent tools and MCP.
SOURCE_FILTERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "documents": ("pdf", "text", "markdown"),
    "sheets": ("sheet",),
    "chat": ("chat",),
    "markdown": ("markdown",),
}


#: What each source filter selects, in words; every help text and tool description uses these,
#: so what a filter is said to return is what it returns.
SOURCE_FILTER_LABELS: dict[str, str] = {
    "all": "everything, stored memories included",
    "documents": "PDF, text and Markdown files",
    "sheets": "spreadsheets",
    "chat": "chat exports and conversation history",
    "markdown": "Markdown notes only",
}


def describe_source_filters(names: tuple[str, ...] = ("sheets", "documents", "chat", "markdown")) -> str:
    """The filters as ``name (what it selects)``, comma-separated, for help texts."""
    return ", ".join(f"{name} ({SOURCE_FILTER_LABELS[name]})" for name in names)


def source_types_for(name: str) -> tuple[str, ...] | None:
    """The source types a filter name selects (None for ``all``); a source type selects itself."""
    key = (name or "all").strip().lower()
    if key in SOURCE_FILTERS:
        return SOURCE_FILTERS[key]
    if key in SOURCE_TYPES or key in PROVENANCE_TYPES:
        return (key,)
    raise InvalidInput(
        f"Unknown source filter {name!r}.",
        hint=f"Use one of: {', '.join([*SOURCE_FILTERS, *SOURCE_TYPES, *PROVENANCE_TYPES])}.",
    )
