"""One record, one line: what a client names (a destination, a login, an admin request's
path) cannot write a line of its own into the broker's log, nor reach a terminal as
control characters (broker/logs.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.logs import OneLineRecord, escape
from tests.cli_broker import CliBroker
from tests.http_support import call
from tests.stomp_raw import RawClient
from tests.three_users import three_users_file

pytestmark = pytest.mark.integration

FORGED = "FORGED 2026-12-01 00:00:00.000 ERROR stompd.store: the store is corrupt"


def test_what_clients_name_stays_on_its_line(tmp_path: Path) -> None:
    broker = CliBroker(three_users_file(tmp_path, http=""), "--data-dir", str(tmp_path / "data"))
    try:
        # A destination with an escaped newline (STOMP 1.2 unescapes \n in a SEND's headers):
        # guest may not write there, and the refusal is logged with the name in it.
        guest = RawClient(broker.port)
        guest.connect(login="guest", passcode="guest-pw")
        guest.send("SEND", {"destination": "/queue/a\n" + FORGED}, b"x")
        refusal = guest.recv()
        assert refusal.command == "ERROR" and FORGED in refusal.body.decode()
        # A login with a terminal escape (CONNECT's headers are taken as they come).
        stranger = RawClient(broker.port)
        stranger.send(
            "CONNECT", {"accept-version": "1.2", "host": "x", "login": "\x1b[2Jroot", "passcode": "x"}
        )
        assert stranger.recv().command == "ERROR"
        # An admin request whose path decodes to a newline: the admin log line names it.
        url = f"http://127.0.0.1:{broker.http_port}"
        reply = call(
            url,
            "DELETE",
            "/api/v1/destinations/a%0A" + FORGED.replace(" ", "%20"),
            auth=("admin", "admin-pw"),
        )
        assert reply.status == 404
    finally:
        code = broker.stop()
    text = broker.text
    assert code == 0, text
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith("FORGED")], text
    assert "\x1b" not in text
    assert any("/queue/a\\nFORGED 2026" in line and "not authorized to write" in line for line in lines), text
    assert any("User name [\\x1b[2Jroot]" in line for line in lines), text
    assert any("admin DELETE /api/v1/destinations/a\\nFORGED 2026" in line for line in lines), text
    assert "Traceback" not in text


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain /queue/orders", "plain /queue/orders"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x00\x07\x1b[31m\x7f", "\\x00\\x07\\x1b[31m\\x7f"),
        ("next\x85line\u2028sep\u2029", "next\\x85line\\u2028sep\\u2029"),
        ("not utf-8: \udcff", "not utf-8: \\udcff"),
        ("é ü 中 \U0001f600 stay", "é ü 中 \U0001f600 stay"),
    ],
)
def test_escape(text: str, escaped: str) -> None:
    assert escape(text) == escaped


def test_a_record_escapes_its_arguments_and_keeps_its_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError as exc:
        record = OneLineRecord(
            "stompd",
            logging.INFO,
            __file__,
            1,
            "closing %s: %s",
            ("peer", "a\nb"),
            (ValueError, exc, exc.__traceback__),
        )
    formatted = logging.Formatter("%(message)s").format(record)
    first, *rest = formatted.splitlines()
    assert first == "closing peer: a\\nb"
    assert rest[0] == "Traceback (most recent call last):" and rest[-1] == "ValueError: boom"
