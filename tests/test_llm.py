"""LLM providers: offline heuristics for real, and the OpenAI / Anthropic clients against local wire-format servers."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from llm_servers import anthropic_answer, openai_answer, serve

from funes.models import config as config_mod
from funes.providers.llm import (
    AnthropicLLM,
    FallbackLLM,
    LLMUnavailable,
    OfflineLLM,
    OpenAILLM,
    Usage,
    create_llm,
    price_of,
    validate,
)
from funes.providers.llm.offline import keywords, merge_sentences

SUMMARY: dict[str, Any] = {
    "title": "summary",
    "type": "object",
    "properties": {"title": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["title", "summary"],
    "additionalProperties": False,
}
TOPICS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "primary_topic": {"type": "string"},
        "related_concepts": {"type": "array", "items": {"type": "string"}},
        "knowledge_type": {"type": "string", "enum": ["fact", "decision", "preference", "procedure"]},
        "summary": {"type": "string"},
        "scope": {"type": "string", "enum": ["file", "team"]},
    },
    "required": ["primary_topic", "related_concepts", "knowledge_type", "summary", "scope"],
}


def _input(value: Any) -> str:
    return "Summarise this.\n<input>" + (value if isinstance(value, str) else json.dumps(value)) + "</input>"


# -- offline ------------------------------------------------------------------------------------


def test_offline_summarises_a_code_cell_by_what_it_does() -> None:
    cell = {
        "code": "# Clean the email column\nimport pandas as pd\ndef clean(df):\n    return df.dropna()\n",
        "language": "python",
        "output_shape": {"rows": 10, "cols": 3},
    }
    out = OfflineLLM().complete_json(_input(cell), SUMMARY)
    assert "Python" in out["summary"] and "Clean the email column" in out["summary"]
    assert "Defines clean" in out["summary"] and "pandas" in out["summary"]
    assert "10 rows x 3 columns" in out["summary"]


def test_offline_summarises_a_table_with_columns_and_size() -> None:
    table = {"name": "Sales", "columns": ["region", "revenue", "quarter"], "bounds": "A1:C40", "rows": 39}
    out = OfflineLLM().complete_json(_input(table), SUMMARY)
    assert out["summary"] == "Table Sales of 39 rows x 3 columns at A1:C40. Columns: region, revenue, quarter."


def test_offline_summarises_csv_text_and_a_chat() -> None:
    csv = "name,team,salary\nAda,core,10\nBob,ops,12\nCy,core,11\n"
    assert "3 rows x 3 columns" in OfflineLLM().complete_json(_input(csv), SUMMARY)["summary"]
    chat = [
        {"role": "user", "content": "How do I compute quarterly revenue growth in the Sales table?"},
        {"role": "assistant", "content": "Group the Sales table by quarter, sum revenue, then divide by the previous."},
    ]
    text = OfflineLLM().complete_json(_input(chat), SUMMARY)["summary"]
    assert "2 messages" in text and "The user asked: How do I compute quarterly revenue growth" in text
    assert "revenue" in text


def test_offline_topics_pick_keywords_type_and_scope_within_the_enums() -> None:
    text = "We decided to move the invoices to the new billing service. Billing runs nightly; invoices go to finance."
    out = OfflineLLM().complete_json(_input(text), TOPICS)
    assert validate(out, TOPICS) == []
    assert out["primary_topic"] == "invoices"  # the strongest word; a pair only when it recurs as a pair
    assert out["knowledge_type"] == "decision" and out["scope"] == "team"
    assert out["related_concepts"][:2] == ["invoices", "billing"]
    assert keywords("the cat and the cat and a dog", 2) == ["cat", "dog"]


def test_offline_merge_unions_and_dedupes_sentences() -> None:
    prompt = "<existing>The office is in Lyon. Rent is high.</existing>\n<new>Rent is high! The team grew to 12.</new>"
    out = OfflineLLM().complete_json(prompt, {"type": "object", "properties": {"summary": {"type": "string"}}})
    assert out["summary"] == "The office is in Lyon. Rent is high. The team grew to 12."
    assert merge_sentences("A b c d e f g.", "a B c d e f g") == "A b c d e f g."


def test_offline_is_deterministic_and_counted() -> None:
    usage = Usage()
    llm = OfflineLLM(usage)
    first = llm.complete_json(_input("Backups are one file. Nothing leaves the machine."), TOPICS)
    assert llm.complete_json(_input("Backups are one file. Nothing leaves the machine."), TOPICS) == first
    assert usage.calls == 2 and usage.cost_usd == 0.0 and usage.prompt_tokens > 0


# -- OpenAI-compatible -------------------------------------------------------------------------


def _openai(url: str, **options: Any) -> OpenAILLM:
    settings: dict[str, Any] = {"model": "gpt-4o-mini", "base_url": url + "/v1", "api_key": "sk-test", "backoff": 0.0}
    return OpenAILLM(**{**settings, **options})


def test_openai_sends_a_json_schema_request_and_accounts_tokens_and_cost() -> None:
    with serve(openai_answer) as server:
        llm = _openai(server.url, prices=price_of("gpt-4o-mini"))
        assert llm.complete_json("Summarise <input>x</input>", SUMMARY) == server.reply
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "gpt-4o-mini" and body["messages"][-1]["content"].startswith("Summarise")
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "summary"
    assert fmt["json_schema"]["schema"] == SUMMARY and fmt["json_schema"]["strict"] is True
    assert (llm.usage.calls, llm.usage.prompt_tokens, llm.usage.completion_tokens) == (1, 120, 30)
    assert llm.usage.cost_usd == pytest.approx((120 * 0.15 + 30 * 0.60) / 1e6)


def test_openai_falls_back_to_a_json_only_prompt_when_the_server_rejects_schemas() -> None:
    def no_schemas(server: Any, path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
        if "response_format" in body:
            return 400, {"error": {"message": "response_format json_schema is not supported"}}, {}
        reply = "Sure! ```json\n" + json.dumps(server.reply) + "\n```"
        status, data, extra = openai_answer(server, path, headers, body)
        data["choices"][0]["message"]["content"] = reply
        return status, data, extra

    with serve(no_schemas) as server:
        llm = _openai(server.url)
        assert llm.complete_json("Summarise <input>x</input>", SUMMARY) == server.reply
        assert llm.complete_json("again <input>y</input>", SUMMARY) == server.reply
    bodies = [b for _, _, b in server.requests]
    assert ["response_format" in b for b in bodies] == [True, False, False]  # remembered: no second rejection
    assert "JSON schema" in bodies[1]["messages"][-1]["content"]
    assert llm.schema_supported is False


def test_openai_json_only_answers_are_validated() -> None:
    with serve(openai_answer) as server:
        server.reply = {"title": "only a title"}  # missing the required summary
        llm = _openai(server.url)
        with pytest.raises(LLMUnavailable, match="summary is missing"):
            llm.complete_json("x", SUMMARY)
    assert llm.usage.failures == 1


def test_openai_retries_429_and_5xx_then_succeeds() -> None:
    with serve(openai_answer) as server:
        ok = openai_answer(server, "/v1/chat/completions", {}, {"model": "m"})
        server.script = [
            (429, {"error": {"message": "slow down"}}, {"retry-after": "0"}),
            (503, {"error": {"message": "overloaded"}}, {}),
            ok,
        ]
        llm = _openai(server.url, max_retries=3)
        assert llm.complete_json("x", SUMMARY) == server.reply
    assert len(server.requests) == 3 and llm.usage.calls == 1


def test_openai_gives_up_after_the_retries() -> None:
    with serve(openai_answer) as server:
        server.script = [(500, {"error": {"message": "boom"}}, {})]
        llm = _openai(server.url, max_retries=2)
        with pytest.raises(LLMUnavailable, match="failed 3 times") as err:
            llm.complete_json("x", SUMMARY)
    assert len(server.requests) == 3 and err.value.hint


def test_openai_times_out() -> None:
    import time

    def slow(server: Any, path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
        time.sleep(0.5)
        return openai_answer(server, path, headers, body)

    with serve(slow) as server:
        llm = _openai(server.url, timeout=0.05, max_retries=0)
        with pytest.raises(LLMUnavailable, match="ReadTimeout"):
            llm.complete_json("x", SUMMARY)


# -- Anthropic --------------------------------------------------------------------------------


def test_anthropic_forces_one_tool_and_reads_its_input() -> None:
    with serve(anthropic_answer) as server:
        llm = AnthropicLLM(
            model="claude-3-5-haiku-latest",
            base_url=server.url,
            api_key="sk-ant",
            backoff=0.0,
            prices=price_of("claude-3-5-haiku-latest"),
        )
        assert llm.complete_json("Summarise <input>x</input>", SUMMARY) == server.reply
    path, headers, body = server.requests[0]
    assert path == "/v1/messages"
    assert headers["x-api-key"] == "sk-ant" and headers["anthropic-version"] == "2023-06-01"
    assert body["max_tokens"] > 0 and body["messages"] == [{"role": "user", "content": "Summarise <input>x</input>"}]
    (tool,) = body["tools"]
    assert tool["input_schema"] == SUMMARY
    assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (200, 40)
    assert llm.usage.cost_usd == pytest.approx((200 * 0.8 + 40 * 4.0) / 1e6)


def test_anthropic_without_a_tool_call_is_an_invalid_answer() -> None:
    def text_only(server: Any, path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
        status, data, extra = anthropic_answer(server, path, headers, body)
        data["content"], data["stop_reason"] = [{"type": "text", "text": "I would rather chat."}], "end_turn"
        return status, data, extra

    with serve(text_only) as server:
        llm = AnthropicLLM(model="m", base_url=server.url + "/v1", backoff=0.0)
        with pytest.raises(LLMUnavailable, match="no tool_use block"):
            llm.complete_json("x", SUMMARY)


# -- the factory and the fallback ---------------------------------------------------------------


def test_create_llm_defaults_to_offline() -> None:
    assert isinstance(create_llm(config_mod.load()), OfflineLLM)


def test_create_llm_rejects_an_unknown_provider() -> None:
    with pytest.raises(Exception, match="Unknown LLM provider") as err:
        create_llm(config_mod.load(llm="gemini"))
    assert "offline" in (err.value.hint or "")  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_any_failure_falls_back_to_offline(
    provider: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answer = openai_answer if provider == "openai" else anthropic_answer
    monkeypatch.setenv("TEST_LLM_KEY", "k")
    with serve(answer) as server:
        server.script = [(500, {"error": {"message": "down"}}, {})]
        base = server.url + "/v1" if provider == "openai" else server.url
        llm = create_llm(
            config_mod.load(
                llm=provider,
                llm_base_url=base,
                llm_api_key_env="TEST_LLM_KEY",
                llm_max_retries=1,
                llm_backoff_seconds=0.0,
            )
        )
        assert isinstance(llm, FallbackLLM)
        with caplog.at_level(logging.WARNING, logger="funes.llm"):
            out = llm.complete_json(_input({"name": "Sales", "columns": ["a", "b"]}), SUMMARY)
    assert out["summary"] == "Table Sales of 2 columns. Columns: a, b."  # the offline answer
    assert len(server.requests) == 2  # one try and one retry
    assert llm.usage.fallbacks == 1 and llm.usage.failures == 1 and llm.usage.by_provider == {"offline": 1}
    assert "answering offline" in caplog.text


def test_create_llm_sends_the_configured_key_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret-1")
    with serve(openai_answer) as server:
        llm = create_llm(
            config_mod.load(llm="openai", llm_base_url=server.url + "/v1", llm_api_key_env="MY_KEY", llm_model="qwen3")
        )
        llm.complete_json("x", SUMMARY)
    _, headers, body = server.requests[0]
    assert headers["authorization"] == "Bearer secret-1" and body["model"] == "qwen3"
    assert llm.usage.by_provider == {"openai": 1} and llm.usage.cost_usd == 0.0  # unknown model: no price


def test_validate_checks_types_required_enums_and_items() -> None:
    assert "$.primary_topic should be string, got int" in validate({"primary_topic": 1}, TOPICS)
    problems = validate({"knowledge_type": "rumour", "related_concepts": [1]}, TOPICS)
    assert "$.related_concepts[0] should be string, got int" in problems
    assert any("rumour" in p for p in problems) and "$.scope is missing" in problems
    assert validate(True, {"type": "integer"}) == ["$ should be integer, got bool"]
