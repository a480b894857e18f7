"""A network bridge driven without sockets: broker A's ``Crossing`` with its real ``Link``
and ``LocalClient`` on a ``MockLoop``, the link's transport a ``MockTransport``, and at
its far end either broker B's engine (``Pair``: frames the link writes go to B as a
client's, B's answers come back through the link) or the test itself (``Lone``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.core.engine import Engine
from broker.network.crossing import Crossing
from broker.network.link import Link
from broker.network.pull import PulledCopies
from broker.network.push import Refusals
from broker.network.status import BridgeSettings, BridgeStatus
from config.model import NetworkConnector, NetworkDestination, NetworkUri
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.broker.harness import ListOutbox, MockLoop, MockTransport, new_engine

if TYPE_CHECKING:
    from broker.core.delivery.session import Session


def queue(name: str) -> NetworkDestination:
    return NetworkDestination("queue", name)


def connector(**attributes: Any) -> NetworkConnector:
    """A networkConnector to B (``attributes``: its fields: duplex, excluded...)."""
    return NetworkConnector(name="net", uris=(NetworkUri("stomp", "b.example", 61613),), **attributes)


class Clock:
    """``time.monotonic`` for ``Refusals``, moved by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Side:
    """Broker A and its bridge's one connection, on a mock loop and transport."""

    def __init__(self, net: NetworkConnector, engine: Engine | None = None) -> None:
        self.loop = MockLoop()
        self.engine = engine or new_engine(broker_name="A")
        self.settings = BridgeSettings(net, net.uris[0], "A", None, 1 << 20)
        self.status = BridgeStatus()
        self.clock = Clock()
        self.refusals = Refusals(self.clock)
        self.copies = PulledCopies(4 * net.prefetch_size)
        self.transport = MockTransport()
        self.transport.parser.version = "1.2"
        self.crossing = self.connect()

    def connect(self) -> Crossing:
        """A new connection of the bridge (as it makes one after a lost one): CONNECT sent."""
        loop: asyncio.AbstractEventLoop = self.loop  # type: ignore[assignment]
        crossing = Crossing(loop, self.engine, self.settings, self.status, self.refusals, self.copies)
        link = Link(crossing, loop, self.settings.max_frame_size)
        self.transport = MockTransport()
        self.transport.parser.version = "1.2"
        link.connection_made(self.transport)  # type: ignore[arg-type]
        crossing.start(link)
        self.loop.run()
        return crossing

    @property
    def link(self) -> Link:
        assert self.crossing.link is not None
        return self.crossing.link

    def written(self) -> list[Frame]:
        """What the link wrote to the remote since the last call (the loop run first)."""
        self.loop.run()
        return self.transport.frames()

    def feed(self, frame: Frame, version: str = "1.2") -> None:
        """``frame`` from the remote, in a read of its own."""
        self.link.data_received(encode_frame(frame, version))
        self.loop.run()

    def lose(self) -> None:
        """The link is gone: the connection ends, what this side did is undone."""
        self.link.connection_lost(None)
        self.crossing._teardown()
        self.loop.run()


class Lone(Side):
    """A's bridge to a remote the test plays (any broker: its CONNECTED says which)."""

    def connected(self, server: str = "ActiveMQ/5.17.6", version: str = "1.2", **headers: str) -> None:
        (connect,) = self.written()
        assert connect.command == "CONNECT"
        self.feed(Frame("CONNECTED", {"version": version, "server": server, **headers}), version)
        self.transport.parser.version = version


class Pair(Side):
    """A's bridge to broker B, an engine of its own: ``pump`` carries the frames both ways
    until neither side has more."""

    def __init__(self, net: NetworkConnector, **b_settings: Any) -> None:
        self.b = new_engine(broker_name="B", **b_settings)
        self.b_outbox = ListOutbox()
        self.b_session: Session = self.b.open_session(self.b_outbox)
        super().__init__(net)
        self.pump()

    def connect(self) -> Crossing:
        crossing = super().connect()
        if self.b_session.id not in self.b.sessions:
            # A new connection to B: a session of its own there.
            self.b_outbox = ListOutbox()
            self.b_session = self.b.open_session(self.b_outbox)
        return crossing

    def pump(self) -> None:
        moved = True
        while moved:
            moved = False
            self.loop.run()
            for frame in self.transport.frames():
                moved = True
                self.b.handle(self.b_session, frame)
            self.b.flush()
            self.b_outbox.parser.version = self.b_session.version
            for frame in self.b_outbox.frames():
                moved = True
                self.link.data_received(encode_frame(frame, self.b_session.version))
            self.loop.run()

    def lose(self) -> None:
        super().lose()
        self.b.close_session(self.b_session)
        self.b.flush()
