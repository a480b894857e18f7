"""A stompd node bridged to a real ActiveMQ 5.17 (Debian's package): a migration.

The connector pulls ``legacy`` from ActiveMQ into stompd's store (``<pulledDestinations>``)
and forwards ``outbound`` from stompd to ActiveMQ (``<staticallyIncludedDestinations>``),
under the same store-and-forward rules: ActiveMQ's message is ACKed only once stompd's
RECEIPT says it is stored, and the link dropped mid-drain loses and doubles nothing.

Skipped where ActiveMQ (and its peers/ scripts) is not installed.  The JVM runs on free
ports with a data directory of its own and is ended by its PID.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.network_support import Nodes, eventually, forward_outbound, migrate, nodes
from tests.ports import free_port
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

__all__ = ["nodes"]

ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = [
    os.environ.get("STOMPD_PEERS_DIR", ""),
    str(ROOT.parent / "shared" / "peers"),
    str(ROOT.parent.parent / "shared" / "peers"),
]
PEERS = next((Path(p) for p in _CANDIDATES if p and (Path(p) / "activemq_node.sh").exists()), None)
JAR = Path("/usr/share/activemq/bin/activemq.jar")
COUNT = 300

AMQ_CONFIG = """<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
    <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer"/>
    <broker xmlns="http://activemq.apache.org/schema/core" useJmx="false" brokerName="legacy-amq"
            dataDirectory="${node.dir}/data" schedulerSupport="false">
        <persistenceAdapter><kahaDB directory="${node.dir}/kahadb"/></persistenceAdapter>
        <transportConnectors>
            <transportConnector name="stomp" uri="stomp://127.0.0.1:${stomp.port}"/>
        </transportConnectors>
    </broker>
</beans>
"""


def _stomp_ready(port: int) -> bool:
    try:
        client = RawClient(port, timeout=2)
    except OSError:
        return False
    try:
        client.connect()
        return True
    except (OSError, TimeoutError, AssertionError):
        return False
    finally:
        client.close()


@pytest.fixture
def activemq(tmp_path: Path) -> Iterator[int]:
    """A fresh ActiveMQ on a free STOMP port; its port."""
    if PEERS is None or not JAR.exists() or shutil.which("java") is None:
        pytest.skip("ActiveMQ (Debian's activemq package) or ../shared/peers is not installed")
    port = free_port()
    directory = tmp_path / "amq"
    directory.mkdir()
    config = directory / "activemq.xml"
    config.write_text(AMQ_CONFIG)
    log = (directory / "jvm.log").open("wb")
    proc = subprocess.Popen(
        [
            "bash",
            str(PEERS / "activemq_node.sh"),
            "--config",
            str(config),
            f"-Dnode.dir={directory}",
            f"-Dstomp.port={port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while not _stomp_ready(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ActiveMQ did not start: {(directory / 'jvm.log').read_text()[-2000:]}")
            time.sleep(0.3)
        yield port
    finally:
        # activemq_node.sh execs the JVM: this pid is the JVM's.
        proc.kill()
        proc.wait(30)
        log.close()


def amq_client(port: int) -> RawClient:
    client = RawClient(port, timeout=15)
    client.connect(login="admin", passcode="admin")
    return client


def browse_count(port: int, queue: str) -> int:
    """How many messages ActiveMQ's queue holds (a STOMP queue browser, up to browser:end)."""
    client = amq_client(port)
    client.send("SUBSCRIBE", {"id": "b", "destination": queue, "browser": "true"})
    count = 0
    while True:
        frame = client.recv()
        if frame.headers.get("browser") == "end":
            client.close()
            return count
        count += 1


@pytest.mark.timeout(180)
def test_a_migration_drains_activemq_into_stompd_and_forwards_to_it_nothing_lost_nothing_doubled(
    activemq: int, nodes: Nodes
) -> None:
    frames = migrate(
        nodes, activemq, lambda: amq_client(activemq), COUNT, 'userName="admin" password="admin"'
    )
    first = frames[0].headers
    assert first["message-id"].startswith("ID:") and first["order"] in {str(i) for i in range(COUNT)}
    assert first["_STOMPD_PATH"] == f"127.0.0.1:{activemq}"
    eventually(lambda: browse_count(activemq, "/queue/legacy") == 0, what="ActiveMQ's legacy queue drained")
    expires = str(int(time.time() * 1000) + 60_000)
    forwarded = forward_outbound(nodes.threads["stompd"], lambda: amq_client(activemq), expires=expires)
    assert forwarded.headers["persistent"] == "true" and forwarded.headers["expires"] == expires
