"""Several transportConnectors at once, each with its own URI options: plain STOMP side by
side, maximumConnections under a flood, frame limits, the connect timeout, the default
heart-beat and its grace, and STOMP over TLS with stomp.py (PEM and PKCS12 certificates,
with and without client certificates)."""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import aiohttp
import pytest
import stomp
from stomp.exception import ConnectFailedException

from broker.cli import main
from tests.broker_process import ROOT
from tests.clients import Client, Collector, client, eventually
from tests.listener_support import Pki, broker_from_xml, read_to_eof
from tests.stomp_raw import RawClient
from tests.ws_support import WsSession, ws_round_trip

pytestmark = pytest.mark.integration


def test_two_plain_listeners_serve_one_broker_each_with_its_own_frame_limit(tmp_path: Path) -> None:
    connectors = (
        '<transportConnector name="small" uri="stomp://127.0.0.1:0?wireFormat.maxFrameSize=1024"/>'
        '<transportConnector name="big" uri="stomp+nio://127.0.0.1:0"/>'
    )
    with broker_from_xml(tmp_path, connectors) as thread:
        small, big = thread.ports
        with client(big) as consumer, client(small) as producer:
            consumer.subscribe("/queue/both")
            producer.send("/queue/both", "across listeners", sync=True)
            assert consumer.listener.wait_messages(1)[0].body == "across listeners"
            # 2 KiB is over the small listener's limit, well under the big one's.
            raw = RawClient(small)
            raw.connect()
            raw.send("SEND", {"destination": "/queue/both"}, b"x" * 2048)
            error = raw.recv()
            assert (error.command, error.headers["message"]) == ("ERROR", "frame too large")
            assert raw.closed_by_peer()
            with client(big) as other:
                other.send("/queue/both", "y" * 2048, sync=True)
            assert consumer.listener.wait_messages(2)[1].body == "y" * 2048


def test_maximum_connections_refuses_a_flood_and_serves_everyone_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    connectors = (
        '<transportConnector name="limited" uri="stomp://127.0.0.1:0?maximumConnections=3"/>'
        '<transportConnector name="open" uri="stomp://127.0.0.1:0"/>'
    )
    caplog.set_level(logging.WARNING, "stompd.listener")
    with broker_from_xml(tmp_path, connectors) as thread, ExitStack() as stack:
        limited, other = thread.ports
        clients = [stack.enter_context(client(limited)) for _ in range(3)]
        clients[0].subscribe("/queue/flood")
        # A flood: every socket is accepted, told why in an ERROR frame, and closed at once.
        flood = [socket.create_connection(("127.0.0.1", limited), timeout=5) for _ in range(200)]
        for sock in flood:
            with sock:
                refusal = read_to_eof(sock)
            assert refusal.startswith(b"ERROR\nmessage:too many connections\n"), refusal
        # The three admitted clients, and those of the other listener, are served as before.
        clients[1].send("/queue/flood", "still served", sync=True)
        with client(other) as outsider:
            outsider.send("/queue/flood", "and from the other listener", sync=True)
        got = [message.body for message in clients[0].listener.wait_messages(2)]
        assert got == ["still served", "and from the other listener"]
        refused = [r for r in caplog.records if "maximumConnections=3 reached" in r.getMessage()]
        assert len(refused) == 1, "one line per burst, not one per socket"
        # One leaves: a new client gets its place.
        clients.pop().close()
        eventually(lambda: _connects(limited))
        assert any("accepting connections again (200" in r.getMessage() for r in caplog.records)


def _connects(port: int) -> bool:
    try:
        Client(port, conn_kwargs={"reconnect_attempts_max": 1}).close()
    except ConnectFailedException:
        return False
    return True


def test_silence_or_half_a_connect_is_dropped_after_the_connect_timeout(tmp_path: Path) -> None:
    connectors = '<transportConnector uri="stomp://127.0.0.1:0?transport.connectAttemptTimeout=300"/>'
    with broker_from_xml(tmp_path, connectors) as thread, client(thread.port) as connected:
        silent = socket.create_connection(("127.0.0.1", thread.port), timeout=5)
        half = socket.create_connection(("127.0.0.1", thread.port), timeout=5)
        half.sendall(b"CONNECT\naccept-version:1.2\nhost:loc")
        started = time.monotonic()
        for sock in (silent, half):
            with sock:
                assert read_to_eof(sock) == b""
        # Dropped after the 300 ms of the URI, not ActiveMQ's default 30 s.
        assert time.monotonic() - started < 10
        # A client that did CONNECT in time stays.
        connected.subscribe("/queue/still-here")
        connected.send("/queue/still-here", "yes", sync=True)
        assert connected.listener.wait_messages(1)[0].body == "yes"


def test_the_default_heart_beat_applies_to_a_connect_without_one(tmp_path: Path) -> None:
    connectors = (
        '<transportConnector name="beating" uri="stomp://127.0.0.1:0?transport.defaultHeartBeat=300,0'
        '&amp;transport.hbGracePeriodMultiplier=2"/>'
        '<transportConnector name="plain" uri="stomp://127.0.0.1:0"/>'
    )
    with broker_from_xml(tmp_path, connectors) as thread:
        beating, plain = thread.ports
        # As ActiveMQ does: the CONNECT is taken as one saying heart-beat:300,0 (the client
        # will send every 300 ms), so a client that then goes silent is closed, whatever
        # its STOMP version.
        for version in ("1.2", "1.0"):
            raw = RawClient(beating)
            connected = raw.connect(version)
            assert connected.headers["heart-beat"] == "0,300"
            assert raw.closed_by_peer(timeout=5)
        # A CONNECT that says what it wants is taken at its word.
        raw = RawClient(beating)
        assert raw.connect("1.2", **{"heart-beat": "0,0"}).headers["heart-beat"] == "0,0"
        assert RawClient(plain).connect("1.2").headers["heart-beat"] == "0,0"


# -- TLS -------------------------------------------------------------------------


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.make(tmp_path)


@contextmanager
def tls_client(
    pki: Pki, port: int, certificate: str | None
) -> Iterator[tuple[stomp.Connection12, Collector]]:
    """A stomp.py connection over TLS that trusts the test CA, with a client certificate
    (a PEM file in ``pki``) or none."""
    conn = stomp.Connection12([("127.0.0.1", port)], reconnect_attempts_max=1, timeout=5)
    conn.set_ssl(
        for_hosts=[("127.0.0.1", port)],
        cert_file=str(pki.directory / certificate) if certificate else None,
        ca_certs=str(pki.directory / "server-ca.crt"),
    )
    collector = Collector()
    conn.set_listener("c", collector)
    conn.connect(wait=True)
    try:
        yield conn, collector
    finally:
        conn.disconnect()


def tls_connect_attempt(pki: Pki, port: int, certificate: str | None) -> bytes:
    """What the broker answers a STOMP CONNECT over TLS with this client certificate (or
    none): its first frame, what it sent before closing, or b"" if TLS refused us."""
    context = ssl.create_default_context(cafile=str(pki.directory / "server-ca.crt"))
    if certificate is not None:
        context.load_cert_chain(str(pki.directory / certificate))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            sock.sendall(b"CONNECT\naccept-version:1.2\n\n\x00")
            answer = b""
            while b"\0" not in answer:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
            return answer
    except (ssl.SSLError, ConnectionError):
        return b""


def round_trip(conn: stomp.Connection12, collector: Collector) -> None:
    conn.subscribe("/queue/tls", "1", headers={"receipt": "s"})
    collector.wait_receipt("s")
    conn.send("/queue/tls", "sealed")
    assert collector.wait_messages(1)[0].body == "sealed"


def test_tls_with_a_required_client_certificate(tmp_path: Path, pki: Pki) -> None:
    connectors = (
        '<transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:0?needClientAuth=true"/>'
        '<transportConnector name="plain" uri="stomp://127.0.0.1:0"/>'
    )
    with broker_from_xml(tmp_path, connectors, pki.pem_context()) as thread:
        tls, plain = thread.ports
        with client(plain) as watcher, tls_client(pki, tls, "client.pem") as (conn, collector):
            round_trip(conn, collector)
            # Behind TLS, the same engine: a plain client sees what a TLS client sends.
            watcher.subscribe("/topic/from-tls")
            conn.send("/topic/from-tls", "over TLS")
            assert watcher.listener.wait_messages(1)[0].body == "over TLS"
        # Without a certificate, or with one from another CA, no CONNECTED ever comes back.
        # (A raw TLS socket, not stomp.py: its failure path on a refused handshake races
        # with its own receiver thread and sometimes raises RuntimeError instead.)
        for certificate in (None, "rogue.pem"):
            assert b"CONNECTED" not in tls_connect_attempt(pki, tls, certificate)
        assert tls_connect_attempt(pki, tls, "client.pem").startswith(b"CONNECTED")
        # A plain-text client on the TLS port gets nowhere either.
        with socket.create_connection(("127.0.0.1", tls), timeout=5) as sock:
            sock.sendall(b"CONNECT\naccept-version:1.2\n\n\x00")
            assert b"CONNECTED" not in read_to_eof(sock)


def test_tls_from_pkcs12_stores_with_an_optional_client_certificate(tmp_path: Path, pki: Pki) -> None:
    connectors = '<transportConnector uri="stomp+nio+ssl://127.0.0.1:0?wantClientAuth=true"/>'
    with broker_from_xml(tmp_path, connectors, pki.pkcs12_context()) as thread:
        for certificate in (None, "client.pem"):
            with tls_client(pki, thread.port, certificate) as (conn, collector):
                round_trip(conn, collector)
        # Asked for, a certificate that is sent must be one the trust store vouches for.
        assert b"CONNECTED" not in tls_connect_attempt(pki, thread.port, "rogue.pem")


# -- the same over WebSocket -------------------------------------------------------


def test_websocket_listeners_have_their_own_limits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    connectors = (
        '<transportConnector name="few" uri="ws://127.0.0.1:0/?maximumConnections=2"/>'
        '<transportConnector name="strict" uri="ws://127.0.0.1:0/?transport.connectAttemptTimeout=300'
        '&amp;wireFormat.maxFrameSize=1024"/>'
    )
    caplog.set_level(logging.WARNING, "stompd.listener")

    async def scenario(few: str, strict: str, few_port: int) -> None:
        async with WsSession(few) as first, WsSession(few) as second:
            await first.connect()
            await second.connect()
            # Past maximumConnections a socket reads a 503 and is closed, before any HTTP.
            flood = [socket.create_connection(("127.0.0.1", few_port), timeout=5) for _ in range(50)]
            for sock in flood:
                with sock:
                    refusal = await asyncio.to_thread(read_to_eof, sock)
                assert refusal.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), refusal
            await first.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/few"})
            await second.send_frame("SEND", {"destination": "/queue/few", "receipt": "r"}, b"still served")
            assert (await second.recv()).command == "RECEIPT"
            assert (await first.recv()).body == b"still served"
            assert await ws_round_trip(strict, "/queue/strict") == b"hello"

        # Both gone: room again.
        async def admitted() -> bytes:
            return await ws_round_trip(few, "/queue/few-again")

        deadline = time.monotonic() + 5
        while True:
            try:
                assert await admitted() == b"hello"
                break
            except aiohttp.ClientError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
        # The strict listener refuses a frame over its 1 KiB, as the same frame is fine on the other.
        async with WsSession(strict) as session:
            await session.connect()
            await session.send_frame("SEND", {"destination": "/queue/strict"}, b"x" * 2048)
            assert (await session.recv()).headers["message"] == "frame too large"
            closed = await session.wait_closed()
            assert closed.code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG
        assert await ws_round_trip(few, "/queue/big", b"x" * 2048) == b"x" * 2048
        # A WebSocket that never sends CONNECT, or half of one, is closed after 300 ms.
        for data in ("", "CONNECT\naccept-version:1.2\n"):
            async with WsSession(strict) as session:
                if data:
                    await session.ws.send_str(data)
                closed = await session.wait_closed()
                assert closed.code == aiohttp.WSCloseCode.OK and session.messages == []

    with broker_from_xml(tmp_path, connectors) as thread:
        few_port, strict_port = thread.ws_ports
        asyncio.run(scenario(f"ws://127.0.0.1:{few_port}/", f"ws://127.0.0.1:{strict_port}/", few_port))
        # A socket that sends no upgrade, or half of one, is dropped after the same 300 ms.
        for data in (b"", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr"):
            with socket.create_connection(("127.0.0.1", strict_port), timeout=5) as sock:
                sock.sendall(data)
                assert read_to_eof(sock) == b""
    refused = [r for r in caplog.records if "maximumConnections=2 reached" in r.getMessage()]
    assert len(refused) == 1


def test_wss_with_a_required_client_certificate(tmp_path: Path, pki: Pki) -> None:
    connectors = '<transportConnector name="wss" uri="wss://127.0.0.1:0/stomp?needClientAuth=true"/>'

    def context(certificate: str | None) -> ssl.SSLContext:
        tls = ssl.create_default_context(cafile=str(pki.directory / "server-ca.crt"))
        if certificate:
            tls.load_cert_chain(str(pki.directory / certificate))
        return tls

    async def scenario(url: str) -> None:
        assert await ws_round_trip(url, "/queue/wss", ssl=context("client.pem")) == b"hello"
        for certificate in (None, "rogue.pem"):
            with pytest.raises((aiohttp.ClientError, ConnectionError)):
                await ws_round_trip(url, "/queue/wss", ssl=context(certificate))

    with broker_from_xml(tmp_path, connectors, pki.pem_context()) as thread:
        asyncio.run(scenario(f"wss://127.0.0.1:{thread.ws_ports[0]}/stomp"))


def test_stompd_serves_every_listener_of_its_file(tmp_path: Path, pki: Pki) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(
        f"""<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" dataDirectory="{tmp_path}/data">
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:61613"/>
      <transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:0"/>
      <transportConnector name="ws" uri="ws://127.0.0.1:0/stomp"/>
    </transportConnectors>
    {pki.pem_context()}
    <httpServer port="0"/>
  </broker>
</beans>
"""
    )
    # --port replaces the first STOMP listener's port (61613 in the file).
    command = [sys.executable, "-m", "broker", "--config", str(path), "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line)
            listening = re.search(
                r"stompd listening on 127\.0\.0\.1:(\d+), stomp\+ssl://127\.0\.0\.1:(\d+), "
                r"ws://127\.0\.0\.1:(\d+)/stomp ",
                line,
            )
            if listening:
                break
        assert listening, "".join(lines)
        plain, tls, ws = (int(port) for port in listening.groups())
        with client(plain) as watcher:
            watcher.subscribe("/topic/every")
            with tls_client(pki, tls, None) as (conn, collector):
                conn.send("/topic/every", "from TLS", headers={"receipt": "t"})
                collector.wait_receipt("t")
            assert asyncio.run(ws_round_trip(f"ws://127.0.0.1:{ws}/stomp", "/topic/every")) == b"hello"
            assert [m.body for m in watcher.listener.wait_messages(2)] == ["from TLS", "hello"]
        assert not any("not applied yet" in line for line in lines)
    finally:
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=30)[1]
    assert process.returncode == 0, "".join(lines) + rest
    assert "Traceback" not in "".join(lines) + rest


def test_check_config_shows_listener_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core"><transportConnectors>'
        '<transportConnector name="ws" uri="ws://127.0.0.1:61614/?maximumConnections=10"/>'
        "</transportConnectors></broker>\n"
    )
    assert main(["--check-config", str(path), "--ws-port", "61700", "--ws-allowed-origins", "*"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^transportConnector 'ws' ws://127\.0\.0\.1:61700/ \(\S+activemq\.xml:1\)$", out, re.M)
    assert re.search(r"^  port\s+= 61700\s+flag --ws-port$", out, re.M)
    assert re.search(r"^  maximumConnections\s+= 10\s+\S+activemq\.xml:1$", out, re.M)
    assert re.search(r"^  allowedOrigins\s+= \*\s+flag --ws-allowed-origins$", out, re.M)
    listeners = out.split("transportDefaults")[1].split("persistenceAdapter")[0]
    assert "transportConnector 'ws'" in listeners and "not applied yet" not in listeners
