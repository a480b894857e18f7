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

Each belongs to the user who made it (``owner``, kept in its record): a wildcard one keeps
only messages of the topics its owner may read (``readable``), however long it is away and
after a restart, and only its owner, or a user who may read every topic it covers, may take
it over or remove it (``subscribing``).  A record written before owners were kept has none:
nobody owns it, so only such a user may.

``subscribing`` attaches subscribers to these records and makes and removes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import wildcards
from broker.core.base import names
from broker.core.base.guard import READ, Principal
from broker.core.base.selector import compile_selector

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Channel
    from broker.core.base.guard import Guard
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
    #: What it keeps: its selector, and for a wildcard one its owner's read rights too.
    selector: Callable[[Message], bool] | None
    #: Who made it (None: a record written before owners were kept, owned by nobody).
    owner: Principal | None = None
    #: A wildcard one's filter by its owner's read rights alone (None: it has none), asked
    #: again of what leaves its cursor: rights can change (a reload) while messages wait.
    readable: Callable[[Message], bool] | None = None
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

    def owned_by(self, principal: Principal) -> bool:
        return self.owner is not None and self.owner.key == principal.key

    def unclaimable_part(self, guard: Guard, principal: Principal) -> tuple[str, str] | None:
        """The part of its destination that keeps ``principal`` from taking this subscription
        over, remaking, ending, browsing or purging it, as (kind, name) (None: nothing does).  Its owner may;
        so may a user who may read every topic it covers, so whatever it holds.  One rule
        for STOMP (handlers/subscribing.py) and the admin API (admin/rights.py)."""
        if not guard.authorizing or principal.system or self.owned_by(principal):
            return None
        for kind, name in names.split_destination(self.destination):
            if not guard.allows_every(principal, READ, kind, name):
                return kind, name
        return None

    def encode(self) -> bytes:
        """What the store keeps beside the name (JSON: readable by any later version, and an
        earlier one reads it too, without the owner)."""
        record: dict[str, object] = {
            "destination": self.destination,
            "selector": self.selector_text,
            "noLocal": self.no_local,
        }
        owner = self.owner
        if owner is not None:
            record["owner"] = {"user": owner.user, "anonymous": owner.anonymous, "system": owner.system}
        return json.dumps(record).encode()


def new_durable(
    guard: Guard,
    store_id: int,
    client_id: str,
    name: str,
    destination: str,
    selector_text: str,
    no_local: bool,
    owner: Principal | None,
) -> DurableSubscription:
    """A durable subscription, with the filters its selector and its owner's rights make."""
    selector: Callable[[Message], bool] | None = (
        compile_selector(selector_text).matches if selector_text else None
    )
    readable = None
    parts = names.split_destination(destination)
    wildcard = any(kind == names.TOPIC and wildcards.is_wildcard(bare) for kind, bare in parts)
    if wildcard and owner is not None and not owner.system:
        # Checked for each message even where authorization is off now: a reload may turn it
        # on while the subscription lives (a decision is a cached dict lookup).
        readable = readable_by(guard, owner, None)
        selector = readable_by(guard, owner, selector)
    return DurableSubscription(
        store_id, client_id, name, destination, selector_text, no_local, selector, owner, readable
    )


def readable_by(
    guard: Guard, principal: Principal, selector: Callable[[Message], bool] | None
) -> Callable[[Message], bool]:
    """A wildcard topic subscription's filter: only messages of the topics ``principal`` may
    read (while authorization is on; the guard caches each decision), then ``selector``."""
    prefix = len(names.TOPIC)

    def accepts(message: Message) -> bool:
        if guard.authorizing:
            name = message.destination
            if not guard.allows(principal, READ, name[:prefix], name[prefix:]):
                return False
        return selector is None or selector(message)

    return accepts


class Stored:
    """A durable subscription's record as ``DurableSubscription.encode`` wrote it."""

    __slots__ = ("destination", "no_local", "owner", "selector_text")

    def __init__(self, data: bytes) -> None:
        record = json.loads(data)
        self.destination = str(record["destination"])
        self.selector_text = str(record["selector"])
        self.no_local = bool(record["noLocal"])
        #: None where an earlier version wrote it (no owner then), or the owner is unreadable:
        #: owned by nobody, the safe reading.
        self.owner = _owner(record.get("owner"))


def _owner(value: object) -> Principal | None:
    if not isinstance(value, dict) or not isinstance(value.get("user"), str):
        return None
    return Principal(value["user"], value.get("anonymous") is True, system=value.get("system") is True)


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
