"""``stompd --http-host/--http-port``: the admin server of the real broker process."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.http_support import call
from tests.integration.test_server import ROOT, free_port, wait_for_port

pytestmark = pytest.mark.integration


def test_the_broker_process_serves_the_admin_api_on_its_http_port(tmp_path: Path) -> None:
    port, http_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path),
            "--http-port",
            str(http_port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        health = call(f"http://127.0.0.1:{http_port}", "GET", "/health")
        assert (health.status, health.body["status"]) == (200, "ok")
        assert call(f"http://127.0.0.1:{http_port}", "GET", "/api/v1/destinations").body == {
            "destinations": []
        }
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0].decode()
    assert proc.returncode == 0
    assert f"admin console on http://127.0.0.1:{http_port}/console/" in output


def test_a_taken_admin_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http_port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "broker",
                "--port",
                str(free_port()),
                "--data-dir",
                str(tmp_path),
                "--http-port",
                str(http_port),
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=20,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{http_port} (admin HTTP)".encode() in result.stderr
    assert b"--http-port 0 turns the admin server off" in result.stderr
    assert b"Traceback" not in result.stderr


def test_http_port_0_turns_it_off(tmp_path: Path) -> None:
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
            "--http-port",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0].decode()
    assert proc.returncode == 0
    assert "stompd listening on" in output
    assert "admin console" not in output
