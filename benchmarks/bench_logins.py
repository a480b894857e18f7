"""How fast one client can guess passwords, and what a right password costs meanwhile.

Runs ``stompd --config`` (from ``--root``, this checkout by default: give another
checkout to measure it) with two users, then, for ``--seconds`` each, a guesser that
tries a wrong password on a fresh connection and waits for the answer, one after the
other: on STOMP (a CONNECT, its ERROR) and on the admin server (a request with basic
auth, its 401).  Meanwhile another client logs in with the right password every 100 ms.
Prints the guesses answered per second over the whole run and over its last half (where
the slowing has set in), and the right logins' median and worst time to be let in.

Run: ``python benchmarks/bench_logins.py [--seconds 20] [--root /path/to/checkout]``.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import free_port  # noqa: E402

CONFIG = """<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" dataDirectory="{data}">
  <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>
  <httpServer port="{http}"/>
  <plugins><simpleAuthenticationPlugin><users>
    <authenticationUser username="admin" password="admin-pw" groups="admins"/>
    <authenticationUser username="app" password="app-pw" groups="apps"/>
  </users></simpleAuthenticationPlugin></plugins>
</broker>
</beans>
"""


def stomp_login(port: int, login: str, passcode: str) -> bool:
    """One CONNECT on a fresh connection; whether it was let in (its answer read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"CONNECT\naccept-version:1.2\nlogin:{login}\npasscode:{passcode}\n\n\0".encode())
        answer = b""
        while b"\0" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.startswith(b"CONNECTED")


def http_login(port: int, login: str, password: str) -> bool:
    token = base64.b64encode(f"{login}:{password}".encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/usage", headers={"Authorization": "Basic " + token}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError:
        return False


def attack(name: str, seconds: float, guess: Callable[[str], bool], right: Callable[[], bool]) -> None:
    answered: list[float] = []
    let_in: list[float] = []
    stop = threading.Event()

    def user() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            assert right(), "the right password was refused"
            let_in.append(time.perf_counter() - started)
            stop.wait(0.1)

    helper = threading.Thread(target=user, daemon=True)
    helper.start()
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < seconds:
        assert not guess(f"guess-{n}"), "a wrong password was let in"
        n += 1
        answered.append(time.perf_counter() - start)
    stop.set()
    helper.join()
    took = time.perf_counter() - start
    late = [at for at in answered if at >= took / 2]
    print(
        f"{name:>5}: {len(answered):7d} guesses in {took:5.1f} s = {len(answered) / took:8.1f}/s; "
        f"last half {len(late) / (took / 2):8.2f}/s; the right password let in "
        f"{len(let_in)} times, median {statistics.median(let_in) * 1000:6.2f} ms, "
        f"worst {max(let_in) * 1000:7.2f} ms"
    )


@contextmanager
def broker(root: Path) -> Iterator[tuple[int, int]]:
    """A broker of its own (each attack starts from nothing): its STOMP and HTTP ports."""
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "activemq.xml"
        http = free_port()
        config.write_text(CONFIG.format(data=Path(scratch) / "data", http=http))
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", "--config", str(config)],
            cwd=scratch,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        stream = process.stderr
        assert stream is not None
        try:
            port = 0
            for line in stream:
                match = re.search(r"stompd listening on 127\.0\.0\.1:(\d+)", line)
                if match:
                    port = int(match.group(1))
                    break
            # The rest of the log is read away, so that the broker never waits on the pipe.
            threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
            yield port, http
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose broker runs")
    args = parser.parse_args()
    print(f"broker from {args.root}")
    with broker(args.root) as (port, _):
        attack(
            "STOMP",
            args.seconds,
            lambda p: stomp_login(port, "app", p),
            lambda: stomp_login(port, "app", "app-pw"),
        )
    with broker(args.root) as (_, http):
        attack(
            "HTTP",
            args.seconds,
            lambda p: http_login(http, "admin", p),
            lambda: http_login(http, "admin", "admin-pw"),
        )


if __name__ == "__main__":
    main()
