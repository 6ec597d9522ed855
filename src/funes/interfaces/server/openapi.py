"""The team server's OpenAPI document: every error status it can answer, the shapes it answers, links between calls.

FastAPI documents a route's success status and a 422 of its own shape; the
server answers errors as ``{"error": {"code", "message", "hint"}}`` with the
statuses below, so each operation documents those (issue 31: schemathesis
found every 404 and 409 undocumented). Links name the calls a created
resource's id leads to (create → get, patch, delete, history, restore), so a
stateful client (schemathesis, a generator) can chain them.
"""

from __future__ import annotations

from typing import Any

# Every status an operation of /v1 may answer with the error shape, and why.
ERRORS: dict[int, str] = {
    400: "Bad input (the body or a parameter breaks a rule of the library); the hint says what to send.",
    401: "No API key, or an unknown or revoked one.",
    403: "The key's role is too low for this call, or a browser request from another site.",
    404: "No such resource in the key's team (another team's resource answers 404 too).",
    409: "The resource changed or was deleted meanwhile; read it again and retry.",
    413: "The request body is over its limit.",
    421: "A keyless server answers only to a loopback Host.",
    422: "The request does not have the documented shape.",
    503: "The storage backend is unavailable; retry later.",
    507: "The store is full.",
}

_ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "hint"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "hint": {"type": ["string", "null"]},
            },
        }
    },
}

_MEMORY_SCHEMA: dict[str, Any] = {
    "title": "Memory",
    "type": "object",
    "required": ["id", "content", "tenant", "scope", "kind", "version", "created_at", "updated_at", "metadata"],
    "properties": {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "tenant": {"type": "string"},
        "scope": {"type": "string"},
        "kind": {"type": "string"},
        "memory_type": {"type": "string"},
        "importance": {"type": "number"},
        "pinned": {"type": "boolean"},
        "version": {"type": "integer", "minimum": 1},
        "created_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "metadata": {"type": "object"},
    },
}

_MEMORY = "/v1/teams/{team}/memories/{memory_id}"
_DOCUMENT = "/v1/teams/{team}/documents/{document_id}"
# (path, method) of a call answering a memory → the operations its id leads to.
_MEMORY_ANSWERS = (
    ("/v1/teams/{team}/memories", "post", "201"),
    (_MEMORY, "get", "200"),
    (_MEMORY, "patch", "200"),
    (_MEMORY + "/restore", "post", "200"),
)
_MEMORY_LINKS = {
    "GetMemory": (_MEMORY, "get"),
    "PatchMemory": (_MEMORY, "patch"),
    "DeleteMemory": (_MEMORY, "delete"),
    "MemoryHistory": (_MEMORY + "/history", "get"),
    "RestoreMemory": (_MEMORY + "/restore", "post"),
}
# An upload answers its job's id, which the document routes take until it is indexed.
_DOCUMENT_LINKS = {
    "GetDocument": (_DOCUMENT, "get"),
    "DeleteDocument": (_DOCUMENT, "delete"),
    "ReindexDocument": (_DOCUMENT + "/reindex", "post"),
}


def _op_id(schema: dict[str, Any], path: str, method: str) -> str | None:
    return schema["paths"].get(path, {}).get(method, {}).get("operationId")


def _links(schema: dict[str, Any], targets: dict[str, tuple[str, str]], id_param: str, id_from: str) -> dict[str, Any]:
    out = {}
    for name, (path, method) in targets.items():
        op_id = _op_id(schema, path, method)
        if op_id:
            team = {"team": "$request.path.team"} if "{team}" in path else {}
            out[name] = {"operationId": op_id, "parameters": {**team, id_param: id_from}}
    return out


def complete(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (FastAPI's document of the app) with the error responses, the memory shape and the links added."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = _ERROR_SCHEMA
    components["Memory"] = _MEMORY_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, text in ERRORS.items():
                responses[str(status)] = {"description": text, "content": error}
    memory = {"application/json": {"schema": {"$ref": "#/components/schemas/Memory"}}}
    memory_links = _links(schema, _MEMORY_LINKS, "memory_id", "$response.body#/id")
    for path, method, status in _MEMORY_ANSWERS:
        answer = schema["paths"].get(path, {}).get(method, {}).get("responses", {}).get(status)
        if answer is not None:
            answer["content"] = memory
            answer["links"] = memory_links
    upload = schema["paths"].get("/v1/teams/{team}/documents", {}).get("post", {}).get("responses", {}).get("202")
    if upload is not None:
        upload["links"] = {
            **_links(schema, _DOCUMENT_LINKS, "document_id", "$response.body#/job_id"),
            **_links(schema, {"GetJob": ("/v1/jobs/{job_id}", "get")}, "job_id", "$response.body#/job_id"),
        }
    return schema


def install(app: Any) -> None:
    """Make ``app.openapi()`` answer the completed document (built once, on first use)."""
    base = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(base())
        return app.openapi_schema

    app.openapi = openapi
