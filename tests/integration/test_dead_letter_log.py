"""Dead letters in a real broker's log: a flood of NACKed messages over TCP is a line per
destination per interval, and the broker sums up the interval under way when it stops,
so the lines count every message, and none goes unsaid."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from tests.clients import client
from tests.http_support import start_http_broker

pytestmark = pytest.mark.integration
N = 60


def test_a_flood_of_nacks_is_summed_up_and_nothing_is_left_unsaid(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="stompd.engine")
    thread = start_http_broker(tmp_path / "data", core=CoreSettings(max_redeliveries=0))
    try:
        with client(thread.port) as c:
            for i in range(N):
                # Persistent: a non-persistent dead letter is dropped (and logged so).
                c.send("/queue/poison", str(i), persistent="true")
            c.subscribe("/queue/poison", ack="client-individual")
            for frame in c.listener.wait_messages(N):
                c.nack(frame)
            c.sync()
    finally:
        thread.stop()
    lines = [r.getMessage() for r in caplog.records if "from /queue/poison" in r.getMessage()]
    counted = 0
    for line in lines:
        summary = re.match(r"dead-lettered (\d+) more messages from /queue/poison in the last \d+ s", line)
        counted += int(summary.group(1)) if summary else 1
    assert counted == N, lines
    # The first at once, then a line per 10 s interval at most (the run takes a few seconds).
    assert lines[0].startswith("dead-lettering ")
    assert len(lines) <= 3, lines
