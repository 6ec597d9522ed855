"""One exception hierarchy for Funes.

Every message says what to do next. Shells translate these at the edge: the CLI
maps them to exit codes, REST to ``{"error": {"code", "message", "hint"}}`` and
MCP to an ``isError`` tool result.
"""

from __future__ import annotations


class FunesError(Exception):
    """Base class of every error Funes raises on purpose."""

    code = "funes_error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} {self.hint}"
        return self.message

    def to_dict(self) -> dict[str, str | None]:
        """The error as the one JSON shape all shells share."""
        return {"code": self.code, "message": self.message, "hint": self.hint}


class InvalidInput(FunesError):
    """The caller passed something Funes cannot accept."""

    code = "invalid_input"


class NotFound(FunesError):
    """No record, source or session with that id is visible to the caller."""

    code = "not_found"


class Conflict(FunesError):
    """The write collides with the current state of the store."""

    code = "conflict"


class PreconditionFailed(Conflict):
    """A write's precondition (the content hash the caller last read) no longer holds."""

    code = "precondition_failed"


class ForgetCrossed(Conflict):
    """A forget of the tenant committed after the reads a write was derived from: what was read may be gone, so
    nothing of the write was kept (the transaction rolled back). Run it again: it reads what remains."""

    code = "forget_crossed"


class PathConflict(Conflict):
    """Another memory of the store already has that path."""

    code = "path_conflict"

    def __init__(self, message: str, *, hint: str | None = None, memory_id: str = "", path: str = "") -> None:
        super().__init__(message, hint=hint)
        self.memory_id = memory_id
        self.path = path


class EmbedderMismatch(FunesError):
    """The store was built with another embedding model."""

    code = "embedder_mismatch"


class DependencyMissing(FunesError):
    """An optional dependency is not installed."""

    code = "dependency_missing"


class BackendUnavailable(FunesError):
    """The storage or embedding backend cannot be reached or opened."""

    code = "backend_unavailable"


class WriteCrossed(BackendUnavailable):
    """The database rolled a write back because it crossed a concurrent one (deadlock, serialisation failure).

    Nothing of it was written. A store write that is a transaction of its own
    is run again a few times before this reaches the caller.
    """


class EmbedderUnavailable(BackendUnavailable):
    """The embedding server cannot be reached (or keeps failing) right now.

    Writes are still accepted (their vectors wait as jobs) and searches fall
    back to keywords; see :mod:`funes.memory.core`.
    """

    code = "embedder_unavailable"


class StoreCorrupt(BackendUnavailable):
    """The database file is damaged or is not a Funes store."""

    code = "store_corrupt"


class StoreReadOnly(BackendUnavailable):
    """The store can be read but not written (a read-only filesystem, an immutable or read-only file)."""

    code = "store_read_only"


class StoreFull(BackendUnavailable):
    """The disk holding the store is full; the write was rolled back."""

    code = "store_full"


__all__ = [
    "BackendUnavailable",
    "Conflict",
    "DependencyMissing",
    "EmbedderMismatch",
    "ForgetCrossed",
    "FunesError",
    "InvalidInput",
    "NotFound",
    "StoreCorrupt",
    "StoreFull",
    "StoreReadOnly",
]


class Unauthorized(FunesError):
    """The request carries no API key, or one that is unknown or revoked."""

    code = "unauthorized"


class Forbidden(FunesError):
    """The API key is valid, but its role does not allow this action."""

    code = "forbidden"
