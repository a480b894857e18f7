"""``stompd --http-host/--http-port``: the admin server of the real broker process."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.broker_process import run_broker, wait_for_port
from tests.http_support import call
from tests.ports import free_port

pytestmark = pytest.mark.integration


def run_until_listening(tmp_path: Path, http_port: int) -> tuple[int, str]:
    """Start the broker, wait for its STOMP port, stop it: (exit status, output)."""
    port = free_port()
    proc = run_broker(port, tmp_path, http_port)
    try:
        wait_for_port(port)
        if http_port:
            health = call(f"http://127.0.0.1:{http_port}", "GET", "/health")
            assert (health.status, health.body["status"]) == (200, "ok")
            listed = call(f"http://127.0.0.1:{http_port}", "GET", "/api/v1/destinations")
            assert listed.body == {"destinations": []}
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0].decode()
    return proc.returncode, output


def test_the_broker_process_serves_the_admin_api_on_its_http_port(tmp_path: Path) -> None:
    http_port = free_port()
    status, output = run_until_listening(tmp_path, http_port)
    assert status == 0
    assert f"admin console on http://127.0.0.1:{http_port}/console/" in output


def test_http_port_0_turns_it_off(tmp_path: Path) -> None:
    status, output = run_until_listening(tmp_path, 0)
    assert status == 0
    assert "stompd listening on" in output
    assert "admin console" not in output


def test_a_taken_admin_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http_port = taken.getsockname()[1]
        proc = run_broker(free_port(), tmp_path, http_port)
        output = proc.communicate(timeout=20)[0]
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{http_port} (admin HTTP)".encode() in output
    assert b"--http-port 0 turns the admin server off" in output
    assert b"Traceback" not in output
