"""The JSON-schema subset Funes asks LLMs for, a validator for it, and JSON found in model text.

Funes' own schemas use ``type`` (object, array, string, number, integer,
boolean), ``properties``, ``required``, ``items``, ``enum`` and
``additionalProperties``. The validator checks exactly those, so an answer
from a server without structured output is held to the same shape.
"""

from __future__ import annotations

import json
import re
from typing import Any

Schema = dict[str, Any]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def validate(value: Any, schema: Schema, path: str = "$") -> list[str]:
    """What is wrong with ``value`` against ``schema`` (empty when it is valid)."""
    problems: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds:
        allowed = tuple(t for k in kinds for t in _TYPES.get(k, ()))
        # bool is an int in Python, but never a JSON number.
        is_bool = isinstance(value, bool) and "boolean" not in kinds
        if not isinstance(value, allowed) or is_bool:
            return [f"{path} should be {' or '.join(kinds)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} should be one of {schema['enum']}, got {value!r}")
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}.{name} is missing")
        for name, item in value.items():
            if name in props:
                problems += validate(item, props[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}.{name} is not allowed")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problems += validate(item, schema["items"], f"{path}[{index}]")
    return problems


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_json(text: str) -> Any:
    """The JSON value in a model's text: the whole text, a fenced block, or the outermost {...}; ValueError if none."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise ValueError(f"no JSON found in {text[:200]!r}")


def json_only_prompt(prompt: str, schema: Schema) -> str:
    """The prompt for a server without structured output: answer with JSON only, matching the schema."""
    return (
        f"{prompt}\n\nAnswer with one JSON object and nothing else (no prose, no code fence). "
        f"It must match this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def strict_ready(schema: Schema) -> bool:
    """Whether OpenAI's strict mode accepts the schema: every object closed and every property required."""
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(props):
            return False
        return all(strict_ready(p) for p in props.values())
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return strict_ready(schema["items"])
    return True
