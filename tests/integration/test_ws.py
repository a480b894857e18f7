"""STOMP over WebSocket with aiohttp's WebSocket client: subprotocols, how frames map onto
messages, text and binary, heart-beats, origins, limits and the ERROR/close path, TLS, and
a WebSocket client and a TCP client on the same destinations."""

from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import trustme

from broker.app import BrokerOptions
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from broker.ws.transport import WebSocketStompConnection
from tests.broker_thread import BrokerThread
from tests.http_support import call
from tests.stomp_raw import RawClient
from tests.ws_support import WsSession, running_ws_broker, start_ws_broker, stomp_path_url, ws_url

pytestmark = pytest.mark.integration

TEXT = aiohttp.WSMsgType.TEXT
BINARY = aiohttp.WSMsgType.BINARY
#: Every byte value, NULs included: a body only content-length can carry.
BINARY_BODY = bytes(range(256)) * 4


@pytest.fixture(params=["ws-port", "admin-/stomp"])
def url(request: pytest.FixtureRequest, ws_broker: BrokerThread) -> str:
    """The broker's own ws:// listener and /stomp on the admin server: one endpoint."""
    return ws_url(ws_broker) if request.param == "ws-port" else stomp_path_url(ws_broker)


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        (None, None),
        (["v10.stomp"], "v10.stomp"),
        (["v11.stomp"], "v11.stomp"),
        (["v12.stomp"], "v12.stomp"),
        # stomp.js offers all three, lowest first: the highest wins (as in ActiveMQ).
        (["v10.stomp", "v11.stomp", "v12.stomp"], "v12.stomp"),
        (["v10.stomp", "v11.stomp"], "v11.stomp"),
        (["stomp"], "stomp"),
        # RFC 6455 4.2.2: none of ours offered, none answered (the client decides).
        (["mqtt"], None),
    ],
)
def test_subprotocol_negotiation(url: str, offered: list[str] | None, answered: str | None) -> None:
    async def scenario() -> None:
        async with WsSession(url, protocols=tuple(offered or ())) as stomp:
            assert stomp.ws.protocol == answered
            connected = await stomp.connect("1.0,1.1,1.2")
            assert connected.headers["version"] == "1.2"

    asyncio.run(scenario())


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_each_stomp_version_over_its_subprotocol(ws_broker: BrokerThread, version: str) -> None:
    async def scenario() -> None:
        subprotocol = "v" + version.replace(".", "") + ".stomp"
        async with WsSession(ws_url(ws_broker), protocols=(subprotocol,)) as stomp:
            assert stomp.ws.protocol == subprotocol
            connected = await stomp.connect(version)
            assert connected.headers.get("version", "1.0") == version
            await stomp.send_frame("SUBSCRIBE", {"destination": "/queue/v", "id": "s", "ack": "client"})
            await stomp.send_frame(
                "SEND", {"destination": "/queue/v", "receipt": "r"}, b"hello " + version.encode()
            )
            frames = [await stomp.recv(), await stomp.recv()]
            by_command = {frame.command: frame for frame in frames}
            assert by_command["RECEIPT"].headers["receipt-id"] == "r"
            message = by_command["MESSAGE"]
            assert message.body == b"hello " + version.encode()
            ack_id = message.headers["ack"] if version == "1.2" else message.headers["message-id"]
            await stomp.send_frame(
                "ACK", {"id" if version == "1.2" else "message-id": ack_id, "subscription": "s"}
            )
            await stomp.send_frame("DISCONNECT", {"receipt": "bye"})
            assert (await stomp.recv()).headers["receipt-id"] == "bye"
            closed = await stomp.wait_closed()
            assert closed.code == aiohttp.WSCloseCode.OK

    asyncio.run(scenario())


def test_frames_split_over_messages_and_joined_in_one(url: str) -> None:
    async def scenario() -> None:
        async with WsSession(url) as stomp:
            await stomp.connect()
            # SUBSCRIBE and a whole SEND in one message, then a SEND cut into three
            # messages (one cut inside a header, one inside the body), heart-beat EOLs
            # between them.
            await stomp.ws.send_str(
                "SUBSCRIBE\nid:1\ndestination:/queue/split\n\n\0\n"
                "SEND\ndestination:/queue/split\nn:1\n\nfirst\0"
            )
            await stomp.ws.send_str("\n")
            await stomp.ws.send_str("SEND\ndestina")
            await stomp.ws.send_str("tion:/queue/split\nn:2\n\nsec")
            await stomp.ws.send_str("ond\0\n")
            # A binary one in three binary messages, the cut inside its content-length body.
            wire = b"SEND\ndestination:/queue/split\nn:3\ncontent-length:3\n\n\x00\x01\x02\x00"
            for piece in (wire[:10], wire[10:-3], wire[-3:]):
                await stomp.ws.send_bytes(piece)
            received = [await stomp.recv() for _ in range(3)]
            assert [(f.headers["n"], f.body) for f in received] == [
                ("1", b"first"),
                ("2", b"second"),
                ("3", b"\x00\x01\x02"),
            ]

    asyncio.run(scenario())


def test_each_frame_is_one_message_text_or_binary_as_it_must(ws_broker: BrokerThread) -> None:
    async def scenario() -> None:
        async with WsSession(ws_url(ws_broker)) as stomp:
            await stomp.connect()
            await stomp.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/kinds"})
            await stomp.send_frame("SEND", {"destination": "/queue/kinds"}, "héllo".encode())
            await stomp.send_frame("SEND", {"destination": "/queue/kinds"}, BINARY_BODY, binary=True)
            await stomp.send_frame("SEND", {"destination": "/queue/kinds"}, b"three")
            bodies = []
            for _ in range(3):
                kind, data = await stomp.recv_message()
                # Exactly one whole frame per message.
                stomp.parser.feed(data.encode() if kind is TEXT else data)
                frame = stomp.parser.next_frame()
                assert frame is not None and frame.command == "MESSAGE"
                assert stomp.parser.next_frame() is None
                bodies.append((kind, frame.body))
            # Text for a text client, except the frame that is not UTF-8 (RFC 6455 5.6).
            assert bodies == [(TEXT, "héllo".encode()), (BINARY, BINARY_BODY), (TEXT, b"three")]

        # A client that connected with a binary message is answered in binary only.
        async with WsSession(ws_url(ws_broker)) as stomp:
            await stomp.connect(binary=True)
            await stomp.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/kinds", "receipt": "r"})
            await stomp.recv()
            await stomp.send_frame("SEND", {"destination": "/queue/kinds"}, b"plain")
            assert (await stomp.recv()).body == b"plain"
            assert {kind for kind, _ in stomp.messages} == {BINARY}

    asyncio.run(scenario())


def test_heart_beats_both_ways_as_messages_of_their_own(ws_broker: BrokerThread) -> None:
    async def scenario() -> None:
        async with WsSession(ws_url(ws_broker)) as stomp:
            connected = await stomp.connect(**{"heart-beat": "100,100"})
            assert connected.headers["heart-beat"] == "100,100"
            # The broker's heart-beats: an EOL alone in a message; ours keep us connected
            # well past the broker's grace (100 ms x 1.5).
            beats = 0
            while beats < 5:
                await stomp.ws.send_str("\n")
                kind, data = await stomp.recv_message(timeout=2)
                assert (kind, data) == (TEXT, "\n")
                beats += 1
            await stomp.send_frame("SEND", {"destination": "/queue/hb", "receipt": "still-here"})
            assert (await stomp.recv()).headers["receipt-id"] == "still-here"
            # Stop sending them: the broker closes the connection.
            closed = await stomp.wait_closed()
            assert closed.code == aiohttp.WSCloseCode.OK

    asyncio.run(scenario())


def test_bad_input_gets_an_error_frame_and_a_close_with_a_code(url: str) -> None:
    async def scenario() -> None:
        async with WsSession(url) as stomp:
            await stomp.connect()
            await stomp.ws.send_str("BOGUS\n\n\0")
            error = await stomp.recv()
            assert (error.command, error.headers["message"]) == ("ERROR", "unknown command")
            closed = await stomp.wait_closed()
            assert (closed.code, closed.reason) == (aiohttp.WSCloseCode.PROTOCOL_ERROR, "unknown command")

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("wire", "summary"),
    [
        ("SEND\n\nno destination\0", "missing required header"),
        ("SUBSCRIBE\nid:1\ndestination:/queue/\n\n\0", "invalid destination"),
    ],
)
def test_a_frame_refused_for_what_it_means_gets_an_error_and_the_websocket_stays(
    url: str, wire: str, summary: str
) -> None:
    async def scenario() -> None:
        async with WsSession(url) as stomp:
            await stomp.connect()
            await stomp.ws.send_str(wire)
            error = await stomp.recv()
            assert (error.command, error.headers["message"]) == ("ERROR", summary)
            await stomp.send_frame("SEND", {"destination": "/queue/ws.after", "receipt": "after"})
            assert (await stomp.recv()).headers["receipt-id"] == "after"

    asyncio.run(scenario())


def test_text_that_is_not_utf8_is_refused_with_1007(ws_broker: BrokerThread) -> None:
    async def scenario() -> None:
        async with WsSession(ws_url(ws_broker)) as stomp:
            await stomp.connect()
            # aiohttp's client checks nothing it sends: a raw text frame with a bad byte.
            await stomp.ws.send_frame(b"SEND\ndestination:/queue/x\n\n\xff\0", aiohttp.WSMsgType.TEXT)
            error = await stomp.recv()
            assert error.headers["message"] == "malformed frame"
            assert b"not UTF-8" in error.body
            closed = await stomp.wait_closed()
            assert (closed.code, closed.reason) == (aiohttp.WSCloseCode.INVALID_TEXT, "malformed frame")

    asyncio.run(scenario())


@pytest.fixture
def small_frames(tmp_path: Path) -> Iterator[BrokerThread]:
    with running_ws_broker(tmp_path / "data", limits=ConnectionLimits(max_frame_size=4096)) as thread:
        yield thread


def test_a_message_over_the_frame_limit_is_refused_by_the_websocket_layer(small_frames: BrokerThread) -> None:
    async def scenario() -> None:
        async with WsSession(ws_url(small_frames)) as stomp:
            await stomp.connect()
            # A frame at the limit passes.
            body = b"x" * (4096 - 100)
            await stomp.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/big"})
            await stomp.send_frame("SEND", {"destination": "/queue/big"}, body)
            assert (await stomp.recv()).body == body
            # One message over it is refused as it arrives: ERROR, then close 1009.
            await stomp.send_frame("SEND", {"destination": "/queue/big"}, b"x" * 100_000)
            error = await stomp.recv()
            assert (error.command, error.headers["message"]) == ("ERROR", "frame too large")
            assert b"maximum frame size of 4096 bytes" in error.body
            closed = await stomp.wait_closed()
            assert (closed.code, closed.reason) == (aiohttp.WSCloseCode.MESSAGE_TOO_BIG, "frame too large")

    asyncio.run(scenario())


def test_a_frame_over_the_limit_in_small_messages_is_refused_too(small_frames: BrokerThread) -> None:
    async def scenario() -> None:
        async with WsSession(ws_url(small_frames)) as stomp:
            await stomp.connect()
            await stomp.ws.send_str("SEND\ndestination:/queue/big\n\n")
            for _ in range(5):
                await stomp.ws.send_str("y" * 1000)
            error = await stomp.recv()
            assert error.headers["message"] == "frame too large"
            closed = await stomp.wait_closed()
            assert (closed.code, closed.reason) == (aiohttp.WSCloseCode.MESSAGE_TOO_BIG, "frame too large")

    asyncio.run(scenario())


def test_no_connect_within_the_timeout_closes_it(tmp_path: Path) -> None:

    async def scenario() -> None:
        async with WsSession(ws_url(thread)) as stomp:
            closed = await stomp.wait_closed()
            assert closed.code == aiohttp.WSCloseCode.OK
            assert stomp.messages == []

    with running_ws_broker(tmp_path / "data", limits=ConnectionLimits(connect_timeout=0.2)) as thread:
        asyncio.run(scenario())


def test_websocket_and_tcp_clients_exchange_messages_intact(url: str, ws_broker: BrokerThread) -> None:
    headers = {"colour": "blue", "with-colon": "a:b", "unicode": "żółw", "persistent": "true"}

    async def scenario() -> None:
        tcp = RawClient(ws_broker.port)
        tcp.connect()
        tcp.send("SUBSCRIBE", {"id": "t", "destination": "/queue/to-tcp", "receipt": "t"})
        assert tcp.recv().command == "RECEIPT"
        async with WsSession(url, protocols=("v12.stomp",)) as stomp:
            await stomp.connect()
            await stomp.send_frame("SUBSCRIBE", {"id": "w", "destination": "/topic/to-ws", "receipt": "w"})
            assert (await stomp.recv()).command == "RECEIPT"

            # WebSocket -> TCP: a binary body with content-length, custom headers.
            await stomp.send_frame(
                "SEND",
                {"destination": "/queue/to-tcp", "content-length": str(len(BINARY_BODY)), **headers},
                BINARY_BODY,
                binary=True,
            )
            got = await asyncio.to_thread(tcp.recv)
            assert got.body == BINARY_BODY
            assert got.headers["content-length"] == str(len(BINARY_BODY))
            assert {k: got.headers[k] for k in headers} == headers

            # TCP -> WebSocket, through a topic.
            tcp.send("SEND", {"destination": "/topic/to-ws", "colour": "red", "x:y": "1"}, BINARY_BODY[::-1])
            message = await stomp.recv()
            assert message.body == BINARY_BODY[::-1]
            assert (message.headers["colour"], message.headers["x:y"]) == ("red", "1")
            assert hashlib.sha256(message.body).digest() == hashlib.sha256(BINARY_BODY[::-1]).digest()

    asyncio.run(scenario())


def test_a_reader_that_stops_reading_holds_messages_back_in_the_queue(ws_broker: BrokerThread) -> None:
    """pause_writing: past the connection's high-water mark dispatch stops, and what was
    not sent waits in the queue (not in the broker's buffers) until the client reads."""
    # 32 MiB: far more than the kernel's socket buffers (a few MiB on loopback) absorb.
    count, size = 500, 64 * 1024

    async def scenario() -> None:
        async with WsSession(ws_url(ws_broker), max_msg_size=0) as consumer:
            await consumer.connect(**{"client-id": "slow"})
            await consumer.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/slow", "receipt": "s"})
            assert (await consumer.recv()).command == "RECEIPT"
            producer = RawClient(ws_broker.port)
            producer.connect()
            for i in range(count):
                producer.send(
                    "SEND", {"destination": "/queue/slow", "n": str(i), "receipt": str(i)}, b"z" * size
                )
            await asyncio.to_thread(producer.recv_all, count)
            base = f"http://127.0.0.1:{ws_broker.http_port}"
            assert call(base, "GET", "/api/v1/destinations/slow").body["depth"] > count // 2
            # What did leave the queue is in the sockets, not piled up in the broker.
            assert ws_broker.broker is not None
            (slow,) = [
                c for c in ws_broker.broker.server.connections if isinstance(c, WebSocketStompConnection)
            ]
            assert slow.websocket is not None
            assert slow.websocket.get_write_buffer_size() < 1024 * 1024
            received = [(await consumer.recv(timeout=20)).headers["n"] for _ in range(count)]
            assert received == [str(i) for i in range(count)]

    asyncio.run(scenario())


def test_the_admin_api_lists_and_closes_websocket_connections(ws_broker: BrokerThread) -> None:
    base = f"http://127.0.0.1:{ws_broker.http_port}"

    async def scenario() -> None:
        async with WsSession(ws_url(ws_broker)) as stomp:
            await stomp.connect(**{"client-id": "browser-1"})
            listed = call(base, "GET", "/api/v1/connections").body["connections"]
            (mine,) = [c for c in listed if c["client_id"] == "browser-1"]
            assert call(base, "DELETE", f"/api/v1/connections/{mine['id']}").status == 200
            error = await stomp.recv()
            assert error.headers["message"] == "connection closed by an administrator"
            closed = await stomp.wait_closed()
            assert closed.code == aiohttp.WSCloseCode.POLICY_VIOLATION

    asyncio.run(scenario())


def test_broker_shutdown_closes_websocket_clients_with_going_away(tmp_path: Path) -> None:
    thread = start_ws_broker(tmp_path / "data")

    async def scenario() -> None:
        async with WsSession(ws_url(thread)) as stomp:
            await stomp.connect()
            await asyncio.to_thread(thread.stop)
            closed = await stomp.wait_closed()
            assert (closed.code, closed.reason) == (aiohttp.WSCloseCode.GOING_AWAY, "broker shutting down")

    asyncio.run(scenario())


def test_shutdown_does_not_wait_on_a_websocket_client_that_reads_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    thread = start_ws_broker(tmp_path / "data")

    async def scenario() -> None:
        async with WsSession(ws_url(thread), max_msg_size=0) as consumer:
            await consumer.connect()
            await consumer.send_frame(
                "SUBSCRIBE", {"id": "1", "destination": "/queue/unread", "receipt": "s"}
            )
            assert (await consumer.recv()).command == "RECEIPT"
            producer = RawClient(thread.port)
            producer.connect()
            for i in range(300):
                producer.send("SEND", {"destination": "/queue/unread", "receipt": str(i)}, b"u" * 64 * 1024)
            await asyncio.to_thread(producer.recv_all, 300)
            # Its buffers are full and nothing drains them; the broker still stops in time.
            started = time.monotonic()
            await asyncio.to_thread(thread.stop, 30)
            assert time.monotonic() - started < 20
            assert thread.broker is not None and not thread.broker.server.connections

    asyncio.run(scenario())
    assert [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")] == []


def test_a_plain_http_request_is_told_to_upgrade(ws_broker: BrokerThread) -> None:
    for base in (
        f"http://127.0.0.1:{ws_broker.ws_ports[0]}/",
        f"http://127.0.0.1:{ws_broker.http_port}/stomp",
    ):
        reply = call(base, "GET", "")
        assert reply.status == 426
        assert "STOMP over WebSocket" in reply.body


def test_a_listener_with_a_path_answers_only_there(tmp_path: Path) -> None:
    options = BrokerOptions(
        listeners=(Listener(port=0), Listener("ws", port=0, websocket=True, path="/messaging")),
        data_dir=tmp_path / "data",
    )
    thread = BrokerThread(options).start()

    async def scenario() -> None:
        async with WsSession(ws_url(thread, path="/messaging")) as stomp:
            assert (await stomp.connect()).command == "CONNECTED"
        assert await _handshake(ws_url(thread, path="/elsewhere")) == 404

    try:
        asyncio.run(scenario())
    finally:
        thread.stop()


# -- origins ---------------------------------------------------------------------


async def _handshake(url: str, tls: ssl.SSLContext | None = None, **headers: str) -> int:
    """The HTTP status of a WebSocket handshake (101 accepted, 0 no HTTP answer at all)."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers, ssl=tls if tls is not None else True) as ws:
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
        except aiohttp.ClientError:
            return 0


def test_same_origin_only_by_default(url: str) -> None:
    host = url.split("/")[2]
    port = host.rsplit(":", 1)[1]
    cases = [
        ({}, 101),  # no Origin: not a browser
        ({"Origin": f"http://{host}"}, 101),
        ({"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"}, 101),
        ({"Origin": "https://evil.example"}, 403),
        ({"Origin": f"http://127.0.0.1:{int(port) + 1}"}, 403),
        ({"Origin": "null"}, 403),
        # DNS rebinding: the attacker's name now points at 127.0.0.1, page and Host agree.
        ({"Origin": f"http://evil.example:{port}", "Host": f"evil.example:{port}"}, 403),
    ]
    for headers, status in cases:
        assert asyncio.run(_handshake(url, **headers)) == status, headers


def test_allowed_origins(tmp_path: Path) -> None:
    with running_ws_broker(
        tmp_path / "data", origins=("https://app.example.com", "http://localhost:3000")
    ) as thread:
        for url in (ws_url(thread), stomp_path_url(thread)):
            host = url.split("/")[2]
            cases = [
                ({}, 101),
                ({"Origin": "https://app.example.com"}, 101),
                ({"Origin": "https://APP.example.com:443"}, 101),
                ({"Origin": "http://localhost:3000"}, 101),
                ({"Origin": "http://app.example.com"}, 403),
                ({"Origin": "https://evil.example"}, 403),
                # Once origins are listed, only they may connect: same-origin pages too.
                ({"Origin": f"http://{host}"}, 403),
            ]
            for headers, status in cases:
                assert asyncio.run(_handshake(url, **headers)) == status, (url, headers)


def test_any_origin_when_told(tmp_path: Path) -> None:
    with running_ws_broker(tmp_path / "data", origins=("*",)) as thread:
        assert asyncio.run(_handshake(ws_url(thread), Origin="https://anywhere.example")) == 101


# -- TLS -------------------------------------------------------------------------


def test_wss_with_a_certificate(tmp_path: Path) -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    async def scenario() -> None:
        async with WsSession(ws_url(thread, "wss"), ssl=client_context, protocols=("v12.stomp",)) as stomp:
            assert stomp.ws.protocol == "v12.stomp"
            await stomp.connect()
            await stomp.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/tls"})
            await stomp.send_frame("SEND", {"destination": "/queue/tls"}, BINARY_BODY, binary=True)
            assert (await stomp.recv()).body == BINARY_BODY
        # A client that does not trust the certificate gets no further than the handshake,
        # nor does plain ws:// on the wss:// port.
        assert await _handshake(ws_url(thread, "wss"), tls=ssl.create_default_context()) == 0
        assert await _handshake(ws_url(thread, "ws")) == 0

    with running_ws_broker(tmp_path / "data", tls=server_context) as thread:
        asyncio.run(scenario())
