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
from collections.abc import Collection
from enum import Enum
from typing import TYPE_CHECKING, Final, Literal

from config.model import Authentication, Password
from config.passwords import verify

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


class _Slow(Enum):
    SLOW = "slow"


#: ``quick``'s answer when only the slow check (``verify``) can tell.
SLOW: Final = _Slow.SLOW


#: A user as a reload's reader sends it: name, password scheme and text ("" and "": it
#: has none), groups.
Row = tuple[str, str, str, Collection[str]]
#: anonymousAccessAllowed, anonymousUser, anonymousGroup.
Anonymous = tuple[bool, str, str]


class Users:
    """The users of one configuration, kept compact: each user is its password's text in
    one dict and a small int in another (the index of its password's scheme and its groups,
    which users share: a handful of combinations), nothing the cyclic collector ever looks
    at.  The config's ``User``, its ``Password``, groups and origin are four objects it
    would go through at every full collection: 148,000 users made each one 180 ms, with
    every client waiting."""

    __slots__ = (
        "_dummy",
        "_key",
        "_kinds",
        "_passwords",
        "_verified",
        "_verify",
        "anonymous_allowed",
        "anonymous_group",
        "anonymous_user",
        "kinds",
    )

    def __init__(
        self,
        rows: Iterable[Row],
        anonymous: Anonymous = (False, "anonymous", "anonymous"),
        verify: Callable[[Password, str], bool] = verify,
    ) -> None:
        """``rows``: (name, password scheme, password text, groups) for each user (scheme
        and text "": no password), as a reload's reader sends them or ``of`` makes them."""
        #: config.passwords.verify, or a test's stand-in.
        self._verify = verify
        #: (password scheme, groups) of each kind of user ("": it has no password, and cannot
        #: log in), and each user's kind by name.
        self.kinds: list[tuple[str, frozenset[str]]] = []
        known: dict[tuple[str, Collection[str]], int] = {}
        self._kinds: dict[str, int] = {}
        self._passwords: dict[str, str] = {}
        #: An unknown user's password is checked against this, so that the time taken
        #: does not tell which user names exist.
        self._dummy = Password("plain", "")
        dummy = False
        for name, scheme, text, groups in rows:
            index = known.get((scheme, groups))
            if index is None:
                index = known[scheme, groups] = len(self.kinds)
                self.kinds.append((scheme, frozenset(groups)))
            self._kinds[name] = index
            if scheme:
                self._passwords[name] = text
                if not dummy:
                    self._dummy = Password(scheme, text)  # type: ignore[arg-type]
                    dummy = True
        self.anonymous_allowed, self.anonymous_user, self.anonymous_group = anonymous
        self._key = os.urandom(32)
        self._verified: dict[str, bytes] = {}

    @classmethod
    def of(cls, authentication: Authentication, verify: Callable[[Password, str], bool] = verify) -> Users:
        """The users of a loaded configuration."""
        rows = (
            (user.username, user.password.scheme, user.password.text, user.groups)
            if user.password is not None
            else (user.username, "", "", user.groups)
            for user in authentication.users
        )
        anonymous = (
            authentication.anonymous_access_allowed,
            authentication.anonymous_user,
            authentication.anonymous_group,
        )
        return cls(rows, anonymous, verify)

    def password_of(self, user: str) -> Password | None:
        """``user``'s password (None: unknown, or it has none)."""
        text = self._passwords.get(user)
        if text is None:
            return None
        return Password(self.kinds[self._kinds[user]][0], text)  # type: ignore[arg-type]

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
        stored = self.password_of(user)
        if stored is None:
            if self._dummy.scheme != "plain":
                return SLOW
            self._verify(self._dummy, password)
            return None
        if stored.scheme == "plain":
            return self.groups(user) if self._verify(stored, password) else None
        known = self._verified.get(user)
        if known is not None and hmac.compare_digest(known, self._mac(password)):
            return self.groups(user)
        return SLOW

    def verify(self, user: str, password: str) -> frozenset[str] | None:
        """The slow check, safe in any thread (it reads only what never changes)."""
        stored = self.password_of(user)
        if stored is None:
            self._verify(self._dummy, password)
            return None
        return self.groups(user) if self._verify(stored, password) else None

    def remember(self, user: str, password: str) -> None:
        """``password`` was verified for ``user``: the next time, ``quick`` knows it."""
        self._verified[user] = self._mac(password)

    def _mac(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()

    def groups(self, user: str) -> frozenset[str]:
        index = self._kinds.get(user)
        return self.kinds[index][1] if index is not None else frozenset()

    def changes(self, new: Users) -> list[str]:
        """What ``new`` changes, in words for the log: for each kind of change a count and
        the first ``NAMED`` names in the file's order, so that the line stays short
        whatever the file (140,000 users added made one line of 3 MB); no password is ever
        written.  Loops, not sorts: a reload thread running this lets the loop have the
        GIL every few milliseconds (one ``sorted`` of 148,000 names held it 130 ms)."""
        old_kinds, new_kinds = self._kinds, new._kinds
        old_passwords, new_passwords = self._passwords, new._passwords
        added: list[str] = []
        passwords: list[str] = []
        regrouped: list[str] = []
        for name, now in new_kinds.items():
            old = old_kinds.get(name)
            if old is None:
                added.append(name)
                continue
            (old_scheme, old_groups), (scheme, groups) = self.kinds[old], new.kinds[now]
            if old_scheme != scheme or old_passwords.get(name) != new_passwords.get(name):
                passwords.append(name)
            if old_groups != groups:
                regrouped.append(f"{_short(name)}: {', '.join(sorted(groups)) or '(none)'}")
        removed = [name for name in old_kinds if name not in new_kinds]
        out = [
            f"{_count(len(names), 'user')} {what} ({_first(names)})"
            for what, names in (("added", added), ("removed", removed))
            if names
        ]
        if passwords:
            out.append(f"password changed for {_count(len(passwords), 'user')} ({_first(passwords)})")
        if regrouped:
            out.append(f"groups changed for {_count(len(regrouped), 'user')} ({_first(regrouped, '; ')})")
        if self.anonymous_allowed != new.anonymous_allowed:
            out.append(f"anonymousAccessAllowed {str(new.anonymous_allowed).lower()}")
        return out


#: How many names a reload's log line gives of each kind of change (the rest are counted),
#: and how much of each name.
NAMED: Final = 5
NAME_CHARS: Final = 64


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 3] + "..."


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _first(names: list[str], sep: str = ", ") -> str:
    shown = sep.join(_short(name) for name in names[:NAMED])
    more = len(names) - NAMED
    return shown + (f" and {more:,} more" if more > 0 else "")
