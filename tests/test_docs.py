"""The README and docs/ hold together: every relative link names a file that exists, every
docs/ page is reachable from the README, and the README's first screen is a quick start.

The README was split into docs/ by topic; a page moved or renamed later would otherwise
leave links that lead nowhere, and nothing else reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) with a relative target: no scheme, no bare #anchor.
LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")


def links(page: Path) -> list[str]:
    return [m.group(1).split("#", 1)[0] for m in LINK.finditer(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_that_exists(page: Path) -> None:
    missing = [t for t in links(page) if not (page.parent / t).exists()]
    assert missing == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t).resolve() for t in links(ROOT / "README.md")}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert unlinked == []


def test_the_readmes_first_screen_runs_a_broker_and_sends_a_message() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:60])
    assert ".venv/bin/stompd" in first_screen
    assert "stompd-admin send" in first_screen
    # Beside an ActiveMQ, whose defaults take the same two ports.
    assert "--port 61623 --http-port 8171" in first_screen
