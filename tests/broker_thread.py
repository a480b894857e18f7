"""A real broker on its own event loop in a background thread, for tests that talk to it
with blocking clients (stomp.py): ``BrokerThread(options).start()``, then ``.port``."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path

from broker.app import Broker, BrokerOptions, new_event_loop
from broker.settings_bridge import broker_options
from config.loader import load
from config.model import HttpServer
from tests.config.helpers import broker_file


class BrokerThread:
    """A broker on its own event loop in a background thread."""

    def __init__(self, options: BrokerOptions) -> None:
        if options.http_port == HttpServer().port:
            # Options from a configuration without <httpServer port> take ActiveMQ's 8161:
            # one port for every broker of every test running at once (the other workers
            # of a parallel run, another checkout's run). A free one instead, read back
            # as ``.http_port`` like the rest.
            options = dataclasses.replace(options, http_port=0)
        self.options = options
        self.broker: Broker | None = None
        self.loop = new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.ports: list[int] = []
        self.http_port = 0
        self.ws_ports: list[int] = []
        self._error: BaseException | None = None
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="stompd", daemon=True)

    def start(self, timeout: float = 10.0) -> BrokerThread:
        self._thread.start()
        if not self.ready.wait(timeout):
            raise TimeoutError("broker did not start listening in time")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except BaseException as exc:
            self._error = exc
            self.ready.set()
        finally:
            self.loop.close()

    async def _main(self) -> None:
        self._stopped = asyncio.Event()
        self.broker = Broker(self.options)
        self.port = await self.broker.start()
        self.ports = self.broker.ports
        self.http_port = self.broker.http_port
        self.ws_ports = self.broker.ws_ports
        self.ready.set()
        await self._stopped.wait()
        await self.broker.stop()

    def call(self, fn: object) -> None:
        """Run ``fn()`` on the broker's loop (it owns all broker state)."""
        assert callable(fn)
        self.loop.call_soon_threadsafe(fn)

    def stop(self, timeout: float = 10.0) -> None:
        if self._stopped is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout)


#: One STOMP connector on a free port, for a configured broker's file.
STOMPD_CONNECTOR = (
    '<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>'
)


def configured_broker(tmp_path: Path, broker_xml: str) -> BrokerThread:
    """A stompd started (in this process) from an activemq.xml whose ``<broker>`` holds
    ``broker_xml`` and ``STOMPD_CONNECTOR``: the elements a test hands a configured
    ActiveMQ too (``activemq_peer.running_activemq``); its data under ``tmp_path``."""
    config = load(broker_file(tmp_path, broker_xml + STOMPD_CONNECTOR)).config
    options = dataclasses.replace(broker_options(config), data_dir=tmp_path / "data")
    return BrokerThread(options).start()
