"""What the crash tests share (moved here from test_crash.py): the seed of their kill
points, their queue, small raw-socket steps (persistent SENDs with their RECEIPTs, a
SUBSCRIBE, collecting MESSAGEs, ACKs) and the producer process that records what was
receipted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from protocol.frames import Frame
from tests.broker_process import ROOT, Processes
from tests.stomp_raw import RawClient

#: Override to replay or explore other kill points: STOMPD_CRASH_SEED=123 pytest ...
SEED = int(os.environ.get("STOMPD_CRASH_SEED", "20240607"))
#: The kill -9 test's queue.
QUEUE = "/queue/crash"


def send_persistent(raw: RawClient, queue: str, items: list[tuple[str, int]]) -> None:
    """Pipelined persistent SENDs (body = id), then every RECEIPT."""
    for msg_id, priority in items:
        headers = {"destination": queue, "persistent": "true", "priority": str(priority), "receipt": msg_id}
        raw.send("SEND", headers, msg_id.encode())
    want = {msg_id for msg_id, _ in items}
    while want:
        frame = raw.recv(10)
        assert frame.command == "RECEIPT", frame
        want.discard(frame.headers["receipt-id"])


def subscribe(raw: RawClient, queue: str, ack: str, **headers: str) -> None:
    raw.send("SUBSCRIBE", {"destination": queue, "id": "1", "ack": ack, "receipt": "sub", **headers})
    frame = raw.recv()
    assert frame.command == "RECEIPT" and frame.headers["receipt-id"] == "sub", frame


def collect(raw: RawClient, n: int, timeout: float = 5.0) -> list[Frame]:
    """Up to ``n`` MESSAGEs; fewer if the broker goes quiet for ``timeout``."""
    got: list[Frame] = []
    while len(got) < n:
        try:
            frame = raw.recv(timeout)
        except TimeoutError:
            break
        assert frame.command == "MESSAGE", frame
        got.append(frame)
    return got


def ack(raw: RawClient, frame: Frame, receipt: str | None = None) -> None:
    headers = {"id": frame.headers["ack"]}
    if receipt is not None:
        headers["receipt"] = receipt
    raw.send("ACK", headers)


def redelivered(frame: Frame) -> bool:
    return frame.headers.get("redelivered") == "true"


def body(frame: Frame) -> str:
    return frame.body.decode()


def connected(port: int) -> RawClient:
    raw = RawClient(port)
    raw.connect()
    return raw


def spawn_producer(
    procs: Processes, port: int, prefix: str, count: int, out: Path, seed: int, rate: int
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.crash_producer", "--port", str(port), "--queue", QUEUE]
    command += ["--prefix", prefix, "--count", str(count), "--out", str(out), "--seed", str(seed)]
    command += ["--rate", str(rate), "--window", "200"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs.others.append(proc)
    return proc


def receipted_count(out: Path) -> int:
    try:
        return out.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_receipts(out: Path, producer: subprocess.Popen[bytes], at_least: int, timeout: float = 10.0) -> None:
    """Until the producer has ``at_least`` RECEIPTs (or has stopped)."""
    deadline = time.monotonic() + timeout
    while receipted_count(out) < at_least and producer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
