"""Helpers for the stompd-perf tests: a fake broker on a thread, and a way to run the CLI."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from perf import cli
from perf.sink import SinkThread

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

REQUIRED_KEYS = {"sent", "received", "lost", "duplicated", "out_of_order", "msgs_per_s", "mb_per_s", "errors"}
LATENCY_KEYS = {"p50", "p90", "p99", "p99_9", "max"}


@pytest.fixture
def sink() -> Iterator[SinkThread]:
    with SinkThread() as running:
        yield running


@pytest.fixture
def make_sink() -> Iterator[Callable[..., SinkThread]]:
    """A sink with faults: make_sink(drop_every=N, duplicate_every=M, refuse=b"/queue/x")."""
    started: list[SinkThread] = []

    def make(**faults: Any) -> SinkThread:
        running = SinkThread(**faults).__enter__()
        started.append(running)
        return running

    yield make
    for running in started:
        running.__exit__(None, None, None)


@pytest.fixture
def run_tool(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, dict[str, Any]]]:
    """Run `stompd-perf --json --quiet ARGS...`; return its exit status and parsed last line."""

    def run(port: int, *args: str, host: str = "127.0.0.1") -> tuple[int, dict[str, Any]]:
        capsys.readouterr()
        code = cli.main(["--host", host, "--port", str(port), "--json", "--quiet", *args])
        out = capsys.readouterr().out
        summary = json.loads(out.strip().splitlines()[-1])
        assert isinstance(summary, dict)
        return code, summary

    return run
