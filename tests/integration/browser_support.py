"""Debian's headless Chromium driving the web console, and reading it (moved here from
test_console_browser.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: The console polls every 2 s: a change shows within a few polls.
SEE_WITHIN = 20
#: Where a failed browser test leaves its last screen (CI keeps it as an artifact).
ARTIFACTS = Path(os.environ.get("STOMPD_TEST_ARTIFACTS", "test-artifacts"))


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[webdriver.Chrome]:
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            pytest.fail(
                f"{path} is missing: run scripts/setup-tests.sh (Debian's chromium and chromium-driver)"
            )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    failed_before = request.session.testsfailed
    try:
        yield driver
        # The test's own report is in by now (teardown runs after it).
        if request.session.testsfailed > failed_before:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))
    finally:
        driver.quit()


def cell(driver: webdriver.Chrome, dest: str, column: str) -> str:
    return first_text(driver, f'#destinations tr[data-dest="{dest}"] td.{column}')


#: How often a read starts again when the element found was replaced before its text came.
REREADS = 5


def first_text(driver: webdriver.Chrome, css: str) -> str:
    """The first match's text, "" while there is none.

    The page re-renders its tables every second, each in one synchronous
    `replaceChildren`: an element is never missing between two renders, but the one
    found may be replaced before its text is read (two round trips). That read starts
    again rather than answering "", which a test asserting once would take for the
    page's answer."""
    for _ in range(REREADS - 1):
        try:
            return _first_text(driver, css)
        except StaleElementReferenceException:
            continue
    return _first_text(driver, css)


def _first_text(driver: webdriver.Chrome, css: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return str(found[0].text) if found else ""


def stat(driver: webdriver.Chrome, name: str) -> str:
    return first_text(driver, f'#dest-stats [data-stat="{name}"] .v')
