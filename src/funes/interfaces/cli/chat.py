"""CLI commands for conversations: chat, context, usage, instructions, sessions, promote.

Registered on the main group by cli.py. Only click is imported at load time;
the service loads when a command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .common import State, emit, json_option, pass_state, read_text_arg

if TYPE_CHECKING:
    from ...conversations.assembly import BuiltContext
    from ...models.messages import Message


def _read_json_file(path: str, what: str) -> Any:
    from ...errors import InvalidInput

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"Cannot read the {what} file {path}: {exc.strerror}.", hint="Check the path.") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"The {what} file {path} is not JSON ({exc}).", hint="Write it as a JSON object or list."
        ) from exc


def _parse_messages(text: str) -> Any:
    """Messages from a JSON list, an object with "messages", or JSON lines."""
    from ...errors import InvalidInput

    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"The messages are not JSON ({exc}).",
                hint='Give a JSON list like [{"role": "user", "content": "hi"}], or one message per line.',
            ) from exc
    if isinstance(value, dict) and "messages" in value:
        value = value["messages"]
    return value


def _message_line(m: Message) -> str:
    calls = f"  [tool calls: {', '.join(t.name for t in m.tool_calls)}]" if m.tool_calls else ""
    stamp = m.created_at.strftime("%Y-%m-%d %H:%M") if m.created_at else ""
    return f"#{m.seq} {stamp} {m.role}: {m.content}{calls}"


def _context_text(built: BuiltContext) -> str:
    report = built.report()
    lines = [
        f"# {report['format']} request: {report['total_tokens']} of {report['prompt_limit']} prompt tokens "
        f"(window {report['window']}, response buffer {report['response_budget']})",
        "# section            tokens / cap   included  dropped",
    ]
    for name, sec in report["sections"].items():
        lines.append(
            f"# {name:<18} {sec['tokens']:>6} / {sec['cap']:<6} {len(sec['included']):>8} {len(sec['dropped']):>8}"
        )
    for d in built.dropped_turns:
        lines.append(f"# dropped turn #{d['seq']} {d['role']} ({d['tokens']} tokens, {d['why']})")
    lines += ["", "=== system ===", built.system]
    for m in built.messages:
        lines += ["", f"=== {m.role} ===", m.token_text()]
    return "\n".join(lines)


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""

    @group.group()
    def chat() -> None:
        """Conversation messages: add them, read the history."""

    @chat.command(name="add")
    @click.argument("content", required=False)
    @click.option("--session", "session_id", required=True, help="Session id (created if new).")
    @click.option("--role", type=click.Choice(["user", "assistant", "tool"]), default="user", show_default=True)
    @click.option("--tool-calls", help="Assistant tool calls as JSON (OpenAI or Anthropic shape).")
    @click.option("--tool-call-id", help="For role 'tool': the id of the call this answers.")
    @click.option("--prompt-tokens", type=int, help="Token usage of the model call that produced this message.")
    @click.option("--completion-tokens", type=int, help="Completion tokens of that call.")
    @click.option("--model", help="Model of that call.")
    @json_option
    @pass_state
    def chat_add(
        state: State,
        content: str | None,
        session_id: str,
        role: str,
        tool_calls: str | None,
        tool_call_id: str | None,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        model: str | None,
        as_json: bool,
    ) -> None:
        """Add a message to a session. CONTENT is read from stdin when piped."""
        text = "" if tool_calls and content is None else read_text_arg(content, "message")
        calls = None
        if tool_calls:
            try:
                calls = json.loads(tool_calls)
            except json.JSONDecodeError as exc:
                raise click.BadParameter(f"not JSON ({exc})", param_hint="--tool-calls") from exc
        usage = None
        if prompt_tokens is not None or completion_tokens is not None:
            usage = {"prompt_tokens": prompt_tokens or 0, "completion_tokens": completion_tokens or 0, "model": model}
        f = state.funes()
        session = f.session(session_id, project=state.project)
        message = session.add_message(role, text, tool_calls=calls, tool_call_id=tool_call_id, usage=usage)
        emit(as_json, message.to_dict(), f"Added #{message.seq} ({role}) to session {session.id}.")

    @chat.command(name="import")
    @click.argument("file", required=False, type=click.Path(dir_okay=False, allow_dash=True))
    @click.option("--session", "session_id", required=True, help="Session id (created if new).")
    @json_option
    @pass_state
    def chat_import(state: State, file: str | None, session_id: str, as_json: bool) -> None:
        """Add a whole conversation to a session in one transaction.

        FILE (or stdin) holds OpenAI or Anthropic messages: a JSON list, an
        object with "messages", or one message per line (JSONL). Nothing is
        stored if any message is invalid.
        """
        if file in (None, "-"):
            text = read_text_arg(None, "messages file")
        else:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except OSError as exc:
                from ...errors import InvalidInput

                raise InvalidInput(f"Cannot read {file}: {exc.strerror}.", hint="Check the path.") from exc
        messages = _parse_messages(text)
        f = state.funes()
        session = f.session(session_id, project=state.project)
        added = session.add_messages(messages)
        skipped = [
            f"Skipped message {s.index}: {s.error.message.removeprefix(f'Message {s.index}: ')}"
            + (f" ({s.error.hint})" if s.error.hint else "")
            for s in added.skipped
        ]
        emit(
            as_json,
            {"session": session.id, **added.to_dict()},
            "\n".join(
                [f"Added {len(added)} messages (#{added[0].seq}-#{added[-1].seq}) to session {session.id}.", *skipped]
            ),
        )
        if added.skipped:
            sys.exit(1)

    @chat.command(name="history")
    @click.argument("session_id")
    @click.option("--limit", "-n", type=int, help="Only the newest N messages.")
    @json_option
    @pass_state
    def chat_history(state: State, session_id: str, limit: int | None, as_json: bool) -> None:
        """Show a session's messages, oldest first."""
        messages = state.reader().history(session_id, limit=limit)
        emit(
            as_json,
            [m.to_dict() for m in messages],
            lambda: "\n".join(_message_line(m) for m in messages) or "No messages.",
        )

    @group.command(name="context")
    @click.argument("query", required=False)
    @click.option("--session", "session_id", required=True, help="Session id.")
    @click.option("--snapshot", type=click.Path(dir_okay=False), help="JSON file with the application's live state.")
    @click.option("--changes", type=click.Path(dir_okay=False), help="JSON file with a list of recent changes.")
    @click.option("--instructions", help="Base instructions (default: a generic assistant line).")
    @click.option("--window", type=int, help="Model context window in tokens (default: the context_window setting).")
    @click.option("--format", "fmt", type=click.Choice(["anthropic", "openai"]), default="anthropic", show_default=True)
    @json_option
    @pass_state
    def context_cmd(
        state: State,
        query: str | None,
        session_id: str,
        snapshot: str | None,
        changes: str | None,
        instructions: str | None,
        window: int | None,
        fmt: str,
        as_json: bool,
    ) -> None:
        """Print the assembled request for QUERY with per-section token counts."""
        text = read_text_arg(query, "user message")
        snap = _read_json_file(snapshot, "snapshot") if snapshot else None
        recent = _read_json_file(changes, "changes") if changes else None
        if recent is not None and not isinstance(recent, list):
            raise click.BadParameter("must hold a JSON list", param_hint="--changes")
        f = state.funes()
        built = f.build_context(
            session_id,
            text,
            snapshot=snap,
            recent_changes=recent,
            instructions=instructions,
            model_window=window,
            format=fmt,
        )
        emit(as_json, built.to_dict(), lambda: _context_text(built))

    @group.command(name="usage")
    @click.argument("session_id")
    @json_option
    @pass_state
    def usage_cmd(state: State, session_id: str, as_json: bool) -> None:
        """Token usage of a session: totals and the last call."""
        data = state.reader().usage(session_id)

        def text_out() -> str:
            t = data["totals"]
            lines = [
                f"session:  {data['session']}",
                f"calls:    {data['calls']}",
                f"totals:   {t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} completion = {t['total_tokens']:,} tokens",
            ]
            last = data["last"]
            if last:
                lines.append(
                    f"last:     context {last['context_used']:,} / {last['context_window']:,} tokens "
                    f"(↑{last['prompt_tokens']:,} prompt, ↓{last['completion_tokens']:,} response)"
                )
            return "\n".join(lines)

        emit(as_json, data, text_out)

    @group.command(name="instructions")
    @click.option("--agent", is_flag=True, help="Print the agent memory-management guidance instead.")
    @json_option
    def instructions_cmd(agent: bool, as_json: bool) -> None:
        """Print the memory instructions for system prompts (override in $FUNES_HOME/prompts/)."""
        from ...conversations.prompts import load_prompt
        from ...models import config

        name = "agent" if agent else "memory"
        text = load_prompt(name, prompts_dir=config.load().prompts_dir)
        emit(as_json, {"name": name, "text": text}, text)

    @group.group()
    def sessions() -> None:
        """List sessions, clear them, apply the retention policy."""

    @sessions.command(name="list")
    @click.option("--limit", "-n", type=int, default=50, show_default=True)
    @json_option
    @pass_state
    def sessions_list(state: State, limit: int, as_json: bool) -> None:
        """Sessions by most recent activity."""
        found = state.reader().sessions(project=state.project, limit=limit)
        emit(
            as_json,
            [s.to_dict() for s in found],
            lambda: (
                "\n".join(
                    f"{s.id}  {s.message_count:>5} messages  last {s.last_activity:%Y-%m-%d %H:%M}"
                    + (f"  project={s.project_id}" if s.project_id else "")
                    for s in found
                )
                or "No sessions."
            ),
        )

    @sessions.command(name="prune")
    @click.option("--older-than-days", type=float, help="Idle days before clearing (default: session_retention_days).")
    @click.option("--dry-run", is_flag=True, help="Only list the sessions that would be cleared.")
    @json_option
    @pass_state
    def sessions_prune(state: State, older_than_days: float | None, dry_run: bool, as_json: bool) -> None:
        """Clear idle sessions' records (pinned survive), messages and usage; logged in the cleanup log."""
        result = state.reader().prune_sessions(older_than_days=older_than_days, dry_run=dry_run)

        def text_out() -> str:
            if result.get("disabled"):
                return "Session retention is off (session_retention_days = 0)."
            verb = "Would clear" if dry_run else "Cleared"
            lines = [f"{verb} {len(result['sessions'])} session(s) idle since before {result['cutoff']}."]
            for s in result["sessions"]:
                if dry_run:
                    lines.append(f"  {s['session_id']}")
                else:
                    lines.append(
                        f"  {s['session_id']}: {s['records_deleted']} records, {s['messages_deleted']} messages removed; "
                        f"{s['records_kept']} pinned kept"
                    )
            return "\n".join(lines)

        emit(as_json, result, text_out)

    @sessions.command(name="clear")
    @click.argument("session_id")
    @json_option
    @pass_state
    def sessions_clear(state: State, session_id: str, as_json: bool) -> None:
        """Clear one session now: unpinned records, messages and usage."""
        result = state.reader().clear_session(session_id)
        emit(
            as_json,
            result,
            f"Cleared {session_id}: {result['records_deleted']} records, {result['messages_deleted']} messages; "
            f"{result['records_kept']} pinned kept.",
        )

    @group.command(name="promote")
    @click.argument("memory_ids", nargs=-1)
    @click.option(
        "--to", "target", type=click.Choice(["project", "team"]), help="Target scope (default: the next tier)."
    )
    @click.option("--session", "session_id", help="With no ids: only this session's records.")
    @click.option("--dry-run", is_flag=True, help="Only show what would move.")
    @json_option
    @pass_state
    def promote_cmd(
        state: State,
        memory_ids: tuple[str, ...],
        target: str | None,
        session_id: str | None,
        dry_run: bool,
        as_json: bool,
    ) -> None:
        """Move records up a tier (session → project → team). No ids: apply the default policy."""
        result = state.funes().promote(
            list(memory_ids) or None, to=target, session=session_id, project=state.project, dry_run=dry_run
        )

        def text_out() -> str:
            verb = "Would promote" if dry_run else "Promoted"
            lines = [f"{verb} {len(result['promoted'])} record(s)."]
            lines += [f"  {p['id']}: {p['from']} → {p['to']}" for p in result["promoted"]]
            lines += [f"  skipped {s['id']}: {s['why']}" for s in result["skipped"]]
            return "\n".join(lines)

        emit(as_json, result, text_out)
