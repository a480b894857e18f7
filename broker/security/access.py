"""authorizationPlugin: which groups may read, write or create (admin) a destination.

The entry that applies to a destination is chosen as ActiveMQ's DefaultAuthorizationMap
chooses among its entries: the most specific matching ``queue=``/``topic=`` pattern
(config.wildcards.choose: an exact name, else the narrowest pattern), else the
``defaultEntry``; none at all: nobody may.  Temporary destinations use the
``tempDestinationAuthorizationEntry``, and without one anyone may (as ActiveMQ, whose
temp-destination ACLs are then null).  The group ``*`` means every user.

A wildcard destination (``/topic/A.>``) is looked up as a name like any other, as
ActiveMQ does when it authorizes a consumer; what a wildcard subscription then receives
is checked per message against each concrete destination (broker/core/subscribing.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core import names
from broker.core.guard import ADMIN, READ, WRITE
from config.wildcards import choose

if TYPE_CHECKING:
    from config.model import Authorization, AuthorizationEntry

EVERYONE: Final = "*"
_KINDS: Final = {names.QUEUE: "queue", names.TOPIC: "topic"}
_TEMP_KINDS: Final = frozenset(
    {names.TEMP_QUEUE, names.TEMP_TOPIC, names.REMOTE_TEMP_QUEUE, names.REMOTE_TEMP_TOPIC}
)


class AccessRules:
    __slots__ = ("authorization",)

    def __init__(self, authorization: Authorization) -> None:
        self.authorization = authorization

    def entry(self, kind: str, name: str) -> AuthorizationEntry | None:
        """The entry that decides for ``kind`` (a broker.core.names prefix) + ``name``."""
        authorization = self.authorization
        if kind in _TEMP_KINDS:
            return authorization.temp_entry
        found = choose(authorization.entries, _KINDS[kind], name)
        return found if found is not None else authorization.default_entry

    def allowed_groups(self, op: str, kind: str, name: str) -> frozenset[str] | None:
        """The groups that may; None: anyone may (a temporary destination, no temp entry)."""
        entry = self.entry(kind, name)
        if entry is None:
            return None if kind in _TEMP_KINDS else frozenset()
        if op == READ:
            return entry.read
        if op == WRITE:
            return entry.write
        assert op == ADMIN
        return entry.admin

    def allows(self, groups: frozenset[str], op: str, kind: str, name: str) -> bool:
        allowed = self.allowed_groups(op, kind, name)
        return allowed is None or EVERYONE in allowed or not allowed.isdisjoint(groups)
