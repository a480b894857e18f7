"""A broker as a child process, as an operator starts it: ``python -m broker`` on a port
picked here (tests/ports.py) and kept across restarts, stopped with SIGTERM or killed
with SIGKILL, and every process a test started ended by its own PID at teardown
(``procs``). Shared by the crash, full-disk, network-crash, admin and Spark tests; moved
here from tests/integration/test_crash.py and test_server.py."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.stomp_raw import RawClient

ROOT = Path(__file__).resolve().parents[1]


class BrokerProcess:
    """``python -m broker`` on a fixed port and data dir, started and ended as often as needed."""

    def __init__(self, data_dir: Path, log: Path, *extra: str) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.log = log
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        #: How many times it was started: a broker lifetime is numbered by this.
        self.starts = 0

    def start(self, timeout: float = 15.0) -> None:
        assert self.proc is None, "already running"
        command = [
            sys.executable,
            "-m",
            "broker",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            "0",
        ]
        command += ["--data-dir", str(self.data_dir), *self.extra]
        with self.log.open("ab") as out:
            out.write(f"--- start {self.starts + 1}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                self.proc = None
                raise AssertionError(f"broker exited with {code} at start:\n{self.output()}")
            if self._answers_connect():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"broker not accepting STOMP after {timeout} s:\n{self.output()}")
            time.sleep(0.02)

    def _answers_connect(self) -> bool:
        try:
            raw = RawClient(self.port, timeout=1.0)
        except OSError:
            return False
        try:
            raw.connect()
            raw.send("DISCONNECT")
            return True
        except (OSError, TimeoutError):
            return False
        finally:
            raw.close()

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, and a clean exit."""
        proc = self._running()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"broker ignored SIGTERM for {timeout} s:\n{self.output()}") from None
        finally:
            self.proc = None
        assert code == 0, f"broker exited with {code} on SIGTERM:\n{self.output()}"

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs at all."""
        proc = self._running()
        proc.kill()
        proc.wait(10)
        self.proc = None

    def _running(self) -> subprocess.Popen[bytes]:
        assert self.proc is not None, "broker not running"
        code = self.proc.poll()
        assert code is None, f"broker died on its own with {code}:\n{self.output()}"
        return self.proc

    def close(self) -> None:
        """Teardown: end it by PID if a test left it running."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def output(self, tail: int = 4000) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-tail:]


@dataclass
class Processes:
    """Every child process a test started, so teardown can end each one by PID."""

    brokers: list[BrokerProcess] = field(default_factory=list)
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def broker(self, tmp_path: Path, *extra: str) -> BrokerProcess:
        broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", *extra)
        self.brokers.append(broker)
        return broker

    def close(self) -> None:
        for proc in self.others:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)  # reaps it and closes its pipes
        for broker in self.brokers:
            broker.close()


@pytest.fixture
def procs() -> Iterator[Processes]:
    started = Processes()
    try:
        yield started
    finally:
        started.close()


def wait_for_port(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(port)


def run_broker(port: int, data_dir: Path, http_port: int = 0) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--http-port",
            str(http_port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
