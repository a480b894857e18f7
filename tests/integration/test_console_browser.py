"""The web console in a real browser: Debian's headless Chromium driven by selenium.

scripts/setup-tests.sh installs ``chromium`` and ``chromium-driver``; the browser starts
with a fresh profile and everything that could reach the network turned off.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.integration.browser_support import SEE_WITHIN, cell, first_text, stat
from tests.integration.browser_support import browser as browser  # the fixture

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_the_console_shows_depth_changes_and_runs_operations(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    url = f"http://127.0.0.1:{http_broker.http_port}/console/"
    # The page re-renders its tables every second: an element found may be replaced
    # before it is read, and the wait then looks again.
    wait = WebDriverWait(browser, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))
    with client(http_broker.port) as producer:
        for i in range(3):
            producer.send("/queue/console.test", f"m{i}", sync=True, n=str(i))
        browser.get(url)
        assert browser.title == "stompd console"
        wait.until(lambda d: cell(d, "/queue/console.test", "depth") == "3")
        wait.until(lambda d: cell(d, "/queue/console.test", "enqueued") == "3")
        wait.until(lambda d: gauges(d) == ["memory", "store", "temp"])
        wait.until(
            lambda d: "memory:" in (text := first_text(d, "#gauges [data-gauge]")) and "of 1.0 GiB" in text
        )

        # The table follows the queue as messages arrive and leave.
        for i in range(3, 8):
            producer.send("/queue/console.test", f"m{i}", sync=True, n=str(i))
        wait.until(lambda d: cell(d, "/queue/console.test", "depth") == "8")
        with client(http_broker.port) as consumer:
            consumer.subscribe("/queue/console.test", "c", ack="auto", **{"activemq.prefetchSize": "1"})
            consumer.listener.wait_messages(8)
            wait.until(lambda d: cell(d, "/queue/console.test", "depth") == "0")
            assert cell(browser, "/queue/console.test", "dequeued") == "8"
            assert cell(browser, "/queue/console.test", "consumers") == "1"
        # Each row carries its depth chart.
        assert browser.find_elements(
            By.CSS_SELECTOR, '#destinations tr[data-dest="/queue/console.test"] svg.spark polyline'
        )

        # The queue page: statistics, the chart, and the operations with a confirmation.
        producer.send("/queue/console.test", "again", sync=True, n="9")
        browser.find_element(By.LINK_TEXT, "/queue/console.test").click()
        wait.until(lambda d: d.find_element(By.ID, "dest-title").text == "/queue/console.test (queue)")
        wait.until(lambda d: stat(d, "depth") == "1")
        assert stat(browser, "enqueued") == "9"
        assert browser.find_elements(By.CSS_SELECTOR, "#dest-chart polyline.depth")

    # A bad selector is shown where it is wrong, not thrown away.
    browser.find_element(By.ID, "browse-selector").send_keys("n >")
    browser.find_element(By.CSS_SELECTOR, "#browse-form button[type=submit]").click()
    wait.until(lambda d: "position 3" in d.find_element(By.ID, "browse-result").text)

    Select(browser.find_element(By.ID, "op-kind")).select_by_value("move")
    browser.find_element(By.ID, "op-target").send_keys("/queue/elsewhere")
    browser.find_element(By.ID, "op-selector").send_keys("n = 9")
    browser.find_element(By.CSS_SELECTOR, "#op-form button[type=submit]").click()
    dialog = browser.find_element(By.ID, "confirm")
    wait.until(lambda d: dialog.get_attribute("open") is not None)
    assert "move every message matching n = 9 from /queue/console.test to /queue/elsewhere" in dialog.text
    browser.find_element(By.ID, "confirm-ok").click()
    # The move runs on the broker: the result line, then both depths change.
    wait.until(lambda d: "moved 1" in first_text(d, "#op-result"))
    assert "move /queue/console.test → /queue/elsewhere: done" in first_text(browser, "#op-result")
    wait.until(lambda d: stat(d, "depth") == "0")
    browser.get(url)
    wait.until(lambda d: cell(d, "/queue/elsewhere", "depth") == "1")
    assert cell(browser, "/queue/console.test", "depth") == "0"
    dialog = browser.find_element(By.ID, "confirm")

    # Connections page: listed, and closed with the row's button (after a confirmation).
    browser.get(url + "#/connections")
    with client(http_broker.port, headers={"client-id": "from-the-test"}) as watched:
        wait.until(lambda d: "from-the-test" in d.find_element(By.ID, "connections").text)
        wait.until(close_button_clicked)
        wait.until(lambda d: dialog.get_attribute("open") is not None)
        browser.find_element(By.ID, "confirm-ok").click()
        assert watched.listener.disconnected.wait(SEE_WITHIN)
        wait.until(lambda d: "from-the-test" not in d.find_element(By.ID, "connections").text)

    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    # The 400 answer above is logged by Chromium as a failed fetch; nothing else may be
    # (no missing file, no CSP violation, no script error).
    expected = ("status of 400 (Bad Request)",)
    assert [e for e in severe if not e["message"].endswith(expected)] == []


def gauges(driver: webdriver.Chrome) -> list[str | None]:
    return [
        g.get_attribute("data-gauge") for g in driver.find_elements(By.CSS_SELECTOR, "#gauges [data-gauge]")
    ]


def close_button_clicked(driver: webdriver.Chrome) -> bool:
    """Click "close" on the watched connection's row (a refresh may replace the row first)."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#connections tr")
    for row in rows:
        if "from-the-test" in row.text:
            row.find_element(By.CSS_SELECTOR, "button.close").click()
            return True
    return False


def test_a_destination_page_can_be_opened_by_its_address(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    with client(http_broker.port) as producer:
        producer.send("/queue/deep.link", "x", sync=True)
    browser.get(
        f"http://127.0.0.1:{http_broker.http_port}/console/#/destination/{quote('/queue/deep.link', safe='')}"
    )
    WebDriverWait(browser, SEE_WITHIN).until(lambda d: stat(d, "depth") == "1")


def test_the_scheduled_page_lists_jobs_and_removes_one(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = WebDriverWait(browser, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))
    with client(http_broker.port) as producer:
        producer.send("/queue/jobs", "noon", sync=True, AMQ_SCHEDULED_CRON="0 12 * * *")
        producer.send("/queue/jobs", "in an hour", sync=True, AMQ_SCHEDULED_DELAY="3600000")
    browser.get(f"http://127.0.0.1:{http_broker.http_port}/console/#/scheduled")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#scheduled tr[data-job]")) == 2)
    table = browser.find_element(By.ID, "scheduled").text
    assert "0 12 * * *" in table and "in an hour" in table and "/queue/jobs" in table

    def remove_clicked(driver: webdriver.Chrome) -> bool:
        for row in driver.find_elements(By.CSS_SELECTOR, "#scheduled tr[data-job]"):
            if "0 12 * * *" in row.text:
                row.find_element(By.CSS_SELECTOR, "button.remove").click()
                return True
        return False

    wait.until(remove_clicked)
    dialog = browser.find_element(By.ID, "confirm")
    wait.until(lambda d: dialog.get_attribute("open") is not None)
    assert "never fires again" in dialog.text
    browser.find_element(By.ID, "confirm-ok").click()
    wait.until(lambda d: "removed ID-" in first_text(d, "#scheduled-result"))
    wait.until(lambda d: "0 12 * * *" not in d.find_element(By.ID, "scheduled").text)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#scheduled tr[data-job]")) == 1
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
