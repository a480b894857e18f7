"""The server process: CLI, slow consumers, graceful shutdown."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker_process import run_broker, wait_for_port
from tests.clients import client
from tests.conftest import BrokerServer
from tests.ports import free_port
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_slow_consumer_does_not_make_the_broker_buffer_in_sockets(broker_server: BrokerServer) -> None:
    slow = RawClient(broker_server.port)
    slow.connect()
    slow.send("SUBSCRIBE", {"destination": "/queue/slow", "id": "1", "receipt": "s"})
    assert slow.recv().command == "RECEIPT"
    # 32 MB: far more than the kernel's socket buffers (a few MB on loopback) can absorb.
    body = "x" * 4096
    with client(broker_server.port) as p:
        for _ in range(8000):
            p.send("/queue/slow", body)
        p.sync()
    queue = broker_server.engine.queues["/queue/slow"]
    # The consumer reads nothing: most messages must wait in the queue, not in buffers.
    assert queue.cursor.count > 3000
    # Once it reads, everything arrives.
    received = 0
    while received < 8000:
        frame = slow.recv(5)
        assert frame.command == "MESSAGE"
        received += 1
    assert queue.cursor.count == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    proc = run_broker(port, tmp_path / "data")
    try:
        wait_for_port(port)
        raw = RawClient(port)
        raw.connect()
        proc.send_signal(sig)
        output = proc.communicate(timeout=10)[0].decode()
        assert proc.returncode == 0
        assert raw.closed_by_peer()
        assert "shutting down" in output
        assert "Traceback" not in output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "broker",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path),
                "--http-port",
                "0",
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=20,
        )
    assert result.returncode == 1
    assert b"cannot listen" in result.stderr
    assert b"Traceback" not in result.stderr


def test_console_script_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "broker", "--help"], capture_output=True, timeout=20, cwd=ROOT
    )
    assert result.returncode == 0
    assert b"--data-dir" in result.stdout


def test_uvloop_is_used(broker_server: BrokerServer) -> None:
    assert type(broker_server.thread.loop).__module__.startswith("uvloop")
    assert os.environ.get("STOMPD_NO_UVLOOP") is None


def test_header_limits_are_configurable(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path),
            "--max-headers",
            "3",
            "--http-port",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        raw = RawClient(port)
        raw.connect()
        raw.send("SEND", {"destination": "/queue/h", "a": "1", "b": "2", "c": "3", "d": "4"}, b"x")
        error = raw.recv()
        assert error.command == "ERROR"
        assert "3" in error.body.decode()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("http", [False, True])
def test_a_broker_without_http_loads_neither_aiohttp_nor_cryptography(tmp_path: Path, http: bool) -> None:
    # About 12 MB of RSS for aiohttp and 9 MB for cryptography, which only the admin
    # server (and WebSocket listeners) and TLS need.
    port = free_port()
    broker = run_broker(port, tmp_path, free_port() if http else 0)
    try:
        wait_for_port(port)
        with open(f"/proc/{broker.pid}/maps") as maps:
            mapped = maps.read()
    finally:
        broker.terminate()
        broker.communicate(timeout=20)
    assert ("/aiohttp/" in mapped) is http
    assert "/cryptography/" not in mapped
