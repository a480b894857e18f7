"""Failed logins counted, without sockets (broker/io/logins.py): how long each answer
waits, by address and by login, how the counts fade, and that memory stays bounded."""

from __future__ import annotations

import logging

import pytest

from broker.io.logins import FIRST_DELAY, FORGET_S, FREE, MAX_DELAY, FailedLogins, source_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_first_few_are_free_then_each_waits_twice_as_long_up_to_the_most() -> None:
    logins = FailedLogins(Clock())
    delays = [logins.failed("10.0.0.1", "app") for _ in range(FREE + 8)]
    assert delays[:FREE] == [0.0] * FREE
    assert delays[FREE : FREE + 3] == [FIRST_DELAY, FIRST_DELAY * 2, FIRST_DELAY * 4]
    assert delays[-1] == MAX_DELAY
    assert max(delays) == MAX_DELAY


def test_failures_count_by_address_and_by_login() -> None:
    by_address = FailedLogins(Clock())
    for n in range(FREE):
        assert by_address.failed("10.0.0.1", f"user{n}") == 0.0
    # Another login from the same address: the address's count decides.
    assert by_address.failed("10.0.0.1", "someone-else") == FIRST_DELAY
    assert by_address.failed("10.0.0.2", "fresh") == 0.0
    by_login = FailedLogins(Clock())
    for n in range(FREE):
        assert by_login.failed(f"10.0.0.{n}", "admin") == 0.0
    # The same login from a new address: the login's count decides.
    assert by_login.failed("10.9.9.9", "admin") == FIRST_DELAY


def test_counts_fade_one_failure_per_forget_period() -> None:
    clock = Clock()
    logins = FailedLogins(clock)
    for _ in range(FREE + 3):
        logins.failed("10.0.0.1", "app")
    clock.now += FORGET_S * (FREE + 3)
    assert logins.failed("10.0.0.1", "app") == 0.0


@pytest.mark.parametrize(
    ("address", "source"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9%eth0", "2001:db8:1:2::/64"),
        ("/run/stompd.sock", "/run/stompd.sock"),
        (None, ""),
    ],
)
def test_the_source_of_an_address(address: str | None, source: str) -> None:
    assert source_of(address) == source


def test_one_ipv6_host_is_one_source() -> None:
    logins = FailedLogins(Clock())
    for n in range(FREE):
        logins.failed(f"2001:db8::{n + 1}", f"u{n}")
    assert logins.failed("2001:db8::ffff:1", "another") == FIRST_DELAY


def test_memory_is_bounded_whoever_guesses() -> None:
    logins = FailedLogins(Clock(), keep=100)
    for _ in range(FREE):
        logins.failed("10.200.0.1", "first")
    for n in range(10_000):
        logins.failed(f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}", "x" * 10_000 + str(n))
    for _ in range(FREE):
        logins.failed("10.200.0.2", "last")
    assert logins.remembered == 200
    # The least recently failing went first; the most recent are kept.
    assert logins.failed("10.200.0.1", "first") == 0.0
    assert logins.failed("10.200.0.2", "last") == FIRST_DELAY


def test_a_run_of_failures_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "stompd.security")
    logins = FailedLogins(Clock())
    for _ in range(50):
        logins.failed("10.0.0.1", "admin")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"{FREE + 1} failed logins in a row from 10.0.0.1: each next one is answered later, up to 5 s",
        f"{FREE + 1} failed logins in a row as 'admin': each next one is answered later, up to 5 s",
    ]
