"""The console's actions in a real browser (headless Chromium, as test_console_browser.py):
send a message, one message whole (move, delete, retry a dead letter), a connection's
producers and consumers, sorting by a column, the broker's name, version and uptime.
A failing test leaves a screenshot of the page (the ``browser`` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.integration.browser_support import SEE_WITHIN, browser, cell, first_text, stat
from tests.integration.dlq_support import dead_letter, dlq_broker

pytestmark = [pytest.mark.integration, pytest.mark.browser]
__all__ = ["browser", "dlq_broker"]


def waiter(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))


def console(thread: BrokerThread, page: str = "") -> str:
    return f"http://127.0.0.1:{thread.http_port}/console/{page}"


def fill(driver: webdriver.Chrome, element_id: str, text: str) -> None:
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def confirm(driver: webdriver.Chrome, expected: str) -> None:
    dialog = driver.find_element(By.ID, "confirm")
    waiter(driver).until(lambda d: dialog.get_attribute("open") is not None)
    assert expected in dialog.text
    driver.find_element(By.ID, "confirm-ok").click()


def open_message(driver: webdriver.Chrome, body: str) -> str:
    """Browse the destination shown, click the id of the message whose body is ``body``;
    its id once its view is open."""
    driver.find_element(By.CSS_SELECTOR, "#browse-form button[type=submit]").click()

    def clicked(d: webdriver.Chrome) -> str | bool:
        for row in d.find_elements(By.CSS_SELECTOR, "#browse-result table.messages tbody tr"):
            if row.find_element(By.CSS_SELECTOR, "td.body").text.startswith(body):
                link = row.find_element(By.CSS_SELECTOR, "a[data-message]")
                message_id = link.text
                link.click()
                return str(message_id)
        return False

    message_id: str = waiter(driver).until(clicked)
    waiter(driver).until(lambda d: f"Message {message_id}" in first_text(d, "#message-view h3"))
    return message_id


def no_script_errors(driver: webdriver.Chrome, allowed: tuple[str, ...] = ()) -> None:
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert [e for e in severe if not e["message"].endswith(allowed)] == []


def test_send_then_view_move_and_delete_one_message(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    browser.get(console(http_broker))
    # The header names the broker, its version and how long it has run.
    wait.until(lambda d: first_text(d, "#broker-info").startswith("localhost · stompd 0.1.0 · up "))

    browser.find_element(By.LINK_TEXT, "Send").click()
    fill(browser, "send-dest", "/queue/console.send")
    fill(browser, "send-headers", "region: EU\ncolor: red")
    fill(browser, "send-body", "hello from the console")
    browser.find_element(By.ID, "send-persistent").click()
    fill(browser, "send-priority", "7")
    browser.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
    wait.until(lambda d: first_text(d, "#send-result") == "sent 1 message to /queue/console.send")
    fill(browser, "send-headers", "")
    fill(browser, "send-body", "another")
    fill(browser, "send-count", "2")
    browser.find_element(By.ID, "send-persistent").click()
    browser.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
    wait.until(lambda d: first_text(d, "#send-result") == "sent 2 messages to /queue/console.send")

    browser.find_element(By.CSS_SELECTOR, "#send-result a").click()
    wait.until(lambda d: stat(d, "depth") == "3")
    first = open_message(browser, "hello from the console")
    view = browser.find_element(By.ID, "message-view").text
    for line in ("priority 7", "persistent yes", "region EU", "color red"):
        assert line in view, view
    assert browser.find_element(By.ID, "message-body").text == "hello from the console"
    # Not a dead letter: nothing to retry.
    assert not browser.find_elements(By.ID, "message-retry")

    fill(browser, "message-move-to", "/queue/console.other")
    browser.find_element(By.ID, "message-move").click()
    confirm(browser, f"Move message {first} from /queue/console.send to /queue/console.other?")
    wait.until(lambda d: first_text(d, "#message-view") == f"moved {first} to /queue/console.other")
    wait.until(lambda d: stat(d, "depth") == "2")

    second = open_message(browser, "another")
    browser.find_element(By.ID, "message-delete").click()
    confirm(browser, f"Delete message {second} from /queue/console.send?")
    wait.until(lambda d: first_text(d, "#message-view") == f"deleted {second} from /queue/console.send")
    wait.until(lambda d: stat(d, "depth") == "1")

    # The moved one is on its new queue, whole.
    browser.get(console(http_broker, f"#/destination/{quote('/queue/console.other', safe='')}"))
    wait.until(lambda d: stat(d, "depth") == "1")
    assert open_message(browser, "hello") == first
    assert browser.find_element(By.ID, "message-body").text == "hello from the console"
    # Deleting what is gone meanwhile says so.
    with client(http_broker.port) as consumer:
        consumer.subscribe("/queue/console.other")
        consumer.listener.wait_messages(1)
    browser.find_element(By.ID, "message-delete").click()
    confirm(browser, "Delete message")
    wait.until(
        lambda d: f"no message {first} waiting on /queue/console.other" in first_text(d, "#message-result")
    )
    no_script_errors(browser, ("status of 404 (Not Found)",))


def test_a_delayed_send_shows_on_the_scheduled_page(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    browser.get(console(http_broker, f"#/send/{quote('/queue/later', safe='')}"))
    wait.until(lambda d: d.find_element(By.ID, "send-dest").get_attribute("value") == "/queue/later")
    fill(browser, "send-body", "in an hour")
    fill(browser, "send-delay", "3600000")
    browser.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
    wait.until(
        lambda d: first_text(d, "#send-result") == "sent 1 message to /queue/later, due in 3,600,000 ms"
    )
    browser.find_element(By.LINK_TEXT, "Scheduled").click()

    # One read of the row for both: the page re-renders its tables every second, and a
    # second read may land on the moment the row is replaced ("").
    def shows_the_job(row: str) -> bool:
        return "in an hour" in row and "/queue/later" in row

    wait.until(lambda d: shows_the_job(first_text(d, "#scheduled tr[data-job]")))
    # A refused send says why, and sends nothing.
    browser.find_element(By.LINK_TEXT, "Send").click()
    fill(browser, "send-dest", "/queue/bad")
    fill(browser, "send-headers", "expires: soon")
    browser.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
    wait.until(lambda d: "expires" in first_text(d, "#send-result .error"))
    fill(browser, "send-headers", "no colon here")
    browser.find_element(By.CSS_SELECTOR, "#send-form button[type=submit]").click()
    wait.until(
        lambda d: first_text(d, "#send-result .error") == 'a header is "name: value", not "no colon here"'
    )
    no_script_errors(browser, ("status of 400 (Bad Request)",))


def test_retry_puts_a_dead_letter_back(dlq_broker: BrokerThread, browser: webdriver.Chrome) -> None:
    wait = waiter(browser)
    dead_letter(dlq_broker, "/queue/work", "poison")
    browser.get(console(dlq_broker, f"#/destination/{quote('/queue/ActiveMQ.DLQ', safe='')}"))
    wait.until(lambda d: stat(d, "depth") == "1")
    dead = open_message(browser, "poison")
    assert "dlqDeliveryFailureCause" in browser.find_element(By.ID, "message-view").text
    retry = browser.find_element(By.ID, "message-retry")
    assert retry.text == "Retry to /queue/work…"
    retry.click()
    confirm(browser, f"Retry message {dead}: move it from /queue/ActiveMQ.DLQ back to /queue/work?")
    wait.until(lambda d: first_text(d, "#message-view") == f"retried {dead}: back on /queue/work")
    wait.until(lambda d: stat(d, "depth") == "0")
    browser.find_element(By.LINK_TEXT, "Destinations").click()
    wait.until(lambda d: cell(d, "/queue/work", "depth") == "1")
    no_script_errors(browser)


def test_a_connection_shows_its_producers_and_consumers(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    busy = Client(http_broker.port, headers={"client-id": "busy-one"})
    try:
        busy.send("/queue/made.here", "1", sync=True)
        busy.subscribe("/queue/read.here", "sub-7", ack="client")
        browser.get(console(http_broker, "#/connections"))

        def opened(d: webdriver.Chrome) -> bool:
            for row in d.find_elements(By.CSS_SELECTOR, "#connections tbody tr"):
                if "busy-one" in row.text:
                    row.find_element(By.CSS_SELECTOR, "a[data-show-connection]").click()
                    return True
            return False

        wait.until(opened)
        wait.until(lambda d: "client-id busy-one" in first_text(d, "#connection-detail h3"))
        assert first_text(browser, "#connection-producers tbody") == "/queue/made.here"
        consumer = first_text(browser, "#connection-consumers tbody tr")
        assert consumer.split()[:3] == ["sub-7", "/queue/read.here", "client"]
        # It follows the connection: a new destination sent to shows at the next poll.
        busy.send("/topic/also.here", "2", sync=True)
        wait.until(lambda d: "/topic/also.here" in first_text(d, "#connection-producers tbody"))
        no_script_errors(browser)
    finally:
        busy.close()


def test_tables_sort_by_any_column(http_broker: BrokerThread, browser: webdriver.Chrome) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        for name, depth in (("/queue/b.two", 2), ("/queue/c.five", 5), ("/queue/a.one", 1)):
            for i in range(depth):
                producer.send(name, str(i))
        producer.sync()
        browser.get(console(http_broker))
        wait.until(lambda d: cell(d, "/queue/c.five", "depth") == "5")

        def names() -> list[str]:
            rows = browser.find_elements(By.CSS_SELECTOR, "#destinations tbody tr[data-dest]")
            return [str(row.get_attribute("data-dest")) for row in rows]

        def heading(text: str) -> Callable[[webdriver.Chrome], bool]:
            def click(d: webdriver.Chrome) -> bool:
                d.find_element(By.XPATH, f"//table[@id='destinations']//th[text()='{text}']").click()
                return True

            return click

        wait.until(heading("Depth"))
        wait.until(lambda d: names() == ["/queue/a.one", "/queue/b.two", "/queue/c.five"])
        depth = browser.find_element(By.XPATH, "//table[@id='destinations']//th[text()='Depth']")
        assert depth.get_attribute("aria-sort") == "ascending"
        wait.until(heading("Depth"))
        wait.until(lambda d: names() == ["/queue/c.five", "/queue/b.two", "/queue/a.one"])
        # The order holds as the table refreshes and depths change.
        for i in range(4):
            producer.send("/queue/a.one", f"more {i}")
        producer.sync()
        wait.until(lambda d: cell(d, "/queue/a.one", "depth") == "5")
        wait.until(lambda d: names()[-1] == "/queue/b.two")
        wait.until(heading("Name"))
        wait.until(lambda d: names() == ["/queue/a.one", "/queue/b.two", "/queue/c.five"])
        wait.until(heading("Name"))
        wait.until(lambda d: names() == ["/queue/c.five", "/queue/b.two", "/queue/a.one"])
        no_script_errors(browser)
