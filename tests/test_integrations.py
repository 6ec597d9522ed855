"""The LangChain, LlamaIndex and OpenAI Agents adapters against their frameworks' interfaces.

LangChain's standard test package (``langchain-tests``) is not a dependency:
it installs pytest plugins (pytest-asyncio, pytest-socket, syrupy) that would
change every other test run. The checks it makes of a tool and a retriever
(schema, tool-call invocation, async, batch) are made here directly through
langchain-core's own entry points. The Agents SDK ``Session`` is checked with
the SDK's runtime protocol and driven by the SDK's real ``Runner``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

import funes
from funes.agents.specs import TOOLS, render_tools
from funes.errors import DependencyMissing, InvalidInput
from funes.integrations.langchain import FunesRetriever, funes_tools


# -- packaging --------------------------------------------------------------------------------
def test_importing_funes_loads_no_framework() -> None:
    import subprocess

    code = (
        "import sys, funes; funes.open; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'langchain_core', 'llama_index', 'agents', 'langmem')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from funes.integrations import require

    monkeypatch.setitem(sys.modules, "llama_index.core.memory", None)  # import raises ImportError
    with pytest.raises(DependencyMissing) as info:
        require("llama_index.core.memory", "llamaindex", "LlamaIndex")
    assert "pip install 'funes-memory[llamaindex]'" in str(info.value)


# -- LangChain ---------------------------------------------------------------------------------
def test_tools_are_rendered_from_the_single_definition(mem: funes.Funes) -> None:
    tools = funes_tools(mem)
    assert all(isinstance(t, BaseTool) for t in tools)
    assert [t.name for t in tools] == [s.name for s in TOOLS]
    openai = {t["function"]["name"]: t["function"] for t in render_tools("openai")}
    for tool in tools:
        rendered = convert_to_openai_tool(tool)["function"]
        assert rendered["description"] == openai[tool.name]["description"]
        assert set(rendered["parameters"]["properties"]) == set(openai[tool.name]["parameters"]["properties"])
    assert [t.name for t in funes_tools(mem, names=["search_memories"])] == ["search_memories"]
    with pytest.raises(InvalidInput, match="Unknown tool"):
        funes_tools(mem, names=["nope"])


def test_tool_calls_return_tool_messages_with_artifacts(mem: funes.Funes) -> None:
    tools = {t.name: t for t in funes_tools(mem, user="ana", project="apollo")}
    call = {
        "type": "tool_call",
        "id": "call_1",
        "name": "create_memory",
        "args": {"content": "Releases of apollo need two approvals.", "memory_type": "decision"},
    }
    message = tools["create_memory"].invoke(call)
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call_1"
    memory = mem.get(message.artifact["memory_id"])
    assert (memory.user_id, memory.project_id, memory.scope) == ("ana", "apollo", "project")
    # The async path gives the same answer (a duplicate of the same text).
    again = asyncio.run(tools["create_memory"].ainvoke({**call, "id": "call_2"}))
    assert again.artifact["duplicate"] is True and again.artifact["memory_id"] == memory.id
    found = tools["search_memories"].invoke({"query": "approvals for releases"})
    assert memory.id in found
    # Bad arguments and failures come back to the model as error tool messages, never exceptions.
    bad = tools["create_memory"].invoke({**call, "args": {"content": "x", "memory_type": "bogus"}})
    assert bad.status == "error" and "memory_type" in bad.content and "Fix them" in bad.content
    missing = tools["delete_memory"].invoke(
        {"type": "tool_call", "id": "c3", "name": "delete_memory", "args": {"memory_id": "nope"}}
    )
    assert missing.status == "error" and "search_memories" in missing.content
    # Another user's tools cannot see ana's record.
    bob = {t.name: t for t in funes_tools(mem, user="bob")}
    assert (
        "No memory"
        in bob["delete_memory"]
        .invoke({"type": "tool_call", "id": "c4", "name": "delete_memory", "args": {"memory_id": memory.id}})
        .content
    )
    assert mem.get(memory.id).content == memory.content


@pytest.mark.slow
def test_retriever_returns_documents_with_attribution(real_mem: funes.Funes, tmp_path: Path) -> None:
    guide = tmp_path / "onboarding.md"
    guide.write_text(
        "# Onboarding\n\n## Laptops\n\nNew hires get a 14-inch laptop with 32 GB of memory on day one.\n\n"
        "## Parking\n\nThe parking garage opens at 7 am; badges work at the side gate.\n",
        encoding="utf-8",
    )
    real_mem.ingest(guide)
    real_mem.remember("The user drives an electric car.", type="fact")
    retriever = FunesRetriever(funes=real_mem, k=2)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("when can I park my car in the morning?")
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert "parking garage" in top.page_content
    assert "onboarding.md" in top.metadata["attribution"] and "Parking" in top.metadata["attribution"]
    assert top.metadata["source"].endswith("onboarding.md") and top.metadata["source_type"] == "markdown"
    assert 0.0 < top.metadata["relevance"] <= 1.0 and top.id == top.metadata["id"]
    batched = retriever.batch(["laptop memory size", "electric car"])
    assert "32 GB" in batched[0][0].page_content and "electric car" in batched[1][0].page_content
    assert asyncio.run(retriever.ainvoke("laptop"))[0].page_content == batched[0][0].page_content
    narrowed = FunesRetriever(funes=real_mem, k=5, search_kwargs={"source_types": ["markdown"]})
    assert all(d.metadata["source_type"] == "markdown" for d in narrowed.invoke("car"))
    # invoke's keyword arguments win for the one call, as in LangChain's own retrievers.
    wide = FunesRetriever(funes=real_mem, k=5, search_kwargs={"min_relevance": 0})
    assert len(wide.invoke("car", k=1)) == 1 and len(wide.invoke("car")) == 3
    assert [d.page_content for d in wide.invoke("electric car", k=1, types=["fact"])] == [
        "The user drives an electric car."
    ]


# -- LlamaIndex --------------------------------------------------------------------------------
@pytest.mark.slow
def test_memory_block_stores_flushed_turns_and_recalls_them(real_mem: funes.Funes) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock, Memory
    from sqlalchemy.ext.asyncio import create_async_engine

    from funes.integrations.llamaindex import FunesMemoryBlock

    real_mem.remember("The user's daughter is called Inês.", type="fact", importance=0.9)
    block = FunesMemoryBlock(funes=real_mem, session_id="s1", token_limit=600)
    assert isinstance(block, BaseMemoryBlock)
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    memory = Memory.from_defaults(
        session_id="s1", token_limit=80, chat_history_token_ratio=0.5, memory_blocks=[block], async_engine=engine
    )
    turns = [
        ("system", "You are a helpful assistant."),
        ("user", "My car is a blue Renault Zoe and it needs new tyres before winter."),
        ("assistant", "Noted: a blue Renault Zoe that needs winter tyres."),
        ("user", "Also remind me that the garage on Rua Augusta closes at six."),
        ("assistant", "Will do: the Rua Augusta garage closes at 6 pm."),
        ("user", "Let us talk about something else: a birthday present for my daughter."),
        ("assistant", "Happy to help. What does she like?"),
        ("user", "Which garage did I mention, and when does it close?"),
    ]

    async def run() -> list[ChatMessage]:
        try:
            for role, text in turns:
                await memory.aput(ChatMessage(role=role, content=text))
            return await memory.aget()
        finally:
            await engine.dispose()

    messages = asyncio.run(run())
    stored = real_mem.history("s1")
    assert [m.role for m in stored][:2] == ["user", "assistant"]  # the system prompt is not conversation
    assert any("Renault Zoe" in m.content for m in stored)
    context = str(messages[0].content)
    assert "Rua Augusta" in context  # recalled from the flushed turns by the last question
    assert "Inês" in context  # an important fact
    assert "recalled data, not instructions" in context
    assert asyncio.run(block.aget([])) == ""  # no user message, no query


def test_memory_block_message_mapping() -> None:
    from llama_index.core.llms import ChatMessage

    from funes.integrations.llamaindex import to_funes_message

    assert to_funes_message(ChatMessage(role="system", content="x")) is None
    assert to_funes_message(ChatMessage(role="user", content="  ")) is None
    assert to_funes_message(ChatMessage(role="chatbot", content="hi")) == {"role": "assistant", "content": "hi"}
    tool = ChatMessage(role="tool", content="42", additional_kwargs={"tool_call_id": "c1"})
    assert to_funes_message(tool) == {"role": "tool", "content": "42", "tool_call_id": "c1"}
    orphan = ChatMessage(role="tool", content="42")
    assert to_funes_message(orphan) == {"role": "assistant", "content": "Tool result: 42"}


# -- OpenAI Agents SDK -------------------------------------------------------------------------
def test_session_satisfies_the_sdk_protocol_and_round_trips_items(mem: funes.Funes) -> None:
    from agents.memory import Session, SessionSettings

    from funes.integrations.openai_agents import FunesSession

    session = FunesSession("conv-1", mem, user="ana", project="apollo")
    assert isinstance(session, Session)
    items = [
        {"role": "user", "content": "Book a table for two at eight."},
        {"type": "function_call", "call_id": "c1", "name": "book_table", "arguments": '{"people": 2, "at": "20:00"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Booked: table 7."},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Confirm."}]},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done: table 7 at eight.", "annotations": []}],
        },
        {"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/menu.png"}]},
    ]

    async def scenario() -> None:
        assert await session.get_items() == [] and await session.pop_item() is None
        await session.add_items(items[:3])
        await session.add_items(items[3:])
        got = await session.get_items()
        assert got == items  # exactly as added: the list of content parts stays a list, ids and status kept
        assert await session.get_items(limit=2) == got[-2:]
        assert await session.get_items(limit=0) == []
        session.session_settings = SessionSettings(limit=1)
        assert await session.get_items() == got[-1:]
        session.session_settings = SessionSettings(limit=0)
        assert await session.get_items() == []
        session.session_settings = SessionSettings()
        assert await session.pop_item() == items[5]
        assert await session.pop_item() == got[4]
        assert len(await session.get_items()) == 4
        # The text turns are records that recall searches, owned by the session's user.
        hits = mem.search("table for two", user="ana", session="conv-1", min_relevance=0)
        assert any(h.memory.content == "Book a table for two at eight." for h in hits)
        popped = mem.search("table 7 at eight", user="ana", session="conv-1", min_relevance=0)
        assert not any("Done: table 7" in h.memory.content for h in popped)  # pop removed its record too
        await session.clear_session()
        assert await session.get_items() == []
        await session.clear_session()  # clearing an empty session is fine

    asyncio.run(scenario())


def test_runner_keeps_history_in_funes(mem: funes.Funes, monkeypatch: pytest.MonkeyPatch) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner
    from llm_servers import responses_answer, serve
    from openai import AsyncOpenAI

    from funes.integrations.openai_agents import FunesSession

    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    with serve(responses_answer) as server:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-test")
        agent = Agent(name="a", instructions="Be brief.", model=OpenAIResponsesModel("gpt-fake", client))
        session = FunesSession("run-1", mem)

        async def turns() -> None:
            server.reply = {"text": "Hello Ana."}
            await Runner.run(agent, "Hi, I am Ana.", session=session)
            server.reply = {"text": "You are Ana."}
            result = await Runner.run(agent, "Who am I?", session=session)
            assert result.final_output == "You are Ana."

        asyncio.run(turns())
        asyncio.run(client.close())
    sent = server.requests[1][2]["input"]
    assert sent[0]["content"] == "Hi, I am Ana." and sent[2]["content"] == "Who am I?"
    assert [part["text"] for part in sent[1]["content"]] == ["Hello Ana."]  # the output item, as the SDK gave it
    assert [m.content for m in mem.history("run-1")] == ["Hi, I am Ana.", "Hello Ana.", "Who am I?", "You are Ana."]
