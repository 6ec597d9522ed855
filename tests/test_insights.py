"""Chat insights (issue 12): the quality filter, topic merge at 0.85 with the real model, durable auto trigger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import funes
from funes.curation.insights import INSIGHT_TYPE, chat_quality, topic_key
from funes.interfaces.cli import main
from funes.models.messages import Message
from funes.providers.embed import HashEmbedder

LONG_Q = "How should we size the PostgreSQL connection pool for the API servers under peak load?"
LONG_A = (
    "Size the connection pool from the database side: PostgreSQL handles about two connections per core "
    "well, so with 8 cores keep the pool near 16 and let PgBouncer multiplex the API servers onto it."
)


def _m(role: str, content: str, **kw) -> Message:  # type: ignore[no-untyped-def]
    return Message(role=role, content=content, **kw)


def test_quality_filter_accepts_a_real_exchange() -> None:
    assert chat_quality([_m("user", LONG_Q), _m("assistant", LONG_A)]) is None


def test_quality_filter_rejects_too_few_substantive_messages() -> None:
    reason = chat_quality([_m("user", "hi"), _m("assistant", LONG_A)])
    assert reason is not None and "fewer than 2 substantive" in reason


def test_quality_filter_rejects_mostly_tool_executions() -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}} for i in range(5)]
    messages = [_m("user", LONG_Q), _m("assistant", LONG_A)]
    for i in range(9):
        messages.append(_m("assistant", "", tool_calls=[calls[i % 5]]))
        messages.append(_m("tool", "file listing " * 10, tool_call_id=f"c{i % 5}"))
    reason = chat_quality(messages)
    assert reason is not None and "tool executions" in reason


def test_quality_filter_rejects_chats_without_an_explanation() -> None:
    short = "Use sixteen connections and PgBouncer in front of the database servers."  # 72 characters
    reason = chat_quality([_m("user", LONG_Q), _m("assistant", short), _m("user", LONG_Q + " Really?")])
    assert reason is not None and "explains" in reason


def test_topic_key_normalises() -> None:
    assert topic_key("Connection  Pooling!") == topic_key("connection pooling")
    assert topic_key("connection pooling") != topic_key("bread baking")


def _chat(mem: funes.Funes, sid: str, turns: list[tuple[str, str]]) -> None:
    mem.session(sid)
    mem.add_messages(sid, [{"role": r, "content": c} for r, c in turns])


@pytest.mark.slow
def test_topic_merge_at_085_versus_a_new_topic(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = funes.open(str(tmp_path / "i.db"), embedder=local_embedder, worker="off")
    try:
        first = mem.insights._apply(
            {
                "status": "created",
                "session": "s1",
                "tenant": "default",
                "user": None,
                "topic": "database connection pooling",
                "concepts": [],
                "memory_type": "fact",
                "knowledge_type": "fact",
                "scope": "team",
                "project": None,
                "content": LONG_A,
            }
        )["memory"]
        assert first.entity_type == INSIGHT_TYPE and first.entity_id == topic_key("database connection pooling")
        near, sim = mem.insights.find_topic("connection pooling for databases", tenant="default")
        assert near is not None and near.id == first.id and sim >= 0.85
        _, far = mem.insights.find_topic("sourdough bread baking", tenant="default")
        assert far < 0.85
    finally:
        mem.close()


@pytest.mark.slow
def test_two_chats_on_one_topic_make_one_insight_with_history(tmp_path: Path, local_embedder) -> None:  # type: ignore[no-untyped-def]
    mem = funes.open(str(tmp_path / "i.db"), embedder=local_embedder, worker="off")
    try:
        _chat(mem, "monday", [("user", LONG_Q), ("assistant", LONG_A)])
        made = mem.process_chat("monday")
        assert made["status"] == "created", made
        _chat(
            mem,
            "friday",
            [
                ("user", "What connection pool size should the PostgreSQL pool use for the API servers at peak load?"),
                (
                    "assistant",
                    "Keep the PostgreSQL connection pool size near 16 for the API servers at peak load, and add "
                    "PgBouncer in transaction mode so the pool size stays bounded when the API servers scale out.",
                ),
            ],
        )
        merged = mem.process_chat("friday")
        assert merged["status"] == "merged", merged
        assert merged["memory"].id == made["memory"].id and merged["similarity"] >= 0.85
        insight = mem.get(made["memory"].id)
        assert insight.version == 2 and insight.previous_versions[0].content == made["memory"].content
        assert insight.metadata["sessions"] == ["monday", "friday"]
        _chat(
            mem,
            "bread",
            [
                ("user", "What hydration should a sourdough loaf have for an open crumb with rye flour in it?"),
                (
                    "assistant",
                    "For an open crumb keep sourdough hydration near 75 percent; rye flour absorbs more water, so "
                    "add about 5 percent more for every fifth of the flour that is rye.",
                ),
            ],
        )
        other = mem.process_chat("bread")
        assert other["status"] == "created" and other["memory"].id != made["memory"].id
        hits = mem.search("connection pool PgBouncer", kinds=["insight"], limit=5)
        assert hits and hits[0].memory.id == made["memory"].id
    finally:
        mem.close()


def test_skipped_chat_says_why_and_writes_nothing(tmp_path: Path) -> None:
    mem = funes.open(str(tmp_path / "i.db"), embedder=HashEmbedder(64), worker="off")
    try:
        _chat(mem, "s", [("user", "hi"), ("assistant", "hello")])
        result = mem.process_chat("s")
        assert result["status"] == "skipped" and "substantive" in result["reason"]
        assert mem.list(kinds=["insight"]).items == ()
    finally:
        mem.close()


def test_auto_insights_queue_one_durable_job_per_session(tmp_path: Path) -> None:
    db = str(tmp_path / "i.db")
    mem = funes.open(db, embedder=HashEmbedder(64), worker="off", auto_insights=True, insights_delay_seconds=0)
    try:
        mem.session("s")
        mem.add_message("s", "user", LONG_Q)
        mem.add_message("s", "assistant", LONG_A)
        mem.add_message("s", "user", "And for the background workers, the same pool size?")
        jobs = mem.jobs.list(kind="insights")
        assert len(jobs) == 1 and jobs[0].payload["session"] == "s"
    finally:
        mem.close()
    # Another process runs it (the job is durable, not in memory).
    again = funes.open(db, embedder=HashEmbedder(64), worker="off")
    try:
        assert again.run_jobs(kinds=["insights"])["done"] == 1
        job = again.jobs.list(kind="insights")[0]
        assert job.status == "done"
        insights = again.list(kinds=["insight"]).items
        assert len(insights) == 1 and insights[0].entity_type == INSIGHT_TYPE
    finally:
        again.close()


def test_cli_insights(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    mem = funes.open(db, embedder=HashEmbedder(64), worker="off")
    _chat(mem, "s", [("user", LONG_Q), ("assistant", LONG_A)])
    mem.close()
    result = CliRunner().invoke(main, ["--db", db, "--embedder", "hash:64", "insights", "s", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "created" and data["memory"]["kind"] == "insight"
    missing = CliRunner().invoke(main, ["--db", db, "--embedder", "hash:64", "insights", "nope"])
    assert missing.exit_code == 1 and "No session" in missing.output


def test_insights_and_learning_are_on_where_a_worker_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`funes serve`, `mcp` and `watch` run a worker: there a user's message queues insights and learn jobs."""
    db = str(tmp_path / "w.db")
    with funes.open(db, embedder=HashEmbedder(64), worker="on", insights_delay_seconds=3600) as served:
        assert (served.config.auto_insights, served.config.auto_learn) == (True, True)
        assert served.config.origins["auto_insights"] == "worker"
        served.session("chat").add_message("user", "We decided to move the standup to 10am.")
        assert {j.kind for j in served.jobs.list(status="queued")} >= {"insights", "learn"}
    with funes.open(db, embedder=HashEmbedder(64), worker="auto") as library:
        assert (library.config.auto_insights, library.config.auto_learn) == (False, False)
    monkeypatch.setenv("FUNES_AUTO_INSIGHTS", "false")
    with funes.open(db, embedder=HashEmbedder(64), worker="on") as chosen:
        assert (chosen.config.auto_insights, chosen.config.auto_learn) == (False, True)  # a set value wins


def test_two_chats_of_a_new_topic_planned_at_once_make_one_insight_naming_both(store_url: str) -> None:
    """Both plans say "created" (no insight of the topic yet); the second to write merges into the first."""
    from funes.providers.llm import OfflineLLM, Usage

    with funes.open(store_url, embedder=HashEmbedder(64), worker="off") as mem:
        mem.entities.llm = OfflineLLM(Usage())
        for sid in ("a", "b"):
            _chat(mem, sid, [("user", LONG_Q), ("assistant", LONG_A)])
        plans = [mem.insights._plan(sid, "default", None) for sid in ("a", "b")]
        assert [p["status"] for p in plans] == ["created", "created"]
        with mem.store.transaction():
            first = mem.insights._apply(plans[0])
        with mem.store.transaction():
            second = mem.insights._apply(plans[1])
        assert (first["status"], second["status"]) == ("created", "merged")
        [insight] = mem.list(kinds=["insight"]).items
        assert insight.id == first["memory"].id == second["memory"].id
        assert insight.metadata["sessions"] == ["a", "b"] and mem.doctor() == []
