"""What lets the suite run on several workers at once (pytest-xdist): no two brokers of
concurrent tests are handed one port."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.settings_bridge import broker_options
from config.model import BrokerConfig
from tests import parallel, ports
from tests.broker_thread import BrokerThread

ROOT = Path(__file__).resolve().parents[1]
#: Another process (another worker): how many of the given ports it could lock, and
#: whether free_port handed it one of them.
CHILD = """import sys
from tests import parallel, ports
given = {int(p) for p in sys.argv[1:]}
print(sum(ports._locked(p) for p in given), ports.free_port() in given)
"""


def test_a_child_brokers_port_is_outside_the_ephemeral_range() -> None:
    """bind(0) and every client socket draw from the ephemeral range: a port from there
    could be taken between the handing out and the child's bind."""
    low = ports._ephemeral_low()
    assert all(ports.free_port() < low for _ in range(20))


def test_a_port_given_here_is_refused_to_every_other_process() -> None:
    mine = [ports.free_port() for _ in range(20)]
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            *map(str, mine),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert other.stdout.split() == ["0", "False"]


def test_a_test_broker_from_a_configuration_never_takes_the_fixed_admin_port(tmp_path: Path) -> None:
    options = broker_options(BrokerConfig())
    assert options.http_port == 8161  # what an operator's broker listens on
    thread = BrokerThread(options)
    thread.loop.close()  # never started
    assert thread.options.http_port == 0  # a free one, read back as .http_port


def test_the_spark_and_the_peer_tests_are_each_one_group() -> None:
    assert parallel.group_of("tests/spark/test_cli.py::test_bad_input_is_one_line_and_status_2") == "spark"
    assert parallel.group_of("tests/docker/test_report_service.py::test_x") == "spark"
    assert parallel.group_of("tests/integration/test_activemq_compat.py::test_x[activemq]") == "peers"
    assert parallel.group_of("tests/integration/test_server.py::test_x") is None
    assert parallel.group_of("tests/docker/test_compose.py::test_x") is None


def test_a_test_that_starts_an_activemq_elsewhere_is_a_usage_error() -> None:
    class Item:
        nodeid = "tests/integration/test_server.py::test_x"
        fixturenames = ("activemq", "tmp_path")

        def get_closest_marker(self, name: str) -> None:
            return None

    with pytest.raises(pytest.UsageError, match="PEER_MODULES"):
        parallel.check_marks([Item()])  # type: ignore[list-item]
    Item.nodeid = "tests/integration/test_virtual_rights.py::test_x"
    parallel.check_marks([Item()])  # type: ignore[list-item]
