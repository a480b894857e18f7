"""Fixtures: a real stompd on an ephemeral port, real clients."""

from __future__ import annotations

# First, before anything of ours is imported: the build under test is current.
from tests import compiled_build  # noqa: F401

# isort: split
import inspect
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

from broker.app import BrokerOptions
from broker.core.admin.service import AdminService
from broker.core.base.settings import CoreSettings
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from store.api import Failed
from tests import parallel
from tests.broker_thread import BrokerThread

if TYPE_CHECKING:
    from store.api import Outcome


settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@dataclass
class BrokerServer:
    host: str
    port: int
    thread: BrokerThread

    @property
    def engine(self):  # type: ignore[no-untyped-def]
        assert self.thread.broker is not None
        return self.thread.broker.engine


def on_broker(thread: BrokerThread, ask: Callable[[AdminService], object]) -> Any:
    """What the running broker's admin service answers (asked on the broker's own loop,
    which owns every broker object; ``Steps`` run by its chores, as the admin API has
    them run), e.g. ``on_broker(t, lambda ops: ops.connections.every())``."""
    assert thread.broker is not None
    engine = thread.broker.engine
    ops = AdminService(engine, thread.broker.server.peers)
    answer: Future[Any] = Future()

    def done(outcome: Outcome[Any]) -> None:
        if isinstance(outcome, Failed):
            answer.set_exception(outcome.error)
        else:
            answer.set_result(outcome.value)

    def run() -> None:
        try:
            asked = ask(ops)
        except BaseException as exc:
            answer.set_exception(exc)
            return
        if inspect.isgenerator(asked):
            engine.chores.add(asked, done)
        else:
            answer.set_result(asked)

    thread.call(run)
    return answer.result(timeout=10)


def start_broker(data_dir: Path, **overrides: object) -> BrokerThread:
    core = overrides.pop("core", CoreSettings())
    limits = overrides.pop("limits", ConnectionLimits())
    listener = Listener(port=0, limits=limits)  # type: ignore[arg-type]
    options = BrokerOptions(listeners=(listener,), data_dir=data_dir, core=core)  # type: ignore[arg-type]
    return BrokerThread(options).start()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    parallel.check_marks(items)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its order is the run's
        items[:] = parallel.order(items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return parallel.make_scheduler(config, log) if config.getoption("dist") == "loadgroup" else None


@pytest.fixture(autouse=True)
def _close_raw_sockets() -> Iterator[None]:
    yield
    from tests import stomp_raw

    while stomp_raw.OPEN:
        stomp_raw.OPEN.pop().close()


@pytest.fixture
def broker_server(tmp_path: Path) -> Iterator[BrokerServer]:
    thread = start_broker(tmp_path / "data")
    try:
        yield BrokerServer("127.0.0.1", thread.port, thread)
    finally:
        thread.stop()


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with its admin HTTP server on an ephemeral port too (``.http_port``)."""
    from tests.http_support import start_http_broker

    thread = start_http_broker(tmp_path / "data")
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture
def ws_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with a ws:// listener and its admin server (``/stomp``), on ephemeral ports."""
    from tests.ws_support import running_ws_broker

    with running_ws_broker(tmp_path / "data") as thread:
        yield thread
