"""Which files an ingestion names: paths, folders (recursive) and globs, with short display names."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import FunesError, InvalidInput
from . import EXTENSIONS

_GLOB_CHARS = set("*?[")


@dataclass
class InputFile:
    """One input: a file (path) or bytes, or the error that stops it being read."""

    uri: str
    name: str
    path: Path | None = None
    data: bytes | None = None
    size: int = 0
    extension: str = ""
    error: FunesError | None = None


def _display_name(path: Path, root: Path | None) -> str:
    """A short name for attributions: relative to the cwd or the ingested folder, else the file name."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    if root is not None:
        try:
            return path.relative_to(root.parent).as_posix()
        except ValueError:
            pass
    return path.name


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[InputFile]:
    """Files named by paths, folders (recursively: supported files only) and globs, in order."""
    out: list[InputFile] = []
    seen: set[str] = set()

    def add(path: Path, root: Path | None) -> None:
        resolved = path.resolve()
        if str(resolved) in seen:
            return
        seen.add(str(resolved))
        out.append(
            InputFile(
                uri=str(resolved), name=_display_name(resolved, root), path=resolved, extension=resolved.suffix.lower()
            )
        )

    def walk(folder: Path) -> int:
        found = 0
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for filename in sorted(filenames):
                if filename.startswith(".") or Path(filename).suffix.lower() not in EXTENSIONS:
                    continue
                add(Path(dirpath) / filename, folder.resolve())
                found += 1
        return found

    for raw in paths:
        text = os.fspath(raw)
        path = Path(text).expanduser()
        if path.is_file():
            add(path, None)
        elif path.is_dir():
            if not walk(path):
                out.append(
                    InputFile(
                        uri=str(path.resolve()),
                        name=text,
                        error=InvalidInput(
                            f"No supported files in folder {text}.",
                            hint=f"Funes reads {', '.join(sorted(EXTENSIONS))}.",
                        ),
                    )
                )
        elif _GLOB_CHARS & set(text):
            matches = sorted(glob.glob(os.path.expanduser(text), recursive=True))
            files = [Path(m) for m in matches if Path(m).is_file()]
            for m in matches:
                if Path(m).is_dir():
                    walk(Path(m))
            for f in files:
                add(f, None)
            if not matches:
                out.append(
                    InputFile(
                        uri=text, name=text, error=InvalidInput(f"No files match {text}.", hint="Check the pattern.")
                    )
                )
        else:
            out.append(
                InputFile(
                    uri=str(path.absolute()),
                    name=text,
                    error=InvalidInput(f"No such file or directory: {text}.", hint="Check the path."),
                )
            )
    for item in out:
        if item.path is not None:
            try:
                item.size = item.path.stat().st_size
            except OSError:
                item.size = 0
    return out
