"""Every read path as another user and as another tenant (issue 9): nobody sees u1's private memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

import funes
from funes.errors import InvalidInput, NotFound
from funes.interfaces.mcp_server import build_server
from funes.models import Caller
from funes.providers.embed import HashEmbedder

SECRET = "The vault combination for the tulip warehouse is 4711"


def _read_paths(mem: funes.Funes, secret_id: str, tenant: str, user: str | None) -> dict[str, str]:
    """What each read path returns to this caller, as text, for the query that matches the secret."""
    caller = Caller(tenant=tenant, user_id=user, session_id="shared")
    out: dict[str, str] = {}
    out["search"] = json.dumps([h.memory.content for h in mem.search("vault tulip", tenant=tenant, user=user)])
    out["list"] = json.dumps([m.content for m in mem.list(tenant=tenant, user=user, limit=100).items])
    try:
        out["get"] = mem.get(secret_id, tenant=tenant, user=user).content
    except NotFound:
        out["get"] = "not found"
    try:
        built = mem.build_context("shared", "What is the vault combination?", tenant=tenant, user=user)
        out["context"] = json.dumps(built.request, default=str)
    except NotFound:
        out["context"] = "not found"
    for name, args in (
        ("search_memories", {"query": "vault tulip"}),
        ("get_memory_context", {"query": "What is the vault combination?"}),
        ("get_memory_context", {}),
        ("list_scopes", {}),
    ):
        result = mem.execute_tool(name, args, caller=caller)
        out[f"tool {name} {sorted(args)}"] = result.text + json.dumps(result.data, default=str)
    try:
        out["read_memory"] = mem.read_memory(secret_id, caller=caller).content
    except NotFound:
        out["read_memory"] = "not found"
    out["export"] = "\n".join(mem.export_lines(tenant=tenant, user=user))
    return out


@pytest.fixture
def shared(store_url: str) -> Iterator[tuple[funes.Funes, str]]:
    mem = funes.open(store_url, embedder=HashEmbedder(64), tenant="acme")
    secret = mem.remember(SECRET, user="u1", importance=0.95, pinned=True)
    mem.remember("The tulip warehouse opens at eight", importance=0.9)
    mem.session("shared")  # created without a user: the case that leaked through build_context
    yield mem, secret.id
    mem.close()


def test_u1_sees_its_own_memory_on_every_path(shared: tuple[funes.Funes, str]) -> None:
    mem, secret_id = shared
    seen = _read_paths(mem, secret_id, "acme", "u1")
    missing = [path for path, text in seen.items() if "4711" not in text and path != "tool list_scopes []"]
    assert missing == []
    mem.close()


@pytest.mark.parametrize("tenant, user", [("acme", "u2"), ("other", "u1"), ("other", None)])
def test_no_read_path_shows_u1_private_memory_to_others(
    shared: tuple[funes.Funes, str], tenant: str, user: str | None
) -> None:
    mem, secret_id = shared
    seen = _read_paths(mem, secret_id, tenant, user)
    leaks = [path for path, text in seen.items() if "4711" in text]
    assert leaks == []
    mem.close()


def test_mcp_resources_follow_the_server_user(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with funes.open(db, embedder=HashEmbedder(64), tenant="acme") as mem:
        secret = mem.remember(SECRET, user="u1")
    for user, visible in (("u1", True), ("u2", False)):
        with funes.open(db, embedder=HashEmbedder(64), tenant="acme", user=user) as mem:

            async def main(mem: funes.Funes = mem, visible: bool = visible) -> None:
                async with Client(build_server(mem, project="p")) as client:
                    if visible:
                        body = (await client.read_resource(f"funes://memory/{secret.id}")).contents[0].text
                        assert "4711" in body
                    else:
                        with pytest.raises(Exception, match="No memory"):
                            await client.read_resource(f"funes://memory/{secret.id}")
                    stats = (await client.read_resource("funes://stats")).contents[0].text
                    assert "4711" not in stats

            anyio.run(main)


@pytest.mark.parametrize("bad", ["", "   ", "\t"])
def test_an_empty_or_blank_tenant_or_user_is_invalid(tmp_path: Path, bad: str) -> None:
    with funes.open(str(tmp_path / "e.db"), embedder=HashEmbedder(64)) as mem:
        kept = mem.remember("Default tenant record")
        with pytest.raises(InvalidInput, match="tenant must be a non-empty name"):
            Caller(tenant=bad)
        with pytest.raises(InvalidInput, match="user must be a non-empty name"):
            Caller(tenant="acme", user_id=bad)
        for call in (
            lambda: mem.get(kept.id, tenant=bad),
            lambda: mem.list(tenant=bad),
            lambda: mem.search("record", tenant=bad),
            lambda: mem.update(kept.id, content="changed", tenant=bad),
            lambda: mem.forget(kept.id, tenant=bad),
            lambda: mem.remember("x", tenant=bad),
            lambda: mem.get(kept.id, user=bad),
        ):
            with pytest.raises(InvalidInput):
                call()
        assert mem.get(kept.id).content == "Default tenant record"
