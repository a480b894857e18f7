"""A client-id is taken by one open connection at a time, as in ActiveMQ: a second CONNECT
with it, on any listener and whoever logs in, gets ActiveMQ's InvalidClientIDException
words in an ERROR and is closed, and the first connection and its durable subscription go
on untouched.  Once the first has gone, the id is free."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import stomp
from stomp.exception import ConnectFailedException
from stomp.utils import Frame as StompPyFrame

from broker.settings_bridge import broker_options
from config.loader import load
from tests.broker_thread import BrokerThread
from tests.clients import Client, Collector, client
from tests.ws_support import WsSession, ws_url

pytestmark = pytest.mark.integration

FILE = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="east" dataDirectory="{data}">
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>
      <transportConnector name="ws" uri="ws://127.0.0.1:0"/>
    </transportConnectors>
    <httpServer port="0"/>
  </broker>
</beans>
"""

DURABLE = {"activemq.subscriptionName": "audit"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    path = tmp_path / "activemq.xml"
    path.write_text(FILE.format(data=tmp_path / "data"))
    thread = BrokerThread(broker_options(load(path).config)).start()
    try:
        yield thread
    finally:
        thread.stop()


def refused(port: int, client_id: str, **login: str) -> StompPyFrame:
    """A stomp.py CONNECT with ``client_id`` that must fail: the ERROR it got."""
    conn = stomp.Connection12([("127.0.0.1", port)])
    listener = Collector()
    conn.set_listener("c", listener)
    with pytest.raises(ConnectFailedException):
        conn.connect(wait=True, headers={"client-id": client_id}, **login)
    assert listener.disconnected.wait(5), "the refused connection was left open"
    [error] = listener.errors
    return error


def local_port(c: Client) -> int:
    transport = c.conn.transport
    port: int = transport.socket.getsockname()[1]
    return port


def test_a_second_connection_with_a_client_id_is_refused(broker: BrokerThread) -> None:
    with client(broker.port, headers={"client-id": "orders"}) as first:
        first.subscribe("/topic/audit", **DURABLE)
        for login in ({}, {"username": "someone-else", "passcode": "x"}):
            error = refused(broker.port, "orders", **login)
            assert error.headers["message"] == "client-id already connected"
            assert error.body.strip() == (
                f"Broker: east - Client: orders already connected from tcp://127.0.0.1:{local_port(first)}"
            )
        # The first goes on, its durable subscription untouched.
        first.send("/topic/audit", "still mine", sync=True)
        assert first.listener.wait_messages(1)[0].body == "still mine"
        # Other ids, and connections without one, are not affected.
        with client(broker.port, headers={"client-id": "billing"}), client(broker.port):
            pass
    # Gone: the id is free, and the durable subscription kept what was published meanwhile.
    with client(broker.port) as producer:
        producer.send("/topic/audit", "while away", sync=True)
    with client(broker.port, headers={"client-id": "orders"}) as again:
        again.subscribe("/topic/audit", **DURABLE)
        assert again.listener.wait_messages(1)[0].body == "while away"


def test_a_refused_connection_does_not_free_the_id(broker: BrokerThread) -> None:
    with client(broker.port, headers={"client-id": "orders"}) as first:
        for _ in range(2):
            assert "already connected" in refused(broker.port, "orders").body
        first.send("/queue/q", "x", sync=True)


def test_client_ids_are_one_namespace_over_tcp_and_websocket(broker: BrokerThread) -> None:
    async def scenario() -> None:
        with client(broker.port, headers={"client-id": "tcp-first"}) as tcp:
            async with WsSession(ws_url(broker)) as ws:
                await ws.send_frame("CONNECT", {"accept-version": "1.2", "client-id": "tcp-first"})
                error = await ws.recv()
                assert error.command == "ERROR"
                assert error.body.decode().strip() == (
                    f"Broker: east - Client: tcp-first already connected from tcp://127.0.0.1:{local_port(tcp)}"
                )
                await ws.wait_closed()
        async with WsSession(ws_url(broker)) as ws:
            await ws.connect(**{"client-id": "ws-first"})
            error = await asyncio.to_thread(refused, broker.port, "ws-first")
            assert re.fullmatch(
                r"Broker: east - Client: ws-first already connected from ws://127\.0\.0\.1:\d+",
                error.body.strip(),
            )
            await ws.send_frame("DISCONNECT", {"receipt": "bye"})
            assert (await ws.recv()).command == "RECEIPT"
        with client(broker.port, headers={"client-id": "ws-first"}):
            pass

    asyncio.run(scenario())
