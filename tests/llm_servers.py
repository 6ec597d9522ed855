"""Local HTTP servers on 127.0.0.1 that speak the OpenAI chat-completions and Anthropic messages wire formats.

Each server records every request and answers from a script: a list of
(status, body, headers) steps used in order (the last one repeats), or, by
default, a well-formed answer built from the request, so the real client
code runs end to end over real sockets.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = tuple[int, Any, dict[str, str]]


class WireServer(ThreadingHTTPServer):
    """A scripted JSON server; ``requests`` holds (path, headers, body) of every call."""

    daemon_threads = True

    def __init__(self, answer: Callable[[WireServer, str, dict[str, str], dict[str, Any]], Step]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.script: list[Step] = []
        self.reply: dict[str, Any] = {"summary": "A server-written summary.", "title": "Server title"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_step(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Step:
        self.requests.append((path, headers, body))
        if self.script:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return self.answer(self, path, headers, body)


class _Handler(BaseHTTPRequestHandler):
    server: WireServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, body, extra = self.server.next_step(self.path, headers, json.loads(raw or b"{}"))
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass


def openai_answer(server: WireServer, path: str, headers: dict[str, str], body: dict[str, Any]) -> Step:
    """A chat.completion object whose message content is the server's reply as JSON text."""
    if path != "/v1/chat/completions":
        return 404, {"error": {"message": f"no route {path}"}}, {}
    return (
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps(server.reply), "refusal": None},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        },
        {},
    )


def anthropic_answer(server: WireServer, path: str, headers: dict[str, str], body: dict[str, Any]) -> Step:
    """A message object whose content is one tool_use block calling the forced tool with the server's reply."""
    if path != "/v1/messages":
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}, {}
    tool = body["tool_choice"]["name"]
    return (
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": server.reply}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 200, "output_tokens": 40},
        },
        {},
    )


def responses_answer(server: WireServer, path: str, headers: dict[str, str], body: dict[str, Any]) -> Step:
    """An OpenAI Responses API response whose one output message is ``server.reply["text"]``."""
    if path != "/v1/responses":
        return 404, {"error": {"message": f"no route {path}"}}, {}
    n = len(server.requests)
    return (
        200,
        {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1_700_000_000 + n,
            "model": body.get("model", "gpt-fake"),
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": server.reply.get("text", "OK."), "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 50,
                "output_tokens": 10,
                "total_tokens": 60,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        },
        {},
    )


@contextmanager
def serve(answer: Callable[[WireServer, str, dict[str, str], dict[str, Any]], Step]) -> Iterator[WireServer]:
    """Run a wire server in a thread for the block."""
    server = WireServer(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
