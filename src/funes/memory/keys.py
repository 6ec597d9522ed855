"""API keys of the team server: who a request acts for.

A key is ``fk_`` followed by 32 random URL-safe bytes. It is shown once, when
created; the store keeps only its SHA-256 hash (enough: the key has 256 bits
of entropy, so a slow hash would add nothing) and a short prefix for display.
Each key belongs to one team (the tenant), optionally to one user, and has a
role: ``read`` < ``write`` < ``admin``.

A resolved key is kept in the process for :data:`KEY_CACHE_SECONDS` (issue 29:
its lookup was a round trip on every request of the team server). Revoking a
key through this process's :class:`Keys` drops it at once; a key revoked by
another process (``funes keys revoke``, another server) stops working here
within that time at most. Unknown and revoked keys are never cached.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import Forbidden, InvalidInput, NotFound, Unauthorized
from ..models import check_identity, new_id, utcnow

if TYPE_CHECKING:
    from .core import Core

ROLES = ("read", "write", "admin")
KEY_PREFIX = "fk_"
#: Seconds a resolved key is trusted without reading it again: the most a revocation by another process waits.
KEY_CACHE_SECONDS = 5.0
_CACHED_KEYS = 10_000  # resolved keys kept at most (only live keys are kept, so this is the store's key count)
TOUCH_SECONDS = 60  # a key's last_used_at is written at most this often


def hash_key(key: str) -> str:
    """The stored form of a key: its SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: a team (tenant), maybe a user, a role and the key that said so."""

    team: str
    role: str
    user_id: str | None = None
    key_id: str | None = None

    def require(self, role: str) -> None:
        """Raise :class:`Forbidden` unless this principal's role reaches ``role``."""
        if ROLES.index(self.role) < ROLES.index(role):
            raise Forbidden(
                f"This key has the {self.role!r} role; this action needs {role!r}.",
                hint=f"Use a key with the {role!r} role (`funes keys create --team {self.team} --role {role}`).",
            )

    @property
    def viewer(self) -> str:
        """The user id reads are filtered by: the key's user, else the key itself.

        A key without a user must not see users' personal memories, so it
        reads as a user of its own (``key:<id>``) that owns nothing but what
        it stored as personal.
        """
        return self.user_id or f"key:{self.key_id or 'local'}"

    def to_dict(self) -> dict[str, Any]:
        """The ``/v1/me`` answer."""
        return {"team": self.team, "user_id": self.user_id, "role": self.role, "key_id": self.key_id}


def check_role(role: str) -> str:
    """A valid role, or InvalidInput naming the choices."""
    if role not in ROLES:
        raise InvalidInput(f"Invalid role {role!r}.", hint=f"Use one of: {', '.join(ROLES)}.")
    return role


class Keys:
    """Create, list, revoke and resolve API keys (a feature service over the core's store)."""

    def __init__(self, core: Core) -> None:
        self.core = core
        #: Seconds a resolved key is used without reading it again (0: read it on every request).
        self.cache_seconds = KEY_CACHE_SECONDS
        self._resolved: dict[str, tuple[float, dict[str, Any]]] = {}  # key hash -> (when read, its row)
        self._revocations = 0  # a read that began before a revocation here is not kept
        self._lock = threading.Lock()

    def create(
        self, team: str, role: str, *, user: str | None = None, name: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        """A new key: (the key, shown only now; its stored row without the hash)."""
        team = check_identity(team, "team").strip()
        check_role(role)
        if user is not None:
            user = check_identity(user, "user").strip()
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        row = {
            "id": new_id("key"),
            "team": team,
            "user_id": user,
            "role": role,
            "name": name,
            "prefix": key[:10],
            "key_hash": hash_key(key),
            "created_at": utcnow(),
            "last_used_at": None,
            "revoked_at": None,
        }
        self.core.store.save_api_key(row)
        return key, {k: v for k, v in row.items() if k != "key_hash"}

    def list(self, team: str | None = None) -> list[dict[str, Any]]:
        """Keys newest first (never their hash)."""
        return self.core.store.list_api_keys(team)

    def revoke(self, key_id: str) -> None:
        """Revoke a key; it stops working at once in this process (elsewhere within :data:`KEY_CACHE_SECONDS`)."""
        self._forget(key_id)
        try:
            if not self.core.store.revoke_api_key(key_id, utcnow()):
                raise NotFound(f"No live key with id {key_id!r}.", hint="`funes keys list` shows key ids.")
        finally:
            self._forget(key_id)  # again: a request may have read the key while the revocation was under way

    def _forget(self, key_id: str) -> None:
        with self._lock:
            self._revocations += 1
            self._resolved = {h: kept for h, kept in self._resolved.items() if kept[1]["id"] != key_id}

    def cached(self, key: str | None) -> Principal | None:
        """The principal of a key resolved within the last :attr:`cache_seconds`, without any I/O; else None.

        None also when the key's last use is due to be written: :meth:`resolve` does that.
        """
        row = self._fresh(hash_key(key.strip())) if key else None
        return None if row is None or self._touch_due(row) else _principal(row)

    def _fresh(self, digest: str) -> dict[str, Any] | None:
        """The kept row of a key hash read within the last ``cache_seconds``, or None."""
        with self._lock:
            kept = self._resolved.get(digest)
        return kept[1] if kept is not None and time.monotonic() - kept[0] < self.cache_seconds else None

    def resolve(self, key: str | None) -> Principal:
        """The principal a presented key stands for; Unauthorized when it is missing, unknown or revoked."""
        if not key:
            raise Unauthorized(
                "This Funes server needs an API key.",
                hint="Send `Authorization: Bearer fk_...` (or `X-API-Key`); "
                "an admin creates one with `funes keys create --team TEAM --role read|write|admin`.",
            )
        digest = hash_key(key.strip())
        row = self._fresh(digest)
        if row is None:
            read_at, revocations = time.monotonic(), self._revocations
            row = self.core.store.find_api_key(digest)
            if row is None or row.get("revoked_at") is not None:
                with self._lock:
                    self._resolved.pop(digest, None)
                raise Unauthorized(
                    "The API key is unknown or revoked.",
                    hint="Check the key you sent; `funes keys list` shows live keys by prefix.",
                )
            with self._lock:
                if self.cache_seconds > 0 and revocations == self._revocations:
                    if len(self._resolved) >= _CACHED_KEYS:
                        self._resolved.clear()
                    self._resolved[digest] = (read_at, row)
        if self._touch_due(row):
            # At most one write a minute per key: reads must not queue behind the write lock.
            now = utcnow()
            self.core.store.touch_api_key(row["id"], now)
            row["last_used_at"] = now
        return _principal(row)

    @staticmethod
    def _touch_due(row: dict[str, Any]) -> bool:
        last = row.get("last_used_at")
        return last is None or (utcnow() - last).total_seconds() > TOUCH_SECONDS


def _principal(row: dict[str, Any]) -> Principal:
    return Principal(team=row["team"], role=row["role"], user_id=row.get("user_id"), key_id=row["id"])
