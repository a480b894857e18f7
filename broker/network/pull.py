"""Pull: the remote's messages to this broker, over one connection of a bridge.

A subscription on the remote (``wire.pull_subscription``) for each of the connector's
``pulledDestinations`` and, with a duplex connector to a stompd remote, for what this
broker's consumers want (its own consumer advisories, ``demand.Demand``).  Each MESSAGE
becomes a SEND here with a receipt, and the remote is ACKed once this broker's RECEIPT
says the message is stored.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.network import wire
from broker.network.demand import ADVISORY_DESTINATIONS, Demand, Want
from protocol.frames import Frame

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.network.link import Link
    from broker.network.local import LocalClient
    from broker.network.status import BridgeSettings, BridgeStatus
    from config.model import NetworkDestination

#: The subscriptions, here, to this broker's consumer advisories (queues, then topics).
LOCAL_ADVISORIES: Final = ("a-q", "a-t")


class PulledCopies:
    """Fingerprints (``wire.fingerprint``) of the last messages pulled from a remote that is
    not stompd, kept across a bridge's connections: its message-id may not survive a
    redelivery (RabbitMQ's names the session), so what it sends again after a dropped link
    is known by its content.  As many are kept as can be in flight twice over (``keep``):
    what the remote may redeliver, its prefetch window, is among them."""

    __slots__ = ("_keep", "_seen")

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def __contains__(self, fingerprint: bytes) -> bool:
        return fingerprint in self._seen

    def remember(self, fingerprint: bytes) -> None:
        seen = self._seen
        seen[fingerprint] = None
        if len(seen) > self._keep:
            seen.popitem(last=False)

    def forget(self, fingerprint: bytes) -> None:
        self._seen.pop(fingerprint, None)


class Pull:
    """The remote's messages to this broker, while a connection lasts (``crossing``)."""

    def __init__(
        self,
        settings: BridgeSettings,
        status: BridgeStatus,
        copies: PulledCopies,
        link: Link,
        local: LocalClient,
        close: Callable[[str], None],
        *,
        stompd: bool,
    ) -> None:
        self._settings = settings
        self._connector = settings.connector
        self._status = status
        self._copies = copies
        self._link = link
        self._local = local
        #: Ends the connection (a pulled message this broker would not store).
        self._close = close
        #: The remote is stompd: its network headers count, and it has advisories.
        self._stompd = stompd
        self._ids = itertools.count(1)
        #: Remote subscription id -> its destination and want (None: a pulledDestination).
        self._subscriptions: dict[str, tuple[str, Want | None]] = {}
        self._by_key: dict[tuple[str, ...], str] = {}
        self._demand: Demand | None = None
        #: Local SENDs (pulled messages) waiting for this broker's RECEIPT: receipt -> the
        #: remote ACK, and the message's fingerprint (a remote that is not stompd).
        self._pulled: dict[str, tuple[dict[str, str], bytes | None]] = {}

    def start(self) -> None:
        """The pulledDestinations' subscriptions on the remote; with duplex, this broker's
        advisories."""
        connector = self._connector
        for destination in connector.pulled:
            self._named(destination)
        if connector.duplex and self._stompd:
            self._demand = Demand(
                self._status.remote_name,
                connector.consumer_ttl,
                connector.conduit_subscriptions,
                publisher=self._settings.broker_name,
                excluded=connector.excluded,
                included=connector.dynamically_included,
                static=connector.pulled,
            )
            for sub_id, topic in zip(LOCAL_ADVISORIES, ADVISORY_DESTINATIONS, strict=True):
                self._local.offer("SUBSCRIBE", {"id": sub_id, "destination": topic, "ack": "auto"})

    def close(self) -> None:
        """The connection is over: no RECEIPT of this broker's will come for it."""
        self._pulled.clear()

    # -- what to subscribe to on the remote ----------------------------------------------

    def advisory(self, frame: Frame) -> None:
        """A consumer advisory of this broker's (only with duplex)."""
        if self._demand is not None:
            for change in self._demand.advisory(frame):
                self._change(change.added, change.want)

    def _named(self, destination: NetworkDestination) -> None:
        self._subscribe(f"/{destination.kind}/{destination.pattern}", "", (), None, static=True)

    def _change(self, added: bool, want: Want) -> None:
        if added:
            if want.key not in self._by_key:
                self._by_key[want.key] = self._subscribe(
                    want.destination, want.selector, want.path, want, static=False
                )
            return
        sub_id = self._by_key.pop(want.key, None)
        if sub_id is not None:
            self._subscriptions.pop(sub_id, None)
            self._link.send(Frame("UNSUBSCRIBE", {"id": sub_id}))

    def _subscribe(
        self, destination: str, selector: str, path: tuple[str, ...], want: Want | None, *, static: bool
    ) -> str:
        sub_id = f"l{next(self._ids)}"
        headers = wire.pull_subscription(
            sub_id,
            destination,
            selector,
            self._connector,
            self._settings.broker_name,
            path,
            want,
            self._stompd,
            static,
        )
        self._subscriptions[sub_id] = (destination, want)
        self._link.send(Frame("SUBSCRIBE", headers))
        return sub_id

    # -- pulling -------------------------------------------------------------------------

    def pulls(self, sub_id: str) -> bool:
        """Is ``sub_id`` one of its subscriptions on the remote?"""
        return sub_id in self._subscriptions

    def message(self, frame: Frame) -> None:
        """A MESSAGE from the remote: stored here, then ACKed there."""
        link = self._link
        headers = frame.headers
        ack = wire.remote_ack(headers, link.version)
        path = headers.get(bridging.PATH_HEADER)
        if self._settings.broker_name in bridging.split_path(path):
            # It was here before (a broker that is not stompd sent it back): already
            # delivered from here, so not taken again.
            link.send(Frame("ACK", ack))
            return
        fingerprint = None
        if not self._stompd:
            own = {name: value for name, value in headers.items() if name not in wire.BROKER_ONLY}
            own["destination"] = headers.get("destination", "")
            fingerprint = wire.fingerprint(own, frame.body)
            if headers.get("redelivered") == "true" and fingerprint in self._copies:
                self._status.pulled_again += 1
                link.send(Frame("ACK", ack))
                return
        out = wire.pulled(headers, path, self._status.remote_name, self._stompd)
        receipt = f"r{next(self._ids)}"
        out["receipt"] = receipt
        self._pulled[receipt] = (ack, fingerprint)
        if not self._local.offer("SEND", out, frame.body):
            self._pulled.pop(receipt, None)
            self._close("a message from the remote broker could not be stored here")
        elif fingerprint is not None:
            self._copies.remember(fingerprint)

    def stored(self, receipt: str) -> None:
        """This broker's RECEIPT: the pulled message is stored here, so ACKed there."""
        pulled = self._pulled.pop(receipt, None)
        if pulled is not None:
            self._status.received += 1
            self._link.send(Frame("ACK", pulled[0]))

    def local_failed(self) -> None:
        """This broker failed the bridge's session: what it had not receipted may be lost
        here, so is not to be taken for a copy when the remote sends it again."""
        for _, fingerprint in self._pulled.values():
            if fingerprint is not None:
                self._copies.forget(fingerprint)

    # -- figures -----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Pulled messages sent here whose RECEIPT has not come back."""
        return len(self._pulled)

    def destinations(self) -> tuple[str, ...]:
        return tuple(sorted({destination for destination, _ in self._subscriptions.values()}))
