"""Durable topic subscriptions, the ActiveMQ way: ``client-id`` on CONNECT plus
``activemq.subscriptionName`` on SUBSCRIBE name one; it lives on while its subscriber
is away, and persistent messages published meanwhile wait for it in the store.

A durable subscription is a record here (and in the store) whether or not a
subscriber is attached; publishing asks ``matching`` which records a topic feeds, so
an offline subscription costs a store pointer per message owed, and no RAM.

Once it has had a subscriber in this broker's lifetime it also keeps that
subscriber's cursor, as ActiveMQ keeps a durable subscription's pending cursor
(``keepDurableSubsActive``, on by default): what was pending or in flight when the
subscriber left, and what is published while it is away, non-persistent messages
included, wait there for its return.  Non-persistent ones do not survive a restart
(nor in ActiveMQ 5.17, which after a restart also keeps none for a subscription that
has not been active since: checked against it).  While away, new arrivals go straight
to disk (persistent: a store pointer; others: the temp store while the temp limit has
room, within the limits flow control applies to every cursor); what its subscriber
left in memory stays there, charged.

``subscribing`` attaches subscribers to these records and makes and removes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.core import names, wildcards

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.cursor import Cursor
    from broker.core.message import Message


@dataclass(slots=True, eq=False)
class DurableSubscription:
    store_id: int
    client_id: str
    name: str
    destination: str
    selector_text: str
    no_local: bool
    selector: Callable[[Message], bool] | None
    patterns: list[tuple[str, str]] = field(default_factory=list)
    #: The connection (session id) of the subscriber attached now, or None while it is away.
    subscriber: str | None = None
    #: Its pending messages, kept from its first subscriber on (see the module docstring).
    cursor: Cursor | None = None

    def __post_init__(self) -> None:
        self.patterns = names.split_destination(self.destination)

    def accepts(self, message: Message) -> bool:
        """Its selector takes ``message`` (and ``activemq.noLocal`` lets it through)."""
        if self.no_local and self.subscriber is not None and message.origin == self.subscriber:
            return False
        return self.selector is None or self.selector(message)

    def detach(self) -> None:
        """The subscriber left: its cursor stays, and takes new arrivals on disk only."""
        self.subscriber = None
        if self.cursor is not None:
            self.cursor.detach()

    def keeping(self, message: Message) -> Cursor | None:
        """The cursor that keeps ``message`` for this subscription while it is away, or None."""
        cursor = self.cursor
        if cursor is None or self.subscriber is not None or not self.accepts(message):
            return None
        return cursor

    def feeds_on(self, kind: str, bare: str) -> bool:
        return any(k == kind and wildcards.matches(pattern, bare) for k, pattern in self.patterns)

    def same_as(self, destination: str, selector_text: str, no_local: bool) -> bool:
        return (self.destination, self.selector_text, self.no_local) == (destination, selector_text, no_local)

    def encode(self) -> bytes:
        """What the store keeps beside the name (JSON: readable by any later version)."""
        return json.dumps(
            {"destination": self.destination, "selector": self.selector_text, "noLocal": self.no_local}
        ).encode()


def decode(data: bytes) -> tuple[str, str, bool]:
    """(destination, selector, noLocal) from ``DurableSubscription.encode``."""
    record = json.loads(data)
    return str(record["destination"]), str(record["selector"]), bool(record["noLocal"])


class DurableSubscriptions:
    """Every durable subscription, by (client-id, name)."""

    __slots__ = ("_feeds", "records")

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], DurableSubscription] = {}
        #: Topic name -> the durable subscriptions it feeds (cleared when records change).
        self._feeds: dict[str, tuple[DurableSubscription, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.records)

    def get(self, client_id: str, name: str) -> DurableSubscription | None:
        return self.records.get((client_id, name))

    def add(self, durable: DurableSubscription) -> None:
        self.records[(durable.client_id, durable.name)] = durable
        self._feeds.clear()

    def remove(self, durable: DurableSubscription) -> None:
        self.records.pop((durable.client_id, durable.name), None)
        self._feeds.clear()

    def matching(self, kind: str, bare: str) -> tuple[DurableSubscription, ...]:
        """The durable subscriptions topic ``kind`` + ``bare`` feeds."""
        name = kind + bare
        feeds = self._feeds.get(name)
        if feeds is None:
            feeds = self._feeds[name] = tuple(d for d in self.records.values() if d.feeds_on(kind, bare))
        return feeds
