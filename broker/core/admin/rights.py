"""What an administrator may do to a destination: what the authorization entries let
the same user do over STOMP, one rule for both.

Getting past the admin server's door (a member of an admin group) lets a user see the
broker: its destinations and their statistics, connections, subscriptions, usage, and
close a connection.  What it does to messages is its destination rights' say, read as
ActiveMQ's entries are meant (``read`` consumes, a QueueBrowser is a consumer; ``write``
produces; ``admin`` creates and removes a destination):

- browse, count, one message's page: ``read``;
- remove, purge, one message's delete: ``read``, what a consumer that acknowledged each
  of them could do anyway;
- move and copy: ``read`` on the source (a move takes the messages from it), ``write`` on
  the target, and ``admin`` there too when it does not exist yet, as for a SEND; a
  retry is a move from the dead-letter queue back to the original destination;
- make a destination, delete one: ``admin``;
- a durable subscription's browse, purge and delete: its owner, or a user who may read
  every topic it covers, as taking it over or ending it over STOMP needs
  (``DurableSubscription.unclaimable_part``);
- scheduled jobs: ``write`` on ``ActiveMQ.Scheduler.Management``, as a STOMP request
  to it needs (that request, too, sees and removes every job);
- a SEND: ``write``, as the user's own SEND (``messages.send``).

No authorization entries: everyone may.  No users configured (the admin server then
takes loopback clients only): as a CONNECT without a login.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin.errors import Forbidden
from broker.core.base import names
from broker.core.base.guard import ADMIN, READ, WRITE, Principal, denied
from broker.core.storage.jobs import MANAGEMENT
from wildcards import is_wildcard

if TYPE_CHECKING:
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.engine import Engine

#: Where a request about scheduled jobs goes over STOMP.
SCHEDULER = names.TOPIC + MANAGEMENT


def principal_of(user: str | None) -> Principal:
    """Who the admin user is to the guard (None: no users configured)."""
    return Principal(user) if user else Principal("", anonymous=True)


class Rights:
    """The checks for one admin user; each raises ``Forbidden`` saying what is missing."""

    __slots__ = ("_engine", "_principal")

    def __init__(self, engine: Engine, user: str | None) -> None:
        self._engine = engine
        #: None: the broker's own calls (``everything``), never checked.
        self._principal: Principal | None = principal_of(user)

    @classmethod
    def everything(cls, engine: Engine) -> Rights:
        """No checks: the service as the broker itself uses it (the API acts as a user)."""
        rights = cls(engine, None)
        rights._principal = None
        return rights

    def read(self, name: str) -> None:
        self._check(READ, name)

    def write(self, name: str) -> None:
        """Write, and create (admin) the parts that do not exist yet."""
        self._check(WRITE, name)
        engine = self._engine
        if name not in engine.queues and name not in engine.router.topics:
            self._check(ADMIN, name)

    def create(self, name: str) -> None:
        self._check(ADMIN, name)

    def remove(self, name: str) -> None:
        """Delete the destination: admin, in ActiveMQ's words for its removal."""
        self._check(ADMIN, name, verb="remove")

    def manage(self, name: str, verb: str) -> None:
        """Change how the destination works (pause its dispatch): admin, as removing it."""
        self._check(ADMIN, name, verb=verb)

    def durable(self, durable: DurableSubscription) -> None:
        """As over STOMP: its owner, or a user who may read every topic it covers."""
        principal = self._principal
        if principal is None:
            return
        part = durable.unclaimable_part(self._engine.guard, principal)
        if part is not None:
            kind, name = part
            whole = "every topic of it, " if is_wildcard(name) else ""
            raise Forbidden(
                f"{denied(principal, READ, kind + name)} ({whole}needed for durable subscription "
                f"{durable.name!r} of client {durable.client_id!r})"
            )

    def scheduler(self) -> None:
        self._check(WRITE, SCHEDULER, " (needed for the scheduled messages)")

    def _check(self, op: str, destination: str, why: str = "", verb: str | None = None) -> None:
        guard = self._engine.guard
        principal = self._principal
        if principal is None or not guard.authorizing:
            return
        for kind, bare in names.split_destination(destination):
            if not guard.allows(principal, op, kind, bare):
                said = str(denied(principal, op, kind + bare))
                if verb is not None:
                    said = f"User {principal.user} is not authorized to {verb}: {kind + bare}"
                raise Forbidden(said + why)
