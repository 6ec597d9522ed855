"""Claude's client-side memory tool (``memory_20250818``) over a Markdown memory folder.

Claude sends commands (``view``, ``create``, ``str_replace``, ``insert``,
``delete``, ``rename``) on paths under a virtual ``/memories`` directory;
:class:`MemoryTool` carries them out in a real folder and indexes what it
wrote through the folder sync, so the notes are searchable at once.

Confinement is the invariant: every path is checked before any file is
touched. ``..`` (also percent-encoded), absolute paths outside
``/memories``, NUL bytes, symlinks leading out of the folder, files that are
not ``.md`` and files over ``memory_file_kb`` are refused with an error
saying what to send instead. Files are written whole to a hidden temporary
file and renamed into place, so a watcher never indexes half a note.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import Conflict, FunesError, InvalidInput, NotFound, WriteCrossed
from ..knowledge.paths import read_regular, write_atomic

if TYPE_CHECKING:
    from ..knowledge.folders import Folders

log = logging.getLogger("funes.memory_tool")

ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


class MemoryTool:
    """Run memory-tool commands in a memory folder (a feature service over the folders)."""

    def __init__(self, folders: Folders) -> None:
        self.folders = folders
        self.config = folders.config

    # -- entry point -------------------------------------------------------------------
    def memory_tool(
        self, command: Mapping[str, Any], *, folder: str | os.PathLike[str] | None = None, strict: bool = False
    ) -> str:
        """Run one memory-tool call (the ``input`` of Claude's ``tool_use`` block) and return its result text.

        Errors come back as ``"Error: ..."`` text saying what to send instead,
        ready to return to the model; ``strict=True`` raises them instead.
        ``folder`` defaults to the default memory folder (registered on first use).
        """
        registered = self.folders.folder(folder)
        root = Path(registered.path)
        try:
            if not isinstance(command, Mapping):
                raise InvalidInput("The memory tool input must be an object.", hint='Send {"command": "view", ...}.')
            name = command.get("command")
            handler: Callable[[Path, Mapping[str, Any]], tuple[str, bool]] | None = (
                getattr(self, f"_{name}", None) if name in COMMANDS else None
            )
            if handler is None:
                raise InvalidInput(f"Unknown memory command {name!r}.", hint=f"Use one of: {', '.join(COMMANDS)}.")
            root.mkdir(parents=True, exist_ok=True)
            try:
                text, wrote = handler(root, command)
            except OSError as exc:
                # A name too long, a folder where a file should be, a folder moved into itself:
                # an error for the model, never an exception with the server's paths (issue 31).
                raise InvalidInput(
                    f"The memory folder refused this {name}: {exc.strerror or type(exc).__name__}.",
                    hint=f"Use a short path naming a file (not a folder) under {ROOT}; `view` {ROOT} shows what exists.",
                ) from exc
            except UnicodeError as exc:
                raise InvalidInput(
                    "The text is not valid Unicode (it holds a lone surrogate).",
                    hint="Send UTF-8 text.",
                ) from exc
        except FunesError as exc:
            if strict:
                raise
            return f"Error: {exc}"
        if wrote:
            try:
                self.folders.sync(registered.path, tenant=registered.tenant)
            except (Conflict, WriteCrossed) as exc:
                # The file is written; other writers kept moving the folder's index meanwhile. The job
                # runner indexes it, rather than an error saying nothing was written.
                log.info("memory tool: %s is indexed by a folder-sync job (%s)", registered.path, exc)
                self.folders.enqueue_sync(registered, reason="memory tool")
        return text

    # -- paths -------------------------------------------------------------------------------
    def _path(self, root: Path, raw: Any, *, field: str = "path", file: bool = False) -> tuple[Path, str]:
        """The real path of a ``/memories/...`` path, checked to stay inside the folder, and its display form."""
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidInput(f"`{field}` is required.", hint=f"Send a path under {ROOT}, e.g. {ROOT}/notes.md.")
        if "\x00" in raw:
            raise InvalidInput(f"`{field}` contains a NUL byte.", hint="Send a plain path without control characters.")
        text = raw.strip().replace("\\", "/")
        if text == ROOT or text.startswith(ROOT + "/"):
            relative = text[len(ROOT) :].lstrip("/")
        elif text.startswith(("/", "~")) or (len(text) > 1 and text[1] == ":"):
            raise InvalidInput(
                f"{raw} is an absolute path outside {ROOT}.", hint=f"Use a path under {ROOT}, e.g. {ROOT}/notes.md."
            )
        else:
            relative = text
        # Decoded too, so %2e%2e%2f cannot smuggle a parent reference past the check.
        if ".." in PurePosixPath(relative).parts or ".." in PurePosixPath(unquote(relative)).parts:
            raise InvalidInput(f"{raw} leaves the memory folder ('..').", hint=f"Use a path under {ROOT}.")
        target = root / relative if relative else root
        if not target.resolve().is_relative_to(root.resolve()):
            raise InvalidInput(
                f"{raw} resolves outside the memory folder (a symlink points elsewhere).",
                hint=f"Use a path under {ROOT} that is not a link out of it.",
            )
        if file and target.suffix.lower() != ".md":
            raise InvalidInput(
                f"{raw} is not a Markdown file; memory files end in .md.",
                hint=f"Name it like {ROOT}/{PurePosixPath(relative).stem or 'notes'}.md.",
            )
        return target, f"{ROOT}/{relative}" if relative else ROOT

    def _limit(self) -> int:
        return int(self.config.memory_file_kb) * 1024

    def _read(self, path: Path, shown: str, root: Path) -> str:
        if not path.exists() and not path.is_symlink():
            raise NotFound(f"The path {shown} does not exist.", hint=f"`view` {ROOT} lists the memory files.")
        # The one safe open (devices, FIFOs and links out of the folder refused; issue 31).
        data = read_regular(
            path,
            shown,
            self._limit(),
            within=root,
            over=f"the {self._limit():,}-byte limit of memory files",
            hint="Split it into smaller files, or raise memory_file_kb.",
        )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{shown} is not UTF-8 text.", hint="Memory files are UTF-8 Markdown.") from exc

    def _write(self, path: Path, shown: str, text: str) -> None:
        if len(text.encode("utf-8", "surrogatepass")) > self._limit():
            raise InvalidInput(
                f"The new content of {shown} is over the {self._limit():,}-byte limit of memory files.",
                hint="Keep memory files short: split the content over several files.",
            )
        write_atomic(path, text)  # watchers and readers never see half a note

    @staticmethod
    def _text(command: Mapping[str, Any], field: str) -> str:
        value = command.get(field)
        if not isinstance(value, str):
            raise InvalidInput(f"`{field}` is required and must be text.", hint=f"Send `{field}` as a string.")
        return value

    @staticmethod
    def _numbered(text: str, start: int = 1) -> str:
        return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(text.split("\n"), start))

    # -- commands -------------------------------------------------------------------------------
    def _view(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        path, shown = self._path(root, command.get("path"))
        if path.is_dir():
            lines = []
            base = path.resolve()
            for entry in sorted(path.rglob("*")):
                relative = entry.relative_to(path)
                if len(relative.parts) > 2 or any(p.startswith(".") for p in relative.parts):
                    continue
                try:
                    if not entry.resolve().is_relative_to(root.resolve()):
                        continue  # a link out of the folder is never listed
                    size = _human(entry.stat().st_size if entry.is_file() else _dir_size(entry))
                except OSError:
                    continue  # a dangling link, or gone mid-listing
                lines.append(f"{size}\t{shown.rstrip('/')}/{relative.as_posix()}{'/' if entry.is_dir() else ''}")
            head = f"{_human(_dir_size(base))}\t{shown}"
            return (
                f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:\n"
                + "\n".join([head, *lines])
            ), False
        path, shown = self._path(root, command.get("path"), file=True)
        text = self._read(path, shown, root)
        lines = text.split("\n")
        start, end = 1, len(lines)
        window = command.get("view_range")
        if window is not None:
            if not (
                isinstance(window, (list, tuple))
                and len(window) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in window)
            ):
                raise InvalidInput(
                    "`view_range` must be two line numbers.", hint="Send e.g. [1, 20]; [5, -1] reads to the end."
                )
            start, end = int(window[0]), int(window[1])
            end = len(lines) if end == -1 else end
            if not 1 <= start <= len(lines) or not start <= end <= len(lines):
                raise InvalidInput(
                    f"Invalid `view_range` {list(window)}: {shown} has {len(lines)} lines.",
                    hint=f"Use lines from 1 to {len(lines)}; -1 as the end reads to the last line.",
                )
        body = self._numbered("\n".join(lines[start - 1 : end]), start)
        return f"Here's the content of {shown} with line numbers:\n{body}", False

    def _create(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        path, shown = self._path(root, command.get("path"), file=True)
        text = self._text(command, "file_text")
        if path.exists():
            raise Conflict(
                f"File {shown} already exists.",
                hint="Edit it with str_replace or insert, or delete it first.",
            )
        self._write(path, shown, text)
        return f"File created successfully at: {shown}", True

    def _str_replace(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        path, shown = self._path(root, command.get("path"), file=True)
        old, new = self._text(command, "old_str"), command.get("new_str", "")
        if not isinstance(new, str):
            raise InvalidInput("`new_str` must be text.", hint="Send `new_str` as a string (empty to delete).")
        if not old:
            raise InvalidInput("`old_str` is empty.", hint="Send the exact text to replace, as it is in the file.")
        text = self._read(path, shown, root)
        count = text.count(old)
        if count == 0:
            raise InvalidInput(
                f"No replacement was performed: old_str did not appear verbatim in {shown}.",
                hint="`view` the file and copy the text exactly, whitespace included.",
            )
        if count > 1:
            lines = [n for n, line in enumerate(text.split("\n"), 1) if old.split("\n")[0] in line]
            raise InvalidInput(
                f"No replacement was performed: old_str occurs {count} times in {shown} (lines {lines}).",
                hint="Include more surrounding text in old_str so that it matches exactly once.",
            )
        updated = text.replace(old, new, 1)
        self._write(path, shown, updated)
        first = text[: text.index(old)].count("\n") + 1
        snippet_lines = updated.split("\n")
        low, high = max(1, first - 4), min(len(snippet_lines), first + new.count("\n") + 4)
        snippet = self._numbered("\n".join(snippet_lines[low - 1 : high]), low)
        return f"The memory file has been edited. Here is a snippet of {shown}:\n{snippet}", True

    def _insert(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        path, shown = self._path(root, command.get("path"), file=True)
        insert = self._text(command, "insert_text")
        at = command.get("insert_line")
        text = self._read(path, shown, root)
        lines = text.split("\n")
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= len(lines):
            raise InvalidInput(
                f"Invalid `insert_line` {at!r}: {shown} has {len(lines)} lines.",
                hint=f"Use a line number from 0 (the top) to {len(lines)} (the end).",
            )
        new_lines = insert[:-1].split("\n") if insert.endswith("\n") else insert.split("\n")
        self._write(path, shown, "\n".join([*lines[:at], *new_lines, *lines[at:]]))
        return f"The file {shown} has been edited.", True

    def _delete(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        path, shown = self._path(root, command.get("path"))
        if shown == ROOT:
            raise InvalidInput(f"{ROOT} itself cannot be deleted.", hint="Delete the files or folders inside it.")
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            raise NotFound(f"The path {shown} does not exist.", hint=f"`view` {ROOT} lists the memory files.")
        return f"Successfully deleted {shown}", True

    def _rename(self, root: Path, command: Mapping[str, Any]) -> tuple[str, bool]:
        old, old_shown = self._path(root, command.get("old_path"), field="old_path")
        if not old.exists():
            raise NotFound(f"The path {old_shown} does not exist.", hint=f"`view` {ROOT} lists the memory files.")
        is_file = old.is_file()
        if is_file:
            old, old_shown = self._path(root, command.get("old_path"), field="old_path", file=True)
        new, new_shown = self._path(root, command.get("new_path"), field="new_path", file=is_file)
        if old_shown == ROOT or new_shown == ROOT:
            raise InvalidInput(f"{ROOT} itself cannot be renamed.", hint="Rename the files or folders inside it.")
        if new.exists():
            raise Conflict(f"{new_shown} already exists.", hint="Pick a new name, or delete that file first.")
        new.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, new)
        return f"Successfully renamed {old_shown} to {new_shown}", True


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "K", "M"):
        if value < 1024:
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}G"
