"""Bad input to a real `funes serve` answers 4xx with the error shape and a hint, and the server keeps answering.

Issue 31 listed each of these as a 500, a hang or a silent store of junk, on
SQLite and PostgreSQL alike; each case runs on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import funes_serve

import funes

T = "/v1/teams/t"


@pytest.fixture
def http(store_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    with funes.open(store_url, embedder="hash", worker="off") as service:
        service.remember("setup", tenant="setup")
        key = service.keys.create("t", "write")[0]
    with (
        funes_serve(store_url, tmp_path / "home", FUNES_MAX_FILE_MB="2") as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client,
    ):
        yield client


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("deep-json", "POST", T + "/memories", {"content": '{"content": "x", "metadata": {"a": ' + _deep(900) + "}}"}),
    ("deeper-json", "POST", T + "/memories", {"content": '{"content": "x", "title": ' + _deep(100_000) + "}"}),
    ("percent", "GET", T + "/memories/search?q=%", {}),
    ("scopes", "GET", T + "/memories?scope=" + ",".join(f"s{i}" for i in range(5000)), {}),
    ("scopes-search", "GET", T + "/memories/search?q=x&scope=" + ",".join(f"s{i}" for i in range(5000)), {}),
    ("expires-far", "POST", T + "/memories", {"json": {"content": "e", "expires_at": "9999-12-31T23:59:59-14:00"}}),
    ("document-tilde", "GET", T + "/documents/~nobody", {}),
    ("group-by", "GET", T + "/memories/search?q=x&group_by=bogus", {}),
    ("upload-name", "POST", T + "/documents", {"files": {"file": ("a" * 300 + ".md", b"# Hi\n\nthere\n")}}),
    ("nul-content", "POST", T + "/memories", {"json": {"content": "a\x00b"}}),
    ("nul-entity-type", "POST", T + "/memories", {"json": {"content": "ab", "entity_type": "a\x00"}}),
    ("nan", "POST", T + "/memories", {"content": '{"content": "n", "metadata": {"x": NaN}}'}),
    ("title", "POST", T + "/memories", {"json": {"content": "t", "title": "x" * 100_000}}),
    ("topic", "POST", T + "/memories", {"json": {"content": "t", "topic": "x" * 10_000}}),
    ("entity-id", "POST", T + "/memories", {"json": {"content": "t", "entity_type": "row", "entity_id": "x" * 10_000}}),
    ("file-id", "POST", T + "/memories", {"json": {"content": "t", "file_id": "x" * 10_000}}),
    (
        "metadata-keys",
        "POST",
        T + "/memories",
        {"json": {"content": "t", "metadata": {f"k{i}": i for i in range(1000)}}},
    ),
    ("metadata-size", "POST", T + "/memories", {"json": {"content": "t", "metadata": {"blob": "x" * 200_000}}}),
    ("large-body", "POST", T + "/memories", {"content": '{"content": "' + "x" * (20 * 1024 * 1024) + '"}'}),
    (
        "large-upload",
        "POST",
        T + "/documents",
        {"files": {"file": ("big.md", b"# Big\n\n" + b"x" * (4 * 1024 * 1024))}},
    ),
]


def test_bad_input_is_a_4xx_with_a_hint_and_the_server_stays_up(http: httpx.Client) -> None:
    problems = []
    for name, method, path, request in CASES:
        try:
            _check(http, name, method, path, request)
        except AssertionError as exc:
            problems.append(f"{name}: {exc}")
    assert not problems, "\n".join(problems)


def _check(http: httpx.Client, name: str, method: str, path: str, request: dict[str, Any]) -> None:
    if "content" in request:
        request = {**request, "headers": {"content-type": "application/json"}}
    answer = http.request(method, path, **request)
    if name in ("percent", "document-tilde"):
        assert answer.status_code in (200, 404), answer.text
    else:
        assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:500])
    if answer.status_code >= 400:
        error = answer.json()["error"]
        assert error["code"] and error["message"] and error["hint"], error
        assert "/tmp/" not in answer.text and "Traceback" not in answer.text
    if name == "large-body":
        assert answer.status_code == 413
    assert http.get("/v1/health").status_code == 200
    listed = http.get(T + "/memories")
    assert listed.status_code == 200
    assert all("\x00" not in m["content"] and len(m.get("title") or "") <= 1000 for m in listed.json()["items"]), (
        listed.text[:300]
    )


def test_a_far_expiry_or_a_century_ttl_is_stored_and_read_back(http: httpx.Client) -> None:
    for body in ({"content": "far", "expires_at": "9999-12-31T23:59:59+14:00"}, {"content": "ttl", "ttl_days": 36500}):
        created = http.post(T + "/memories", json=body)
        assert created.status_code in (201, 400), created.text
        if created.status_code == 400:
            assert created.json()["error"]["hint"]
    assert http.get(T + "/memories").status_code == 200
    assert http.get(T + "/memories/search", params={"q": "far"}).status_code == 200
