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
from tests.network_support import (
    Nodes,
    bridges,
    connector,
    consumer,
    eventually,
    nodes,
    produce,
    wait_connected,
    wait_forwarding,
)

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
    assert header.split()[:6] == ["Connector", "Direction", "Duplex", "Remote", "Broker", "State"]
    assert row.split()[:6] == ["to-b", "outgoing", "yes", f"stomp://127.0.0.1:{b.port}", "B", "connected"]
    assert "/queue/work" in row

    metrics = get(a.http_port, "/metrics").decode()
    labels = f'connector="to-b",remote="stomp://127.0.0.1:{b.port}"'
    assert f"stompd_network_bridge_up{{{labels}}} 1.0" in metrics
    assert f"stompd_network_bridge_forwarded_total{{{labels}}} 2.0" in metrics
    assert "stompd_network_duplicates_dropped_total 0.0" in metrics


def test_the_far_end_lists_a_duplex_bridge_another_broker_opened_to_it(nodes: Nodes) -> None:
    b = nodes.start("B", http=True)
    a = nodes.start("A", connector("a-to-b", b.port, duplex="true"))
    one_way = nodes.start("C", connector("c-to-b", b.port))
    wait_connected(a)
    wait_connected(one_way)
    # A pulls /queue/back from B for its consumer, and pushes /queue/work to B's.
    on_a = consumer(a, "/queue/back")
    eventually(lambda: any("/queue/back" in br["pulling"] for br in bridges(a)), what="A pulling")
    produce(b, "/queue/back", [b"to a"])
    assert on_a.recv().body == b"to a"
    on_b = consumer(b, "/queue/work")
    wait_forwarding(a, "/queue/work")
    produce(a, "/queue/work", [b"to b"])
    assert on_b.recv().body == b"to b"

    # C's bridge is not duplex: B lists only A's, as ActiveMQ lists duplex bridges on both brokers.
    (far,) = json.loads(get(b.http_port, "/api/v1/network"))["bridges"]
    assert (far["direction"], far["remote_broker"], far["duplex"], far["state"]) == (
        "incoming",
        "A",
        True,
        "connected",
    )
    assert far["remote"].startswith("stomp://127.0.0.1:") and far["connector"] == "stomp"
    assert (far["forwarded"], far["received"], far["forwarding"]) == (1, 1, ["/queue/back"])
    table = subprocess.run(
        [sys.executable, "-m", "adminctl", "--url", f"http://127.0.0.1:{b.http_port}", "network"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    row = table.stdout.splitlines()[1].split()
    assert row[:3] == ["stomp", "incoming", "yes"] and row[4:6] == ["A", "connected"]


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


@pytest.mark.browser
def test_the_far_end_s_console_lists_the_incoming_duplex_bridge(
    nodes: Nodes, browser: webdriver.Chrome
) -> None:
    b = nodes.start("B", http=True)
    a = nodes.start("A", connector("a-to-b", b.port, duplex="true"))
    wait_connected(a)
    browser.get(f"http://127.0.0.1:{b.http_port}/console/#/network")
    row = "#bridges tr[data-bridge]"
    WebDriverWait(browser, 20).until(lambda d: first_text(d, f"{row} td.direction") == "incoming (duplex)")
    assert "A" in first_text(browser, row) and "connected" in first_text(browser, f"{row} td.state")
    # Its connection is listed apart on the Connections page, as a network bridge.
    browser.get(f"http://127.0.0.1:{b.http_port}/console/#/connections")
    group = '#connections tbody[data-connector="network bridge (A)"] tr.group'
    WebDriverWait(browser, 20).until(
        lambda d: first_text(d, group) == "network bridge (A) (stomp): 1 connection"
    )
