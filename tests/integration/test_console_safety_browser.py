"""The console, in headless Chromium, where an operator's slip must cost nothing: a move
to a topic is refused on the page with the broker's reason and the messages stay; the
Producers column is the broker's count (/metrics' stompd_destination_producers).  A
failing test leaves a screenshot (the ``browser`` fixture)."""

from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.integration.browser_support import SEE_WITHIN, browser, cell, first_text, stat

pytestmark = [pytest.mark.integration, pytest.mark.browser]
__all__ = ["browser"]  # the fixture, shared with test_console_browser


def test_a_move_to_a_topic_is_refused_on_the_page(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = WebDriverWait(browser, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))
    url = f"http://127.0.0.1:{http_broker.http_port}/console/"
    with client(http_broker.port) as producer:
        producer.send("/queue/orders", "eu", sync=True, region="EU")
        producer.send("/queue/orders", "us", sync=True, region="US")
        browser.get(url)
        # The open producer connection is counted, as /metrics counts it.
        wait.until(lambda d: cell(d, "/queue/orders", "depth") == "2")
        wait.until(lambda d: cell(d, "/queue/orders", "producers") == "1")
    wait.until(lambda d: cell(d, "/queue/orders", "producers") == "0")

    browser.find_element(By.LINK_TEXT, "/queue/orders").click()
    wait.until(lambda d: stat(d, "depth") == "2")
    assert stat(browser, "producers") == "0"
    Select(browser.find_element(By.ID, "op-kind")).select_by_value("move")
    browser.find_element(By.ID, "op-target").send_keys("/topic/whatever")
    browser.find_element(By.ID, "op-selector").send_keys("region = 'EU'")
    browser.find_element(By.CSS_SELECTOR, "#op-form button[type=submit]").click()
    dialog = browser.find_element(By.ID, "confirm")
    wait.until(lambda d: dialog.get_attribute("open") is not None)
    browser.find_element(By.ID, "confirm-ok").click()
    wait.until(lambda d: "is a topic" in first_text(d, "#op-result .error"))
    assert first_text(browser, "#op-result .error") == (
        "/topic/whatever is a topic: messages are moved only to a queue "
        "(a topic keeps nothing for absent subscribers, so they would be lost)"
    )
    # Nothing moved, and no topic was made.
    browser.get(url)
    wait.until(lambda d: cell(d, "/queue/orders", "depth") == "2")
    assert not browser.find_elements(By.CSS_SELECTOR, '#destinations tr[data-dest="/topic/whatever"]')
