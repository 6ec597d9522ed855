"""LLM providers: structured JSON answers for summaries, topic extraction and merges.

One small contract, :class:`LLM`: ``complete_json(prompt, schema) -> dict``,
an answer that validates against the JSON schema. Three implementations:

* ``offline`` (:mod:`.offline`, the default): deterministic heuristics that
  need no key and no network, and still produce useful output;
* ``openai`` (:mod:`.openai`): any OpenAI-compatible chat-completions server,
  with JSON-schema structured output, or a JSON-only prompt plus validation
  for servers that reject schemas;
* ``anthropic`` (:mod:`.anthropic`): the Messages API, structured through a
  forced tool call.

:func:`create_llm` wraps a remote provider in :class:`FallbackLLM`: any
failure (timeout, refusal, invalid JSON, a 4xx, retries used up) is logged and
answered by the offline provider, so a write that needs a summary is never
lost. Every call is counted in a :class:`Usage` (calls, tokens, estimated
cost, fallbacks), which tests and ``funes`` reports read.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInput
from .anthropic import AnthropicLLM
from .base import (
    DEFAULT_BASE_URLS,
    DEFAULT_KEY_ENVS,
    DEFAULT_MODELS,
    LLM,
    PROVIDERS,
    Call,
    FallbackLLM,
    LLMUnavailable,
    Usage,
    estimate_tokens,
    price_of,
)
from .offline import OfflineLLM
from .openai import OpenAILLM
from .schema import Schema, validate

if TYPE_CHECKING:
    from ...models.config import Config

log = logging.getLogger("funes.llm")


def create_llm(config: Config, usage: Usage | None = None) -> LLM:
    """The configured provider (the ``llm`` setting), remote ones wrapped in :class:`FallbackLLM`."""
    name = str(config.llm or "offline").strip().lower()
    usage = usage or Usage()
    offline = OfflineLLM(usage)
    if name == "offline":
        return offline
    if name not in PROVIDERS:
        raise InvalidInput(
            f"Unknown LLM provider {config.llm!r}.",
            hint=f"Set llm to one of: {', '.join(PROVIDERS)} (`funes config set llm offline`).",
        )
    model = str(config.llm_model or DEFAULT_MODELS[name])
    base_url = str(config.llm_base_url or DEFAULT_BASE_URLS[name])
    key_env = str(config.llm_api_key_env or DEFAULT_KEY_ENVS[name])
    api_key = os.environ.get(key_env, "")
    if not api_key and not config.llm_base_url:
        log.warning("no API key in $%s: LLM calls to %s will fail and be answered offline", key_env, base_url)
    options: dict[str, Any] = {
        "model": model,
        "base_url": base_url,
        "api_key": api_key,
        "timeout": float(config.llm_timeout),
        "max_retries": int(config.llm_max_retries),
        "backoff": float(config.llm_backoff_seconds),
        "max_tokens": int(config.llm_max_tokens),
        "prices": price_of(model, float(config.llm_input_price), float(config.llm_output_price)),
        "usage": usage,
    }
    primary: LLM = OpenAILLM(**options) if name == "openai" else AnthropicLLM(**options)
    return FallbackLLM(primary, offline)


__all__ = [
    "LLM",
    "PROVIDERS",
    "AnthropicLLM",
    "Call",
    "FallbackLLM",
    "LLMUnavailable",
    "OfflineLLM",
    "OpenAILLM",
    "Schema",
    "Usage",
    "create_llm",
    "estimate_tokens",
    "price_of",
    "validate",
]
