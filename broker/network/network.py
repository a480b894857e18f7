"""Every bridge of every ``<networkConnector>``: started with the broker, stopped with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.network.bridge import Bridge
from broker.network.status import BridgeSettings

if TYPE_CHECKING:
    import ssl

    from broker.core.engine import Engine
    from config.model import NetworkConnector


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    #: This broker's name in the network (``<broker brokerName>``).
    broker_name: str
    connectors: tuple[NetworkConnector, ...]
    #: The client side of ``<sslContext>`` for stomp+ssl:// bridges (None: none configured).
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)
    #: The largest message a bridge takes from either side.
    max_frame_size: int = 10 << 20


class Network:
    def __init__(self, engine: Engine, settings: NetworkSettings) -> None:
        self.settings = settings
        self.bridges = [
            Bridge(
                engine,
                BridgeSettings(
                    connector,
                    uri,
                    settings.broker_name,
                    settings.ssl_context if uri.tls else None,
                    settings.max_frame_size,
                ),
            )
            for connector in settings.connectors
            for uri in connector.uris
        ]

    def start(self) -> None:
        for bridge in self.bridges:
            bridge.start()

    async def stop(self) -> None:
        for bridge in self.bridges:
            await bridge.stop()

    def status(self) -> list[dict[str, object]]:
        return [bridge.report() for bridge in self.bridges]
