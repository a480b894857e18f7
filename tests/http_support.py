"""Helpers for the admin HTTP tests: a broker with its HTTP server on port 0, plain HTTP calls."""

from __future__ import annotations

import base64
import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.app import BrokerOptions
from broker.core.base.settings import CoreSettings
from broker.http.auth import HttpSecurity
from broker.io.listener import Listener
from broker.security.guard import Security
from config.model import Authentication, Authorization, AuthorizationEntry, Password, User
from tests.broker_thread import BrokerThread


def start_http_broker(
    data_dir: Path,
    security: HttpSecurity | None = None,
    http_host: str = "127.0.0.1",
    core: CoreSettings | None = None,
    listener: Listener | None = None,
) -> BrokerThread:
    options = BrokerOptions(
        listeners=(listener or Listener(port=0),),
        data_dir=data_dir,
        core=core or CoreSettings(),
        http_host=http_host,
        http_port=0,
        http_security=security or HttpSecurity(),
    )
    return BrokerThread(options).start()


def start_guarded_broker(
    data_dir: Path, users: dict[str, tuple[str, str]], entries: tuple[AuthorizationEntry, ...]
) -> BrokerThread:
    """A broker whose STOMP listener and admin server ask for ``users`` (login ->
    (password, group)) and whose destinations ``entries`` guard."""
    guard = Security(
        Authentication(
            users=tuple(
                User(login, Password("plain", password), frozenset({group}))
                for login, (password, group) in users.items()
            )
        ),
        Authorization(entries=entries),
    )
    options = BrokerOptions(
        listeners=(Listener(port=0),),
        data_dir=data_dir,
        http_port=0,
        http_security=HttpSecurity(authenticator=guard),
        guard=guard,
    )
    return BrokerThread(options).start()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = self.body["error"]
        return error


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    auth: tuple[str, str] | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    """One HTTP request; any status comes back as a Reply (no exception for 4xx/5xx)."""
    sent = dict(headers or {})
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    if auth is not None:
        sent["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return Reply(response.status, dict(response.headers), _decode(response.read()))
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, dict(exc.headers), _decode(exc.read()))


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (None if it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            # No packet is sent: connecting a UDP socket only picks the outgoing interface.
            s.connect(("192.0.2.1", 9))
            address: str = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 10.0) -> Reply:
    """``head`` (the request line and headers, CRLF-separated, without the blank line)
    sent as bytes, as no HTTP library would send them; the answer read to the close."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        length = b"Content-Length: %d\r\n" % len(body) if body else b""
        sock.sendall(head + b"\r\n" + length + b"Connection: close\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    header_block, _, payload = rest.partition(b"\r\n\r\n")
    headers = dict(
        line.decode("latin-1").split(": ", 1) for line in header_block.split(b"\r\n") if b": " in line
    )
    return Reply(int(status_line.split()[1]), headers, _decode(payload))
