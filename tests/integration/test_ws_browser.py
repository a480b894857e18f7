"""stomp.js in a real browser: Debian's headless Chromium loads a page served by stompd
(the admin server's --http-static-dir, pointed at tests/js where npm installed stomp.js)
that sends and receives over WebSocket, and the test reads the result from the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.broker_thread import BrokerThread
from tests.integration.browser_support import browser  # noqa: F401 (the Chromium fixture)
from tests.ports import free_port
from tests.stomp_raw import RawClient
from tests.ws_support import running_ws_broker

pytestmark = [pytest.mark.integration, pytest.mark.browser]

JS_DIR = Path(__file__).resolve().parent.parent / "js"
PAGE = "/static/browser/stomp-page.html"
ECHO_BINARY = ",".join(str(i) for i in range(256))


@pytest.fixture
def page_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    if not (JS_DIR / "node_modules" / "@stomp" / "stompjs").is_dir():
        pytest.fail("tests/js/node_modules is missing: run scripts/setup-tests.sh (npm ci)")
    with running_ws_broker(tmp_path / "data", static_dir=JS_DIR) as thread:
        yield thread


def page_result(driver: webdriver.Chrome, url: str) -> dict[str, Any]:
    driver.get(url)
    try:
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-done")
        )
    except TimeoutException:
        state = driver.execute_script("return JSON.stringify(result)")
        raise AssertionError(f"the page did not finish: {state}; {driver.get_log('browser')}") from None
    result: dict[str, Any] = json.loads(driver.find_element(By.ID, "result").text)
    return result


def test_a_page_talks_stomp_over_websocket_with_a_tcp_client(
    page_broker: BrokerThread,
    browser: webdriver.Chrome,  # noqa: F811
) -> None:
    tcp = RawClient(page_broker.port)
    tcp.connect()
    tcp.send(
        "SEND", {"destination": "/queue/browser.in", "colour": "red", "receipt": "r"}, "from TCP ✓".encode()
    )
    assert tcp.recv().command == "RECEIPT"

    # Same origin: the page and /stomp on the admin server's port.
    result = page_result(browser, f"http://127.0.0.1:{page_broker.http_port}{PAGE}")
    assert (result["connected"], result["version"], result["subprotocol"]) == (True, "1.2", "v12.stomp")
    assert sorted(result["received"], key=lambda r: (r["destination"], r["body"])) == [
        {"destination": "/queue/browser.echo", "body": ECHO_BINARY},
        {"destination": "/queue/browser.echo", "body": "echo żółw 🐢"},
        {"destination": "/queue/browser.in", "body": "from TCP ✓", "colour": "red"},
    ]
    assert "error" not in result

    tcp.send("SUBSCRIBE", {"destination": "/queue/browser.out", "id": "1"})
    message = tcp.recv()
    assert (message.body, message.headers["colour"]) == (b"from the page", "green")

    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []


def test_a_page_from_another_origin_is_refused_unless_allowed(
    tmp_path: Path,
    browser: webdriver.Chrome,  # noqa: F811
) -> None:
    # The page comes from the admin server's port; the broker's ws:// port is another
    # origin. Not allowed by default: the handshake is refused (403), stomp.js sees 1006.
    http_port = free_port()
    with running_ws_broker(tmp_path / "a", static_dir=JS_DIR, http_port=http_port) as refusing:
        url = f"http://127.0.0.1:{http_port}{PAGE}?url=ws://127.0.0.1:{refusing.ws_ports[0]}/"
        result = page_result(browser, url)
        assert (result["connected"], result["closeCode"]) == (False, 1006)

    # Allowed by name: the same page works.
    http_port = free_port()
    origin = f"http://127.0.0.1:{http_port}"
    with running_ws_broker(
        tmp_path / "b", static_dir=JS_DIR, http_port=http_port, origins=(origin,)
    ) as allowing:
        url = f"http://127.0.0.1:{http_port}{PAGE}?expect=2&url=ws://127.0.0.1:{allowing.ws_ports[0]}/"
        result = page_result(browser, url)
        assert result["connected"] is True
        assert len(result["received"]) == 2
