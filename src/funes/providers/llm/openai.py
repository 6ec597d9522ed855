"""Any OpenAI-compatible chat-completions server: OpenAI, Ollama, vLLM, LM Studio, llama.cpp server.

Asks for JSON-schema structured output (``response_format`` of type
``json_schema``). A server that rejects that request (a 400 or 422, as many
local servers do) is asked again, and from then on, with a JSON-only prompt
whose answer is parsed and validated against the same schema.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from .http import LLMRejected, RemoteLLM
from .schema import Schema, extract_json, json_only_prompt, strict_ready

log = logging.getLogger("funes.llm")

_SYSTEM = "You are a precise assistant for a memory engine. Answer with JSON that matches the requested schema."


class OpenAILLM(RemoteLLM):
    """Structured JSON answers from an OpenAI-compatible ``/chat/completions`` endpoint."""

    name = "openai"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # None: not known yet; False: the server rejected json_schema once, so prompt for JSON instead.
        self.schema_supported: bool | None = None

    def complete_json(self, prompt: str, schema: Schema) -> dict[str, Any]:
        """The answer as a dict valid against ``schema``; raises LLMUnavailable when the server fails."""
        if self.schema_supported is not False:
            try:
                answer = self._complete(prompt, schema, structured=True)
            except LLMRejected as exc:
                if exc.status not in (400, 422):
                    raise
                log.info("%s rejected json_schema output (%s); using JSON-only prompts", self.base_url, exc.status)
                self.schema_supported = False
            else:
                self.schema_supported = True
                return answer
        return self._complete(json_only_prompt(prompt, schema), schema, structured=False)

    def _complete(self, prompt: str, schema: Schema, *, structured: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        if structured:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(schema), "schema": schema, "strict": strict_ready(schema)},
            }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        data = self.post("/chat/completions", body, headers)
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise self.invalid("no choices[0].message in the response") from None
        if message.get("refusal"):
            raise self.invalid(f"the model refused: {message['refusal']}")
        content = message.get("content") or ""
        usage = data.get("usage") or {}
        self.account(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        try:
            answer = extract_json(content)
        except ValueError as exc:
            raise self.invalid(str(exc)) from exc
        return self.checked(answer, schema)


def _schema_name(schema: Schema) -> str:
    """The schema's name for ``json_schema.name``: a-z, A-Z, 0-9, _ and -, at most 64 characters."""
    raw = str(schema.get("title") or "answer")
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64] or "answer"
