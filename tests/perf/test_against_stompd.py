"""stompd-perf against the real stompd (the lead's `broker_server` fixture, tests/conftest.py).

Small counts: these check that the tool and the broker agree on what was sent and
received, not how fast; benchmarks/compare.py measures speed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.perf.conftest import LATENCY_KEYS, REQUIRED_KEYS

if TYPE_CHECKING:
    from collections.abc import Callable

    RunTool = Callable[..., tuple[int, dict[str, Any]]]

pytestmark = pytest.mark.integration

FAST = ("--timeout", "2")


def _run(broker_server: Any, run_tool: RunTool, *args: str) -> tuple[int, dict[str, Any]]:
    return run_tool(broker_server.port, *args, *FAST, host=broker_server.host)


def test_queue_counts_and_json(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(broker_server, run_tool, "--producers", "2", "--consumers", "2", "--messages", "2000")
    assert s.keys() >= REQUIRED_KEYS
    assert s["latency_ms"].keys() >= LATENCY_KEYS
    assert (s["sent"], s["received"], s["lost"], s["duplicated"], s["errors"]) == (2000, 2000, 0, 0, 0)
    assert s["out_of_order"] == 0  # per producer, per consumer: a queue keeps FIFO
    assert code == 0


def test_topic_fans_out(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(
        broker_server, run_tool, "--destination", "/topic/perf", "--consumers", "3", "--messages", "500"
    )
    assert (s["expected"], s["received"], s["lost"], s["errors"]) == (1500, 1500, 0, 0)
    assert code == 0


def test_persistent_with_receipts(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(broker_server, run_tool, "--persistent", "--receipt-every", "50", "--messages", "1000")
    assert (s["sent"], s["received"], s["lost"], s["errors"]) == (1000, 1000, 0, 0)
    assert code == 0


def test_transacted_producers(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(broker_server, run_tool, "--transacted", "25", "--producers", "2", "--messages", "1000")
    assert (s["sent"], s["received"], s["lost"], s["errors"]) == (1000, 1000, 0, 0)
    assert code == 0


@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_ack_modes_with_prefetch(broker_server: Any, run_tool: RunTool, ack: str) -> None:
    code, s = _run(broker_server, run_tool, "--ack", ack, "--prefetch", "10", "--messages", "1000")
    assert (s["received"], s["lost"], s["duplicated"], s["errors"]) == (1000, 0, 0, 0)
    assert code == 0


def test_priority_mix_keeps_order_within_a_priority(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(broker_server, run_tool, "--priority-mix", "--backlog", "--messages", "1000")
    assert (s["received"], s["lost"], s["out_of_order"], s["errors"]) == (1000, 0, 0, 0)
    assert code == 0


def test_selector_matching_every_message(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(
        broker_server, run_tool, "--selector", "kind = 'perf'", "--property", "kind=perf", "--messages", "200"
    )
    assert (s["received"], s["lost"], s["errors"]) == (200, 0, 0)
    assert code == 0


def test_backlog_then_drain(broker_server: Any, run_tool: RunTool) -> None:
    code, s = _run(broker_server, run_tool, "--backlog", "--consumers", "2", "--messages", "3000")
    assert (s["sent"], s["received"], s["lost"], s["errors"]) == (3000, 3000, 0, 0)
    assert code == 0


def test_two_processes(broker_server: Any, run_tool: RunTool) -> None:
    args = ("--producers", "2", "--consumers", "2", "--messages", "2000", "--processes", "2")
    code, s = _run(broker_server, run_tool, *args)
    assert (s["sent"], s["received"], s["lost"], s["errors"]) == (2000, 2000, 0, 0)
    assert code == 0
