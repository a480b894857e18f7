"""Who may use the admin server.

With an authenticator (users configured): HTTP basic auth, and only members of an
admin group get in (401 without valid credentials, 403 for a user outside the admin
groups), as ActiveMQ's console does with its ``admins`` role.  Without one: only
clients on the loopback interface, unless the operator allows remote clients
explicitly (``--http-allow-remote``), and then only with a loopback ``Host`` header
while loopback-only, so a web page cannot reach the API through DNS rebinding.

``/health`` is open to anyone who can connect: it tells nothing but "up" or "down",
and a container's HEALTHCHECK has no credentials.
"""

from __future__ import annotations

import base64
import hmac
from dataclasses import dataclass, field
from typing import Protocol

from broker.core.base.guard import ADMINS
from broker.io.loopback import host_is_loopback, is_loopback

#: The broker's administrators: the same group as may connect as a network bridge.
ADMIN_GROUPS = frozenset({ADMINS})


class Authenticator(Protocol):
    def authenticate(self, user: str, password: str) -> frozenset[str] | None:
        """The user's groups if the password is right, else None.  Compare in constant time."""


class InMemoryAuthenticator:
    """Users given in code or config: ``{"admin": ("secret", {"admins"})}``."""

    def __init__(self, users: dict[str, tuple[str, set[str] | frozenset[str]]]) -> None:
        self._users = {
            name: (password.encode(), frozenset(groups)) for name, (password, groups) in users.items()
        }

    def authenticate(self, user: str, password: str) -> frozenset[str] | None:
        entry = self._users.get(user)
        # Compare against something even for an unknown user, so that timing does not
        # tell which user names exist.
        expected, groups = entry if entry is not None else (b"\0" * 32, frozenset[str]())
        ok = hmac.compare_digest(expected, password.encode())
        return groups if ok and entry is not None else None


@dataclass(frozen=True, slots=True)
class HttpSecurity:
    authenticator: Authenticator | None = None
    admin_groups: frozenset[str] = field(default=ADMIN_GROUPS)
    #: Without an authenticator, accept clients that are not on loopback.
    allow_remote: bool = False


@dataclass(frozen=True, slots=True)
class Denied:
    status: int
    reason: str
    challenge: bool = False
    #: The user name of credentials that were wrong (a failed login, answered late).
    failed_login: str | None = None


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """``Authorization: Basic base64(user:password)`` -> (user, password)."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        # ValueError: a token that is not ASCII (binascii.Error is one too).
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


def check(
    security: HttpSecurity, peer: str | None, host_header: str | None, authorization: str | None
) -> tuple[str | None, Denied | None]:
    """(the authenticated user or None, why the request is refused or None)."""
    authenticator = security.authenticator
    if authenticator is None:
        if security.allow_remote:
            return None, None
        if not is_loopback(peer):
            return None, Denied(
                403,
                "the admin API accepts only loopback clients while no users are configured "
                "(configure users, or start the broker with --http-allow-remote)",
            )
        if not host_is_loopback(host_header):
            return None, Denied(403, f"Host {host_header!r} is not a loopback name")
        return None, None
    credentials = basic_credentials(authorization)
    if credentials is None:
        return None, Denied(401, "authentication required", challenge=True)
    user, password = credentials
    groups = authenticator.authenticate(user, password)
    if groups is None:
        return None, Denied(401, "wrong user name or password", challenge=True, failed_login=user)
    if not groups & security.admin_groups:
        return user, Denied(
            403, f"user {user!r} is not in an admin group ({', '.join(sorted(security.admin_groups))})"
        )
    return user, None
