"""Forgetting commands (issue 25): forget (by ids, user or text, with a receipt), verify-forgotten, why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .common import State, emit, json_option, pass_state

CONFIRM_WORD = "forget"


def register(group: click.Group) -> None:
    """Add this module's commands to the main group."""
    group.add_command(forget)
    group.add_command(verify_forgotten)
    group.add_command(why)


def _preview_text(preview: dict[str, Any]) -> str:
    lines = [f"{len(preview['records'])} records would be forgotten:"]
    lines += [f"  {r['id']}  {r['kind']}  {r['snippet']!r}" for r in preview["records"][:50]]
    if len(preview["records"]) > 50:
        lines.append(f"  ... and {len(preview['records']) - 50} more")
    lines.append(
        f"and {preview['messages']} messages, {len(preview['sessions'])} sessions, "
        f"{len(preview['documents'])} documents, {len(preview['uploads'])} uploads, "
        f"{len(preview['markdown_files'])} Markdown files, {preview['jobs']} jobs."
    )
    return "\n".join(lines)


@click.command()
@click.argument("memory_ids", nargs=-1)
@click.option("--user", "user", help="Forget everything of this user (records, sessions, documents, uploads).")
@click.option("--matching", help="Forget every record and message holding this text (shows a preview first).")
@click.option("--yes", is_flag=True, help=f"Do not ask; without it --matching asks you to type {CONFIRM_WORD!r}.")
@click.option("--preview", "preview_only", is_flag=True, help="Only show what would be forgotten.")
@click.option("--receipt", "receipt_file", type=click.Path(dir_okay=False), help="Also write the receipt here (JSON).")
@json_option
@pass_state
def forget(
    state: State,
    memory_ids: tuple[str, ...],
    user: str | None,
    matching: str | None,
    yes: bool,
    preview_only: bool,
    receipt_file: str | None,
    as_json: bool,
) -> None:
    """Forget for good: remove the text from every place that holds it and print a receipt.

    Removes the records, their versions, keyword and vector entries, the
    access log's queries, derived insights and learned facts, session
    messages, Markdown write-back lines, uploaded files and job payloads;
    then zeroes the freed pages. `funes verify-forgotten RECEIPT` proves it.
    """
    service = state.funes()
    selector: dict[str, Any] = {"ids": list(memory_ids) or None, "user": user, "matching": matching}
    if preview_only or (matching is not None and not yes):
        preview = service.preview_forget(**selector, caller=state.user)
        if preview_only:
            emit(as_json, preview, lambda: _preview_text(preview))
            return
        click.echo(_preview_text(preview), err=True)
        typed = click.prompt(f"Type {CONFIRM_WORD!r} to forget them", default="", show_default=False, err=True)
        if typed.strip().lower() != CONFIRM_WORD:
            raise click.ClickException("Not confirmed; nothing was forgotten. (Pass --yes to skip the question.)")
    receipt = service.forget_everywhere(**selector, confirm=True, caller=state.user, actor=state.user or "cli")
    if receipt_file:
        Path(receipt_file).write_text(json.dumps(receipt, indent=2), encoding="utf-8")
    counts = receipt["counts"]
    emit(
        as_json,
        receipt,
        lambda: (
            f"Forgot {counts['records']} records ({counts['messages']} messages, {counts['sessions']} sessions, "
            f"{counts['derived_removed']} derived, {counts['uploads']} uploads, {counts['markdown_files']} Markdown files, "
            f"{counts['jobs']} jobs). Receipt {receipt['id']}: `funes verify-forgotten {receipt['id']}`."
        ),
    )


@click.command("verify-forgotten")
@click.argument("receipt")
@json_option
@pass_state
def verify_forgotten(state: State, receipt: str, as_json: bool) -> None:
    """Scan the store's files, the memory folders and the uploads for a forget's text (RECEIPT: id or JSON file)."""
    report = state.reader().verify_forgotten(receipt)

    def text_out() -> str:
        files = sum(report["files_scanned"].values())
        if report["ok"]:
            return f"0 found: {report['tokens']} token hashes looked for in {files} files."
        lines = [f"{report['found']} found in {files} files:"]
        for hit in report["hits"]:
            what = f"word {hit['word']!r}" if "word" in hit else f"id {hit.get('id')}"
            lines.append(
                f"  {hit['file']} at byte {hit.get('offset')}: {what}" + (f" ({hit['note']})" if "note" in hit else "")
            )
        return "\n".join(lines)

    emit(as_json, report, text_out)
    if not report["ok"]:
        raise SystemExit(1)


@click.command()
@click.argument("memory_id")
@json_option
@pass_state
def why(state: State, memory_id: str, as_json: bool) -> None:
    """Show what a memory was made from (messages, sessions, documents, entity) and what was made from it."""
    report = state.reader().why(memory_id)

    def text_out() -> str:
        src = report["sources"]
        lines = [f"{report['id']} ({report['kind']}, source {report['source_type'] or 'none'})"]
        for key in ("messages", "sessions", "documents"):
            if src[key]:
                lines.append(f"  {key}: {', '.join(src[key])}")
        if src["entity"]:
            lines.append(f"  entity: {src['entity']}")
        if src["uri"]:
            lines.append(f"  uri: {src['uri']}")
        lines += [f"  derived: {d['id']} ({d['kind']}, via {d['via']})" for d in report["derived"]]
        return "\n".join(lines)

    emit(as_json, report, text_out)
