"""Which destinations a bridge forwards, from consumer advisories: sans-IO.

A bridge reads a broker's consumer advisories (``broker.core.handlers.advisory``: the remote's,
for what to push to it; its own broker's, for what to pull from the remote with a
duplex connector) and keeps, per destination, the consumers that want its messages
over this link.  A consumer counts unless:

* it is not a real destination's (advisory, temporary) or a queue wildcard (stompd has
  no wildcard queue consumers to forward for), or a queue browser;
* its destination is excluded, or not among the dynamically included ones when there
  are any (ActiveMQ's ``excludedDestinations``, ``dynamicallyIncludedDestinations``),
  or statically included (forwarded anyway);
* its demand came through the broker the messages would come from (``brokerPath``
  holds it: a loop), or from further than ``consumerTTL`` brokers away.

``Demand.advisory`` turns one advisory into the changes of what the bridge subscribes
to: ``Want`` added or removed.  Only an advisory the broker published itself counts (its
``_STOMPD_ADVISORY`` names it: a client's SEND cannot carry that header, and a common
ActiveMQ grant lets clients write to ``ActiveMQ.Advisory.>``): a forged ``RemoveInfo``
must not stop forwarding to a consumer that is still there.

With ``conduitSubscriptions`` one subscription serves every consumer of a destination
(and selector); without, a queue gets one per consumer, so that the local dispatch
shares its messages among them one for one.  Topics always go by conduit: a topic
message crosses a link once.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.core.base import bridging, names
from wildcards import is_wildcard, matches

if TYPE_CHECKING:
    from collections.abc import Iterable

    from config.model import NetworkDestination
    from protocol.frames import Frame

log = logging.getLogger("stompd.network")

QUEUE = "queue"
TOPIC = "topic"
#: ActiveMQ's ConsumerInfo.NETWORK_CONSUMER_PRIORITY: where network consumers start.
NETWORK_PRIORITY = -5
#: What an advisory subscription's SUBSCRIBE names (queues, then topics).
ADVISORY_DESTINATIONS = (
    "/topic/" + names.CONSUMER_ADVISORY_QUEUE + ">",
    "/topic/" + names.CONSUMER_ADVISORY_TOPIC + ">",
)


@dataclass(frozen=True, slots=True)
class Want:
    """A subscription the bridge keeps: on ``destination`` (``/queue/x``), with the remote
    consumer's ``selector``; ``path``: the brokers its demand came through, nearest last."""

    key: tuple[str, ...]
    destination: str
    selector: str
    path: tuple[str, ...]

    @property
    def hops(self) -> int:
        """Links between the broker messages come from and the consumer."""
        return len(self.path) + 1

    @property
    def priority(self) -> int:
        """decreaseNetworkConsumerPriority: -5, and lower the further away (ActiveMQ's rule)."""
        longer = len(self.path) + 1 if len(self.path) > 1 else 0
        return NETWORK_PRIORITY - longer


@dataclass(frozen=True, slots=True)
class Change:
    added: bool
    want: Want


@dataclass(frozen=True, slots=True)
class _Consumer:
    key: tuple[str, ...]
    want_key: tuple[str, ...]


class Demand:
    """One direction of one link: consumers on ``consumers_on``'s side of it, whose
    messages would come from ``sender``."""

    def __init__(
        self,
        sender: str,
        ttl: int,
        conduit: bool,
        *,
        publisher: str,
        excluded: Iterable[NetworkDestination] = (),
        included: Iterable[NetworkDestination] = (),
        static: Iterable[NetworkDestination] = (),
    ) -> None:
        self.sender = sender
        #: The broker whose advisories these are (the consumers' own).
        self.publisher = publisher
        self.ttl = ttl
        self.conduit = conduit
        self._excluded = [(d.kind, d.pattern) for d in excluded]
        self._included = [(d.kind, d.pattern) for d in included]
        self._static = [(d.kind, d.pattern) for d in static]
        #: Consumer id -> which want it counts toward.
        self._consumers: dict[tuple[str, ...], _Consumer] = {}
        #: Want key -> (the want, the consumers behind it).
        self._wants: dict[tuple[str, ...], tuple[Want, set[tuple[str, ...]]]] = {}

    @property
    def wants(self) -> list[Want]:
        return [want for want, _ in self._wants.values()]

    def advisory(self, frame: Frame) -> list[Change]:
        """What one advisory MESSAGE changes (nothing, for one that does not concern us, or
        that its broker did not publish)."""
        headers = frame.headers
        destination = headers.get("destination", "")
        if headers.get(bridging.ADVISORY_HEADER) != self.publisher:
            # A client's message on the advisory topic (no log line: any client may send
            # as many as it likes).
            return []
        topic = destination.removeprefix("/topic/")
        if topic.startswith(names.CONSUMER_ADVISORY_QUEUE):
            kind, name = QUEUE, topic[len(names.CONSUMER_ADVISORY_QUEUE) :]
        elif topic.startswith(names.CONSUMER_ADVISORY_TOPIC):
            kind, name = TOPIC, topic[len(names.CONSUMER_ADVISORY_TOPIC) :]
        else:
            return []
        try:
            body = json.loads(frame.body)
        except ValueError:
            log.warning("an advisory on %s is not JSON; ignored", destination)
            return []
        if not isinstance(body, dict):
            return []
        info = body.get("ConsumerInfo")
        if isinstance(info, dict):
            return self._added(kind, name, info)
        removed = body.get("RemoveInfo")
        if isinstance(removed, dict):
            return self._removed(_consumer_key(removed.get("objectId")))
        return []

    def _added(self, kind: str, name: str, info: dict[str, Any]) -> list[Change]:
        key = _consumer_key(info.get("consumerId"))
        if key is None or key in self._consumers or info.get("browser"):
            return []
        path = tuple(
            str(item.get("value", "")) for item in info.get("brokerPath") or () if isinstance(item, dict)
        )
        if not self._wanted(kind, name, path):
            return []
        # As a STOMP SUBSCRIBE wrote it: ActiveMQ's (and stompd's) ConsumerInfo say a STOMP
        # selector compares strings as numbers by a prefix of their own.
        selector = str(info.get("selector") or "").removeprefix(names.ADVISORY_SELECTOR_PREFIX)
        destination = f"/{kind}/{name}"
        if kind == TOPIC or self.conduit:
            want_key: tuple[str, ...] = (destination, selector)
        else:
            want_key = (destination, selector, *key)
        self._consumers[key] = _Consumer(key, want_key)
        held = self._wants.get(want_key)
        if held is not None:
            held[1].add(key)
            return []
        want = Want(want_key, destination, selector, path)
        self._wants[want_key] = (want, {key})
        return [Change(True, want)]

    def _removed(self, key: tuple[str, ...] | None) -> list[Change]:
        consumer = self._consumers.pop(key, None) if key is not None else None
        if consumer is None:
            return []
        held = self._wants.get(consumer.want_key)
        if held is None:
            return []
        want, keys = held
        keys.discard(consumer.key)
        if keys:
            return []
        del self._wants[consumer.want_key]
        return [Change(False, want)]

    def _wanted(self, kind: str, name: str, path: tuple[str, ...]) -> bool:
        if not name or name.startswith(names.ADVISORY_PREFIX):
            return False
        if kind == QUEUE and is_wildcard(name):
            return False
        if self.sender in path or len(path) + 1 > self.ttl:
            return False
        if any(k == kind and matches(pattern, name) for k, pattern in self._excluded):
            return False
        if any(k == kind and matches(pattern, name) for k, pattern in self._static):
            return False
        return not self._included or any(
            k == kind and matches(pattern, name) for k, pattern in self._included
        )

    def clear(self) -> None:
        self._consumers.clear()
        self._wants.clear()


def _consumer_key(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, dict):
        return None
    return (str(value.get("connectionId", "")), str(value.get("sessionId", "")), str(value.get("value", "")))
