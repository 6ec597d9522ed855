"""Prompt texts that ship with Funes, overridable by users.

``load_prompt("memory")`` returns the first of:

1. ``<prompts_dir>/memory.md`` when the ``prompts_dir`` setting names a directory;
2. ``$FUNES_HOME/prompts/memory.md``;
3. the packaged ``funes/conversations/prompts/memory.md``.

So a user edits a copy in their home directory (``funes instructions >
~/.local/share/funes/prompts/memory.md``) without touching the package.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ...errors import InvalidInput, NotFound

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def prompt_paths(name: str, prompts_dir: str | None = None) -> list[Path]:
    """User override locations for a prompt, in the order they are tried."""
    from ...models import config

    if not _NAME.match(name):
        raise InvalidInput(
            f"Invalid prompt name {name!r}.", hint="Use lowercase letters, digits, '-' and '_', e.g. 'memory'."
        )
    directory = prompts_dir or ""
    paths = [Path(directory).expanduser() / f"{name}.md"] if directory else []
    paths.append(config.home() / "prompts" / f"{name}.md")
    return paths


def load_prompt(name: str, *, prompts_dir: str | None = None) -> str:
    """The text of a prompt: a user override if one exists, else the packaged file."""
    for path in prompt_paths(name, prompts_dir):
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    packaged = resources.files("funes.conversations.prompts").joinpath(f"{name}.md")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8").strip()
    raise NotFound(
        f"No prompt named {name!r}.",
        hint=f"Create {prompt_paths(name, prompts_dir)[-1]} to provide it.",
    )


__all__ = ["load_prompt", "prompt_paths"]
