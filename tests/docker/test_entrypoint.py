"""The broker image's command and HEALTHCHECK, run here against a real broker.

Same argv (ENTRYPOINT), same config file (docker/activemq.xml, which the image copies to
/etc/stompd/activemq.xml), same environment (the Dockerfile's ENV), with the container
paths mapped onto this machine (tests/docker/image.py).  The ports are the one thing
changed, through the very variables the image sets (STOMPD_*_PORT): 0 for the STOMP
listeners, read back from the broker's log; a free port for the admin server, where 0
means "off".
"""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.image import Dockerfile, HostMap, seconds
from tests.ports import free_port
from tests.stomp_raw import RawClient
from tests.ws_support import ws_round_trip

pytestmark = pytest.mark.integration

VOLUME = "/var/lib/stompd"
#: `docker stop` sends SIGTERM, then SIGKILL after this many seconds (its default).
DOCKER_STOP_TIMEOUT = 10.0


class ImageProcess:
    """One run of the broker image's entry point outside a container."""

    def __init__(self, data_dir: Path) -> None:
        self.dockerfile = Dockerfile()
        self.stage = self.dockerfile.default_target
        self.map = HostMap(self.dockerfile, self.stage, {VOLUME: data_dir})
        self.container_env = self.dockerfile.env(self.stage)
        # Docker sets HOME from the user's passwd entry (useradd --home-dir).
        self.container_env["HOME"] = VOLUME
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._listening = threading.Event()
        self._reader: threading.Thread | None = None
        self.stomp_port = 0
        self.http_port = 0
        self.http_logged = 0

    @property
    def argv(self) -> list[str]:
        entrypoint = self.dockerfile.exec_form(self.stage, "ENTRYPOINT")
        cmd = self.stage.last("CMD")
        argv = entrypoint + (self.dockerfile.exec_form(self.stage, "CMD") if cmd else [])
        return self.map.command(argv, self.container_env["PATH"])

    def env(self, **overrides: str) -> dict[str, str]:
        env = self.map.environment(self.container_env)
        env.update(overrides)
        return env

    def start(self) -> ImageProcess:
        workdir = self.dockerfile.instruction(self.stage, "WORKDIR")
        assert workdir is not None
        cwd = self.map.path(workdir.args)
        assert cwd is not None
        cwd.mkdir(parents=True, exist_ok=True)
        self.http_port = free_port()
        ephemeral = {"STOMPD_STOMP_PORT": "0", "STOMPD_WS_PORT": "0", "STOMPD_HTTP_PORT": str(self.http_port)}
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=self.env(**ephemeral),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(30):
            self.kill()
            raise AssertionError("the entry point did not start listening:\n" + self.output())
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            http = re.search(r"admin console on http://[\d.]+:(\d+)/", line)
            if http:
                self.http_logged = int(http[1])
            stomp = re.search(r"stompd listening on [\d.]+:(\d+)", line)
            if stomp:
                self.stomp_port = int(stomp[1])
                self._listening.set()
        self._listening.set()

    def output(self) -> str:
        return "".join(self.lines)[-4000:]

    def health_check(self) -> subprocess.CompletedProcess[str]:
        """The HEALTHCHECK command, as Docker runs it inside the container."""
        options, command = self.dockerfile.healthcheck(self.stage)
        env = self.env(STOMPD_STOMP_PORT=str(self.stomp_port), STOMPD_HTTP_PORT=str(self.http_port))
        return subprocess.run(
            self.map.command(command, self.container_env["PATH"]),
            env=env,
            capture_output=True,
            text=True,
            timeout=seconds(options["timeout"]),
        )

    def stop(self) -> int:
        """What `docker stop` does: SIGTERM to PID 1 (exec form: the broker itself)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(DOCKER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                "the broker ignored SIGTERM: docker would SIGKILL it\n" + self.output()
            ) from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def close(self) -> None:
        """Teardown: end it by PID if still running, and close its pipe."""
        self.kill()
        if self._reader is not None:
            self._reader.join(10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def started() -> Iterator[list[ImageProcess]]:
    runs: list[ImageProcess] = []
    yield runs
    for run in runs:
        run.close()


def start(runs: list[ImageProcess], data_dir: Path) -> ImageProcess:
    run = ImageProcess(data_dir)
    runs.append(run)
    return run.start()


def test_the_image_runs_stompd_from_the_shipped_config_on_the_volume(
    started: list[ImageProcess], tmp_path: Path
) -> None:
    run = start(started, tmp_path / "volume")
    assert run.argv[1:] == ["--config", str(Path(__file__).parents[2] / "docker" / "activemq.xml")]
    listening = re.search(
        r"stompd listening on 0\.0\.0\.0:\d+, ws://0\.0\.0\.0:(\d+)/stomp \(data dir "
        + re.escape(str(tmp_path / "volume")),
        run.output(),
    )
    assert listening, run.output()
    # The WebSocket listener of the shipped file serves STOMP at /stomp.
    assert asyncio.run(ws_round_trip(f"ws://127.0.0.1:{listening[1]}/stomp", "/queue/image")) == b"hello"
    assert (tmp_path / "volume" / "store").is_dir()
    assert "error" not in run.output().lower()


def test_health_check_passes_against_the_broker_and_fails_once_it_is_down(
    started: list[ImageProcess], tmp_path: Path
) -> None:
    run = start(started, tmp_path / "volume")
    assert run.http_logged == run.http_port, "the image's config turns the admin server on"
    healthy = run.health_check()
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert healthy.stdout.strip() == "healthy"
    assert run.stop() == 0
    down = run.health_check()
    assert down.returncode == 1, down.stdout + down.stderr
    assert down.stdout.startswith("unhealthy: ")
    assert "/health" in down.stdout and f"stomp://127.0.0.1:{run.stomp_port}" in down.stdout
    assert "Traceback" not in down.stdout + down.stderr


def test_sigterm_stops_the_broker_cleanly_and_a_restart_keeps_a_persistent_message(
    started: list[ImageProcess], tmp_path: Path
) -> None:
    volume = tmp_path / "volume"
    first = start(started, volume)
    client = RawClient(first.stomp_port)
    client.connect()
    client.send("SEND", {"destination": "/queue/docker", "persistent": "true", "receipt": "r1"}, b"kept")
    assert client.recv().command == "RECEIPT"
    client.close()
    assert first.stop() == 0, first.output()
    assert "stompd stopped" in first.output(), "the store was not closed: " + first.output()

    second = start(started, volume)
    client = RawClient(second.stomp_port)
    client.connect()
    client.send("SUBSCRIBE", {"destination": "/queue/docker", "id": "1", "ack": "auto"})
    message = client.recv()
    assert (message.command, message.body) == ("MESSAGE", b"kept")
    client.close()
    assert second.stop() == 0, second.output()


class _FailingHealth(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"status": "failing", "problems": ["message store failed: disk full"]}).encode()
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_health_check_fails_on_a_failing_store_and_says_why(tmp_path: Path) -> None:
    """/health answers 503 when the message store has failed: the check reports it."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _FailingHealth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as stomp:
        stomp.bind(("127.0.0.1", 0))
        stomp.listen()
        # Something on the STOMP port that answers a CONNECT as a broker would.
        answer = threading.Thread(target=_answer_connect, args=(stomp,), daemon=True)
        answer.start()
        run = ImageProcess(tmp_path / "volume")
        run.http_port = server.server_address[1]
        run.stomp_port = stomp.getsockname()[1]
        try:
            result = run.health_check()
        finally:
            server.shutdown()
            server.server_close()
    assert result.returncode == 1
    assert result.stdout.strip() == (
        f"unhealthy: http://127.0.0.1:{run.http_port}/health: HTTP 503: message store failed: disk full"
    )


def _answer_connect(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    with conn:
        while b"\0" not in conn.recv(4096):
            pass
        conn.sendall(b"CONNECTED\nversion:1.2\n\n\0")
        conn.recv(4096)
