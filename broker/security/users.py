"""simpleAuthenticationPlugin: users, their passwords and groups.

Passwords are checked in constant time (config.passwords.verify).  A hashed password
costs tens of milliseconds to check (that is the point of scrypt), and CONNECT is
answered on the event loop: so a password once verified is remembered as an HMAC
under a key made at start-up, and the same password again is checked against that in
microseconds.  Only successes are remembered; a wrong password pays the full price
every time, and an unknown user pays the price of a known one.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from config.model import Authentication, Password, User
from config.passwords import verify


class Users:
    __slots__ = (
        "_dummy",
        "_key",
        "_verified",
        "anonymous_allowed",
        "anonymous_group",
        "anonymous_user",
        "by_name",
    )

    def __init__(self, authentication: Authentication) -> None:
        self.by_name: dict[str, User] = {user.username: user for user in authentication.users}
        self.anonymous_allowed = authentication.anonymous_access_allowed
        self.anonymous_user = authentication.anonymous_user
        self.anonymous_group = authentication.anonymous_group
        #: An unknown user's password is checked against this, so that the time taken
        #: does not tell which user names exist.
        self._dummy = next(
            (user.password for user in authentication.users if user.password is not None),
            Password("plain", ""),
        )
        self._key = os.urandom(32)
        self._verified: dict[str, bytes] = {}

    def authenticate(self, user: str, password: str) -> frozenset[str] | None:
        """The user's groups if the password is right, else None (``http.auth.Authenticator``)."""
        found = self.by_name.get(user)
        if found is None or found.password is None:
            verify(self._dummy, password)
            return None
        mac = hmac.new(self._key, password.encode(), hashlib.sha256).digest()
        known = self._verified.get(user)
        if known is not None and hmac.compare_digest(known, mac):
            return found.groups
        if not verify(found.password, password):
            return None
        self._verified[user] = mac
        return found.groups

    def groups(self, user: str) -> frozenset[str]:
        found = self.by_name.get(user)
        return found.groups if found is not None else frozenset()

    def changes(self, new: Users) -> list[str]:
        """What ``new`` changes, in words for the log (no password is ever written)."""
        out = [f"user {name} added" for name in sorted(new.by_name.keys() - self.by_name.keys())]
        out += [f"user {name} removed" for name in sorted(self.by_name.keys() - new.by_name.keys())]
        for name in sorted(self.by_name.keys() & new.by_name.keys()):
            old, now = self.by_name[name], new.by_name[name]
            if old.password != now.password:
                out.append(f"user {name}: password changed")
            if old.groups != now.groups:
                out.append(f"user {name}: groups {', '.join(sorted(now.groups)) or '(none)'}")
        if self.anonymous_allowed != new.anonymous_allowed:
            out.append(f"anonymousAccessAllowed {str(new.anonymous_allowed).lower()}")
        return out
