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
from typing import TYPE_CHECKING, Protocol

import wildcards
from broker.core.base import names

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Channel
    from broker.core.base.message import Message
    from broker.core.storage.cursor import Cursor


class Attached(Protocol):
    """The subscription a durable subscription's subscriber is attached through, as far as
    this module needs it (``subscription.Subscription``)."""

    @property
    def session(self) -> Channel: ...


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
    #: That subscriber's subscription.
    attached: Attached | None = None
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
        self.attached = None
        if self.cursor is not None:
            self.cursor.detach()

    def keeping(self, message: Message) -> Cursor | None:
        """The cursor that keeps ``message`` for this subscription while it is away, or None."""
        cursor = self.cursor
        if cursor is None or self.subscriber is not None or not self.accepts(message):
            return None
        return cursor

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
    """Every durable subscription, by (client-id, name), and the topics each feeds on.

    ``matching`` finds a topic's durable subscriptions through a trie of their patterns
    (its cost grows with the name's depth, not with the number of records), and keeps the
    answer per topic until the records change (a generation, so a change costs O(1)).
    """

    __slots__ = ("_feeds", "_generation", "_tries", "records")

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], DurableSubscription] = {}
        self._tries: dict[str, wildcards.WildcardTrie[DurableSubscription]] = {}
        self._generation = 0
        #: Topic name -> (generation, the durable subscriptions it feeds).
        self._feeds: dict[str, tuple[int, tuple[DurableSubscription, ...]]] = {}

    def __bool__(self) -> bool:
        return bool(self.records)

    def get(self, client_id: str, name: str) -> DurableSubscription | None:
        return self.records.get((client_id, name))

    def add(self, durable: DurableSubscription) -> None:
        self.records[(durable.client_id, durable.name)] = durable
        for kind, pattern in durable.patterns:
            trie = self._tries.get(kind)
            if trie is None:
                trie = self._tries[kind] = wildcards.WildcardTrie()
            trie.insert(pattern, durable)
        self._generation += 1

    def remove(self, durable: DurableSubscription) -> None:
        if self.records.pop((durable.client_id, durable.name), None) is None:
            return
        for kind, pattern in durable.patterns:
            trie = self._tries.get(kind)
            if trie is not None:
                trie.remove(pattern, durable)
        self._generation += 1

    def forget(self, topic_name: str) -> None:
        """A topic is gone: drop what was kept for it."""
        self._feeds.pop(topic_name, None)

    def matching(self, kind: str, bare: str) -> tuple[DurableSubscription, ...]:
        """The durable subscriptions topic ``kind`` + ``bare`` feeds, in the order they were made."""
        name = kind + bare
        generation = self._generation
        kept = self._feeds.get(name)
        if kept is not None and kept[0] == generation:
            return kept[1]
        trie = self._tries.get(kind)
        if trie is None:
            # No durable subscription on this kind (temporary topics never have one).
            return ()
        found = trie.match(bare)
        feeds = tuple(sorted(found, key=_made)) if found else ()
        self._feeds[name] = (generation, feeds)
        return feeds


def _made(durable: DurableSubscription) -> int:
    return durable.store_id
