"""The configured ``Guard``: users and authorization entries, swapped whole on a reload.

Decisions are cached per (principal, operation, destination): ``allows`` pays one dict
lookup once a triple has been decided, and the core's ``granted`` set spares even the
parsing of a destination header already allowed.  Both are emptied when the rules
change.  A user's groups are looked up by name at each (uncached) decision, so a
reload that moves a user out of a group takes effect for the connections already open.

A CONNECT whose password can only be checked slowly (a hash not verified before) is
checked by ``slow_login``'s function in a worker thread; its ``Verdict`` comes back to
``login`` through the session (broker/io/connection.py does the carrying).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.base.guard import ADMINS, NotAuthenticated, Principal
from broker.security.access import AccessRules
from broker.security.users import SLOW, Users
from config.passwords import verify as verify_password

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from broker.security.users import Anonymous, Row
    from config.model import Authentication, Authorization, Password


class Verdict:
    """What the slow check found for one login/passcode, against one set of users."""

    __slots__ = ("groups", "login", "passcode", "users")

    def __init__(self, users: Users, login: str, passcode: str, groups: frozenset[str] | None) -> None:
        self.users = users
        self.login = login
        self.passcode = passcode
        self.groups = groups


class Rules:
    """Users and authorization entries made from a configuration, not yet in force."""

    __slots__ = ("authorization", "base", "changes", "rules", "users")

    def __init__(
        self,
        authorization: Authorization | None,
        users: Users | None,
        rules: AccessRules | None,
        changes: list[str],
        base: tuple[Users | None, AccessRules | None],
    ) -> None:
        self.authorization = authorization
        self.users = users
        self.rules = rules
        #: What they change from ``base``, the rules in force when they were made.
        self.changes = changes
        self.base = base


class Security:
    __slots__ = ("_decisions", "_verify", "authorizing", "granted", "rules", "users")

    def __init__(
        self,
        authentication: Authentication | None,
        authorization: Authorization | None,
        verify: Callable[[Password, str], bool] = verify_password,
    ) -> None:
        #: How a password is checked (a test can slow it down at will).
        self._verify = verify
        self.users: Users | None = None
        self.rules: AccessRules | None = None
        self.authorizing = False
        self.granted: set[tuple[str, str, str]] = set()
        self._decisions: dict[tuple[str, str, str, str], bool] = {}
        self.replace(authentication, authorization)

    def replace(
        self, authentication: Authentication | None, authorization: Authorization | None
    ) -> list[str]:
        """Take new rules; returns what changed, in words for the log."""
        return self.install(self.prepare(authentication, authorization))

    def prepare(self, authentication: Authentication | None, authorization: Authorization | None) -> Rules:
        """New rules, built and compared with the ones in force, ready for ``install``.

        Safe in a worker thread: it only reads the rules in force, which are replaced
        whole, never changed in place, and only by ``install``."""
        users = Users.of(authentication, self._verify) if authentication is not None else None
        return self.compare(users, authorization)

    def prepare_rows(
        self, anonymous: Anonymous | None, rows: Iterable[Row], authorization: Authorization | None
    ) -> Rules:
        """``prepare`` from a reload's reader: the users as rows (``anonymous`` None: no
        users configured, and ``rows`` is empty)."""
        users = Users(rows, anonymous, self._verify) if anonymous is not None else None
        return self.compare(users, authorization)

    def compare(self, users: Users | None, authorization: Authorization | None) -> Rules:
        """Rules of ``users`` and ``authorization``, with what they change from those in force."""
        rules = AccessRules(authorization) if authorization is not None else None
        base_users, base_rules = self.users, self.rules
        changes: list[str] = []
        if base_users is not None and users is not None:
            changes = base_users.changes(users)
        elif (base_users is None) != (users is None):
            changes.append("authentication " + ("on" if users is not None else "off"))
        old = base_rules.authorization if base_rules is not None else None
        if old != authorization:
            before = len(old.entries) if old is not None else 0
            after = len(authorization.entries) if authorization is not None else 0
            changes.append(f"authorization entries changed ({before} -> {after} entries)")
        return Rules(authorization, users, rules, changes, (base_users, base_rules))

    def install(self, prepared: Rules) -> list[str]:
        """Put ``prepared`` in force, users and entries at once (on the event loop: what
        connections are allowed changes between two of their frames, never during one).
        Returns what changed, in words for the log."""
        base_users, base_rules = prepared.base
        if base_users is not self.users or base_rules is not self.rules:
            # Other rules came in since it was prepared: compare with those instead.
            prepared = self.compare(prepared.users, prepared.authorization)
        self.users, self.rules = prepared.users, prepared.rules
        self.authorizing = prepared.rules is not None
        self.granted.clear()
        self._decisions.clear()
        return prepared.changes

    # -- the core's Guard ------------------------------------------------------------

    def slow_login(self, login: str | None, passcode: str | None) -> Callable[[], object] | None:
        users = self.users
        if users is None or not login:
            return None
        password = passcode or ""
        if users.quick(login, password) is not SLOW:
            return None

        def check() -> Verdict:
            return Verdict(users, login, password, users.verify(login, password))

        return check

    def login(self, login: str | None, passcode: str | None, verdict: object = None) -> Principal:
        users = self.users
        if users is None:
            return Principal(login or "", anonymous=not login)
        if not login and not passcode and users.anonymous_allowed:
            return Principal(users.anonymous_user, anonymous=True)
        if login:
            password = passcode or ""
            if (
                isinstance(verdict, Verdict)
                and verdict.users is users
                and verdict.login == login
                and verdict.passcode == password
            ):
                if verdict.groups is not None:
                    users.remember(login, password)
                    return Principal(login)
            # No verdict, or one about other users (a reload came in between): check here.
            elif users.authenticate(login, password) is not None:
                return Principal(login)
        # ActiveMQ's SimpleAuthenticationBroker says the same, whichever was wrong.
        raise NotAuthenticated(f"User name [{login or ''}] or password is invalid.")

    def allows(self, principal: Principal, op: str, kind: str, name: str) -> bool:
        key = (principal.key, op, kind, name)
        decided = self._decisions.get(key)
        if decided is None:
            rules = self.rules
            decided = rules is None or rules.allows(self.groups(principal), op, kind, name)
            self._decisions[key] = decided
        return decided

    def allows_every(self, principal: Principal, op: str, kind: str, pattern: str) -> bool:
        # Asked when a durable subscription is taken over or removed: not cached.
        rules = self.rules
        return rules is None or rules.allows(self.groups(principal), op, kind, pattern, whole=True)

    def may_bridge(self, principal: Principal) -> bool:
        # Its SENDs choose message-ids and say where messages have been: with users
        # configured, that is for the broker's administrators (as its own bridges are).
        if self.users is None or principal.system:
            return True
        return not principal.anonymous and ADMINS in self.groups(principal)

    def groups(self, principal: Principal) -> frozenset[str]:
        users = self.users
        if users is None:
            return frozenset()
        if principal.anonymous:
            return frozenset({users.anonymous_group})
        return users.groups(principal.user)

    # -- the admin server's Authenticator --------------------------------------------

    def authenticate(self, user: str, password: str) -> frozenset[str] | None:
        users = self.users
        return users.authenticate(user, password) if users is not None else None
