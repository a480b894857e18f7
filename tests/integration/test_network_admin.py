"""What ops see of a network: each bridge's state, remote, forwarded and pending, in the
JSON API, ``stompd-admin network``, ``/metrics`` and the web console (in Chromium)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.integration.browser_support import browser, first_text
from tests.network_support import Nodes, connector, consumer, nodes, produce, wait_connected, wait_forwarding

pytestmark = pytest.mark.integration

__all__ = ["browser", "nodes"]
ROOT = Path(__file__).resolve().parents[2]


def get(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        body: bytes = response.read()
        return body


def test_bridges_in_the_api_the_command_line_and_metrics(nodes: Nodes) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("to-b", b.port, duplex="true"), http=True)
    wait_connected(a)
    on_b = consumer(b, "/queue/work")
    wait_forwarding(a, "/queue/work")
    produce(a, "/queue/work", [b"1", b"2"])
    assert [on_b.recv().body for _ in range(2)] == [b"1", b"2"]

    (bridge,) = json.loads(get(a.http_port, "/api/v1/network"))["bridges"]
    assert bridge["connector"] == "to-b" and bridge["remote"] == f"stomp://127.0.0.1:{b.port}"
    assert bridge["remote_broker"] == "B" and bridge["state"] == "connected" and bridge["duplex"] is True
    assert bridge["forwarded"] == 2 and bridge["forwarding"] == ["/queue/work"]
    assert json.loads(get(a.http_port, "/api/v1"))["network"] == "/api/v1/network"

    url = f"http://127.0.0.1:{a.http_port}"
    table = subprocess.run(
        [sys.executable, "-m", "adminctl", "--url", url, "network"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split()[:4] == ["Connector", "Remote", "Broker", "State"]
    assert header.split()[6:9] == ["Duplex", "Forwarding", "Pulling"]
    assert row.split()[:4] == ["to-b", f"stomp://127.0.0.1:{b.port}", "B", "connected"]
    # After "Connected since" (a date and a time): duplex, and what it forwards.
    assert row.split()[6:8] == ["yes", "/queue/work"]

    metrics = get(a.http_port, "/metrics").decode()
    labels = f'connector="to-b",remote="stomp://127.0.0.1:{b.port}"'
    assert f"stompd_network_bridge_up{{{labels}}} 1.0" in metrics
    assert f"stompd_network_bridge_forwarded_total{{{labels}}} 2.0" in metrics
    assert "stompd_network_duplicates_dropped_total 0.0" in metrics


@pytest.mark.browser
def test_the_console_shows_each_bridge(nodes: Nodes, browser: webdriver.Chrome) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("to-b", b.port), http=True)
    wait_connected(a)
    consumer(b, "/queue/work")
    wait_forwarding(a, "/queue/work")
    browser.get(f"http://127.0.0.1:{a.http_port}/console/#/network")
    row = f'#bridges tr[data-bridge="to-b stomp://127.0.0.1:{b.port}"]'
    WebDriverWait(browser, 20).until(lambda d: first_text(d, f"{row} td.state") == "connected")
    assert "/queue/work" in first_text(browser, row)
    nodes.stop("B")
    WebDriverWait(browser, 20).until(lambda d: first_text(d, f"{row} td.state") in ("waiting", "connecting"))
