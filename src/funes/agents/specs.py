"""Agent tools, defined once: name, model-facing description, typed input model, hints.

Each tool is a :class:`ToolSpec` whose input is a pydantic model (pydantic is
used here, at the model-facing boundary, and nowhere in the core). From that
one definition :func:`render_tools` produces the four shapes agents consume:

* ``anthropic``: Messages API ``tools`` entries with ``input_schema``;
* ``openai``: Chat Completions ``tools`` with ``strict: true``; every property
  is required, optional ones are unions with null, and every object has
  ``additionalProperties: false``, recursively;
* ``responses``: the OpenAI Responses API's flat function tools (same strict
  schema);
* ``mcp``: MCP tools with ``inputSchema`` and annotations
  (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).

A null argument always means "not given", so a strict-mode model that must
send every key and a lenient model that omits keys are read the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InvalidInput
from ..models.sources import describe_source_filters

MemoryTypeArg = Literal["preference", "fact", "decision", "context", "conversation"]
ScopeArg = Literal["team", "project", "session"]
SourceFilter = Literal["all", "sheets", "documents", "chat", "markdown"]
RoleArg = Literal["user", "assistant", "tool"]  # who said a chat message (system prompts are never stored)
FORMATS: tuple[str, ...] = ("anthropic", "openai", "responses", "mcp")


class _Args(BaseModel):
    """Base of every tool input: unknown arguments are rejected, not ignored."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class CreateMemoryArgs(_Args):
    """Arguments of create_memory."""

    content: str = Field(
        min_length=1,
        description="The memory as one clear, self-contained statement, e.g. "
        "'User prefers US-based vendors for procurement'. One preference or fact per memory.",
    )
    memory_type: MemoryTypeArg = Field(
        description="preference = likes, dislikes, requirements, constraints; decision = a choice that was made; "
        "fact = background about the user or their organisation; context = details of a specific piece of work "
        "(an order, a ticket, a document); conversation = a notable exchange, kept for continuity.",
    )
    importance_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="0 to 1. Leave empty for the default of the type: preference 0.9, decision 0.7, fact 0.6, "
        "context 0.5, conversation 0.3. Use 0.9 or more for anything meant to hold for all future work.",
    )
    reference_type: str | None = Field(
        default=None,
        description="Kind of outside entity this memory is about, e.g. 'rfp', 'bid', 'ticket', 'file'. "
        "Give it together with reference_id.",
    )
    reference_id: str | None = Field(default=None, description="Id of that outside entity.")
    expires_at: str | None = Field(
        default=None,
        description="ISO-8601 date or time after which the memory is no longer recalled, e.g. '2026-12-31', "
        "for temporary context. Leave empty to keep it.",
    )
    scope: ScopeArg | None = Field(
        default=None,
        description="Where the memory applies. team = everywhere, across all projects (user preferences, facts "
        "about the user or organisation, anything 'for all future projects'); project = only the current project "
        "(the server knows which); session = only this conversation. Default: team for preference and fact, "
        "project for decision and context, session for conversation.",
    )
    tags: list[str] | None = Field(
        default=None, description="Short labels that group memories, e.g. ['procurement', 'vendors']."
    )
    to_markdown: bool | None = Field(
        default=None,
        description="Also append the memory to today's Markdown file in the project's memory folder, "
        "where people read and edit notes. Leave empty unless asked to keep a readable note.",
    )

    @model_validator(mode="after")
    def _reference_pair(self) -> CreateMemoryArgs:
        if (self.reference_type is None) != (self.reference_id is None):
            raise ValueError("give reference_type and reference_id together, or neither")
        return self


class SearchMemoriesArgs(_Args):
    """Arguments of search_memories."""

    query: str = Field(
        min_length=1,
        description="What to look for, in natural language, e.g. 'vendor preferences for a new office supplies RFP'.",
    )
    memory_types: list[MemoryTypeArg] | None = Field(
        default=None, description="Only these memory types. Leave empty for all."
    )
    scope: ScopeArg | None = Field(
        default=None, description="Only memories of this scope. Leave empty for everything you can see."
    )
    limit: int | None = Field(default=10, ge=1, le=50, description="Most results to return (default 10).")
    entity_type: str | None = Field(
        default=None, description="Only memories about entities of this type, e.g. 'CODE_CELL', 'CONNECTION'."
    )
    entity_id: str | None = Field(default=None, description="Only memories about the entity with this id.")
    reference_type: str | None = Field(
        default=None, description="Only memories that reference an outside entity of this kind, with reference_id."
    )
    reference_id: str | None = Field(default=None, description="Id of that outside entity, e.g. 'RFP-7'.")
    as_of: str | None = Field(
        default=None,
        description="Read memory as it was at this past time (ISO-8601, e.g. '2026-04-01'); leave empty for now.",
    )
    include_superseded: bool = Field(
        default=False, description="Also return earlier versions of changed facts, marked with when they changed."
    )

    @model_validator(mode="after")
    def _reference_pair(self) -> SearchMemoriesArgs:
        if (self.reference_type is None) != (self.reference_id is None):
            raise ValueError("give reference_type and reference_id together, or neither")
        return self


class UpdateMemoryArgs(_Args):
    """Arguments of update_memory."""

    memory_id: str = Field(min_length=1, description="Id of the memory, as shown by search_memories.")
    content: str | None = Field(
        default=None, min_length=1, description="The corrected statement. The old text is kept in the version history."
    )
    importance_score: float | None = Field(default=None, ge=0.0, le=1.0, description="New importance, 0 to 1.")
    expires_at: str | None = Field(
        default=None, description="New expiry as an ISO-8601 date or time, or 'never' to keep the memory for good."
    )
    pinned: bool | None = Field(
        default=None, description="true pins the memory: it is always kept and always included in context."
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateMemoryArgs:
        if self.content is None and self.importance_score is None and self.expires_at is None and self.pinned is None:
            raise ValueError("nothing to change: give content, importance_score, expires_at or pinned")
        return self


class DeleteMemoryArgs(_Args):
    """Arguments of delete_memory."""

    memory_id: str = Field(min_length=1, description="Id of the memory, as shown by search_memories.")


class GetMemoryContextArgs(_Args):
    """Arguments of get_memory_context."""

    query: str | None = Field(
        default=None, description="What the conversation or task is about. Leave empty for the most important memories."
    )
    session_id: str | None = Field(
        default=None, description="A conversation id whose history to include. Leave empty for the current one."
    )


class MemorySearchArgs(_Args):
    """Arguments of memory_search."""

    query: str = Field(min_length=1, description="Natural-language search query.")
    source_filter: SourceFilter | None = Field(
        default="all",
        description=f"Only results from this kind of source: {describe_source_filters()}. "
        "Default: all, memories included.",
    )
    role: RoleArg | None = Field(
        default=None,
        description="Only chat messages said in this role: user = what the user wrote, assistant = earlier "
        "answers, tool = tool results. Leave empty for everything.",
    )


class ListScopesArgs(_Args):
    """list_scopes takes no arguments."""


class ListMemoriesArgs(_Args):
    """Arguments of list_memories."""

    memory_types: list[MemoryTypeArg] | None = Field(
        default=None, description="Only these memory types. Leave empty for all."
    )
    scope: ScopeArg | None = Field(
        default=None, description="Only memories of this scope. Leave empty for everything you can see."
    )
    pinned: bool | None = Field(default=None, description="true = only pinned memories, false = only unpinned.")
    entity_type: str | None = Field(default=None, description="Only memories about entities of this type.")
    reference_type: str | None = Field(
        default=None, description="Only memories that reference an outside entity of this kind, with reference_id."
    )
    reference_id: str | None = Field(default=None, description="Id of that outside entity, e.g. 'RFP-7'.")
    limit: int | None = Field(default=20, ge=1, le=100, description="Most memories per page (default 20).")
    cursor: str | None = Field(
        default=None, description="The next_cursor of the previous call, for the next page. Leave empty to start."
    )

    @model_validator(mode="after")
    def _reference_pair(self) -> ListMemoriesArgs:
        if (self.reference_type is None) != (self.reference_id is None):
            raise ValueError("give reference_type and reference_id together, or neither")
        return self


@dataclass(frozen=True)
class ToolHints:
    """MCP tool annotations: how the tool behaves, for clients deciding on confirmation."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False  # every tool works on the local store only


@dataclass(frozen=True)
class ToolSpec:
    """One tool: name, title, model-facing description, input model and behaviour hints."""

    name: str
    title: str
    description: str
    args: type[_Args]
    hints: ToolHints

    def input_schema(self) -> dict[str, Any]:
        """The plain JSON schema of the input (Anthropic and MCP)."""
        return plain_schema(self.args)

    def strict_schema(self) -> dict[str, Any]:
        """The OpenAI strict-mode JSON schema of the input."""
        return strict_schema(self.args)

    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's structured content (MCP ``outputSchema``): its result or an error."""
        from .output_schemas import declared

        return copy.deepcopy(declared(self.name))


READ = ToolHints(read_only=True, destructive=False, idempotent=True)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="create_memory",
        title="Create memory",
        description="Store information worth remembering in future conversations: a preference the user states, "
        "a decision, a fact about the user or their organisation, or context about ongoing work. Call it whenever "
        "the user says 'I prefer', 'always', 'never', 'from now on', 'for all future projects', or makes a "
        "decision. Don't just acknowledge it: store it. Store each preference or fact as its own memory. Returns "
        "the memory id. An exact duplicate returns the existing id with duplicate=true; a near duplicate is "
        "reported under 'similar' so you can update or delete the older one.",
        args=CreateMemoryArgs,
        hints=ToolHints(read_only=False, destructive=False, idempotent=True),
    ),
    ToolSpec(
        name="search_memories",
        title="Search memories",
        description="Search long-term memory for what is already known about the user: preferences, decisions, "
        "facts and past work. Call it at the start of a new task or session, when the user refers to something "
        "from before, and before asking the user for something they may already have told you. Results are "
        "numbered, with source, relevance and id (pass the id to update_memory or delete_memory).",
        args=SearchMemoriesArgs,
        hints=READ,
    ),
    ToolSpec(
        name="update_memory",
        title="Update memory",
        description="Change a stored memory when the information changed or was wrong: new content (the old "
        "text stays in the version history), importance, expiry, or pin. Get the id from search_memories. "
        "Prefer this to creating a second, conflicting memory.",
        args=UpdateMemoryArgs,
        hints=ToolHints(read_only=False, destructive=True, idempotent=True),
    ),
    ToolSpec(
        name="delete_memory",
        title="Delete memory",
        description="Delete a memory that is obsolete, wrong, or that the user asked you to forget. This cannot "
        "be undone; use update_memory when the information merely changed.",
        args=DeleteMemoryArgs,
        hints=ToolHints(read_only=False, destructive=True, idempotent=True),
    ),
    ToolSpec(
        name="get_memory_context",
        title="Get memory context",
        description="Get one compact block of what memory holds for the current work: pinned and important "
        "memories plus those relevant to the query, each with its source. Call it once at the start of a "
        "conversation or task.",
        args=GetMemoryContextArgs,
        hints=READ,
    ),
    ToolSpec(
        name="memory_search",
        title="Search documents and memory",
        description="Search everything indexed in long-term memory: spreadsheets, documents (PDF, text and "
        "Markdown files), chat history, Markdown notes and stored memories. Use it for specific values, reports or earlier discussions "
        "that are not in the conversation, and cite the source shown in brackets when you use a result.",
        args=MemorySearchArgs,
        hints=READ,
    ),
    ToolSpec(
        name="list_scopes",
        title="List memory scopes",
        description="List the scopes of memory you can read and write (team, each project, this session) with "
        "how many records each holds, and which project is current. The server resolves the current project; "
        "you never need to pass a project id.",
        args=ListScopesArgs,
        hints=READ,
    ),
    ToolSpec(
        name="list_memories",
        title="List memories",
        description="List stored memories newest first, without a query: to review or clean up what memory "
        "holds. Narrow it with memory_types, scope, pinned or a reference; each call returns one page, and "
        "next_cursor (when set) fetches the next. Use search_memories to find memories about a topic.",
        args=ListMemoriesArgs,
        hints=READ,
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


# -- schemas -----------------------------------------------------------------------
def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline_refs(merged, defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def _drop_titles(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            # "properties" maps names to schemas: a property may be called "title".
            out[key] = {k: _drop_titles(v) for k, v in value.items()} if key == "properties" else _drop_titles(value)
        return out
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None` as plain X: in the non-strict shapes, optional means "may be left out"."""
    variants = prop.get("anyOf")
    if not isinstance(variants, list):
        return prop
    rest = [v for v in variants if v != {"type": "null"}]
    if len(rest) == len(variants):
        return prop
    out = {k: v for k, v in prop.items() if k != "anyOf"}
    if len(rest) == 1:
        out = {**rest[0], **out}
    else:
        out["anyOf"] = rest
    if out.get("default", 0) is None:
        del out["default"]
    return out


def _base_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    schema = _drop_titles(_inline_refs(raw, raw.get("$defs", {})))
    schema.pop("description", None)  # the model's docstring is for developers; the tool description says it all
    schema.setdefault("properties", {})
    return schema


def plain_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The input schema for Anthropic and MCP: optional properties are simply not required."""
    schema = _base_schema(model)
    schema["properties"] = {name: _without_null(p) for name, p in schema["properties"].items()}
    schema["required"] = list(schema.get("required", []))
    schema["additionalProperties"] = False
    return _object_first(schema)


def _object_first(schema: dict[str, Any]) -> dict[str, Any]:
    """Key order people expect when reading a schema: type, properties, required, additionalProperties."""
    head = ("type", "properties", "required", "additionalProperties")
    return {**{k: schema[k] for k in head if k in schema}, **{k: v for k, v in schema.items() if k not in head}}


# OpenAI strict mode accepts a subset of JSON Schema; these keywords are outside it or carry no meaning there.
_STRICT_DROP = ("default", "title", "minLength", "maxLength", "examples")


def _strictify(node: Any) -> Any:
    if isinstance(node, list):
        return [_strictify(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strictify(v) for k, v in node.items() if k not in _STRICT_DROP and k != "properties"}
    if "properties" in node:
        optional = set(node["properties"]) - set(node.get("required", []))
        props = {}
        for name, prop in node["properties"].items():
            prop = _strictify(prop)
            if name in optional:
                prop = _nullable(prop)
            props[name] = prop
        out["properties"] = props
        out["required"] = list(node["properties"])
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out.setdefault("properties", {})
        out.setdefault("required", [])
    return out


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    variants = prop.get("anyOf")
    if isinstance(variants, list):
        if {"type": "null"} not in variants:
            prop = {**prop, "anyOf": [*variants, {"type": "null"}]}
        return prop
    description = prop.get("description")
    inner = {k: v for k, v in prop.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI strict-mode schema: all properties required, optional ones nullable, no extra properties."""
    return _object_first(_strictify(_base_schema(model)))


# -- renderers ---------------------------------------------------------------------
def anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """An Anthropic Messages API tool."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema()}


def openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """An OpenAI Chat Completions function tool in strict mode."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.strict_schema(),
            "strict": True,
        },
    }


def responses_tool(spec: ToolSpec) -> dict[str, Any]:
    """An OpenAI Responses API function tool (flat, strict)."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.strict_schema(),
        "strict": True,
    }


def mcp_annotations(spec: ToolSpec) -> dict[str, Any]:
    """The MCP tool annotations, camelCase as on the wire."""
    return {
        "title": spec.title,
        "readOnlyHint": spec.hints.read_only,
        "destructiveHint": spec.hints.destructive,
        "idempotentHint": spec.hints.idempotent,
        "openWorldHint": spec.hints.open_world,
    }


def mcp_tool(spec: ToolSpec) -> dict[str, Any]:
    """An MCP tool as listed by ``tools/list``."""
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema(),
        "outputSchema": spec.output_schema(),
        "annotations": mcp_annotations(spec),
    }


RENDERERS: dict[str, Callable[[ToolSpec], dict[str, Any]]] = {
    "anthropic": anthropic_tool,
    "openai": openai_tool,
    "responses": responses_tool,
    "mcp": mcp_tool,
}


def render_tools(fmt: str = "anthropic", names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every tool (or the named ones) in one of :data:`FORMATS`."""
    from ..errors import InvalidInput

    if fmt not in RENDERERS:
        raise InvalidInput(f"Unknown tool format {fmt!r}.", hint=f"Use one of: {', '.join(FORMATS)}.")
    specs = list(TOOLS)
    if names is not None:
        unknown = [n for n in names if n not in TOOLS_BY_NAME]
        if unknown:
            raise InvalidInput(
                f"Unknown tool(s): {', '.join(unknown)}.", hint=f"Tools are: {', '.join(TOOLS_BY_NAME)}."
            )
        specs = [TOOLS_BY_NAME[n] for n in names]
    return [RENDERERS[fmt](s) for s in specs]


# -- validation --------------------------------------------------------------------
def parse_args(spec: ToolSpec, arguments: dict[str, Any]) -> _Args:
    """Validate arguments (nulls read as "not given"); raises ValueError with a model-readable message."""
    given = {k: v for k, v in arguments.items() if v is not None}
    try:
        return spec.args.model_validate(given)
    except ValidationError as exc:
        raise ValueError(describe_errors(spec, exc)) from exc


def describe_errors(spec: ToolSpec, exc: ValidationError) -> str:
    """A validation error as sentences a model can act on."""
    allowed = list(spec.args.model_fields)
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ()))
        kind = err.get("type", "")
        if kind == "missing":
            problems.append(f"'{where}' is required")
        elif kind == "extra_forbidden":
            valid = ", ".join(allowed) if allowed else "none"
            problems.append(f"'{where}' is not an argument of {spec.name} (valid arguments: {valid})")
        else:
            message = str(err.get("msg", "is invalid"))
            message = message.removeprefix("Value error, ")
            got = err.get("input")
            shown = f" (got {got!r})" if where and not isinstance(got, dict) else ""
            problems.append(f"'{where}': {message}{shown}" if where else message)
    return "; ".join(problems)


def _plain(obj: Any) -> Any:
    """SDK objects (pydantic models) as plain dicts and lists."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json", exclude_none=False)
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def read_tool_calls(message: Any) -> tuple[str, list[tuple[str, str, Any]]]:
    """(format, [(call id, tool name, arguments)]) of an assistant turn in any supported shape."""
    data = _plain(message)
    if isinstance(data, dict) and isinstance(data.get("choices"), list):  # a whole chat completion
        if not data["choices"]:
            return "openai", []
        data = data["choices"][0].get("message") or {}
    if isinstance(data, dict) and isinstance(data.get("output"), list):  # a whole Responses response
        data = data["output"]
    if isinstance(data, list):
        calls = [
            (str(item.get("call_id") or item.get("id")), str(item.get("name")), item.get("arguments"))
            for item in data
            if isinstance(item, dict) and item.get("type") == "function_call"
        ]
        return "responses", calls
    if not isinstance(data, dict):
        raise InvalidInput(
            f"Cannot read tool calls from a {type(message).__name__}.",
            hint="Pass an Anthropic message, an OpenAI chat message or completion, or a Responses response.",
        )
    # A chat message has tool_calls, or text content; Anthropic content is a list of blocks.
    chat_text = "role" in data and "content" in data and not isinstance(data["content"], list)
    if data.get("tool_calls") is not None or chat_text:
        calls = []
        for call in data.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls.append((str(call.get("id")), str(fn.get("name")), fn.get("arguments")))
        return "openai", calls
    content = data.get("content")
    if isinstance(content, list):
        calls = [
            (str(block.get("id")), str(block.get("name")), block.get("input"))
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
        return "anthropic", calls
    raise InvalidInput(
        "The message has neither Anthropic content blocks nor OpenAI tool calls.",
        hint="Pass the assistant message exactly as the SDK returned it.",
    )


__all__ = [
    "FORMATS",
    "TOOLS",
    "TOOLS_BY_NAME",
    "CreateMemoryArgs",
    "DeleteMemoryArgs",
    "GetMemoryContextArgs",
    "ListScopesArgs",
    "MemorySearchArgs",
    "SearchMemoriesArgs",
    "ToolHints",
    "ToolSpec",
    "UpdateMemoryArgs",
    "anthropic_tool",
    "mcp_tool",
    "openai_tool",
    "parse_args",
    "plain_schema",
    "read_tool_calls",
    "render_tools",
    "responses_tool",
    "strict_schema",
]
