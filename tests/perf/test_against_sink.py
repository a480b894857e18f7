"""stompd-perf against the fake sink: the tool's own counting, exactly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from perf import cli
from tests.perf.conftest import LATENCY_KEYS, REQUIRED_KEYS

if TYPE_CHECKING:
    from collections.abc import Callable

    from perf.sink import SinkThread

    RunTool = Callable[..., tuple[int, dict[str, Any]]]
    MakeSink = Callable[..., SinkThread]

FAST = ("--timeout", "0.5")  # a lossy run waits this long for stragglers


def test_queue_counts_are_exact(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(sink.port, "--producers", "2", "--consumers", "2", "--messages", "3001", *FAST)
    assert code == 0
    assert (s["sent"], s["received"], s["expected"]) == (3001, 3001, 3001)
    assert (s["lost"], s["duplicated"], s["out_of_order"], s["errors"]) == (0, 0, 0, 0)
    assert sink.sink.commands[b"SEND"] == 3001
    assert s["latency_samples"] == 3001


def test_json_is_the_last_line_with_the_required_keys(
    sink: SinkThread, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    code = cli.main(["--port", str(sink.port), "--messages", "100", "--json"])
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    summary = json.loads(lines[-1])
    assert code == 0
    assert summary.keys() >= REQUIRED_KEYS
    assert summary["latency_ms"].keys() >= LATENCY_KEYS
    assert summary["msgs_per_s"] > 0 and summary["mb_per_s"] > 0
    assert summary["latency_ms"]["p50"] <= summary["latency_ms"]["p99"] <= summary["latency_ms"]["max"]
    assert "received" in captured.err  # the human summary went to stderr


def test_human_summary_without_json(sink: SinkThread, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--port", str(sink.port), "--messages", "50", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "lost" in out and "result: OK" in out


def test_lost_messages_are_counted_and_fail_the_run(make_sink: MakeSink, run_tool: RunTool) -> None:
    lossy = make_sink(drop_every=10)
    code, s = run_tool(lossy.port, "--messages", "2000", *FAST)
    assert code == 1
    assert s["sent"] == 2000
    assert s["lost"] == lossy.sink.dropped == 200
    assert s["received"] == 1800
    assert s["duplicated"] == 0


def test_duplicates_are_counted(make_sink: MakeSink, run_tool: RunTool) -> None:
    doubling = make_sink(duplicate_every=10)
    code, s = run_tool(doubling.port, "--messages", "2000", *FAST)
    assert code == 0  # duplicates are reported, not a failure
    assert (s["received"], s["duplicated"], s["lost"]) == (2200, 200, 0)


def test_duplicates_across_worker_processes(make_sink: MakeSink, run_tool: RunTool) -> None:
    # The sink delivers the second copy round-robin, so it usually lands on the other
    # consumer, in the other process: only the parent's merge can see it twice.
    doubling = make_sink(duplicate_every=5)
    code, s = run_tool(doubling.port, "--consumers", "2", "--messages", "1000", "--processes", "2", *FAST)
    assert code == 0
    assert (s["sent"], s["received"], s["duplicated"], s["lost"]) == (1000, 1200, 200, 0)


def test_topic_expects_every_message_at_every_consumer(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(
        sink.port, "--destination", "/topic/t", "--consumers", "2", "--messages", "1000", *FAST
    )
    assert code == 0
    assert (s["sent"], s["expected"], s["received"], s["lost"]) == (1000, 2000, 2000, 0)


def test_topic_loss_counts_per_consumer(make_sink: MakeSink, run_tool: RunTool) -> None:
    lossy = make_sink(drop_every=10)
    code, s = run_tool(
        lossy.port, "--destination", "/topic/t", "--consumers", "2", "--messages", "1000", *FAST
    )
    assert code == 1
    assert (s["expected"], s["received"], s["lost"]) == (2000, 1800, 200)


def test_transactions_commit_every_batch(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(sink.port, "--messages", "1000", "--transacted", "64", "--producers", "2", *FAST)
    assert code == 0
    assert (s["sent"], s["received"], s["lost"]) == (1000, 1000, 0)
    # 500 per producer in batches of 64: 7 full + 1 partial each; every COMMIT receipted.
    assert sink.sink.commands[b"BEGIN"] == sink.sink.commands[b"COMMIT"] == 16
    assert sink.sink.receipts[b"COMMIT"] == 16


def test_receipt_every_k(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(
        sink.port, "--messages", "1000", "--receipt-every", "10", "--receipt-window", "3", *FAST
    )
    assert code == 0
    assert (s["sent"], s["received"], s["lost"]) == (1000, 1000, 0)
    assert sink.sink.receipts[b"SEND"] == 100


@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_ack_modes(sink: SinkThread, run_tool: RunTool, ack: str) -> None:
    code, s = run_tool(sink.port, "--messages", "500", "--ack", ack, "--prefetch", "50", *FAST)
    assert code == 0
    assert s["received"] == 500
    acks = sink.sink.commands[b"ACK"]
    assert (acks == 500) if ack == "client-individual" else (1 <= acks <= 500)


def test_priority_mix_orders_per_producer_and_priority(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(sink.port, "--messages", "1000", "--priority-mix", "--producers", "2", *FAST)
    assert code == 0
    assert (s["received"], s["out_of_order"]) == (1000, 0)


def test_backlog_fills_then_drains(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(sink.port, "--messages", "2000", "--consumers", "2", "--backlog", *FAST)
    assert code == 0
    assert (s["sent"], s["received"], s["lost"]) == (2000, 2000, 0)


def test_leftovers_from_another_run_are_foreign_not_received(sink: SinkThread, run_tool: RunTool) -> None:
    code, filled = run_tool(sink.port, "--consumers", "0", "--messages", "300", *FAST)
    assert code == 0 and (filled["sent"], filled["expected"]) == (300, 0)
    # Consumers only: drain what is there until nothing arrives for --timeout.
    code, drained = run_tool(sink.port, "--producers", "0", "--consumers", "2", *FAST)
    assert code == 0
    assert (drained["foreign"], drained["received"], drained["lost"]) == (300, 0, 0)


def test_two_processes(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(
        sink.port, "--producers", "2", "--consumers", "2", "--messages", "4000", "--processes", "2", *FAST
    )
    assert code == 0
    assert (s["sent"], s["received"], s["lost"], s["duplicated"], s["errors"]) == (4000, 4000, 0, 0, 0)
    assert s["latency_samples"] == 4000


def test_fixed_rate_for_a_duration(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(sink.port, "--rate", "2000", "--duration", "0.5", "--warmup", "0.25", *FAST)
    assert code == 0
    # Open loop: exactly the messages due in warmup + duration, whatever the loop's jitter.
    assert s["sent"] == s["received"] == 1500
    # The warm-up's deliveries are counted but not timed.
    assert 900 <= s["latency_samples"] <= 1100


def test_selector_and_properties_reach_the_broker(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(
        sink.port, "--messages", "10", "--selector", "kind = 'a'", "--property", "kind=a", *FAST
    )
    assert code == 0
    assert s["received"] == 10


def test_unreachable_broker_is_an_error(run_tool: RunTool) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, s = run_tool(port, "--messages", "10", "--connect-timeout", "2", *FAST)
    assert code == 1
    assert s["errors"] == 2  # the producer and the consumer
    assert s["sent"] == 0


def test_error_frames_are_counted_once(make_sink: MakeSink, run_tool: RunTool) -> None:
    refusing = make_sink(refuse=b"/queue/refused")
    code, s = run_tool(refusing.port, "--destination", "/queue/refused", "--messages", "100", *FAST)
    assert code == 1
    # The SUBSCRIBE's ERROR (which also ends its receipt wait at once), then one per SEND.
    assert s["errors"] == 101
    assert s["received"] == 0 and s["lost"] == 100
    assert any("refused by the sink" in text for text in s["error_samples"])


def test_bad_arguments_exit_2(sink: SinkThread) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--port", str(sink.port), "--size", "8"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["--destination", "/topic/x", "--backlog"])
    assert exc.value.code == 2
    # A producer that asks for no RECEIPT cannot tell what to send again after a failover.
    with pytest.raises(SystemExit) as exc:
        cli.main(["--failover", f"127.0.0.1:{sink.port}"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["--failover", "127.0.0.1", "--receipt-every", "1"])
    assert exc.value.code == 2


def test_failover_goes_down_the_list_to_the_broker_that_answers(sink: SinkThread, run_tool: RunTool) -> None:
    import socket

    with socket.socket() as probe:  # a standby: nothing listens there
        probe.bind(("127.0.0.1", 0))
        standby = probe.getsockname()[1]
    brokers = f"127.0.0.1:{standby},127.0.0.1:{sink.port}"
    code, s = run_tool(sink.port, "--failover", brokers, "--receipt-every", "10", "--messages", "500", *FAST)
    assert (code, s["sent"], s["received"], s["lost"], s["errors"]) == (0, 500, 500, 0, 0)
    assert s["failover"]["reconnects"] == 0 and s["failover"]["resent"] == 0


def test_fixed_rate_with_producer_and_consumer_in_processes_of_their_own(
    sink: SinkThread, run_tool: RunTool
) -> None:
    code, s = run_tool(
        sink.port, "--rate", "2000", "--duration", "0.5", "--warmup", "0.25", "--processes", "2", *FAST
    )
    assert code == 0
    assert s["sent"] == s["received"] == 1500


def test_ack_receipts(sink: SinkThread, run_tool: RunTool) -> None:
    code, s = run_tool(
        sink.port,
        "--messages",
        "500",
        "--ack",
        "client-individual",
        "--ack-receipts",
        "--prefetch",
        "50",
        *FAST,
    )
    assert code == 0 and s["errors"] == 0
    assert sink.sink.receipts[b"ACK"] == sink.sink.commands[b"ACK"] == 500
