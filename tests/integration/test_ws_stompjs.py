"""stomp.js (@stomp/stompjs from npm, under Node with the ``ws`` package) against stompd
over WebSocket: each test runs one scenario of tests/js/stompjs_scenarios.mjs as a
subprocess and checks the JSON it prints.

scripts/setup-tests.sh installs node and npm (Debian) and runs ``npm ci`` in tests/js.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import IO, Any

import pytest

from tests.broker_thread import BrokerThread
from tests.stomp_raw import RawClient
from tests.ws_support import start_ws_broker, stomp_path_url, ws_url

pytestmark = pytest.mark.integration

JS_DIR = Path(__file__).resolve().parent.parent / "js"
SCRIPT = JS_DIR / "stompjs_scenarios.mjs"
TIMEOUT = 60


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None or not (JS_DIR / "node_modules" / "@stomp" / "stompjs").is_dir():
        pytest.fail("node or tests/js/node_modules is missing: run scripts/setup-tests.sh (nodejs, npm ci)")
    return path


def read_json_line(stream: IO[str]) -> dict[str, Any]:
    line = stream.readline()
    assert line, "the stomp.js scenario ended without a result"
    parsed: dict[str, Any] = json.loads(line)
    assert "error" not in parsed, parsed["error"]
    return parsed


def run_scenario(node: str, scenario: str, url: str) -> Any:
    done = subprocess.run(
        [node, str(SCRIPT), scenario, url], cwd=JS_DIR, capture_output=True, text=True, timeout=TIMEOUT
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"stomp.js {scenario} failed:\n{done.stdout}\n{done.stderr}"
    result = json.loads(lines[-1])
    assert "error" not in result, result["error"]
    return result["result"]


def test_connect_with_each_protocol_version(node: str, ws_broker: BrokerThread) -> None:
    assert run_scenario(node, "versions", ws_url(ws_broker)) == [
        {"version": version, "subprotocol": f"v1{minor}.stomp", "body": f"hello {version}", "colour": "blue"}
        for minor, version in enumerate(["1.0", "1.1", "1.2"])
    ]


def test_the_admin_servers_stomp_path_serves_stomp_js_too(node: str, ws_broker: BrokerThread) -> None:
    assert [r["version"] for r in run_scenario(node, "versions", stomp_path_url(ws_broker))] == [
        "1.0",
        "1.1",
        "1.2",
    ]


def test_ack_and_nack(node: str, ws_broker: BrokerThread) -> None:
    # (body, redelivered) in delivery order: m2 NACKed, then redelivered and ACKed.
    assert run_scenario(node, "acks", ws_url(ws_broker)) == [
        ["m1", False],
        ["m2", False],
        ["m3", False],
        ["m2", True],
    ]


def test_transactions(node: str, ws_broker: BrokerThread) -> None:
    assert run_scenario(node, "transactions", ws_url(ws_broker)) == ["tx1-a", "tx1-b", "end"]


def test_receipts(node: str, ws_broker: BrokerThread) -> None:
    assert run_scenario(node, "receipts", ws_url(ws_broker)) == ["sub-1", "send-1"]


def test_heart_beats(node: str, ws_broker: BrokerThread) -> None:
    result = run_scenario(node, "heartbeats", ws_url(ws_broker))
    assert result["negotiated"] == "500,500"
    # 2.5 s at 500 ms: the broker sent heart-beats, and stomp.js's kept it from closing.
    assert result["received"] >= 3
    assert result["closedEarly"] is None


def test_large_and_binary_bodies_whole_and_split_over_messages(node: str, ws_broker: BrokerThread) -> None:
    result = run_scenario(node, "bodies", ws_url(ws_broker))
    for how in ("whole", "split"):
        assert result[how] == {
            "text": True,
            "textBytes": 13 * 65536,
            "binary": True,
            "binaryLength": 1 << 20,
            "contentLength": str(1 << 20),
        }, how


def test_an_error_reaches_on_stomp_error_and_the_close_code_the_client(
    node: str, ws_broker: BrokerThread
) -> None:
    assert run_scenario(node, "error", ws_url(ws_broker)) == {
        "refused": "invalid destination",
        "after": "still here",
        "message": "invalid header",
        "code": 1008,
        "reason": "invalid header",
    }


def test_stomp_js_and_a_tcp_client_exchange_binary_bodies_and_headers(
    node: str, ws_broker: BrokerThread
) -> None:
    to_js = bytes((i * 13) % 256 for i in range(5000))
    tcp = RawClient(ws_broker.port)
    tcp.connect()
    tcp.send("SEND", {"destination": "/queue/tcp.to-js", "colour": "red", "receipt": "r"}, to_js)
    assert tcp.recv().command == "RECEIPT"

    result = run_scenario(node, "exchange", ws_url(ws_broker))
    assert result["received"] == {
        "sha256": hashlib.sha256(to_js).hexdigest(),
        "length": 5000,
        "colour": "red",
    }

    tcp.send("SUBSCRIBE", {"destination": "/queue/js.to-tcp", "id": "1"})
    message = tcp.recv()
    assert hashlib.sha256(message.body).hexdigest() == result["sent"]["sha256"]
    assert message.headers["content-length"] == "4096"
    assert (message.headers["colour"], message.headers["with-colon"], message.headers["unicode"]) == (
        "green",
        "a:b",
        "żółw",
    )


def test_reconnect_after_the_broker_restarts(node: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start_ws_broker(data)
    port = first.ws_ports[0]
    proc = subprocess.Popen(
        [node, str(SCRIPT), "reconnect", ws_url(first)],
        cwd=JS_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second: BrokerThread | None = None
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert read_json_line(proc.stdout) == {"event": "restart-me"}
        first.stop()
        # Same data directory (the persistent message is in its store), same ws port.
        second = start_ws_broker(data, ws_port=port)
        proc.stdin.write("restarted\n")
        proc.stdin.flush()
        result = read_json_line(proc.stdout)["result"]
        assert result == {"connects": 2, "body": "kept", "persistent": "true"}
        assert proc.wait(TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        first.stop()
        if second is not None:
            second.stop()
