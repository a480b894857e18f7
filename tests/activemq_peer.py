"""A real Apache ActiveMQ (Debian's package) for tests that check stompd against it.

Where ActiveMQ is installed (``apt-get install activemq``, which ``scripts/setup-tests.sh``
does, with a Java runtime), ``running_activemq`` starts one broker JVM of its own: a
temporary directory for its KahaDB store and logs, STOMP on a free loopback port, no
JMX, no other connector.  The JVM is the process started (no wrapper script), so
``kill9`` is a real ``kill -9`` and ``restart`` opens the same store again.  A test
marked ``needs_activemq`` is skipped only where ActiveMQ is not installed.

``broker_port`` (import it, with ``activemq``, into a test module) runs a test on stompd
and on ActiveMQ: the same scenario, the same expectations.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

HOME = Path("/usr/share/activemq")
JAR = HOME / "bin" / "activemq.jar"
#: XStream and Jettison (Debian's libxstream-java, libjettison-java), which upstream ships:
#: without them ActiveMQ's STOMP side sends no advisory, map or statistics message.
EXTRA_JARS = [Path("/usr/share/java/xstream.jar"), Path("/usr/share/java/jettison.jar")]
#: ActiveMQ takes a few seconds to start on this kind of machine; far more under load.
START_TIMEOUT = 120.0

_CONFIG = """<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="stompd-tests" useJmx="false"
          dataDirectory="{base}/data" schedulerSupport="true">
    <persistenceAdapter><kahaDB directory="{base}/kahadb"/></persistenceAdapter>
    <systemUsage><systemUsage>
      <memoryUsage><memoryUsage limit="64 mb"/></memoryUsage>
      <storeUsage><storeUsage limit="1 gb"/></storeUsage>
      <tempUsage><tempUsage limit="1 gb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}"/>
    </transportConnectors>
  </broker>
</beans>
"""

_LOG4J = """log4j.rootLogger=WARN, logfile
log4j.appender.logfile=org.apache.log4j.FileAppender
log4j.appender.logfile.file={base}/activemq.log
log4j.appender.logfile.layout=org.apache.log4j.PatternLayout
log4j.appender.logfile.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
"""


def installed() -> bool:
    return JAR.is_file() and shutil.which("java") is not None


needs_activemq = pytest.mark.skipif(
    not installed(), reason="ActiveMQ is not installed (apt-get install activemq)"
)


class ActiveMQ:
    """One ActiveMQ JVM over a store directory of its own; ``port`` is its STOMP port."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        (base / "tmp").mkdir(parents=True, exist_ok=True)
        (base / "activemq.xml").write_text(_CONFIG.format(base=base, port=self.port))
        (base / "log4j.properties").write_text(_LOG4J.format(base=base))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            "java",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "--add-reads=java.xml=java.logging",
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "-Djava.awt.headless=true",
            f"-Dactivemq.home={HOME}",
            f"-Dactivemq.base={self.base}",
            f"-Dactivemq.conf={self.base}",
            "-Dactivemq.classpath=" + ":".join([str(self.base), *(str(j) for j in EXTRA_JARS if j.exists())]),
            f"-Dactivemq.data={self.base}",
            f"-Djava.io.tmpdir={self.base / 'tmp'}",
            f"-Dlog4j.configuration=file:{self.base / 'log4j.properties'}",
            "-jar",
            str(JAR),
            "start",
            f"xbean:file:{self.base / 'activemq.xml'}",
        ]
        with open(self.base / "activemq.out", "ab") as out:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_stomp()

    def _wait_stomp(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"ActiveMQ exited at start: {self.log()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=2) as s,
            ):
                s.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
                s.settimeout(5)
                if s.recv(9).startswith(b"CONNECTED"):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"ActiveMQ did not answer STOMP on {self.port}: {self.log()[-2000:]}")

    def log(self) -> str:
        files = (self.base / "activemq.out", self.base / "activemq.log")
        return "\n".join(p.read_text(errors="replace") for p in files if p.exists())

    def kill9(self) -> None:
        """``kill -9`` the JVM (its store is left as a crash leaves it)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self) -> None:
        self.kill9()
        self.start()

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running_activemq(broker_xml: str = "") -> Iterator[ActiveMQ]:
    """``broker_xml``: elements for its <broker>, before its connectors."""
    with tempfile.TemporaryDirectory(prefix="stompd-activemq-") as tmp:
        broker = ActiveMQ(Path(tmp))
        if broker_xml:
            xml = broker.base / "activemq.xml"
            text = xml.read_text().replace("<transportConnectors>", broker_xml + "<transportConnectors>", 1)
            xml.write_text(text)
        try:
            broker.start()
            yield broker
        finally:
            broker.stop()


@pytest.fixture(scope="module")
def activemq() -> Iterator[ActiveMQ]:
    """One ActiveMQ for a module's tests (each uses destinations of its own)."""
    with running_activemq() as broker:
        yield broker


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def broker_port(request: pytest.FixtureRequest) -> int:
    """The STOMP port of stompd (a fresh one) or of ActiveMQ (one for the module)."""
    if request.param == "stompd":
        return int(request.getfixturevalue("broker_server").port)
    broker: ActiveMQ = request.getfixturevalue("activemq")
    return broker.port
