"""The console as an operator meets it, in headless Chromium (the ``browser`` fixture of
test_console_browser.py): its example selector, an address with credentials, a topic's
page, and the edges of a destination's page (missing, deleted, errors, a stopped broker)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from broker.http.auth import HttpSecurity, InMemoryAuthenticator
from tests.broker_thread import BrokerThread
from tests.clients import client, fed_topic, left_durable
from tests.http_support import call, start_http_broker
from tests.integration.browser_support import SEE_WITHIN, browser, cell, first_text, stat

pytestmark = [pytest.mark.integration, pytest.mark.browser]

__all__ = ["browser"]  # the fixture, used by name


def waiter(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    # The page re-renders every 2 s: an element found may be replaced before it is read.
    return WebDriverWait(driver, SEE_WITHIN, ignored_exceptions=(StaleElementReferenceException,))


def page_of(thread: BrokerThread, name: str) -> str:
    return f"http://127.0.0.1:{thread.http_port}/console/#/destination/{quote(name, safe='')}"


def browse_with(driver: webdriver.Chrome, selector: str) -> None:
    box = driver.find_element(By.ID, "browse-selector")
    box.clear()
    box.send_keys(selector)
    driver.find_element(By.CSS_SELECTOR, "#browse-form button[type=submit]").click()


def browsed_bodies(driver: webdriver.Chrome) -> list[str]:
    return [
        str(td.text).rsplit(" ", 2)[0]
        for td in driver.find_elements(By.CSS_SELECTOR, "#browse-result table.messages td.body")
    ]


def test_the_example_selector_finds_messages_and_a_stomp_header_gets_its_jms_name(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        producer.send("/queue/orders", "urgent-eu", sync=True, priority="9", region="EU")
        producer.send("/queue/orders", "slow-eu", sync=True, priority="1", region="EU")
        producer.send("/queue/orders", "urgent-us", sync=True, priority="9", region="US")
    browser.get(page_of(http_broker, "/queue/orders"))
    wait.until(lambda d: stat(d, "depth") == "3")
    placeholder = browser.find_element(By.ID, "browse-selector").get_attribute("placeholder") or ""
    example = placeholder.split("e.g. ", 1)[1]
    browse_with(browser, example)
    wait.until(lambda d: browsed_bodies(d) == ["urgent-eu"])

    # An error elsewhere on the page, then a success: the old error goes.
    Select(browser.find_element(By.ID, "op-kind")).select_by_value("move")
    browser.find_element(By.CSS_SELECTOR, "#op-form button[type=submit]").click()
    wait.until(lambda d: first_text(d, "#op-result .error") == "name the target destination")

    # The STOMP header's name: the broker's own error says which name to use.
    browse_with(browser, "priority > 4 AND region = 'EU'")
    wait.until(lambda d: "JMSPriority" in first_text(d, "#browse-result .error"))
    error = first_text(browser, "#browse-result .error")
    assert "priority is a STOMP header: selectors read it by its JMS name, JMSPriority" in error
    assert error.endswith("try: JMSPriority > 4 AND region = 'EU'")
    # The op error is still there beside it (an error clears nothing) ...
    assert first_text(browser, "#op-result .error") == "name the target destination"
    browse_with(browser, error.rsplit("try: ", 1)[1])
    wait.until(lambda d: browsed_bodies(d) == ["urgent-eu"])
    # ... and the success clears both.
    assert browser.find_elements(By.CSS_SELECTOR, "#page-destination .error") == []


USERS = InMemoryAuthenticator({"admin": ("pa:ss", {"admins"})})


def test_an_address_with_credentials_works_and_a_stopped_broker_is_said_and_dimmed(
    tmp_path: Path, browser: webdriver.Chrome
) -> None:
    thread = start_http_broker(tmp_path / "data", HttpSecurity(USERS, admin_groups=frozenset({"admins"})))
    try:
        with client(thread.port) as producer:
            producer.send("/queue/creds", "x", sync=True)
        wait = waiter(browser)
        browser.get(f"http://admin:{quote('pa:ss', safe='')}@127.0.0.1:{thread.http_port}/console/")
        wait.until(lambda d: cell(d, "/queue/creds", "depth") == "1")
        assert first_text(browser, "#status").startswith("updated ")
        assert "stale" not in (browser.find_element(By.TAG_NAME, "body").get_attribute("class") or "")
        depth = browser.find_element(By.CSS_SELECTOR, '#destinations tr[data-dest="/queue/creds"] td.depth')
        assert depth.value_of_css_property("opacity") == "1"
    finally:
        thread.stop()
    # The broker is gone: the status says what failed, the last numbers stay, dimmed.
    wait.until(lambda d: "no answer from the broker" in first_text(d, "#status"))
    status = first_text(browser, "#status")
    assert status == f"no answer from the broker at http://127.0.0.1:{thread.http_port} (Failed to fetch)"
    assert "stale" in (browser.find_element(By.TAG_NAME, "body").get_attribute("class") or "")
    assert cell(browser, "/queue/creds", "depth") == "1"
    depth = browser.find_element(By.CSS_SELECTOR, '#destinations tr[data-dest="/queue/creds"] td.depth')
    assert float(depth.value_of_css_property("opacity")) < 0.5


def subscriber_row(driver: webdriver.Chrome, key: str) -> str:
    return first_text(driver, f'#subscribers tr[data-sub="{key}"]')


def click_in_row(key: str, button: str) -> object:
    """Click ``button`` in the subscribers' row ``key`` (a refresh may replace it first)."""

    def clicked(driver: webdriver.Chrome) -> bool:
        for found in driver.find_elements(
            By.CSS_SELECTOR, f'#subscribers tr[data-sub="{key}"] button.{button}'
        ):
            found.click()
            return True
        return False

    return clicked


def confirm(driver: webdriver.Chrome, expected: str) -> None:
    dialog = driver.find_element(By.ID, "confirm")
    waiter(driver).until(lambda d: dialog.get_attribute("open") is not None)
    assert expected in dialog.text
    driver.find_element(By.ID, "confirm-ok").click()


def out_rates(driver: webdriver.Chrome, name: str) -> list[float]:
    rates: list[float] = driver.execute_script(
        "return (state.history.get(arguments[0]) || []).map((s) => s.outRate || 0)", name
    )
    return rates


def test_a_topics_page_shows_its_subscribers_and_what_applies_to_them(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    left_durable(http_broker.port, "/topic/prices", "reports", "audit")
    with fed_topic(http_broker.port, "/topic/prices", "trader", "audit") as (_, _, producer):
        for i in range(3):
            producer.send("/topic/prices", f"p{i}", persistent="true")
        producer.sync()
        browser.get(page_of(http_broker, "/topic/prices"))
        wait.until(lambda d: d.find_element(By.ID, "dest-title").text == "/topic/prices (topic)")

        # Whom it feeds: each with its client-id, online or offline, and what it is owed.
        wait.until(lambda d: "offline" in subscriber_row(d, "reports/audit"))
        wait.until(lambda d: first_text(d, '#subscribers tr[data-sub="reports/audit"] td.owed') == "3")
        assert "audit (durable)" in subscriber_row(browser, "reports/audit")
        online = subscriber_row(browser, "trader/audit")
        assert "trader" in online and "offline" not in online
        assert len(browser.find_elements(By.CSS_SELECTOR, "#subscribers tr[data-sub]")) == 3
        # Only what applies: no queue operations, a durable backlog's browse and purge,
        # delete for the offline durable subscription only.
        for queue_only in ("op-form", "purge", "browse-form"):
            assert not browser.find_element(By.ID, queue_only).is_displayed(), queue_only
        assert browser.find_element(By.ID, "delete").is_displayed()
        assert (
            browser.find_elements(By.CSS_SELECTOR, '#subscribers tr[data-sub="trader/audit"] button.delete')
            == []
        )
        assert browser.find_elements(
            By.CSS_SELECTOR, '#subscribers tr[data-sub="reports/audit"] button.delete'
        )
        assert not [
            b
            for b in browser.find_elements(By.CSS_SELECTOR, "#subscribers tr:not(.online) button")
            if "reports/audit" not in (b.find_element(By.XPATH, "../..").get_attribute("data-sub") or "")
        ]

        # Dispatched per second, not a flat out/s, while messages flow.
        assert browser.find_element(By.ID, "l-out").text == "dispatched/s"
        for i in range(3, 40):
            producer.send("/topic/prices", f"p{i}")
        producer.sync()
        wait.until(lambda d: max(out_rates(d, "/topic/prices"), default=0) > 0)

        # The offline subscription's backlog (it has had a subscriber since the broker
        # started: it keeps non-persistent messages too), browsed then purged.
        wait.until(lambda d: first_text(d, '#subscribers tr[data-sub="reports/audit"] td.owed') == "40")
        wait.until(click_in_row("reports/audit", "browse"))
        wait.until(lambda d: browsed_bodies(d) == [f"p{i}" for i in range(25)])
        assert "durable subscription reports/audit" in browser.find_element(By.ID, "browse-heading").text
        wait.until(click_in_row("reports/audit", "purge"))
        confirm(browser, "Purge durable subscription reports/audit: remove the 40 messages")
        wait.until(lambda d: "removed 40" in first_text(d, "#op-result .done"))
        wait.until(lambda d: first_text(d, '#subscribers tr[data-sub="reports/audit"] td.owed') == "0")

        # Deleted, with what it was owed since.
        producer.send("/topic/prices", "late", persistent="true", sync=True)
        wait.until(lambda d: first_text(d, '#subscribers tr[data-sub="reports/audit"] td.owed') == "1")
        wait.until(click_in_row("reports/audit", "delete"))
        confirm(browser, "Delete durable subscription reports/audit (offline) and the 1 message it is owed")
        wait.until(
            lambda d: (
                "deleted durable subscription reports/audit (1 message dropped)"
                in first_text(d, "#op-result")
            )
        )
        wait.until(lambda d: subscriber_row(d, "reports/audit") == "")
        assert not browser.find_element(By.ID, "browse-form").is_displayed()
        subs = call(f"http://127.0.0.1:{http_broker.http_port}", "GET", "/api/v1/subscriptions").body
        assert [s["client_id"] for s in subs["subscriptions"] if s["durable"]] == ["trader"]


def test_a_missing_or_deleted_destination_leaves_nothing_of_another(
    http_broker: BrokerThread, browser: webdriver.Chrome
) -> None:
    wait = waiter(browser)
    with client(http_broker.port) as producer:
        producer.send("/queue/doomed", "x", sync=True)
    browser.get(page_of(http_broker, "/queue/doomed"))
    wait.until(lambda d: stat(d, "depth") == "1")

    # Another destination's address, one that does not exist: its own title.
    browser.execute_script(
        "location.hash = arguments[0]", f"#/destination/{quote('/queue/nowhere', safe='')}"
    )
    wait.until(lambda d: d.find_element(By.ID, "dest-title").text == "/queue/nowhere (not found)")
    assert "does not exist" in first_text(browser, "#dest-stats .error")
    assert not browser.find_element(By.ID, "op-form").is_displayed()
    assert not browser.find_element(By.ID, "delete").is_displayed()
    # Nothing to send to either: no Send link, no dispatch to pause, no consumers.
    assert not browser.find_element(By.ID, "dest-send").is_displayed()
    assert not browser.find_element(By.ID, "dispatch").is_displayed()
    assert not browser.find_element(By.ID, "queue-part").is_displayed()

    # Deleted from its page: back to the list, which says so.
    browser.execute_script("location.hash = arguments[0]", f"#/destination/{quote('/queue/doomed', safe='')}")
    wait.until(lambda d: stat(d, "depth") == "1")
    browser.find_element(By.ID, "delete").click()
    confirm(browser, "Delete /queue/doomed")
    wait.until(lambda d: d.execute_script("return location.hash") == "#/")
    wait.until(
        lambda d: first_text(d, "#overview-result .done") == "deleted /queue/doomed (1 message dropped)"
    )
    assert browser.find_element(By.ID, "page-overview").is_displayed()
    wait.until(
        lambda d: (
            cell(d, "/queue/doomed", "depth") == "" and "no destinations" in first_text(d, "#destinations")
        )
    )
