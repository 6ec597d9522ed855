"""One agent loop end to end on a local memory store (issue 27).

The application is written against Anthropic's APIs only: the Messages API
for the model and the memory-stores API for memory, both through the
``anthropic`` SDK. Memory points its base URL at a real ``funes serve``; the
model is a fake at the HTTP level (a scripted Messages API behind the SDK's
transport). The agent views its memory, creates a note, reads it, edits it
with a ``content_sha256`` precondition (a stale one is refused, so it reads
again and retries), and reads it back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from served import funes_serve

import funes

TOOLS = [
    {"name": "memory_list", "description": "List memory paths.", "input_schema": {"type": "object"}},
    {
        "name": "memory_read",
        "description": "Read a memory by path; returns its content and content_sha256.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "memory_write",
        "description": "Create a memory at a path.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "memory_edit",
        "description": "Replace a memory's content if it still has the content_sha256 you read.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "expected_sha256": {"type": "string"},
            },
            "required": ["path", "content", "expected_sha256"],
        },
    },
]


class MemoryToolbox:
    """The application's side of the tools: calls to the memory-stores API (here, a local Funes)."""

    def __init__(self, client: anthropic.Anthropic, store_id: str) -> None:
        self.memories = client.beta.memory_stores.memories
        self.store_id = store_id

    def _id(self, path: str) -> str:
        for item in self.memories.list(self.store_id, path_prefix=path.rsplit("/", 1)[0] + "/"):
            if item.type == "memory" and item.path == path:
                return item.id
        raise LookupError(f"no memory at {path}")

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """A tool's result text and whether it is an error."""
        try:
            if name == "memory_list":
                return json.dumps([m.path for m in self.memories.list(self.store_id)]), False
            if name == "memory_read":
                m = self.memories.retrieve(self._id(args["path"]), memory_store_id=self.store_id)
                return json.dumps({"content": m.content, "content_sha256": m.content_sha256}), False
            if name == "memory_write":
                m = self.memories.create(self.store_id, path=args["path"], content=args["content"])
                return json.dumps({"id": m.id, "content_sha256": m.content_sha256}), False
            if name == "memory_edit":
                m = self.memories.update(
                    self._id(args["path"]),
                    memory_store_id=self.store_id,
                    content=args["content"],
                    precondition={"type": "content_sha256", "content_sha256": args["expected_sha256"]},
                )
                return json.dumps({"content_sha256": m.content_sha256}), False
        except anthropic.APIStatusError as exc:
            return f"{exc.status_code} {exc.body['error']['type']}: {exc.body['error']['message']}", True  # type: ignore[index]
        return f"unknown tool {name}", True


def run_agent(llm: anthropic.Anthropic, toolbox: MemoryToolbox, task: str) -> tuple[str, list[str]]:
    """The agent loop: call the model, run the tools it asks for, until it answers; (answer, tools called)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    called: list[str] = []
    for _ in range(20):
        reply = llm.messages.create(model="claude-fake", max_tokens=512, tools=TOOLS, messages=messages)  # type: ignore[arg-type]
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text"), called
        results = []
        for block in reply.content:
            if block.type == "tool_use":
                called.append(block.name)
                text, error = toolbox.run(block.name, dict(block.input))  # type: ignore[arg-type]
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": text, "is_error": error})
        messages.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")


def scripted_model(request: httpx2.Request) -> httpx2.Response:
    """A fake Messages API: decides the next step from the tool results so far, as a model would."""
    messages = json.loads(request.content)["messages"]
    results = [b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]]
    step = len(results)
    last = results[-1] if results else None
    path = "/user/seating.md"

    def tool(name: str, **args: Any) -> httpx2.Response:
        block = {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": args}
        return _message([block], "tool_use")

    if step == 0:
        return tool("memory_list")
    if step == 1:
        assert json.loads(last["content"]) == []  # type: ignore[index]
        return tool("memory_write", path=path, content="The user prefers aisle seats.")
    if step == 2:
        assert len(json.loads(last["content"])["content_sha256"]) == 64  # type: ignore[index]
        return tool("memory_read", path=path)
    if step == 3:
        assert json.loads(last["content"])["content"] == "The user prefers aisle seats."  # type: ignore[index]
        # A stale hash first (as if another writer had changed it since): refused.
        return tool("memory_edit", path=path, content="The user prefers middle seats.", expected_sha256="0" * 64)
    if step == 4:
        assert last["is_error"] and "memory_precondition_failed_error" in last["content"]  # type: ignore[index]
        return tool("memory_read", path=path)
    if step == 5:
        seen = json.loads(last["content"])  # type: ignore[index]
        return tool(
            "memory_edit",
            path=path,
            content=seen["content"].replace("aisle", "window") + " (changed in May)",
            expected_sha256=seen["content_sha256"],
        )
    if step == 6:
        assert not last["is_error"], last  # type: ignore[index]
        return tool("memory_read", path=path)
    seen = json.loads(last["content"])  # type: ignore[index]
    return _message([{"type": "text", "text": f"Saved. Your memory now says: {seen['content']}"}], "end_turn")


def _message(content: list[dict[str, Any]], stop: str) -> httpx2.Response:
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return httpx2.Response(200, json=body)


def test_an_agent_views_creates_edits_with_a_precondition_and_reads_back(tmp_path: Path) -> None:
    store_path = str(tmp_path / "team.db")
    with funes.open(store_path, embedder="hash", worker="off") as service:
        key = service.keys.create("t", "write")[0]
    llm = anthropic.Anthropic(
        api_key="fake",
        base_url="http://llm.invalid",
        http_client=httpx2.Client(transport=httpx2.MockTransport(scripted_model)),
        max_retries=0,
    )
    with funes_serve(store_path, tmp_path / "home") as base, llm:
        with anthropic.Anthropic(api_key=key, base_url=base, max_retries=0) as memory:
            store = memory.beta.memory_stores.create(name="Travel agent", description="What the user prefers.")
            answer, called = run_agent(llm, MemoryToolbox(memory, store.id), "From now on I want window seats.")
            versions = list(memory.beta.memory_stores.memory_versions.list(store.id, view="full"))
    assert answer == "Saved. Your memory now says: The user prefers window seats. (changed in May)"
    assert called == [
        "memory_list",
        "memory_write",
        "memory_read",
        "memory_edit",
        "memory_read",
        "memory_edit",
        "memory_read",
    ]
    # One version per accepted change; the refused edit wrote nothing.
    assert [(v.operation, v.content) for v in versions] == [
        ("modified", "The user prefers window seats. (changed in May)"),
        ("created", "The user prefers aisle seats."),
    ]
    with funes.open(store_path, embedder="hash", worker="off") as service:
        hits = list(service.search("window seats", tenant="t"))
        assert hits and hits[0].memory.entity_id == "/user/seating.md"
