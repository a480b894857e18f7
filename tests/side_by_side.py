"""The same activemq.xml elements on stompd and on the real ActiveMQ, as one fixture
parametrized over both: the side-by-side tests of a configured feature.

    configured_activemq, port = side_by_side(PLUGINS)

at a test module's top gives it ``port``, the STOMP port of a stompd broker started with
``PLUGINS`` for each test, or of one ActiveMQ JVM with the same elements for the module
(skipped where ActiveMQ is not installed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.activemq_peer import ActiveMQ, needs_activemq, running_activemq
from tests.broker_thread import configured_broker


def side_by_side(
    elements: str, stompd_only: str = "", name: str = "port"
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The module's ActiveMQ fixture and its ``name`` fixture; ``stompd_only``: elements
    given to stompd alone (ActiveMQ would refuse them)."""

    @pytest.fixture(scope="module")
    def configured_activemq() -> Iterator[ActiveMQ]:
        with running_activemq(elements) as broker:
            yield broker

    @pytest.fixture(name=name, params=["stompd", pytest.param("activemq", marks=needs_activemq)])
    def port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
        if request.param == "activemq":
            yield request.getfixturevalue("configured_activemq").port
            return
        thread = configured_broker(tmp_path, elements + stompd_only)
        try:
            yield thread.port
        finally:
            thread.stop()

    return configured_activemq, port
