"""Durable topic subscriptions, the ActiveMQ way: ``client-id`` on CONNECT plus
``activemq.subscriptionName`` on SUBSCRIBE name one; it lives on while its subscriber
is away, and persistent messages published meanwhile wait for it in the store.

A durable subscription is a record here (and in the store) whether or not a
subscriber is attached; publishing asks ``matching`` which records a topic feeds, so
an offline subscription costs a store pointer per message owed, and no RAM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.core import names, wildcards

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.message import Message
    from broker.core.subscription import Subscription
    from broker.core.topic import Topic


@dataclass(slots=True, eq=False)
class Durable:
    store_id: int
    client_id: str
    name: str
    destination: str
    selector_text: str
    no_local: bool
    selector: Callable[[Message], bool] | None
    patterns: list[tuple[str, str]] = field(default_factory=list)
    #: The subscriber attached now, or None while it is away.
    sub: Subscription | None = None

    def __post_init__(self) -> None:
        self.patterns = names.split_destination(self.destination)

    def accepts(self, message: Message) -> bool:
        sub = self.sub
        if sub is not None:
            return sub.accepts(message)
        return self.selector is None or self.selector(message)

    def feeds_on(self, topic: Topic) -> bool:
        return any(
            kind == topic.kind and wildcards.matches(pattern, topic.bare) for kind, pattern in self.patterns
        )

    def same_as(self, destination: str, selector_text: str, no_local: bool) -> bool:
        return (self.destination, self.selector_text, self.no_local) == (destination, selector_text, no_local)

    def encode(self) -> bytes:
        """What the store keeps beside the name (JSON: readable by any later version)."""
        return json.dumps(
            {"destination": self.destination, "selector": self.selector_text, "noLocal": self.no_local}
        ).encode()


def decode(data: bytes) -> tuple[str, str, bool]:
    """(destination, selector, noLocal) from ``Durable.encode``."""
    record = json.loads(data)
    return str(record["destination"]), str(record["selector"]), bool(record["noLocal"])


class Durables:
    __slots__ = ("_feeds", "records")

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], Durable] = {}
        #: Topic name -> the durable subscriptions it feeds (cleared when records change).
        self._feeds: dict[str, tuple[Durable, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.records)

    def get(self, client_id: str, name: str) -> Durable | None:
        return self.records.get((client_id, name))

    def add(self, durable: Durable) -> None:
        self.records[(durable.client_id, durable.name)] = durable
        self._feeds.clear()

    def remove(self, durable: Durable) -> None:
        self.records.pop((durable.client_id, durable.name), None)
        self._feeds.clear()

    def matching(self, topic: Topic) -> tuple[Durable, ...]:
        feeds = self._feeds.get(topic.name)
        if feeds is None:
            feeds = self._feeds[topic.name] = tuple(d for d in self.records.values() if d.feeds_on(topic))
        return feeds
