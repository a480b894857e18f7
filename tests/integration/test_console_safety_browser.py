"""The console, in headless Chromium, where an operator's slip must cost nothing: a move
to a topic is refused on the page with the broker's reason and the messages stay; the
Producers column is the broker's count (/metrics' stompd_destination_producers).  A
failing test leaves a screenshot in test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.integration.test_console_browser import SEE_WITHIN, browser, cell, first_text, stat

pytestmark = [pytest.mark.integration, pytest.mark.browser]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
__all__ = ["browser"]  # the fixture, shared with test_console_browser


@pytest.fixture
def page(browser: webdriver.Chrome, request: pytest.FixtureRequest) -> Iterator[webdriver.Chrome]:
    """``browser``, with a screenshot of the page kept if the test fails."""
    failed = request.session.testsfailed
    yield browser
    if request.session.testsfailed > failed:
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))


def test_a_move_to_a_topic_is_refused_on_the_page(http_broker: BrokerThread, page: webdriver.Chrome) -> None:
    wait = WebDriverWait(page, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))
    url = f"http://127.0.0.1:{http_broker.http_port}/console/"
    with client(http_broker.port) as producer:
        producer.send("/queue/orders", "eu", sync=True, region="EU")
        producer.send("/queue/orders", "us", sync=True, region="US")
        page.get(url)
        # The open producer connection is counted, as /metrics counts it.
        wait.until(lambda d: cell(d, "/queue/orders", "depth") == "2")
        wait.until(lambda d: cell(d, "/queue/orders", "producers") == "1")
    wait.until(lambda d: cell(d, "/queue/orders", "producers") == "0")

    page.find_element(By.LINK_TEXT, "/queue/orders").click()
    wait.until(lambda d: stat(d, "depth") == "2")
    assert stat(page, "producers") == "0"
    Select(page.find_element(By.ID, "op-kind")).select_by_value("move")
    page.find_element(By.ID, "op-target").send_keys("/topic/whatever")
    page.find_element(By.ID, "op-selector").send_keys("region = 'EU'")
    page.find_element(By.CSS_SELECTOR, "#op-form button[type=submit]").click()
    dialog = page.find_element(By.ID, "confirm")
    wait.until(lambda d: dialog.get_attribute("open") is not None)
    page.find_element(By.ID, "confirm-ok").click()
    wait.until(lambda d: "is a topic" in first_text(d, "#op-result .error"))
    assert first_text(page, "#op-result .error") == (
        "/topic/whatever is a topic: messages are moved only to a queue "
        "(a topic keeps nothing for absent subscribers, so they would be lost)"
    )
    # Nothing moved, and no topic was made.
    page.get(url)
    wait.until(lambda d: cell(d, "/queue/orders", "depth") == "2")
    assert not page.find_elements(By.CSS_SELECTOR, '#destinations tr[data-dest="/topic/whatever"]')
