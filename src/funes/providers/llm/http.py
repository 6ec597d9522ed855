"""One POST to an LLM server, with a timeout and retries with backoff on 429, 5xx and transport errors."""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from .base import Call, LLMUnavailable, Usage
from .schema import Schema, validate

log = logging.getLogger("funes.llm")

_RETRY_AFTER_CAP = 60.0  # seconds: a server asking for longer is treated as down


class LLMRejected(LLMUnavailable):
    """The server refused the request itself (a 4xx other than 429): retrying the same request cannot help."""

    code = "llm_rejected"

    def __init__(self, status: int, body: str, url: str) -> None:
        super().__init__(
            f"The LLM server at {url} rejected the request ({status}): {body[:300]}",
            hint="Check llm_model, llm_base_url and the API key (`funes config`); calls are answered offline meanwhile.",
        )
        self.status = status
        self.body = body


def _wait(response: httpx.Response | None, attempt: int, backoff: float) -> float:
    header = response.headers.get("retry-after") if response is not None else None
    if header:
        try:
            return min(max(float(header), 0.0), _RETRY_AFTER_CAP)
        except ValueError:
            pass  # an HTTP date: fall back to our own backoff
    return backoff * 2**attempt


def post_json(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str],
    max_retries: int,
    backoff: float,
) -> dict[str, Any]:
    """The JSON answer of a POST; retried on 429, 5xx and transport errors, then :class:`LLMUnavailable`."""
    last = ""
    for attempt in range(max_retries + 1):
        response: httpx.Response | None = None
        try:
            response = client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:  # unreachable, timed out, connection dropped
            last = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code < 300:
                try:
                    data = response.json()
                except ValueError as exc:
                    raise LLMUnavailable(
                        f"The LLM server at {url} answered with invalid JSON.",
                        hint="Check llm_base_url points at an OpenAI-compatible or Anthropic API.",
                    ) from exc
                if not isinstance(data, dict):
                    raise LLMUnavailable(f"The LLM server at {url} answered {type(data).__name__}, not an object.")
                return data
            if response.status_code != 429 and response.status_code < 500:
                raise LLMRejected(response.status_code, response.text, url)
            last = f"HTTP {response.status_code}: {response.text[:200]}"
        if attempt < max_retries:
            delay = _wait(response, attempt, backoff)
            log.info("LLM call to %s failed (%s); retry %d/%d in %.2fs", url, last, attempt + 1, max_retries, delay)
            time.sleep(delay)
    raise LLMUnavailable(
        f"The LLM server at {url} failed {max_retries + 1} times; last: {last}",
        hint="Check that the server is up (llm_base_url) or raise llm_max_retries; calls are answered offline meanwhile.",
    )


class RemoteLLM:
    """What the OpenAI and Anthropic clients share: options, one HTTP client, and call accounting."""

    name = "remote"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = "",
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_tokens: int = 1024,
        prices: tuple[float, float] = (0.0, 0.0),
        usage: Usage | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_retries = max(0, int(max_retries))
        self.backoff = max(0.0, float(backoff))
        self.max_tokens = int(max_tokens)
        self.prices = prices
        self.usage = usage or Usage()
        self.client = httpx.Client(timeout=httpx.Timeout(timeout))

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """POST to the server with retries; a failure is counted before it is raised."""
        try:
            return post_json(
                self.client,
                self.base_url + path,
                body,
                headers=headers,
                max_retries=self.max_retries,
                backoff=self.backoff,
            )
        except LLMUnavailable as exc:
            self.usage.add(Call(self.name, self.model, 0, 0, 0.0, error=exc.message))
            raise

    def account(self, prompt_tokens: int, completion_tokens: int) -> Call:
        """Count one answered call with its estimated cost."""
        cost = (prompt_tokens * self.prices[0] + completion_tokens * self.prices[1]) / 1_000_000
        call = Call(self.name, self.model, prompt_tokens, completion_tokens, cost)
        self.usage.add(call)
        return call

    def invalid(self, problem: str) -> LLMUnavailable:
        """An answer that is not the asked-for JSON: counted as a failure, returned to raise."""
        error = LLMUnavailable(
            f"The LLM {self.model} at {self.base_url} gave an invalid answer: {problem}",
            hint="Try another llm_model; the call is answered offline meanwhile.",
        )
        self.usage.add(Call(self.name, self.model, 0, 0, 0.0, error=error.message))
        return error

    def checked(self, answer: Any, schema: Schema) -> dict[str, Any]:
        """The answer when it is an object valid against the schema, else the invalid-answer error."""
        if not isinstance(answer, dict):
            raise self.invalid(f"expected a JSON object, got {type(answer).__name__}")
        problems = validate(answer, schema)
        if problems:
            raise self.invalid("; ".join(problems[:5]))
        return answer

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()
