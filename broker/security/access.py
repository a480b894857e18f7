"""authorizationPlugin: which groups may read, write or create (admin) a destination.

The groups are combined as ActiveMQ's DefaultAuthorizationMap combines them
(getReadACLs/getWriteACLs/getAdminACLs): *every* ``queue=``/``topic=`` entry whose pattern
matches the destination, plus the ``defaultEntry``, and the allowed groups are the union
of theirs.  So an entry can only add groups: ``queue=">" read="admins"`` with
``queue="ORDERS.>" read="app"`` lets both groups read ``ORDERS.X``, and a narrower entry
cannot take away what a wider one grants.  (Policy entries, by contrast, apply the most
specific match alone: wildcards.choose.)  No entry and no default entry: nobody
may.  Temporary destinations use the ``tempDestinationAuthorizationEntry``, and without
one anyone may (as ActiveMQ, whose temp-destination ACLs are then null).  The group ``*``
means every user.

A wildcard destination (``/topic/A.>``) takes every entry whose pattern shares a name
with it (``>``, ``A.*``, ``A.B``...), as ActiveMQ's DestinationMap.get finds for a
wildcard key, when it authorizes a consumer; what a wildcard subscription then receives
is checked per message against each concrete destination (broker/core/handlers/subscribing.py).
Whether a user may read *every* destination a pattern matches (``allows_every``: taking
over or removing someone else's durable subscription on it) takes only the entries whose
pattern covers it whole (``>`` and ``A.>`` cover ``A.*``; ``A.B`` does not), and the
default entry: sure, and on the safe side where only several entries together would cover it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base import names
from broker.core.base.guard import ADMIN, READ, WRITE
from wildcards import covers, overlaps

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

    def entries(self, kind: str, name: str) -> list[AuthorizationEntry]:
        """The entries that apply to ``kind`` (a broker.core.base.names prefix, not a
        temporary one) + ``name``: every match, then the default entry."""
        authorization = self.authorization
        want = _KINDS[kind]
        found = [
            entry
            for entry in authorization.entries
            if entry.kind == want and any(overlaps(part, name) for part in entry.pattern.split(","))
        ]
        if authorization.default_entry is not None:
            found.append(authorization.default_entry)
        return found

    def allowed_groups(self, op: str, kind: str, name: str, *, whole: bool = False) -> frozenset[str] | None:
        """The groups that may; None: anyone may (a temporary destination, no temp entry).
        ``whole``: may for every destination ``name`` matches (entries that cover it)."""
        if kind in _TEMP_KINDS:
            temp = self.authorization.temp_entry
            return None if temp is None else _groups(temp, op)
        entries = self.entries(kind, name)
        if whole:
            default = self.authorization.default_entry
            entries = [
                entry
                for entry in entries
                if entry is default or any(covers(part, name) for part in entry.pattern.split(","))
            ]
        return frozenset().union(*(_groups(entry, op) for entry in entries))

    def allows(self, groups: frozenset[str], op: str, kind: str, name: str, *, whole: bool = False) -> bool:
        allowed = self.allowed_groups(op, kind, name, whole=whole)
        return allowed is None or EVERYONE in allowed or not allowed.isdisjoint(groups)


def _groups(entry: AuthorizationEntry, op: str) -> frozenset[str]:
    if op == READ:
        return entry.read
    if op == WRITE:
        return entry.write
    assert op == ADMIN
    return entry.admin
