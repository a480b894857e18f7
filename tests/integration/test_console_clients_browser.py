"""What the console now has of ActiveMQ's, and the faults an operator met, in a real
browser (headless Chromium) against a real broker with real stomp.py clients (issue 40):
a queue's consumers and producers, pause and resume, a message copied, a durable
subscriber made from a topic's page (and the topic's depth with what it is owed),
connections by connector, the role in the header; the Operations form reset per
destination, a clicked message brought into sight and focused, "Next page" off on an
exactly full last page, the overview's sparklines from the broker's history, plurals."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.integration.browser_support import SEE_WITHIN, browser, cell, first_text, stat
from tests.integration.history_support import sample_at

pytestmark = [pytest.mark.integration, pytest.mark.browser]
__all__ = ["browser"]


def waiter(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))


def page_of(thread: BrokerThread, name: str = "") -> str:
    base = f"http://127.0.0.1:{thread.http_port}/console/"
    return base + (f"#/destination/{quote(name, safe='')}" if name else "")


def go(driver: webdriver.Chrome, name: str) -> None:
    driver.execute_script("location.hash = arguments[0]", f"#/destination/{quote(name, safe='')}")


def fill(driver: webdriver.Chrome, element_id: str, text: str) -> None:
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def confirm(driver: webdriver.Chrome, expected: str) -> None:
    dialog = driver.find_element(By.ID, "confirm")
    waiter(driver).until(lambda d: dialog.get_attribute("open") is not None)
    assert expected in dialog.text, dialog.text
    driver.find_element(By.ID, "confirm-ok").click()


def value(driver: webdriver.Chrome, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).get_attribute("value"))


def no_script_errors(driver: webdriver.Chrome) -> None:
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_queue_s_consumers_producers_and_its_dispatch_paused_and_resumed(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    picky = Client(http_broker.port, headers={"client-id": "picky-app"})
    maker = Client(http_broker.port, headers={"client-id": "maker-app"})
    try:
        picky.subscribe(
            "/queue/held", "s-9", ack="client", selector="n > 0", **{"activemq.prefetchSize": "3"}
        )
        maker.send("/queue/held", "first", sync=True, n="1")
        picky.listener.wait_messages(1)
        browser.get(page_of(http_broker, "/queue/held"))
        wait.until(lambda d: "picky-app" in first_text(d, "#queue-consumers tbody tr"))
        row = "#queue-consumers tbody tr"
        assert first_text(browser, f"{row} td.selector") == "n > 0"
        assert first_text(browser, f"{row} td.prefetch") == "3"
        assert first_text(browser, f"{row} td.dispatched") == "1"
        wait.until(lambda d: first_text(d, "#dest-producers tbody tr td.client") == "maker-app")
        assert first_text(browser, "#dest-producers tbody tr td.connector") == "stomp"
        assert first_text(browser, "#dispatch-state") == "Dispatching to its consumers."

        browser.find_element(By.ID, "dest-pause").click()
        confirm(browser, "Pause dispatch of /queue/held?")
        wait.until(lambda d: first_text(d, "#dispatch-state").startswith("Dispatch paused"))
        assert browser.find_element(By.ID, "dest-resume").is_displayed()
        for n in range(2, 5):
            maker.send("/queue/held", f"m{n}", sync=True, persistent="true", n=str(n))
        wait.until(lambda d: stat(d, "depth") == "3")
        assert stat(browser, "dispatched") == "1"
        assert len(picky.settled()) == 1
        browser.find_element(By.LINK_TEXT, "Destinations").click()
        wait.until(
            lambda d: first_text(d, '#destinations tr[data-dest="/queue/held"] .tag.paused') == "paused"
        )

        go(browser, "/queue/held")
        wait.until(lambda d: d.find_element(By.ID, "dest-resume").is_displayed())
        browser.find_element(By.ID, "dest-resume").click()
        wait.until(lambda d: first_text(d, "#op-result") == "resumed dispatch of /queue/held")
        # Its prefetch of 3: one in flight already, two more.
        assert [m.body for m in picky.listener.wait_messages(3)] == ["first", "m2", "m3"]
        wait.until(lambda d: first_text(d, "#dispatch-state") == "Dispatching to its consumers.")
    finally:
        picky.close()
        maker.close()
    no_script_errors(browser)


def open_message(driver: webdriver.Chrome, body: str) -> str:
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


def test_a_message_opens_in_sight_focused_and_is_copied(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    headers = {f"h{i}": "a header that makes each row tall" for i in range(8)}
    with client(http_broker.port) as producer:
        for n in range(25):
            producer.send("/queue/long", f"body {n}", sync=n == 24, **headers)
    browser.get(page_of(http_broker, "/queue/long"))
    wait.until(lambda d: stat(d, "depth") == "25")
    chosen = open_message(browser, "body 24")
    # In sight, and the focus on it: not 1,500 px below the list with the focus left there.
    wait.until(lambda d: d.execute_script("return document.activeElement.id") == "message-view")
    top = browser.execute_script("return document.getElementById('message-view').getBoundingClientRect().top")
    height = browser.execute_script("return window.innerHeight")
    assert 0 <= top < height / 2, (top, height)

    fill(browser, "message-move-to", "/queue/copies")
    browser.find_element(By.ID, "message-copy").click()
    confirm(
        browser,
        f"Copy message {chosen} from /queue/long to /queue/copies? The original stays on /queue/long.",
    )
    wait.until(lambda d: first_text(d, "#message-view") == f"copied {chosen} to /queue/copies")
    assert stat(browser, "depth") == "25"
    browser.find_element(By.LINK_TEXT, "Destinations").click()
    wait.until(lambda d: cell(d, "/queue/copies", "depth") == "1")
    no_script_errors(browser)


def test_the_operations_form_and_the_browse_start_afresh_on_another_destination(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        for n in range(4):
            producer.send("/queue/four", f"m{n}", sync=n == 3)
        producer.send("/queue/other", "x", sync=True)
    browser.get(page_of(http_broker, "/queue/four"))
    wait.until(lambda d: stat(d, "depth") == "4")
    # A page exactly the last one full: no next page.
    fill(browser, "browse-limit", "2")
    browser.find_element(By.CSS_SELECTOR, "#browse-form button[type=submit]").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#browse-result tbody tr")) == 2)
    wait.until(lambda d: d.find_element(By.ID, "browse-next").is_enabled())
    browser.find_element(By.ID, "browse-next").click()
    wait.until(lambda d: "m3" in first_text(d, "#browse-result tbody"))
    wait.until(lambda d: not d.find_element(By.ID, "browse-next").is_enabled())
    fill(browser, "browse-limit", "4")
    browser.find_element(By.CSS_SELECTOR, "#browse-form button[type=submit]").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#browse-result tbody tr")) == 4)
    assert not browser.find_element(By.ID, "browse-next").is_enabled()

    # What was typed for this queue does not stay to act on the next one.
    browser.find_element(By.CSS_SELECTOR, "#op-kind option[value=copy]").click()
    fill(browser, "op-target", "/queue/elsewhere")
    fill(browser, "op-selector", "n = 1")
    fill(browser, "op-max", "2")
    fill(browser, "browse-selector", "JMSPriority > 4")
    go(browser, "/queue/other")
    wait.until(lambda d: d.find_element(By.ID, "dest-title").text == "/queue/other (queue)")
    assert [
        value(browser, i) for i in ("op-kind", "op-target", "op-selector", "op-max", "browse-selector")
    ] == [
        "move",
        "",
        "",
        "",
        "",
    ]
    assert browser.find_element(By.ID, "op-target").is_displayed()
    # And the confirmation says its count in words: "up to 1 message".
    browser.find_element(By.CSS_SELECTOR, "#op-kind option[value=remove]").click()
    fill(browser, "op-max", "1")
    browser.find_element(By.CSS_SELECTOR, "#op-form button[type=submit]").click()
    dialog = browser.find_element(By.ID, "confirm")
    wait.until(lambda d: dialog.get_attribute("open") is not None)
    assert "Remove up to 1 message from /queue/other?" in dialog.text
    browser.find_element(By.CSS_SELECTOR, "#confirm button[value=cancel]").click()
    no_script_errors(browser)


def test_a_durable_subscriber_made_on_a_topic_s_page_holds_what_is_sent(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        producer.send("/topic/prices", "before", sync=True)
    browser.get(page_of(http_broker, "/topic/prices"))
    wait.until(lambda d: d.find_element(By.ID, "durable-form").is_displayed())
    fill(browser, "durable-client", "reports")
    fill(browser, "durable-name", "nightly")
    fill(browser, "durable-selector", "n > 0")
    browser.find_element(By.CSS_SELECTOR, "#durable-form button[type=submit]").click()
    wait.until(
        lambda d: (
            first_text(d, "#durable-result")
            == "created durable subscription reports/nightly on /topic/prices (offline)"
        )
    )
    row = '#subscribers tr[data-sub="reports/nightly"]'
    wait.until(lambda d: first_text(d, f"{row} td.connection") == "offline")
    with client(http_broker.port) as producer:
        for n in range(4):
            producer.send("/topic/prices", f"p{n}", sync=True, persistent="true", n=str(n))
    # The subscriber's row and the topic's depth both say what it is owed.
    wait.until(lambda d: first_text(d, f"{row} td.owed") == "3")
    wait.until(lambda d: stat(d, "depth") == "3")
    browser.find_element(By.LINK_TEXT, "Destinations").click()
    wait.until(lambda d: cell(d, "/topic/prices", "depth") == "3")
    # Again: refused, saying why.
    go(browser, "/topic/prices")
    wait.until(lambda d: d.find_element(By.ID, "durable-form").is_displayed())
    fill(browser, "durable-client", "reports")
    fill(browser, "durable-name", "nightly")
    browser.find_element(By.CSS_SELECTOR, "#durable-form button[type=submit]").click()
    wait.until(lambda d: "already" in first_text(d, "#durable-result .error"))


def test_connections_by_connector_and_the_role_in_the_header(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port, headers={"client-id": "grouped"}):
        browser.get(page_of(http_broker) + "#/connections")
        group = '#connections tbody[data-connector="stomp"]'
        wait.until(lambda d: first_text(d, f"{group} tr.group") == "stomp (stomp): 1 connection")
        assert "grouped" in first_text(browser, f"{group} tr[data-connection]")
        assert first_text(browser, f"{group} tr[data-connection] td.transport") == "stomp"
    wait.until(lambda d: first_text(d, "#broker-info").endswith(" · master"))
    assert "not one of a shared-store pair" in str(
        browser.find_element(By.ID, "broker-info").get_attribute("title")
    )


def test_the_overview_sparklines_draw_the_broker_s_history_and_counts_are_worded(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        producer.send("/queue/sparked", "a", sync=True)
        sample_at(http_broker, 3)
        producer.send("/queue/sparked", "b", sync=True)
        sample_at(http_broker, 2)
        producer.send("/queue/later", "c", sync=True, AMQ_SCHEDULED_DELAY="3600000")
    browser.get(page_of(http_broker))

    def drawn(d: webdriver.Chrome) -> int:
        try:
            spark = d.find_element(By.CSS_SELECTOR, '#destinations tr[data-dest="/queue/sparked"] svg.spark')
            return int(spark.get_attribute("data-history-samples") or 0)
        except Exception:
            return 0

    # The broker's samples from before the page was opened, drawn from its first polls on.
    wait.until(lambda d: drawn(d) >= 2)
    browser.find_element(By.LINK_TEXT, "Scheduled").click()
    wait.until(lambda d: first_text(d, "#scheduled-count") == "1 scheduled job")
    no_script_errors(browser)
