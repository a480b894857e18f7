"""The destination page's chart in headless Chromium: the broker's history first (a time
axis with labels and gridlines, depth and rates on axes of their own), then live samples.
A failing test leaves a screenshot of the page (the ``browser`` fixture)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.integration.browser_support import SEE_WITHIN, browser, stat
from tests.integration.history_support import sample_at

pytestmark = [pytest.mark.integration, pytest.mark.browser]

__all__ = ["browser"]  # the fixture, shared with test_console_browser


def texts(driver: webdriver.Chrome, css: str) -> list[str]:
    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return [str(node.text or node.get_attribute("textContent")) for node in found]
    except StaleElementReferenceException:
        return []


def history_drawn(driver: webdriver.Chrome) -> int:
    """How many of the broker's samples the chart drew."""
    try:
        return int(driver.find_element(By.ID, "dest-chart").get_attribute("data-history-samples") or 0)
    except StaleElementReferenceException:
        return 0


def test_a_destination_page_draws_the_brokers_history_on_a_time_axis(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    check_the_chart(http_broker, browser)


def check_the_chart(http_broker: BrokerThread, page: webdriver.Chrome) -> None:
    console = f"http://127.0.0.1:{http_broker.http_port}/console/"
    queue_page = f"{console}#/destination/{quote('/queue/charted', safe='')}"
    wait = WebDriverWait(page, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))
    sample_at(http_broker, 3)
    with client(http_broker.port) as producer:
        for i in range(40):
            producer.send("/queue/charted", f"m{i}", sync=i == 39)
        sample_at(http_broker, 2)
        with client(http_broker.port) as consumer:
            consumer.subscribe("/queue/charted", "1", ack="auto")
            consumer.listener.wait_messages(40)
        sample_at(http_broker, 1)

    page.get(queue_page)
    wait.until(lambda d: stat(d, "enqueued") == "40")
    chart = page.find_element(By.ID, "dest-chart")
    # What the broker kept, drawn before any poll of the page could make a rate.
    wait.until(lambda d: history_drawn(d) >= 2)
    # A time axis: clock labels under gridlines.
    times = texts(page, "#dest-chart text.time-tick")
    assert times and all(re.fullmatch(r"\d\d:\d\d", t) for t in times), times
    assert len(page.find_elements(By.CSS_SELECTOR, "#dest-chart line.grid")) >= len(times) + 4
    # Depth on the left axis (40 at the top: 4 steps of 10), rates on the right (4/s: the
    # 40 that came in over 10 s), each with its title.
    assert texts(page, "#dest-chart text.depth-tick") == ["0", "10", "20", "30", "40"]
    assert texts(page, "#dest-chart text.rate-tick") == ["0/s", "1/s", "2/s", "3/s", "4/s"]
    assert texts(page, "#dest-chart text.axis-title") == ["depth", "messages/s"]
    for line in ("depth", "in", "out"):
        points = page.find_element(By.CSS_SELECTOR, f"#dest-chart polyline.{line}").get_attribute("points")
        assert points and len(points.split()) >= 2, (line, points)
    assert "broker history from" in page.find_element(By.ID, "dest-chart-scale").text

    # Live samples are appended after it; going to another page and back makes no rate
    # from two polls a moment apart: the scale stays what the traffic made it.
    wait.until(lambda d: int(chart.get_attribute("data-live-samples") or 0) >= 2)
    for _ in range(3):
        page.get(console)
        page.get(queue_page)
    wait.until(lambda d: history_drawn(d) >= 2)
    assert texts(page, "#dest-chart text.rate-tick")[-1] == "4/s"
    severe = [entry for entry in page.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []


def test_two_polls_a_moment_apart_make_no_rate_in_the_destinations_table(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    """A page change polls at once, a moment after the last poll: 10 messages counted
    50 ms apart would read as 200/s."""
    browser.get(f"http://127.0.0.1:{http_broker.http_port}/console/")
    WebDriverWait(browser, SEE_WITHIN).until(
        lambda d: d.execute_script("return typeof record === 'function' && typeof latest === 'function'")
    )
    rates = browser.execute_script(
        """
        const d = (n) => ({ name: "/queue/spiky", kind: "queue", depth: 0, enqueued: n, dequeued: n });
        record([d(0)], 100000);
        record([d(20)], 102000);   // 20 in 2 s
        const steady = latest("/queue/spiky").inRate;
        record([d(30)], 102050);   // 10 more, 50 ms later
        const after = latest("/queue/spiky").inRate;
        record([d(30)], 104000);   // the next regular poll
        return [steady, after, latest("/queue/spiky").inRate];
        """
    )
    assert rates == [10, 10, 5]
