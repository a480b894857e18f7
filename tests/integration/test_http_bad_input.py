"""Bad bytes at the admin server get a clear 400, never a 500, and leave no traceback in
the broker's log: a header that is not UTF-8, credentials that are not ASCII, a JSON body
with a lone surrogate, a request aiohttp cannot even read."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.http_support import call, raw_request
from tests.three_users import start_three_users

pytestmark = pytest.mark.integration

ADMIN = b"Authorization: Basic " + base64.b64encode(b"admin:admin-pw")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_three_users(tmp_path)
    try:
        yield thread
    finally:
        thread.stop()


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logged = [(r.name, r.getMessage()) for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not logged, logged


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (b"Authorization: Basic \xff\xfe", "Authorization"),
        (b"Authorization: Basic " + base64.b64encode(b"adm\xffin:admin-pw"), None),
        (b"X-Note: caf\xe9", "X-Note"),
        (b"Origin: http://\xff.example", "Origin"),
    ],
)
def test_a_header_that_is_not_utf8(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture, header: bytes, named: str | None
) -> None:
    head = b"GET /api/v1/usage HTTP/1.1\r\nHost: 127.0.0.1\r\n" + header
    if not header.startswith(b"Authorization"):
        head += b"\r\n" + ADMIN
    reply = raw_request(broker.http_port, head)
    if named is None:
        # Base64 of bytes that are not UTF-8: no credentials the broker can read.
        assert reply.status == 401, reply
        assert reply.headers["WWW-Authenticate"].startswith('Basic realm="stompd"')
    else:
        assert reply.status == 400, reply
        assert reply.error == {
            "status": 400,
            "code": "bad_request",
            "message": f"the {named} header is not UTF-8",
        }
    _no_traceback(caplog)


def test_credentials_that_are_not_ascii_are_wrong_credentials(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    head = b"GET /api/v1/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic \xc3\xa9t\xc3\xa9"
    reply = raw_request(broker.http_port, head)
    assert reply.status == 401, reply
    assert reply.headers["WWW-Authenticate"].startswith('Basic realm="stompd"')
    _no_traceback(caplog)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/destinations", b'{"name": "/queue/ORDERS.\\ud800"}'),
        ("/api/v1/destinations/ORDERS.IN/messages", b'{"body": "half a pair: \\udc00"}'),
        ("/api/v1/destinations/ORDERS.IN/messages", b'{"headers": {"k\\ud83d": "v"}}'),
        ("/api/v1/destinations/ORDERS.IN/move", b'{"to": "/queue/\\ud800"}'),
    ],
)
def test_a_json_body_with_a_lone_surrogate(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture, path: str, body: bytes
) -> None:
    url = f"http://127.0.0.1:{broker.http_port}"
    assert (
        call(
            url, "POST", "/api/v1/destinations", {"name": "/queue/ORDERS.IN"}, auth=("admin", "admin-pw")
        ).status
        == 201
    )
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s" % (
        path.encode(),
        ADMIN,
    )
    reply = raw_request(broker.http_port, head, body)
    assert reply.status == 400, reply
    assert reply.error["code"] == "invalid"
    assert "not Unicode (a lone surrogate" in reply.error["message"]
    _no_traceback(caplog)


@pytest.mark.parametrize(
    "head",
    [
        b"GET /api/v1/destinations/\xff HTTP/1.1\r\nHost: 127.0.0.1",
        b"GET /api/v1/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"x" * 20_000,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        b"GET /api/v1/usage HTTP/1.1\r\nHost 127.0.0.1",
    ],
    ids=["url", "long-header", "tls-hello", "no-colon"],
)
def test_a_request_that_cannot_be_read_is_a_400_and_one_line(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture, head: bytes
) -> None:
    caplog.set_level(logging.INFO, "aiohttp.server")
    reply = raw_request(broker.http_port, head)
    assert reply.status == 400, reply
    _no_traceback(caplog)
