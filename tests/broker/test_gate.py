"""A listener's gate without sockets: maximumConnections, and the process's descriptors
that every gate shares (broker/io/listener.py, broker/io/descriptors.py)."""

from __future__ import annotations

import logging

import pytest

from broker.io.descriptors import Descriptors, count_open
from broker.io.listener import Gate


def descriptors(room: int) -> Descriptors:
    counted = Descriptors(reserve=10, limit=100)
    counted.base = 90 - room
    assert counted.room == room
    return counted


def test_a_gate_refuses_past_its_limit_then_past_the_descriptors() -> None:
    shared = descriptors(room=3)
    a = Gate("a", 2, b"too many", shared, b"no descriptors")
    b = Gate("b", None, b"", shared, b"no descriptors")
    assert a.admit() is None and a.admit() is None
    assert a.admit() == b"too many"
    assert b.admit() is None
    # Three taken: every gate is out of them now, with or without a limit of its own.
    assert b.admit() == b"no descriptors"
    a.leave()
    assert shared.open == 2 and a.open == 1
    assert b.admit() is None
    assert a.admit() == b"no descriptors"


def test_a_connection_handed_over_leaves_the_limit_and_keeps_its_descriptor() -> None:
    shared = descriptors(room=2)
    gate = Gate("http", 1, b"too many", shared, b"no descriptors")
    assert gate.admit() is None
    gate.hand_over()
    # The admin port's limit has room again; the descriptor is still in use.
    assert gate.open == 0 and shared.open == 1
    assert gate.admit() is None
    assert gate.admit() == b"too many"
    gate.left()
    assert shared.open == 1
    gate.leave()
    assert shared.open == 0 and gate.open == 0


def test_a_burst_of_refusals_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "stompd.listener")
    shared = descriptors(room=1)
    assert shared.take()
    for _ in range(500):
        assert not shared.take()
    shared.give_back()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "refusing new connections until one closes" in lines[0]
    assert "accepting connections again (500 refused" in lines[1]


def test_start_counts_what_is_open_and_reads_the_limit() -> None:
    counted = Descriptors(reserve=224)
    counted.start()
    assert counted.base == pytest.approx(count_open(), abs=5)
    assert counted.limit > counted.base
    assert counted.room == max(counted.limit - counted.base - 224, 0)
