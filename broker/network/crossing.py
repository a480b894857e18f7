"""One connection of a bridge: made, run, torn down.

While a ``Bridge`` is connected, a ``Crossing`` joins a ``Link`` (the remote broker, as a
STOMP client of it) and a ``LocalClient`` (this broker's engine, an internal session):
it sends the CONNECT, reads the CONNECTED, starts a ``Push`` (``push``: this broker's
messages to the remote) and a ``Pull`` (``pull``: the remote's to this broker), and hands
each frame from either side to the one that owns it.  It is thrown away when the link
ends; what outlives it is the bridge's (``status``, ``push.Refusals``,
``pull.PulledCopies``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.network import wire
from broker.network.link import Link
from broker.network.local import LocalClient
from broker.network.pull import LOCAL_ADVISORIES, Pull
from broker.network.push import RECEIPT_PREFIX, REMOTE_ADVISORIES, Push
from broker.network.status import Figures
from protocol.frames import CONNECTED, ERROR, MESSAGE, RECEIPT, Frame

if TYPE_CHECKING:
    import asyncio

    from broker.core.base.pieces import MessagePieces
    from broker.core.engine import Engine
    from broker.network.pull import PulledCopies
    from broker.network.push import Refusals
    from broker.network.status import BridgeSettings, BridgeStatus

log = logging.getLogger("stompd.network")

#: How long a CONNECT may take (the TCP connect, TLS, the CONNECTED frame).
CONNECT_TIMEOUT_S: Final = 10.0


class Crossing:
    """One connection's worth of bridging (``link.LinkHandler``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        engine: Engine,
        settings: BridgeSettings,
        status: BridgeStatus,
        refusals: Refusals,
        copies: PulledCopies,
    ) -> None:
        self._loop = loop
        self._engine = engine
        self._settings = settings
        self._status = status
        self._refusals = refusals
        self._copies = copies
        self.link: Link | None = None
        self.local: LocalClient | None = None
        self.push: Push | None = None
        self.pull: Pull | None = None
        #: CONNECTED came back: the connection counts as made (the back-off starts over).
        self.established = False
        #: Why it ended, as the remote said it (an ERROR), if it did.
        self.error = ""
        self._closed = False
        #: Why the connection ended (``run`` waits for it).
        self._lost: asyncio.Future[str] | None = None

    # -- the connection ------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, bridge until the link is lost, then undo what this side did."""
        lost = self._lost = self._loop.create_future()
        settings = self._settings
        uri = settings.uri
        link = await Link.open(
            self, uri.host, uri.port, settings.ssl_context, settings.max_frame_size, CONNECT_TIMEOUT_S
        )
        self.start(link)
        deadline = self._loop.call_later(CONNECT_TIMEOUT_S, self._connect_deadline)
        try:
            reason = await lost
        finally:
            deadline.cancel()
            self._teardown()
        # What went wrong on this connection, said by the remote if it said anything.
        self._status.last_error = self.error or reason

    def start(self, link: Link) -> None:
        """The link is open: send CONNECT."""
        self.link = link
        connector = self._settings.connector
        # stompd.network: this is broker broker_name's bridge, whose SENDs' _STOMPD_* headers
        # count (a stompd remote lets only its admins say so; other brokers ignore it).
        headers = {"accept-version": "1.2,1.1,1.0", "host": "/", bridging.NETWORK: self._settings.broker_name}
        if connector.duplex:
            # So that the remote lists this bridge too, as the far end of a duplex one.
            headers[bridging.NETWORK_DUPLEX] = "true"
        if connector.user_name is not None:
            headers["login"] = connector.user_name
            headers["passcode"] = connector.password or ""
        link.connect(headers)

    def _connect_deadline(self) -> None:
        if not self.established and self.link is not None:
            self.close(f"no CONNECTED from the remote broker within {CONNECT_TIMEOUT_S:.0f} s")

    def close(self, reason: str) -> None:
        link = self.link
        if link is not None:
            link.close(reason)
        else:
            self.on_lost(reason)

    def _teardown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.push is not None:
            self.push.close()
        local, self.local = self.local, None
        if local is not None:
            # What was sent and not receipted goes back to its queue (the remote may have
            # it: its audit drops the copy sent again).
            local.close()
        if self.pull is not None:
            self.pull.close()

    # -- link.LinkHandler ----------------------------------------------------------------

    def on_connected(self, frame: Frame) -> None:
        settings = self._settings
        status = self._status
        link = self.link
        assert link is not None
        if frame.command == ERROR:
            self.error = "the remote broker refused the connection: " + wire.error_text(frame)
            link.close(self.error)
            return
        if frame.command != CONNECTED:
            link.close(f"the remote broker answered CONNECT with {frame.command}")
            return
        headers = frame.headers
        uri = settings.uri
        remote = headers.get("broker-name") or f"{uri.host}:{uri.port}"
        if remote == settings.broker_name:
            self.error = (
                f"the remote broker is named {remote!r} too: every broker of a network needs a "
                "brokerName of its own"
            )
            link.close(self.error)
            return
        self.established = True
        status.connected(remote, headers.get("server", ""), time.time())
        stompd = status.remote_server.startswith("stompd/")
        log.info(
            "network bridge %s: connected to %s (%s)",
            settings.label,
            remote,
            status.remote_server or "unknown server",
        )
        local = self.local = LocalClient(
            self._loop,
            self._engine,
            self._local_message,
            self._local_frame,
            self._local_failed,
            self._local_reading,
            settings.max_frame_size,
            settings.label,
        )
        self.push = Push(
            self._loop,
            self._engine,
            settings,
            status,
            self._refusals,
            link,
            local,
            stompd=stompd,
            rabbitmq=status.remote_server.startswith("RabbitMQ/"),
        )
        self.pull = Pull(settings, status, self._copies, link, local, self.close, stompd=stompd)
        self.push.start()
        self.pull.start()

    def on_frame(self, frame: Frame) -> None:
        push, pull = self.push, self.pull
        if push is None or pull is None:
            return  # a CONNECTED refused (a broker of the same name): the link is closing
        command = frame.command
        if command == RECEIPT:
            receipt = frame.headers.get("receipt-id", "")
            if receipt.startswith(RECEIPT_PREFIX):
                push.receipted(int(receipt[len(RECEIPT_PREFIX) :]))
        elif command == MESSAGE:
            sub_id = frame.headers.get("subscription", "")
            if sub_id in REMOTE_ADVISORIES:
                push.advisory(frame)
            elif pull.pulls(sub_id):
                pull.message(frame)
        elif command == ERROR:
            self.error = push.refused(frame.headers.get("receipt-id", ""), wire.error_text(frame))
            # A remote keeps a connection after refusing a frame (ActiveMQ does, and stompd
            # since issue 38): the bridge ends it itself, so that what it has in flight goes
            # back to its queues here and the link starts over after its back-off.
            self.close(self.error)

    def on_writable(self, writable: bool) -> None:
        if self.local is not None:
            self.local.set_wanted(writable)

    def on_lost(self, reason: str) -> None:
        lost = self._lost
        if lost is not None and not lost.done():
            lost.set_result(reason)

    # -- what this broker writes to the bridge's session -----------------------------------

    def _local_message(self, pieces: MessagePieces) -> None:
        push, pull = self.push, self.pull
        if push is None or pull is None:
            return
        sub_id = pieces.subscription
        if push.forwards(sub_id):
            push.forward(pieces)
        elif sub_id in LOCAL_ADVISORIES:
            pull.advisory(wire.parsed(pieces))

    def _local_frame(self, frame: Frame) -> None:
        push, pull = self.push, self.pull
        if push is None or pull is None:
            return
        command = frame.command
        if command == RECEIPT:
            pull.stored(frame.headers.get("receipt-id", ""))
        elif command == MESSAGE:
            sub_id = frame.headers.get("subscription", "")
            if push.forwards(sub_id):
                push.forward_frame(frame)
            elif sub_id in LOCAL_ADVISORIES:
                pull.advisory(frame)

    def _local_failed(self, exc: BaseException) -> None:
        if self.pull is not None:
            self.pull.local_failed()
        self.close(f"this broker failed the bridge's session: {exc}")

    def _local_reading(self, reading: bool) -> None:
        """This broker stops taking the bridge's SENDs (no room): stop reading the remote."""
        link = self.link
        if link is not None:
            if reading:
                link.resume_reading()
            else:
                link.pause_reading()

    # -- figures -------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Messages gone out, to the remote or to this broker, not receipted yet (this
        turn's SENDs, not written yet, included)."""
        return (self.push.in_flight if self.push else 0) + (self.pull.in_flight if self.pull else 0)

    @property
    def awaiting_receipt(self) -> int:
        """Messages gone out, to the remote or to this broker, whose RECEIPT has not come back."""
        unwritten = self.push.unwritten if self.push else 0
        return self.in_flight - unwritten

    def figures(self) -> Figures:
        push, pull = self.push, self.pull
        if push is None or pull is None or self.local is None:
            return Figures()
        return Figures(self.in_flight, push.pending(), push.destinations(), pull.destinations())
