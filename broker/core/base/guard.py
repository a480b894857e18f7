"""Who a connection is, and what it may do: the core's side of security.

The core asks a ``Guard`` two things: at CONNECT, who the login/passcode are
(``login``, which raises ``NotAuthenticated``); and, when authorization is on
(``authorizing``), whether that principal may read, write or create a destination
(``allows``), or every destination a wildcard pattern matches (``allows_every``).
``broker.security`` answers from the configuration; ``OPEN`` (no users, no authorization
entries) lets everyone in and allows everything.

``granted`` is the hot path's cache: (principal key, operation, destination header) triples
that were allowed in full, so that a SEND to a destination already allowed costs one
set lookup.  The guard empties it whenever its rules change (a reload).

A password that takes long to check (a hash) must not be checked on the event loop:
before a CONNECT reaches the core, the IO edge asks ``slow_login``; a function back means
"run me in a worker thread", and what it returns is put in ``session.login_verdict``,
which ``Connect`` hands to ``login`` with the CONNECT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base.errors import AccessDenied

if TYPE_CHECKING:
    from collections.abc import Callable

#: The broker's administrators (the admin server's group too): with users configured,
#: only they may connect as another broker's network bridge (``Guard.may_bridge``).
ADMINS: Final = "admins"
READ: Final = "read"
WRITE: Final = "write"
ADMIN: Final = "admin"
#: How ActiveMQ's AuthorizationBroker words each refusal ("User x is not authorized to ...").
VERBS: Final = {READ: "read from", WRITE: "write to", ADMIN: "create"}


class NotAuthenticated(AccessDenied):
    summary = "authentication failed"
    fatal = True


class Principal:
    """An authenticated connection's identity (its groups live in the guard, so that a
    reload that changes them applies to connections already open)."""

    __slots__ = ("anonymous", "key", "system", "user")

    def __init__(self, user: str, anonymous: bool = False, *, system: bool = False) -> None:
        self.user = user
        self.anonymous = anonymous
        #: The broker itself (a network bridge's local side): never asked about.
        self.system = system
        #: What decisions are cached by: an anonymous client is not a user of that name.
        self.key = "\0" + user if anonymous else "\1" + user if system else user

    def __repr__(self) -> str:
        return f"<Principal {self.user}{' (anonymous)' if self.anonymous else ''}>"


#: Who the broker's own sessions are (``Engine.open_internal_session``): a network
#: bridge's local side does what the broker does, and the remote broker authorizes it.
SYSTEM = Principal("system", system=True)


class Guard(Protocol):
    #: Whether destinations are checked at all (an authorizationPlugin is configured).
    @property
    def authorizing(self) -> bool: ...

    @property
    def granted(self) -> set[tuple[str, str, str]]: ...

    def slow_login(self, login: str | None, passcode: str | None) -> Callable[[], object] | None:
        """None if ``login`` answers these credentials at once; else the slow part of the
        check, a function safe to run in another thread, whose result is ``login``'s
        ``verdict``."""

    def login(self, login: str | None, passcode: str | None, verdict: object = None) -> Principal:
        """The principal for CONNECT's credentials; raises ``NotAuthenticated``."""

    def allows(self, principal: Principal, op: str, kind: str, name: str) -> bool:
        """Whether ``principal`` may ``op`` the destination ``kind`` + ``name``
        (kind is one of broker.core.base.names' prefixes, name has no wildcard meaning here)."""

    def allows_every(self, principal: Principal, op: str, kind: str, pattern: str) -> bool:
        """Whether ``principal`` may ``op`` every destination ``pattern`` matches (a concrete
        name: that one), so whatever a subscription on it holds."""

    def may_bridge(self, principal: Principal) -> bool:
        """Whether ``principal`` may connect as another broker's network bridge, whose
        SENDs say what a message's id is and where it has been (``bridging``)."""


class OpenGuard:
    """No security configured: any login is accepted, everything is allowed."""

    __slots__ = ("granted",)

    authorizing = False

    def __init__(self) -> None:
        self.granted: set[tuple[str, str, str]] = set()

    def slow_login(self, login: str | None, passcode: str | None) -> Callable[[], object] | None:
        return None

    def login(self, login: str | None, passcode: str | None, verdict: object = None) -> Principal:
        return Principal(login or "", anonymous=not login)

    def allows(self, principal: Principal, op: str, kind: str, name: str) -> bool:
        return True

    def allows_every(self, principal: Principal, op: str, kind: str, pattern: str) -> bool:
        return True

    def may_bridge(self, principal: Principal) -> bool:
        return True


def denied(principal: Principal, op: str, destination: str) -> AccessDenied:
    return AccessDenied(f"User {principal.user} is not authorized to {VERBS[op]}: {destination}")
