"""A stompd node bridged to a real RabbitMQ 3.10 (Debian's package, its STOMP plugin).

As with ActiveMQ: ``legacy`` pulled from RabbitMQ into stompd's store, ``outbound``
forwarded to RabbitMQ, the link dropped mid-drain.  RabbitMQ names a message by its
session, so what it redelivers after the drop has a new message-id: the bridge knows
those copies by their content, and none reaches stompd's consumer twice.

Skipped where RabbitMQ is not installed.  The node runs on free ports with its own epmd
and data directory, and is ended by its PIDs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.network_support import Nodes, forward_outbound, migrate, nodes
from tests.ports import free_port
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

__all__ = ["nodes"]

SBIN = Path("/usr/lib/rabbitmq/bin")
COUNT = 200


def _ready(port: int) -> bool:
    try:
        client = RawClient(port, timeout=2)
    except OSError:
        return False
    try:
        client.connect(host="/", login="guest", passcode="guest")
        return True
    except (OSError, TimeoutError, AssertionError):
        return False
    finally:
        client.close()


def _end(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def rabbitmq(tmp_path: Path) -> Iterator[int]:
    """A fresh RabbitMQ node with STOMP on a free port; the port."""
    if not (SBIN / "rabbitmq-server").exists() or shutil.which("epmd") is None:
        pytest.skip("RabbitMQ (Debian's rabbitmq-server package) is not installed")
    stomp, amqp, dist, epmd = (free_port() for _ in range(4))
    base = tmp_path / "rabbit"
    (base / "home").mkdir(parents=True)
    (base / "log").mkdir()
    cookie = base / "home" / ".erlang.cookie"
    cookie.write_text(os.urandom(10).hex())
    cookie.chmod(0o400)
    (base / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = 127.0.0.1:{amqp}\nstomp.listeners.tcp.1 = 127.0.0.1:{stomp}\n"
        "stomp.default_user = guest\nstomp.default_pass = guest\nloopback_users.guest = true\n"
        "log.console = false\n"
    )
    (base / "advanced.config").write_text("[].\n")
    (base / "rabbitmq-env.conf").write_text("")
    env = {
        **os.environ,
        "HOME": str(base / "home"),
        "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
        "RABBITMQ_NODENAME": f"stompd{stomp}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(amqp),
        "RABBITMQ_DIST_PORT": str(dist),
        "ERL_EPMD_PORT": str(epmd),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_PID_FILE": str(base / "beam.pid"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_PLUGINS_EXPAND_DIR": str(base / "plugins-expand"),
        "RABBITMQ_FEATURE_FLAGS_FILE": str(base / "feature_flags"),
        "RABBITMQ_LOGS": str(base / "log" / "rabbit.log"),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
    }
    subprocess.run(
        [str(SBIN / "rabbitmq-plugins"), "--offline", "enable", "rabbitmq_stomp"],
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    )
    out = (base / "log" / "server.out").open("wb")
    epmd_proc = subprocess.Popen(
        ["epmd", "-port", str(epmd), "-address", "127.0.0.1"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
    server = subprocess.Popen([str(SBIN / "rabbitmq-server")], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not _ready(stomp):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"RabbitMQ did not start: {(base / 'log' / 'server.out').read_text()[-2000:]}")
            time.sleep(0.3)
        yield stomp
    finally:
        beam = base / "beam.pid"
        if beam.exists():
            _end(int(beam.read_text().strip()))
        for proc in (server, epmd_proc):
            proc.kill()
            proc.wait(30)
        out.close()


def rabbit(port: int) -> RawClient:
    client = RawClient(port, timeout=15)
    client.connect(host="/", login="guest", passcode="guest")
    return client


@pytest.mark.timeout(180)
def test_a_migration_off_rabbitmq_loses_and_doubles_nothing(rabbitmq: int, nodes: Nodes) -> None:
    frames = migrate(nodes, rabbitmq, lambda: rabbit(rabbitmq), COUNT, 'userName="guest" password="guest"')
    assert frames[0].headers["_STOMPD_PATH"] == f"127.0.0.1:{rabbitmq}"
    expires = int(time.time() * 1000) + 60_000
    forwarded = forward_outbound(nodes.threads["stompd"], lambda: rabbit(rabbitmq), expires=str(expires))
    # Its expiry, as RabbitMQ reads one: ms from now.
    assert 0 < int(forwarded.headers["expiration"]) <= 60_000
