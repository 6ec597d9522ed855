"""Which files an ingestion names: paths, folders (recursive) and globs, with short display names."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import FunesError, InvalidInput
from .readers import EXTENSIONS

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
    #: Why this input is left out without being an error (a device, a FIFO, a socket).
    skipped: str | None = None


def printable(text: str) -> str:
    """A file name that SQLite and terminals accept: undecodable bytes become ``\\xNN`` escapes.

    POSIX file names are bytes; Python keeps the ones that are not UTF-8 as lone
    surrogates, which cannot be stored or printed (issue 9: one such name aborted a
    whole folder ingest). The escape is deterministic, so re-ingesting finds the same document.
    """
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _not_regular(path: Path) -> str | None:
    """Why a path is not a regular file that can be read to its end, or None when it is."""
    try:
        mode = path.stat().st_mode  # follows symlinks: a link to /dev/zero is a device
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    target = " (through a symbolic link)" if path.is_symlink() else ""
    if stat.S_ISFIFO(mode):
        return f"is a named pipe (FIFO){target}, which would block ingestion"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"is a device file{target}, which may never end"
    if stat.S_ISSOCK(mode):
        return f"is a socket{target}"
    return f"is not a regular file{target}"


def read_regular(
    path: Path, name: str, limit: int, *, hint: str, within: Path | None = None, over: str | None = None
) -> bytes:
    """A regular file's bytes, at most ``limit``: the one way Funes opens a file it did not write.

    Refused with :class:`InvalidInput`: a device (``x.md -> /dev/zero`` grew past
    3 GB), a FIFO (opened without blocking, so it cannot hang the caller), a
    socket, a file over ``limit`` bytes (``over`` names the limit, e.g. "the 50 MB
    limit", and ``hint`` the setting that raises it), and with
    ``within``, a path that resolves outside that folder (``notes.md ->
    ~/.aws/credentials`` was indexed by folder sync, issue 31).
    """
    try:
        resolved = Path(os.path.realpath(path))
    except OSError as exc:
        # A link removed between realpath's lstat and its readlink (a folder under churn): gone, like below.
        raise InvalidInput(f"No such file: {name}.", hint="Check the path.") from exc
    if within is not None and not resolved.is_relative_to(os.path.realpath(within)):
        raise InvalidInput(
            f"{name} is a link to a file outside its folder; it is not read.",
            hint="Copy the file into the folder instead of linking to it.",
        )
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait forever for a writer; O_NOFOLLOW: the
        # path was resolved above, so a link swapped in since is refused, not followed.
        fd = os.open(resolved, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as exc:
        raise InvalidInput(f"No such file: {name}.", hint="Check the path.") from exc
    except OSError as exc:
        raise InvalidInput(f"Cannot read {name} ({exc.strerror}).", hint="Check its permissions.") from exc
    over = over or f"the limit of {limit:,} bytes"
    try:
        # Checked on the descriptor, before a file object exists: a file replaced by a folder
        # since it was listed opens fine and only fails to read (issue 31, a watcher under churn).
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(
                f"{name} is not a regular file (a folder, device, FIFO or socket).",
                hint="Copy its content into a regular file to read it.",
            )
        if info.st_size > limit:
            raise InvalidInput(f"{name} is {info.st_size:,} bytes, over {over}.", hint=hint)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        try:
            # Read at most limit + 1 bytes: the file may have grown since it was checked.
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InvalidInput(f"Cannot read {name} ({exc.strerror}).", hint="Check the file and its disk.") from exc
    if len(data) > limit:
        raise InvalidInput(f"{name} is larger than {over}.", hint=hint)
    return data


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

    def add(path: Path, root: Path | None, unsupported: bool = False) -> None:
        resolved = path.resolve()
        if str(resolved) in seen:
            return
        seen.add(str(resolved))
        reason = _not_regular(path)
        # A link to a device is named by the link (z.txt), not by its target (zero).
        name = printable(_display_name(resolved if reason is None else path.absolute(), root))
        skipped = f"{name} {reason}; only regular files are ingested." if reason else None
        if skipped is None and unsupported:
            kind = f"type ({resolved.suffix})" if resolved.suffix else "type (no extension)"
            skipped = (
                f"{name} has an unsupported {kind}; in a folder Funes reads {', '.join(sorted(EXTENSIONS))}. "
                "Name the file itself with --kind text to index it anyway."
            )
        out.append(
            InputFile(
                uri=printable(str(resolved)),
                name=name,
                path=resolved,
                extension=resolved.suffix.lower(),
                skipped=skipped,
            )
        )

    def walk(folder: Path) -> int:
        """Add a folder's files (hidden ones and hidden folders left out); returns how many it can read."""
        found = 0
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for filename in sorted(filenames):
                if filename.startswith("."):
                    continue
                # Unsupported files are listed as skipped, with the reason, never dropped silently (issue 8).
                supported = Path(filename).suffix.lower() in EXTENSIONS
                add(Path(dirpath) / filename, folder.resolve(), unsupported=not supported)
                found += supported
        return found

    for raw in paths:
        text = os.fspath(raw)
        path = Path(text).expanduser()
        if path.is_file() or (path.exists() and not path.is_dir()):
            add(path, None)
        elif path.is_dir():
            if not walk(path):
                out.append(
                    InputFile(
                        uri=printable(str(path.resolve())),
                        name=printable(text),
                        error=InvalidInput(
                            f"No supported files in folder {printable(text)}.",
                            hint=f"Funes reads {', '.join(sorted(EXTENSIONS))}.",
                        ),
                    )
                )
        elif _GLOB_CHARS & set(text):
            matches = sorted(glob.glob(os.path.expanduser(text), recursive=True))
            files = [Path(m) for m in matches if Path(m).exists() and not Path(m).is_dir()]
            for m in matches:
                if Path(m).is_dir():
                    walk(Path(m))
            for f in files:
                add(f, None)
            if not matches:
                out.append(
                    InputFile(
                        uri=printable(text),
                        name=printable(text),
                        error=InvalidInput(f"No files match {printable(text)}.", hint="Check the pattern."),
                    )
                )
        else:
            out.append(
                InputFile(
                    uri=printable(str(path.absolute())),
                    name=printable(text),
                    error=InvalidInput(f"No such file or directory: {printable(text)}.", hint="Check the path."),
                )
            )
    for item in out:
        if item.path is not None and item.skipped is None:
            try:
                item.size = item.path.stat().st_size
            except OSError:
                item.size = 0
    return out


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole: a hidden temporary file renamed into place.

    Watchers and readers never see half a file; the parent folders are made.
    """
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def document_uri(ref: str) -> str:
    """The absolute path a document reference may name; as given when it names none.

    ``~x`` with no home directory (a server's service account) or a name the OS
    refuses must read as "no such document", never as a 500 (issue 31).
    """
    if ref.startswith("stdin"):
        return ref
    try:
        return str(Path(ref).expanduser().resolve())
    except (RuntimeError, OSError, ValueError):
        return ref


def file_date(item: InputFile) -> str | None:
    """The file's modification day (ISO), which dates chat messages that carry no timestamp of their own."""
    if item.path is None:
        return None
    try:
        return datetime.fromtimestamp(item.path.stat().st_mtime, UTC).date().isoformat()
    except OSError:
        return None
