"""``stompd --ws-port / --wss-port / --ws-allowed-origins / --http-static-dir`` on the real
broker process."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

from tests.broker_process import ROOT, wait_for_port
from tests.http_support import call
from tests.ports import free_port
from tests.ws_support import WsSession

pytestmark = pytest.mark.integration


def stompd(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "broker", "--data-dir", str(tmp_path / "data"), "--http-port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes]) -> str:
    proc.terminate()
    output = proc.communicate(timeout=15)[0].decode()
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    return output


async def round_trip(url: str, **kwargs: object) -> bytes:
    async with WsSession(url, **kwargs) as stomp:
        await stomp.connect()
        await stomp.send_frame("SUBSCRIBE", {"id": "1", "destination": "/queue/flags"})
        await stomp.send_frame("SEND", {"destination": "/queue/flags"}, b"over the flag's port")
        return (await stomp.recv()).body


def test_ws_and_wss_ports(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    port, ws_port, wss_port = free_port(), free_port(), free_port()
    proc = stompd(
        tmp_path,
        "--port",
        str(port),
        "--ws-port",
        str(ws_port),
        "--wss-port",
        str(wss_port),
        "--wss-cert",
        str(cert_file),
        "--wss-key",
        str(key_file),
    )
    try:
        wait_for_port(port)
        assert asyncio.run(round_trip(f"ws://127.0.0.1:{ws_port}/")) == b"over the flag's port"
        trusting = ssl.create_default_context()
        ca.configure_trust(trusting)
        assert (
            asyncio.run(round_trip(f"wss://127.0.0.1:{wss_port}/", ssl=trusting)) == b"over the flag's port"
        )
    finally:
        output = stop(proc)
    assert (
        f"stompd listening on 127.0.0.1:{port}, ws://127.0.0.1:{ws_port}/, wss://127.0.0.1:{wss_port}/ "
        in output
    )


def test_websocket_is_off_unless_asked_for(tmp_path: Path) -> None:
    port = free_port()
    proc = stompd(tmp_path, "--port", str(port))
    try:
        wait_for_port(port)
    finally:
        output = stop(proc)
    assert f"stompd listening on 127.0.0.1:{port} (data dir " in output


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (["--wss-port", "0"], "--wss-port needs --wss-cert", 2),
        (["--ws-allowed-origins", "example.com"], "'example.com' is not an origin", 2),
        (["--ws-port", "65536"], "--ws-port must be 0-65535", 2),
        (
            ["--wss-port", "0", "--wss-cert", "/nonexistent.pem"],
            "cannot load the TLS certificates for wss://127.0.0.1:0: certificateFile /nonexistent.pem "
            "does not exist",
            1,
        ),
        (["--http-static-dir", "/nonexistent"], "staticDirectory /nonexistent is not a directory", 1),
    ],
)
def test_bad_websocket_flags_are_named(tmp_path: Path, args: list[str], message: str, status: int) -> None:
    proc = stompd(tmp_path, "--port", "0", *args)
    output = proc.communicate(timeout=15)[0].decode()
    assert proc.returncode == status
    assert message in output
    assert "Traceback" not in output


def test_a_taken_ws_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ws_port = taken.getsockname()[1]
        proc = stompd(tmp_path, "--port", str(free_port()), "--ws-port", str(ws_port))
        output = proc.communicate(timeout=20)[0].decode()
    assert proc.returncode == 1
    assert f"stompd: cannot listen on ws://127.0.0.1:{ws_port}" in output
    assert "Traceback" not in output


def test_allowed_origins_and_static_dir(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "app.html").write_text("<p>an operator's page</p>")
    port, http_port, ws_port = free_port(), free_port(), free_port()
    proc = stompd(
        tmp_path,
        "--port",
        str(port),
        "--http-port",
        str(http_port),
        "--http-static-dir",
        str(site),
        "--ws-port",
        str(ws_port),
        "--ws-allowed-origins",
        f"http://127.0.0.1:{http_port}, https://app.example.com",
    )
    try:
        wait_for_port(port)
        page = call(f"http://127.0.0.1:{http_port}", "GET", "/static/app.html")
        assert (page.status, page.body) == (200, "<p>an operator's page</p>")
        # Not the console's page policy: the operator's page may open a WebSocket elsewhere.
        assert "Content-Security-Policy" not in page.headers
        for origin in (f"http://127.0.0.1:{http_port}", "https://app.example.com"):
            got = asyncio.run(round_trip(f"ws://127.0.0.1:{ws_port}/", headers={"Origin": origin}))
            assert got == b"over the flag's port"
        with pytest.raises(Exception, match="403"):
            asyncio.run(round_trip(f"ws://127.0.0.1:{ws_port}/", headers={"Origin": "https://evil.example"}))
    finally:
        stop(proc)
