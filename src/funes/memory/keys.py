"""API keys of the team server: who a request acts for.

A key is ``fk_`` followed by 32 random URL-safe bytes. It is shown once, when
created; the store keeps only its SHA-256 hash (enough: the key has 256 bits
of entropy, so a slow hash would add nothing) and a short prefix for display.
Each key belongs to one team (the tenant), optionally to one user, and has a
role: ``read`` < ``write`` < ``admin``.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import Forbidden, InvalidInput, NotFound, Unauthorized
from ..models import check_identity, new_id, utcnow

if TYPE_CHECKING:
    from .core import Core

ROLES = ("read", "write", "admin")
KEY_PREFIX = "fk_"


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
        """Revoke a key; it stops working at once."""
        if not self.core.store.revoke_api_key(key_id, utcnow()):
            raise NotFound(f"No live key with id {key_id!r}.", hint="`funes keys list` shows key ids.")

    def resolve(self, key: str | None) -> Principal:
        """The principal a presented key stands for; Unauthorized when it is missing, unknown or revoked."""
        if not key:
            raise Unauthorized(
                "This Funes server needs an API key.",
                hint="Send `Authorization: Bearer fk_...` (or `X-API-Key`); "
                "an admin creates one with `funes keys create --team TEAM --role read|write|admin`.",
            )
        row = self.core.store.find_api_key(hash_key(key.strip()))
        if row is None or row.get("revoked_at") is not None:
            raise Unauthorized(
                "The API key is unknown or revoked.",
                hint="Check the key you sent; `funes keys list` shows live keys by prefix.",
            )
        now = utcnow()
        last = row.get("last_used_at")
        if last is None or (now - last).total_seconds() > 60:
            # At most one write a minute per key: reads must not queue behind the write lock.
            self.core.store.touch_api_key(row["id"], now)
        return Principal(team=row["team"], role=row["role"], user_id=row.get("user_id"), key_id=row["id"])
