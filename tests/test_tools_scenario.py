"""Seed 003's procurement scenario end to end, and near duplicates, with the real embedding model."""

from __future__ import annotations

import pytest

import funes
from funes.models import Caller

USER = "buyer-42"
VENDORS = "User prefers US-based vendors for all procurement projects"
EFFICIENCY = "User requires at least 90% energy efficiency for all procurement projects"

# Memories of the same user that have nothing to do with procurement preferences.
DISTRACTORS = [
    ("The user likes dark mode in the code editor", "preference"),
    ("Weekly standup is on Monday at 9am", "fact"),
    ("The team deploys the web app on Fridays", "decision"),
    ("The billing service is written in Go", "fact"),
    ("The user is allergic to peanuts", "fact"),
    ("The user's manager is called Dana", "fact"),
]


def _assistant_turn() -> object:
    """The turn seed 003 wanted: the agent stores both preferences instead of only acknowledging them."""
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": [
                {"type": "text", "text": "I'll store both preferences for your future procurement projects."},
                {
                    "type": "tool_use",
                    "id": "toolu_vendors",
                    "name": "create_memory",
                    "input": {
                        "content": VENDORS,
                        "memory_type": "preference",
                        "importance_score": 0.9,
                        "scope": "team",
                    },
                },
                {
                    "type": "tool_use",
                    "id": "toolu_efficiency",
                    "name": "create_memory",
                    "input": {"content": EFFICIENCY, "memory_type": "preference", "importance_score": 0.9},
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 120, "output_tokens": 80},
        }
    )


@pytest.mark.slow
def test_procurement_preferences_survive_into_a_new_session(real_mem: funes.Funes) -> None:
    first = Caller(tenant="acme", user_id=USER, agent_id="rfp-design", session_id="session-1")
    for content, kind in DISTRACTORS:
        real_mem.execute_tool("create_memory", {"content": content, "memory_type": kind}, caller=first)

    blocks = real_mem.run_tool_calls(_assistant_turn(), caller=first, project="led-lighting")
    assert [b["tool_use_id"] for b in blocks] == ["toolu_vendors", "toolu_efficiency"]
    assert all(not b.get("is_error") and b["content"].startswith("Stored memory") for b in blocks), blocks

    later = Caller(tenant="acme", user_id=USER, agent_id="rfp-design", session_id="session-2")
    result = real_mem.execute_tool(
        "search_memories", {"query": "new RFP for office supplies"}, caller=later, project="office-supplies"
    )
    assert not result.is_error
    top = [r["content"] for r in result.data["results"][:2]]
    assert set(top) == {VENDORS, EFFICIENCY}, result.text
    assert result.text.splitlines()[2].startswith("1. [preference · agent-created · team] ")
    assert "Relevance: " in result.text

    # The context block for the new session's first request carries both preferences too.
    context = real_mem.execute_tool(
        "get_memory_context", {"query": "Create a new RFP for office supplies"}, caller=later, project="office-supplies"
    )
    assert not context.is_error
    assert VENDORS in context.text and EFFICIENCY in context.text

    # Another user of the same tenant does not see them.
    stranger = Caller(tenant="acme", user_id="someone-else", session_id="session-3")
    other = real_mem.execute_tool("search_memories", {"query": "new RFP for office supplies"}, caller=stranger)
    assert other.data["count"] == 0


@pytest.mark.slow
def test_near_duplicates_with_the_real_model(real_mem: funes.Funes) -> None:
    caller = Caller(tenant="acme", user_id=USER)
    first = real_mem.execute_tool("create_memory", {"content": VENDORS, "memory_type": "preference"}, caller=caller)
    reworded = real_mem.execute_tool(
        "create_memory",
        {
            "content": "The user prefers vendors based in the US for all procurement projects",
            "memory_type": "preference",
        },
        caller=caller,
    )
    assert reworded.data["duplicate"] is False
    assert [s["id"] for s in reworded.data["similar"]] == [first.data["memory_id"]]
    changed = real_mem.execute_tool(
        "create_memory",
        {"content": "User prefers European vendors for all procurement projects", "memory_type": "preference"},
        caller=caller,
    )
    assert changed.data["similar"] == []  # a different preference is not a near duplicate
