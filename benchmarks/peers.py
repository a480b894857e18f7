"""The brokers the benchmark compares: start fresh, find the process, read its memory, stop.

stompd and the sink are our own child processes.  ActiveMQ and RabbitMQ are started and
stopped only through ../shared/peers/*.sh, which keep their own pid files; a peer that
is already running when we arrive belongs to someone else and is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = Path(os.environ.get("STOMPD_PEERS_DIR", ROOT.parent / "shared" / "peers"))


class Unavailable(Exception):
    """This broker cannot be measured here (not installed, not runnable, option rejected)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stomp_ready(port: int, timeout: float, vhost: str = "/") -> bool:
    """True once CONNECT on 127.0.0.1:port is answered with CONNECTED."""
    deadline = time.monotonic() + timeout
    frame = f"CONNECT\naccept-version:1.0,1.1,1.2\nhost:{vhost}\nlogin:guest\npasscode:guest\n\n\0".encode()
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(frame)
                data = b""
                while b"\0" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                if data.lstrip(b"\r\n").startswith(b"CONNECTED"):
                    s.sendall(b"DISCONNECT\n\n\0")
                    return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def end_child(proc: subprocess.Popen[bytes], grace: float) -> bool:
    """SIGTERM a child of ours, SIGKILL it if it is still there after `grace` s; True if killed."""
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)
        return True
    return False


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, all its threads (user + system; Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB; (0, 0) if it is gone."""
    rss = hwm = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


@dataclass
class RssSampler:
    """Peak resident memory of a pid while a scenario runs: VmHWM, and VmRSS polled.

    VmHWM alone would do for one process started fresh per scenario; the poll is there
    for brokers whose measured pid is restarted or replaced under us.
    """

    pid: int
    interval: float = 0.2
    peak_kb: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def _sample(self) -> None:
        rss, hwm = memory_kb(self.pid)
        self.peak_kb = max(self.peak_kb, rss, hwm)

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class Broker:
    """One broker under test.  `start()` gives a fresh, empty instance; `stop()` ends it."""

    name = "broker"
    label = "broker"
    port = 0
    vhost = "/"
    note = ""

    def available(self) -> str | None:
        """None if it can run here, else why not."""
        return None

    def start(self, memory_limit: str | None = None) -> None:
        raise NotImplementedError

    def pid(self) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class _ChildBroker(Broker):
    """A broker that is simply our child process (stompd, the sink)."""

    ready_timeout = 60.0

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._data: tempfile.TemporaryDirectory[str] | None = None

    def argv(self, data_dir: str, memory_limit: str | None) -> list[str]:
        raise NotImplementedError

    def start(self, memory_limit: str | None = None) -> None:
        self.port = free_port()
        self._data = tempfile.TemporaryDirectory(prefix=f"bench-{self.name}-")
        log_path = Path(self._data.name) / "broker.log"
        data_dir = Path(self._data.name) / "data"
        data_dir.mkdir()
        with open(log_path, "wb") as log:
            self._proc = subprocess.Popen(
                self.argv(str(data_dir), memory_limit),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                start_new_session=True,  # a Ctrl-C meant for us does not race our own stop()
            )
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                status = self._proc.returncode
                tail = " / ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
                self.stop()
                raise Unavailable(f"exited with status {status}: {tail}")
            if stomp_ready(self.port, 1.0):
                return
        self.stop()
        raise Unavailable(f"no STOMP answer on port {self.port} within {self.ready_timeout:g} s")

    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            end_child(proc, 30)
        if self._data is not None:
            self._data.cleanup()
            self._data = None


class Stompd(_ChildBroker):
    name = "stompd"
    label = "stompd"

    def available(self) -> str | None:
        probe = subprocess.run(
            [sys.executable, "-m", "broker", "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if probe.returncode != 0:
            last = (probe.stderr.strip().splitlines() or ["?"])[-1]
            return f"`python -m broker` does not run yet ({last})"
        return None

    def argv(self, data_dir: str, memory_limit: str | None) -> list[str]:
        argv = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port)]
        argv += ["--data-dir", data_dir, "--http-port", "0"]
        if memory_limit is not None:
            argv += ["--memory-limit", memory_limit]
        return argv


class Sink(_ChildBroker):
    """perf/sink.py: no broker at all, the ceiling of the tool on this machine."""

    name = "sink"
    label = "sink (no broker)"
    note = "perf/sink.py: forwards SENDs at once, keeps a queue backlog in a deque, no memory limit"

    def argv(self, data_dir: str, memory_limit: str | None) -> list[str]:
        return [sys.executable, "-m", "perf.sink", "--host", "127.0.0.1", "--port", str(self.port)]


class Forwarder(_ChildBroker):
    """../shared/peers/limit_forwarder.py: a bare uvloop STOMP forwarder, no features at
    all, the ceiling of a Python broker on this machine (issue 17's bar: 70 % of it)."""

    name = "forwarder"
    label = "ceiling (bare forwarder)"
    note = "peers/limit_forwarder.py: SEND re-headed as MESSAGE to the next subscriber; no acks, no limits"

    def available(self) -> str | None:
        if not (PEERS_DIR / "limit_forwarder.py").exists():
            return f"{PEERS_DIR / 'limit_forwarder.py'} missing"
        return None

    def argv(self, data_dir: str, memory_limit: str | None) -> list[str]:
        return [sys.executable, str(PEERS_DIR / "limit_forwarder.py"), str(self.port)]


class _Peer(Broker):
    """A reference broker run by ../shared/peers/NAME.sh (which owns its pid file)."""

    script = ""
    package_path = ""
    start_timeout = 180.0

    def _run(self, action: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(PEERS_DIR / self.script), action],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def available(self) -> str | None:
        if not Path(self.package_path).exists():
            return f"not installed ({self.package_path} missing)"
        if not (PEERS_DIR / self.script).exists():
            return f"{PEERS_DIR / self.script} missing"
        if self._run("status", 30).returncode == 0:
            # Not ours: someone else is using it; `fresh` would wipe their data.
            return "already running (someone else's instance?): stop it first"
        return None

    def start(self, memory_limit: str | None = None) -> None:
        result = self._run("fresh", self.start_timeout)
        if result.returncode != 0:
            self._run("stop", 120)
            raise Unavailable(
                f"{self.script} fresh failed: {(result.stderr or result.stdout).strip()[-300:]}"
            )

    def pid(self) -> int:
        return int(self._run("pid", 30).stdout.strip())

    def stop(self) -> None:
        self._run("stop", 180)


class ActiveMQ(_Peer):
    name = "activemq"
    label = "ActiveMQ 5.17"
    port = 61613
    script = "activemq.sh"
    package_path = "/usr/share/activemq/bin/activemq.jar"
    note = "peers/activemq.xml: memoryUsage 64 mb, store 1 gb, temp 1 gb, -Xmx1g"


class RabbitMQ(_Peer):
    name = "rabbitmq"
    label = "RabbitMQ"
    port = 61623
    script = "rabbitmq.sh"
    package_path = "/usr/lib/rabbitmq/bin/rabbitmq-server"
    note = "peers/rabbitmq.conf (default memory watermark: no 64 MB limit)"

    def pid(self) -> int:
        # The pid file holds a sh wrapper; the Erlang VM, which holds the memory, has its own.
        beam = Path(os.environ.get("PEERS_ROOT", "/tmp/peers")) / "rabbitmq" / "beam.pid"
        with contextlib.suppress(OSError, ValueError):
            return int(beam.read_text().strip())
        return super().pid()


BROKERS: dict[str, type[Broker]] = {
    "sink": Sink,
    "stompd": Stompd,
    "forwarder": Forwarder,
    "activemq": ActiveMQ,
    "rabbitmq": RabbitMQ,
}
