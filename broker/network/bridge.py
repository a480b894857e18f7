"""One bridge: this broker joined to one remote broker over one STOMP connection.

A ``Bridge`` keeps the connection up (reconnecting with ActiveMQ's back-off); while it is
up, a ``Crossing`` (``crossing``) does the work between this broker and the remote one:

* **push** (``push``): for each destination the remote has consumers for (its consumer
  advisories, ``demand.Demand``) and each statically included one, a network
  subscription here (``stompd.network``: never a message that was on the remote, none
  past the TTL; on standby or at a low priority behind this broker's own consumers).
  Each MESSAGE it gets becomes a SEND to the remote with a receipt; the local ACK waits
  for that RECEIPT, so the message stays stored here until the remote has stored it.
* **pull** (``pull``; duplex, and ``pulledDestinations``): a subscription on the remote
  for what this broker's consumers want (its own advisories) or for the named queues;
  each MESSAGE becomes a SEND here with a receipt, and the remote is ACKed once this
  broker's RECEIPT says the message is stored.

What crosses keeps its id (``_STOMPD_ID``: copies re-sent after a failure are dropped
by the receiver's audit), its path (``_STOMPD_PATH``), ``redelivered``, priority,
expiry, time stamp, group and every other header (``wire`` makes the frames).  What the
bridge is given and what it shows are ``status``'s; what it remembers across its
connections, the destinations the remote refused (``push.Refusals``) and the copies a
broker that is not stompd may send again (``pull.PulledCopies``), it keeps here.
docs/network.md has the whole design.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.network import wire
from broker.network.crossing import Crossing
from broker.network.pull import PulledCopies
from broker.network.push import Refusals
from broker.network.status import CONNECTING, STOPPED, WAITING, BridgeStatus, Figures, report

if TYPE_CHECKING:
    from broker.core.engine import Engine
    from broker.network.status import BridgeSettings

log = logging.getLogger("stompd.network")


class Bridge:
    """The bridge to one broker of a networkConnector's list: its connection kept up."""

    def __init__(self, engine: Engine, settings: BridgeSettings) -> None:
        self.engine = engine
        self.settings = settings
        self.status = BridgeStatus()
        self.refusals = Refusals()
        self.copies = PulledCopies(4 * settings.connector.prefetch_size)
        #: The connection of the time (None: connecting, waiting, stopped).
        self.crossing: Crossing | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self) -> None:
        label = self.settings.label
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"bridge {label}")

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
        self.status.state = STOPPED

    async def _run(self) -> None:
        connector = self.settings.connector
        status = self.status
        loop = asyncio.get_running_loop()
        delay = connector.initial_reconnect_delay / 1000
        while not self._stopping.is_set():
            status.state = CONNECTING
            crossing = self.crossing = Crossing(
                loop, self.engine, self.settings, status, self.refusals, self.copies
            )
            try:
                await crossing.run()
            except asyncio.CancelledError:
                crossing.close("this broker is stopping")
                raise
            except (OSError, TimeoutError) as exc:
                status.last_error = wire.describe(exc)
            except Exception as exc:
                log.exception("network bridge %s failed", self.settings.label)
                status.last_error = f"the bridge failed: {exc!r}"
            finally:
                self.crossing = None
                status.connected_since = None
            if self._stopping.is_set():
                return
            status.failures += 1
            if crossing.established:
                delay = connector.initial_reconnect_delay / 1000
            status.state = WAITING
            log.warning(
                "network bridge %s: %s; reconnecting in %.1f s", self.settings.label, status.last_error, delay
            )
            await asyncio.sleep(delay)
            if crossing.established or not connector.use_exponential_back_off:
                continue
            delay = min(delay * connector.back_off_multiplier, connector.max_reconnect_delay / 1000)

    def report(self) -> dict[str, object]:
        """The bridge as the admin API and ``/metrics`` show it (``status.report``)."""
        crossing = self.crossing
        figures = crossing.figures() if crossing is not None else Figures()
        return report(self.settings, self.status, figures)
