"""simpleAuthenticationPlugin: users, their passwords and groups.

Passwords are checked in constant time (config.passwords.verify).  A hashed password
costs tens of milliseconds to check (that is the point of scrypt), so it is never
checked on the event loop: ``quick`` answers what can be answered at once (a plain-text
password, a password verified before, which is remembered as an HMAC under a key made at
start-up), and says ``SLOW`` for the rest, which the IO edge hands to ``verify`` in a
worker thread (broker/io/verifier.py) and brings back with ``remember``.  Only
successes are remembered; a wrong password pays the full price every time (off the
loop), and an unknown user pays the price of a known one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from enum import Enum
from typing import TYPE_CHECKING, Final, Literal

from config.model import Authentication, Password, User
from config.passwords import verify

if TYPE_CHECKING:
    from collections.abc import Callable


class _Slow(Enum):
    SLOW = "slow"


#: ``quick``'s answer when only the slow check (``verify``) can tell.
SLOW: Final = _Slow.SLOW


class Users:
    __slots__ = (
        "_dummy",
        "_key",
        "_verified",
        "_verify",
        "anonymous_allowed",
        "anonymous_group",
        "anonymous_user",
        "by_name",
    )

    def __init__(
        self, authentication: Authentication, verify: Callable[[Password, str], bool] = verify
    ) -> None:
        #: config.passwords.verify, or a test's stand-in.
        self._verify = verify
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
        """The user's groups if the password is right, else None (``http.auth.Authenticator``).

        Blocking: where a hash must be checked, it is checked here, in the caller's thread."""
        quick = self.quick(user, password)
        if quick is not SLOW:
            return quick
        groups = self.verify(user, password)
        if groups is not None:
            self.remember(user, password)
        return groups

    def quick(self, user: str, password: str) -> frozenset[str] | Literal[_Slow.SLOW] | None:
        """The user's groups or None if that is known at once, else ``SLOW``."""
        found = self.by_name.get(user)
        stored = found.password if found is not None else None
        if found is None or stored is None:
            if self._dummy.scheme != "plain":
                return SLOW
            self._verify(self._dummy, password)
            return None
        if stored.scheme == "plain":
            return found.groups if self._verify(stored, password) else None
        known = self._verified.get(user)
        if known is not None and hmac.compare_digest(known, self._mac(password)):
            return found.groups
        return SLOW

    def verify(self, user: str, password: str) -> frozenset[str] | None:
        """The slow check, safe in any thread (it reads only what never changes)."""
        found = self.by_name.get(user)
        if found is None or found.password is None:
            self._verify(self._dummy, password)
            return None
        return found.groups if self._verify(found.password, password) else None

    def remember(self, user: str, password: str) -> None:
        """``password`` was verified for ``user``: the next time, ``quick`` knows it."""
        self._verified[user] = self._mac(password)

    def _mac(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()

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
