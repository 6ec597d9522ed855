"""The types every LLM provider shares: the protocol, call accounting, the fallback wrapper, errors."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import BackendUnavailable
from .schema import Schema

log = logging.getLogger("funes.llm")

PROVIDERS = ("offline", "openai", "anthropic")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# USD per million (prompt, completion) tokens, matched by the longest model-name
# prefix. An estimate for reports only; the llm_*_price settings override it.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}


class LLMUnavailable(BackendUnavailable):
    """An LLM call failed (unreachable, refused, rate-limited past the retries, or an invalid answer)."""

    code = "llm_unavailable"


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for providers that report none."""
    return max(1, len(text) // 4) if text else 0


def price_of(model: str, input_price: float = -1.0, output_price: float = -1.0) -> tuple[float, float]:
    """USD per million (prompt, completion) tokens: the settings when set (>= 0), else the built-in table, else 0."""
    known = next((PRICES[p] for p in sorted(PRICES, key=len, reverse=True) if model.startswith(p)), (0.0, 0.0))
    return (input_price if input_price >= 0 else known[0], output_price if output_price >= 0 else known[1])


@dataclass(frozen=True)
class Call:
    """One LLM call as counted: who answered, the tokens, the estimated cost, and any error."""

    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "provider": self.provider,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "error": self.error,
        }


@dataclass
class Usage:
    """Running totals of LLM calls (thread-safe): calls, failures, fallbacks, tokens and cost."""

    calls: int = 0
    failures: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    by_provider: dict[str, int] = field(default_factory=dict)
    last: Call | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, call: Call) -> None:
        """Count one call (a failed one counts as a failure, not as a call)."""
        with self._lock:
            self.last = call
            if call.error is not None:
                self.failures += 1
                return
            self.calls += 1
            self.prompt_tokens += call.prompt_tokens
            self.completion_tokens += call.completion_tokens
            self.cost_usd += call.cost_usd
            self.by_provider[call.provider] = self.by_provider.get(call.provider, 0) + 1

    def fell_back(self) -> None:
        """Count one answer the offline provider gave because the configured one failed."""
        with self._lock:
            self.fallbacks += 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        with self._lock:
            return {
                "calls": self.calls,
                "failures": self.failures,
                "fallbacks": self.fallbacks,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": round(self.cost_usd, 8),
                "by_provider": dict(self.by_provider),
                "last": None if self.last is None else self.last.to_dict(),
            }


class LLM(Protocol):
    """Answers a prompt with a dict that validates against a JSON schema."""

    name: str
    model: str
    usage: Usage

    def complete_json(self, prompt: str, schema: Schema) -> dict[str, Any]:
        """The answer to ``prompt`` as a dict valid against ``schema``; raises :class:`LLMUnavailable` on failure."""
        ...


class FallbackLLM:
    """A remote provider whose failures are answered by the offline provider (and logged, and counted)."""

    def __init__(self, primary: LLM, fallback: LLM) -> None:
        self.primary = primary
        self.fallback = fallback
        self.name = primary.name
        self.model = primary.model
        self.usage = primary.usage

    def complete_json(self, prompt: str, schema: Schema) -> dict[str, Any]:
        """The primary's answer, or the offline answer when the primary fails for any reason."""
        try:
            return self.primary.complete_json(prompt, schema)
        except Exception as exc:  # any failure: the write that needs this answer must not be lost
            log.warning("LLM %s (%s) failed, answering offline: %s", self.name, self.model, exc)
            self.usage.fell_back()
            return self.fallback.complete_json(prompt, schema)

    def close(self) -> None:
        """Release the primary's connections (an HTTP client for remote providers)."""
        close = getattr(self.primary, "close", None)
        if close is not None:
            close()
