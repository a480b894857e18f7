"""PHP's PECL stomp extension (Debian php-stomp, STOMP 1.0) against the real broker.

The scripts under tests/php/ are run as subprocesses; each prints one JSON line.  The
extension relies on every frame ending with NUL then EOL (as ActiveMQ writes them):
without the EOL it loses all but the first frame of a read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients import client
from tests.conftest import BrokerServer

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).resolve().parent.parent / "php"


@pytest.fixture(scope="module")
def php() -> str:
    path = shutil.which("php")
    if path is None:
        pytest.fail("php is not installed: run scripts/setup-tests.sh (Debian php-cli php-stomp)")
    modules = subprocess.run([path, "-m"], capture_output=True, text=True, check=True).stdout
    if "stomp" not in modules.lower().split():
        pytest.fail("PHP's stomp extension is not installed: run scripts/setup-tests.sh (Debian php-stomp)")
    return path


def run_php(php: str, script: str, *args: object) -> Any:
    done = subprocess.run(
        [php, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"{script} failed: {done.stderr.strip() or done.stdout.strip()}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_single_send_and_receive(php: str, broker_server: BrokerServer) -> None:
    result = run_php(php, "send_receive.php", broker_server.port, "/queue/php.single")
    assert result == {"body": "hello from php", "color": "blue"}


def test_queue_backlog_consumed_in_order_with_client_acks(php: str, broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        for i in range(100):
            c.send("/queue/php.backlog", f"m{i}", sync=i == 99)
    result = run_php(php, "queue_backlog.php", broker_server.port, "/queue/php.backlog", 100)
    assert result["bodies"] == [f"m{i}" for i in range(100)]
    # Every ACK was taken: nothing came back ahead of the message sent afterwards.
    assert result["next"] == "end"


def test_topic_fan_out_to_two_subscribers(php: str, broker_server: BrokerServer) -> None:
    result = run_php(php, "topic_fanout.php", broker_server.port, "/topic/php.fanout", 5)
    expected = [f"t{i}" for i in range(5)]
    assert result["received"] == [expected, expected]
