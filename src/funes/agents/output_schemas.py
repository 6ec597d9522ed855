"""The JSON schemas of the agent tools' structured results (MCP ``outputSchema``).

:data:`OUTPUT_SCHEMAS` has one schema per tool in :data:`funes.agents.specs.TOOLS`,
describing the ``ToolResult.data`` of a successful call; a failed call's data
is ``{"error": {"code", "message", "hint"}}`` (:data:`ERROR_SCHEMA`), sent with
``isError``. The declared ``outputSchema`` (:func:`declared`) is either: the
TypeScript SDK (the MCP inspector, many hosts) checks structured content
against it on error results too. tests/test_mcp.py validates every tool's
output against these.
"""

from __future__ import annotations

from typing import Any


def _nullable(kind: str | list[str]) -> dict[str, Any]:
    kinds = [kind] if isinstance(kind, str) else list(kind)
    return {"type": [*kinds, "null"]}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


MEMORY: dict[str, Any] = _object(
    {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "memory_type": {"type": "string"},
        "kind": {"type": "string"},
        "scope": {"type": "string"},
        "project_id": _nullable("string"),
        "importance": {"type": "number"},
        "pinned": {"type": "boolean"},
        "expires_at": _nullable("string"),
        "version": {"type": "integer"},
        "source": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "instruction_like": {"type": "boolean"},
        "references": {"type": "array", "items": _object({"type": {"type": "string"}, "id": {"type": "string"}})},
        "created_at": _nullable("string"),
        "updated_at": _nullable("string"),
        "author": {"type": "string"},
        "valid_from": _nullable("string"),
        "valid_to": _nullable("string"),
    }
)
"""One memory as the tools return it (``memory_brief``)."""

HIT: dict[str, Any] = {
    **MEMORY,
    "properties": {
        **MEMORY["properties"],
        "relevance": {"type": "number"},
        "weak": {"type": "boolean"},
        "score": {"type": "number"},
    },
    "required": [*MEMORY["required"], "relevance", "weak", "score"],
}

_SIMILAR = _object(
    {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "similarity": {"type": "number"},
        "scope": {"type": "string"},
    }
)
_WRITE = {"memory_id": {"type": "string"}, "memory": MEMORY}
_SECTION = _object(
    {
        "tokens": {"type": "integer"},
        "cap": _nullable("integer"),
        "included": {"type": "array", "items": {"type": "object"}},
        "dropped": {"type": "array", "items": {"type": "object"}},
    }
)

ERROR_SCHEMA: dict[str, Any] = _object(
    {"error": _object({"code": {"type": "string"}, "message": {"type": "string"}, "hint": _nullable("string")})}
)

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "create_memory": _object(
        {**_WRITE, "duplicate": {"type": "boolean"}, "similar": {"type": "array", "items": _SIMILAR}}
    ),
    "search_memories": _object(
        {
            "query": {"type": "string"},
            "count": {"type": "integer"},
            "results": {"type": "array", "items": HIT},
            "degraded": _nullable("string"),
        }
    ),
    "update_memory": _object({**_WRITE, "changed": {"type": "boolean"}}),
    "delete_memory": _object({**_WRITE, "deleted": {"type": "boolean"}}),
    # With a query: the context builder's sections; without: pinned and most important memories.
    "get_memory_context": _object(
        {
            "query": _nullable("string"),
            "session_id": _nullable("string"),
            "project": _nullable("string"),
            "context": {"type": "string"},
            "sections": {"type": "object", "additionalProperties": _SECTION},
            "pinned": {"type": "array", "items": MEMORY},
            "memories": {"type": "array", "items": MEMORY},
        },
        required=["query", "session_id", "project"],
    ),
    "memory_search": _object(
        {
            "query": {"type": "string"},
            "source_filter": _nullable("string"),
            "role": _nullable("string"),
            "result_count": {"type": "integer"},
            "sources": {"type": "array", "items": {"type": "string"}},
            "results": {"type": "array", "items": HIT},
            "degraded": _nullable("string"),
        }
    ),
    "list_scopes": _object(
        {
            "project": _nullable("string"),
            "session_id": _nullable("string"),
            "scopes": {
                "type": "array",
                "items": _object(
                    {
                        "scope": {"type": "string"},
                        "id": _nullable("string"),
                        "records": {"type": "integer"},
                        "current": {"type": "boolean"},
                    }
                ),
            },
        }
    ),
    "list_memories": _object(
        {
            "count": {"type": "integer"},
            "memories": {"type": "array", "items": MEMORY},
            "next_cursor": _nullable("string"),
        }
    ),
}


def declared(name: str) -> dict[str, Any]:
    """The ``outputSchema`` a tool declares: its result, or the error every tool may return."""
    return {"type": "object", "anyOf": [OUTPUT_SCHEMAS[name], ERROR_SCHEMA]}
