"""Task summaries: ``funes record-task`` writes what a coding task changed, and what it taught.

A summary is appended (never overwritten) to the day's ``YYYY-MM-DD.md`` in
the memory folder, in the format of seed 004::

    ## <date> Task Summary
    **Commit**: <hash>
    **Task**: <the task>
    ### Changes        (files of `git diff HEAD`, with the hunk count of each)
    ### Result
    ### Errors Encountered

Outside a git repository the summary says so and is still recorded. The
task's output is then analysed into categorised insights (Execution, Error,
Result: what failed, why, what fixed it), stored as ``insight`` records that
reference the task (``task:<id>``). With a remote LLM configured (the
``llm`` setting), the model writes them from the task and its output; when
it is offline, unreachable or answers nothing usable, deterministic rules do:
error lines, the exit code, ``Solution:`` lines.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..knowledge.folders import project_root
from ..models import Memory, SourceRef, new_id

if TYPE_CHECKING:
    from ..knowledge.folders import Folders
    from ..memory.core import Core
    from ..providers.llm import LLM

RESULTS = ("ok", "failed")
_ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:\w+\.)*\w*(?:Error|Exception)\b|\b(?:error|fatal|failed|failure|traceback)\b", re.IGNORECASE
)
_SOLUTION = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:solution|fix(?:ed)?|resolved?)(?:\*\*)?\s*:\s*(.+)$", re.IGNORECASE
)
_MAX_ERRORS = 5
_STDERR_TAIL = 40  # lines of stderr kept in the summary


@dataclass(frozen=True)
class TaskRecord:
    """What ``record_task`` wrote: the file, the summary, the changed files and the insights."""

    task_id: str
    path: Path
    summary: str
    commit: str | None
    changes: dict[str, int] = field(default_factory=dict)
    insights: tuple[Memory, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "task_id": self.task_id,
            "path": str(self.path),
            "commit": self.commit,
            "changes": self.changes,
            "insights": [
                {"id": m.id, "category": m.metadata.get("category"), "content": m.content} for m in self.insights
            ],
            "warnings": list(self.warnings),
        }


def _git(cwd: Path, *args: str) -> str | None:
    """A git command's stdout, or None when it fails (no repository, no commits, no git)."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def hunk_counts(diff: str) -> dict[str, int]:
    """Each file of a unified ``git diff`` with its number of hunks (a binary or mode-only change counts 0)."""
    counts: dict[str, int] = {}
    current: str | None = None
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            match = re.match(r"diff --git a/(.+?) b/(.+)$", line)
            current = match.group(2) if match else line.split()[-1]
            counts[current] = 0
        elif line.startswith("@@") and current is not None:
            counts[current] += 1
    return counts


def analyse(task: str, output: str, result: str | None, exit_code: int | None) -> list[tuple[str, str]]:
    """(category, insight) pairs from a task's output: Execution, Error and Result, by deterministic rules."""
    insights: list[tuple[str, str]] = []
    if result == "failed" or (exit_code not in (None, 0)):
        code = f" with exit code {exit_code}" if exit_code not in (None, 0) else ""
        insights.append(("Execution", f"Task '{task}' failed{code}."))
    elif result == "ok" or exit_code == 0:
        insights.append(("Execution", f"Task '{task}' succeeded."))
    errors: list[str] = []
    last_error: str | None = None
    for raw in output.splitlines():
        line = raw.strip()
        solution = _SOLUTION.match(line)
        if solution:
            cause = f" after: {last_error}" if last_error else ""
            insights.append(("Result", f"In '{task}', the fix was: {solution.group(1).strip()}{cause}"))
            continue
        if line and _ERROR_LINE.search(line) and line not in errors and len(errors) < _MAX_ERRORS:
            errors.append(line)
            last_error = line[:300]
    insights[1:1] = [("Error", f"In '{task}': {e[:300]}") for e in errors]
    return insights


CATEGORIES = ("Execution", "Error", "Result")
INSIGHTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "insights": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "text": {"type": "string"},
                },
                "required": ["category", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["insights"],
    "additionalProperties": False,
}
_OUTPUT_FOR_LLM = 6000  # characters of the task's output a model is shown (the tail: errors come last)


def _llm_prompt(task: str, output: str, result: str | None, exit_code: int | None) -> str:
    return (
        "A coding agent finished a task. Extract what a future agent should remember: what ran (Execution), "
        "what failed and why (Error), and what fixed it or what came out (Result). One short, self-contained "
        "sentence per insight; name the task, files and commands; no speculation.\n\n"
        f"Task: {task}\nResult: {result or 'unknown'}\nExit code: {exit_code}\n"
        f"Output (last part):\n{output[-_OUTPUT_FOR_LLM:]}"
    )


class Tasks:
    """Record coding tasks into the memory folder and their lessons as insights (a feature service)."""

    def __init__(self, core: Core, folders: Folders, llm: Callable[[], LLM] | None = None) -> None:
        self.core = core
        self.folders = folders
        self._llm = llm

    def insights(self, task: str, output: str, result: str | None, exit_code: int | None) -> list[tuple[str, str]]:
        """(category, insight) pairs: from the configured remote LLM, else (or on any failure) by rules."""
        rules = analyse(task, output, result, exit_code)
        if self._llm is None or str(self.core.config.llm or "offline").lower() == "offline":
            return rules
        llm = self._llm()
        fallbacks = llm.usage.fallbacks
        answer = llm.complete_json(_llm_prompt(task, output, result, exit_code), INSIGHTS_SCHEMA)
        if llm.usage.fallbacks != fallbacks:
            return rules  # the model failed; the offline answer to this prompt is not an analysis
        found = [
            (str(i["category"]), " ".join(str(i["text"]).split()))
            for i in answer.get("insights", [])
            if isinstance(i, dict) and i.get("category") in CATEGORIES and str(i.get("text", "")).strip()
        ]
        return found or rules

    def record_task(
        self,
        task: str,
        *,
        result: str | None = None,
        stdout: str = "",
        stderr: str = "",
        exit_code: int | None = None,
        cwd: str | os.PathLike[str] | None = None,
        folder: str | os.PathLike[str] | None = None,
        project: str | None = None,
    ) -> TaskRecord:
        """Append a task summary to today's file (git changes with hunk counts) and store its insights."""
        if not isinstance(task, str) or not task.strip():
            raise InvalidInput("The task is empty.", hint='Say what was done: --task "Fix the login timeout".')
        if result is not None and result not in RESULTS:
            raise InvalidInput(f"Invalid result {result!r}.", hint=f"Use one of: {', '.join(RESULTS)}.")
        task = " ".join(task.split())
        where = Path(cwd or Path.cwd()).resolve()
        warnings: list[str] = []
        commit: str | None = None
        changes: dict[str, int] = {}
        inside = _git(where, "rev-parse", "--is-inside-work-tree")
        if inside is None or inside.strip() != "true":
            warnings.append(f"{where} is not in a git repository; the task is recorded without commit or changes.")
            commit_text, change_lines = "(not a git repository)", ["Not in a git repository: no changes recorded."]
        else:
            head = _git(where, "rev-parse", "--short", "HEAD")
            commit = head.strip() if head else None
            if commit is None:
                warnings.append("The repository has no commits yet; changes are counted against the empty tree.")
            diff = _git(where, "diff", "HEAD") if commit else _git(where, "diff", "--cached")
            changes = hunk_counts(diff or "")
            commit_text = commit or "(no commits yet)"
            change_lines = [f"- {name} ({n} hunk{'s' if n != 1 else ''})" for name, n in changes.items()] or [
                "No files changed."
            ]
        task_id = new_id("task")
        now = datetime.now().astimezone()
        outcome = result or ("failed" if exit_code not in (None, 0) else "ok" if exit_code == 0 else "unknown")
        result_lines = [f"- **Result**: {outcome}"] + (
            [f"- **Exit Code**: {exit_code}"] if exit_code is not None else []
        )
        tail = "\n".join(stderr.strip().splitlines()[-_STDERR_TAIL:])
        fence = "~~~~" if "```" in tail else "```"  # stderr holding a fence of its own cannot close ours
        errors = f"{fence}\n{tail}\n{fence}" if tail else "None"
        summary = "\n".join(
            [
                f"## {now:%Y-%m-%d} Task Summary",
                "",
                f"**Commit**: {commit_text}",
                "",
                f"**Task**: {task}",
                "",
                f"**Task ID**: {task_id}",
                "",
                "### Changes",
                *change_lines,
                "",
                "### Result",
                *result_lines,
                "",
                "### Errors Encountered",
                errors,
                "",
                "---",
                "",
            ]
        )
        if folder is None and not self.core.config.memory_folder:
            # The task's own project, which need not be the caller's working directory.
            registered = self.folders.add_folder(project_root(where) / ".funes" / "memory")
        else:
            registered = self.folders.folder(folder)
        path = Path(registered.path) / f"{now:%Y-%m-%d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        lead = "\n" if path.exists() and path.stat().st_size else ""
        with path.open("a", encoding="utf-8") as out:  # append only: several tasks a day share the file
            out.write(lead + summary)
        insights = self.insights(task, f"{stdout}\n{stderr}", result, exit_code)
        results = self.core.remember_many(
            [
                {
                    "content": text,
                    "kind": "insight",
                    "type": "fact",
                    "topic": f"task {category.lower()}",
                    "metadata": {"category": category, "task_id": task_id, "task": task},
                    "references": [("task", task_id)],
                    # A model's reading of the task's output, not the user's words (issue 25).
                    "source": SourceRef(type="task", uri=f"task:{task_id}"),
                }
                for category, text in insights
            ],
            project=project,
        )
        self.folders.sync(registered.path, tenant=registered.tenant)
        stored = tuple(r.memory for r in results if r.memory is not None)
        return TaskRecord(task_id, path, summary, commit, changes, stored, tuple(warnings))
