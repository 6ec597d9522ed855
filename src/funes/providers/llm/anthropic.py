"""The Anthropic Messages API, with structured output through one forced tool call.

The schema becomes the ``input_schema`` of a single tool and ``tool_choice``
forces the model to call it; the tool call's ``input`` is the answer,
validated against the schema.
"""

from __future__ import annotations

from typing import Any

from .http import RemoteLLM
from .schema import Schema

API_VERSION = "2023-06-01"
_TOOL = "record_answer"


class AnthropicLLM(RemoteLLM):
    """Structured JSON answers from Anthropic's ``/v1/messages`` through tool use."""

    name = "anthropic"

    def complete_json(self, prompt: str, schema: Schema) -> dict[str, Any]:
        """The answer as a dict valid against ``schema``; raises LLMUnavailable when the server fails."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "messages": [{"role": "user", "content": prompt}],
            "tools": [
                {
                    "name": _TOOL,
                    "description": str(schema.get("description") or "Record the answer to the request."),
                    "input_schema": schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": _TOOL},
        }
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        # The base URL may or may not carry the /v1 (https://api.anthropic.com or a proxy's .../v1).
        path = "/messages" if self.base_url.endswith("/v1") else "/v1/messages"
        data = self.post(path, body, headers)
        usage = data.get("usage") or {}
        self.account(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
        blocks = data.get("content") if isinstance(data.get("content"), list) else []
        call = next((b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"), None)
        if call is None:
            raise self.invalid(f"no tool_use block (stop_reason {data.get('stop_reason')!r})")
        return self.checked(call.get("input"), schema)
