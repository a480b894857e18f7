"""One bridge: this broker joined to one remote broker over one STOMP connection.

A ``Bridge`` keeps the connection up (reconnecting with ActiveMQ's back-off), its state
and its counts; while it is up, a ``Crossing`` (``crossing``) does the work between this
broker and the remote one, making and reading frames with ``wire``:

* **push**: for each destination the remote has consumers for (its consumer advisories,
  ``demand.Demand``) and each statically included one, a network subscription here
  (``stompd.network``: never a message that was on the remote, none past the TTL; on
  standby or at a low priority behind this broker's own consumers).  Each MESSAGE it
  gets becomes a SEND to the remote with a receipt; the local ACK waits for that
  RECEIPT, so the message stays stored here until the remote has stored it.
* **pull** (duplex, and ``pulledDestinations``): a subscription on the remote for what
  this broker's consumers want (its own advisories) or for the named queues; each
  MESSAGE becomes a SEND here with a receipt, and the remote is ACKed once this
  broker's RECEIPT says the message is stored.

What crosses keeps its id (``_STOMPD_ID``: copies re-sent after a failure are dropped
by the receiver's audit), its path (``_STOMPD_PATH``), ``redelivered``, priority,
expiry, time stamp, group and every other header.  docs/network.md has the whole design.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

from broker.network import wire
from broker.network.crossing import CONNECTING, STOPPED, WAITING, Crossing

if TYPE_CHECKING:
    import ssl

    from broker.core.engine import Engine
    from config.model import NetworkConnector, NetworkUri

log = logging.getLogger("stompd.network")


class Bridge:
    """The bridge to one broker of a networkConnector's list: its state and its counts."""

    def __init__(
        self,
        engine: Engine,
        connector: NetworkConnector,
        uri: NetworkUri,
        broker_name: str,
        ssl_context: ssl.SSLContext | None,
        max_frame_size: int,
    ) -> None:
        self.engine = engine
        self.connector = connector
        self.uri = uri
        self.broker_name = broker_name
        self.ssl_context = ssl_context
        self.max_frame_size = max_frame_size
        self.state = STOPPED
        #: What the remote says it is (its brokerName; ``host:port`` for a broker that
        #: is not stompd), and its ``server`` header.
        self.remote_name = ""
        self.remote_server = ""
        #: Epoch seconds of the current connection's start (None: not connected).
        self.connected_since: float | None = None
        #: Messages this bridge sent to the remote and the remote receipted.
        self.forwarded = 0
        #: Messages it took from the remote and stored here.
        self.received = 0
        #: Connections made, and failed or lost.
        self.connects = 0
        self.failures = 0
        self.last_error = ""
        #: Destinations the remote refused (an ERROR for a SEND): not forwarded until then.
        self.refused: dict[str, float] = {}
        #: Fingerprints of the last messages pulled from a remote that is not stompd
        #: (``wire.fingerprint``), and the copies it sent again that they caught.
        self.pulled: OrderedDict[bytes, None] = OrderedDict()
        self.pulled_again = 0
        self.crossing: Crossing | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    @property
    def label(self) -> str:
        return f"{self.connector.name} -> {self.uri}"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"bridge {self.label}")

    async def stop(self) -> None:
        self._stopping.set()
        crossing = self.crossing
        if crossing is not None:
            crossing.close("this broker is stopping")
        task = self._task
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        self.state = STOPPED

    async def _run(self) -> None:
        connector = self.connector
        delay = connector.initial_reconnect_delay / 1000
        while not self._stopping.is_set():
            self.state = CONNECTING
            crossing = self.crossing = Crossing(self)
            try:
                await crossing.run()
            except asyncio.CancelledError:
                crossing.close("this broker is stopping")
                raise
            except (OSError, TimeoutError) as exc:
                self.last_error = wire.describe(exc)
            except Exception as exc:
                log.exception("network bridge %s failed", self.label)
                self.last_error = f"the bridge failed: {exc!r}"
            finally:
                self.crossing = None
                self.connected_since = None
            if self._stopping.is_set():
                return
            self.failures += 1
            if crossing.established:
                delay = connector.initial_reconnect_delay / 1000
            self.state = WAITING
            log.warning("network bridge %s: %s; reconnecting in %.1f s", self.label, self.last_error, delay)
            await asyncio.sleep(delay)
            if crossing.established or not connector.use_exponential_back_off:
                continue
            delay = min(delay * connector.back_off_multiplier, connector.max_reconnect_delay / 1000)

    def remember_pulled(self, fingerprint: bytes) -> None:
        """Kept for as many messages as can be in flight twice over: what the remote may
        redeliver after a dropped link (its prefetch window) is among them."""
        pulled = self.pulled
        pulled[fingerprint] = None
        if len(pulled) > 4 * self.connector.prefetch_size:
            pulled.popitem(last=False)

    def status(self) -> dict[str, object]:
        crossing = self.crossing
        return {
            "connector": self.connector.name,
            "remote": str(self.uri),
            "remote_broker": self.remote_name or None,
            "state": self.state,
            "connected_since": self.connected_since,
            "duplex": self.connector.duplex,
            "forwarded": self.forwarded,
            "received": self.received,
            "in_flight": crossing.in_flight if crossing is not None else 0,
            "pending": crossing.pending() if crossing is not None else 0,
            "forwarding": crossing.forwarding() if crossing is not None else [],
            "pulling": crossing.pulling() if crossing is not None else [],
            "connects": self.connects,
            "failures": self.failures,
            "last_error": self.last_error or None,
        }
