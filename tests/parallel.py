"""How a parallel run (pytest-xdist, ``-n auto --dist loadgroup`` in pyproject's addopts)
shares the tests out: every Spark test on one worker (one session-wide SparkSession and
report for them all, and JVMs never two to a core), every peer-broker test (ActiveMQ's
JVM, RabbitMQ) on one worker, one after another; any other test wherever a worker is free.

Groups are known by path: pytest-xdist 3.8 finds ``xdist_group`` markers by a suffix it
writes into ``item._nodeid``, which pytest 9 no longer reads, so tests/conftest.py hands
pytest-xdist a scheduler of its own instead (``make_scheduler``). The groups come first in
the run's order, so their workers start on them at once rather than end the run alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

SPARK: Final = "spark"
PEERS: Final = "peers"
#: Where the tests marked ``spark`` live.
SPARK_PATHS: Final = ("tests/spark/", "tests/docker/test_report_service.py")
#: Test modules that start a peer broker of their own.
PEER_MODULES: Final = frozenset(
    {
        "tests/integration/test_activemq_compat.py",
        "tests/integration/test_advisories_activemq.py",
        "tests/integration/test_activemq_names.py",
        "tests/integration/test_jms_headers.py",
        "tests/integration/test_expiry_dead_letters.py",
        "tests/integration/test_ack_durability.py",
        "tests/integration/test_network_activemq.py",
        "tests/integration/test_network_rabbitmq.py",
        "tests/integration/test_redelivery_fallback.py",
        "tests/integration/test_refusals.py",
        "tests/integration/test_retroactive.py",
        "tests/integration/test_send_plugins.py",
        "tests/integration/test_slow_consumers.py",
        "tests/integration/test_statistics.py",
        "tests/integration/test_transformations.py",
        "tests/integration/test_virtual_destinations.py",
        "tests/integration/test_virtual_rights.py",
        "tests/integration/test_wildcard_queues.py",
    }
)
#: The fixture that starts an ActiveMQ JVM (tests/activemq_peer.py).
PEER_FIXTURE: Final = "activemq"
#: The groups in a parallel run's order: the longest first.
ORDER: Final = (SPARK, PEERS)


def group_of(nodeid: str) -> str | None:
    """The group of the test ``nodeid`` (``tests/...py::name``), None for most."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SPARK_PATHS):
        return SPARK
    if path in PEER_MODULES:
        return PEERS
    return None


def order(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the groups' tests first, in ORDER, the rest as they were."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(items, key=lambda item: rank.get(group_of(item.nodeid) or "", len(ORDER)))


def check_marks(items: Sequence[pytest.Item]) -> None:
    """A test marked ``spark`` outside SPARK_PATHS, or one that starts an ActiveMQ outside
    PEER_MODULES, would start a second JVM on another worker."""
    for item in items:
        group = group_of(item.nodeid)
        if item.get_closest_marker("spark") is not None and group != SPARK:
            raise pytest.UsageError(f"{item.nodeid} is marked spark: put it under {' or '.join(SPARK_PATHS)}")
        if PEER_FIXTURE in getattr(item, "fixturenames", ()) and group != PEERS:
            where = "tests/parallel.py's PEER_MODULES"
            raise pytest.UsageError(f"{item.nodeid} starts an ActiveMQ: add its module to {where}")


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's loadgroup scheduling, its groups read off the paths (group_of)."""
    from xdist.scheduler import LoadGroupScheduling

    class ByPath(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    return ByPath(config, log)
