"""A producer run as its own process by the crash tests (tests/integration/test_crash.py).

    python -m tests.crash_producer --port P --queue /queue/q --prefix r1- --count 800 --out FILE

It sends ``count`` persistent messages, each with a unique id (``<prefix><n>``, 0-based) as
its body and in a ``crash-id`` header, a ``priority`` from a seeded mix and a ``receipt``
header equal to the id.  SENDs are pipelined (up to ``--window`` unreceipted) and paced at
``--rate`` messages per second, so that a broker killed at a random moment is killed in the
middle of the traffic.  Each id is appended to ``--out`` (one per line, flushed) as its
RECEIPT arrives: the file lists exactly the SENDs the broker confirmed.

Exit status: 0 when every SEND was receipted, 3 when the broker went away first (the
expected end when the test kills it), 2 on an ERROR frame or anything unexpected.
"""

from __future__ import annotations

import argparse
import random
import socket
import sys
import time

from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.stomp_raw import RawClient

LOST = 3
FAILED = 2


def priority_for(rng: random.Random) -> int:
    return rng.choice((0, 4, 4, 4, 9))


class Producer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.client = RawClient(args.port, timeout=10)
        self.sock = self.client.sock
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.out = open(args.out, "a", encoding="ascii")  # noqa: SIM115 - closed in run()
        self.pending: set[str] = set()

    def connect(self) -> None:
        self.client.connect("1.2")

    def read_frame(self, timeout: float) -> Frame | None:
        """The next frame, or None if none arrives in ``timeout``.  ConnectionError when closed."""
        try:
            # RawClient.recv reads a timeout of 0 as "its default": ask for a moment instead.
            return self.client.recv(max(timeout, 0.001))
        except TimeoutError:
            return None
        finally:
            # recv leaves its last (short) timeout on the socket; sendall must not inherit it.
            self.sock.settimeout(10)

    def take(self, frame: Frame) -> None:
        if frame.command != "RECEIPT":
            raise RuntimeError(f"unexpected frame {frame.command} {frame.headers} {frame.body[:200]!r}")
        receipt = frame.headers["receipt-id"]
        self.pending.discard(receipt)
        self.out.write(receipt + "\n")
        self.out.flush()

    def drain(self, until: float) -> None:
        """Take every RECEIPT that arrives before ``until`` (monotonic)."""
        while True:
            frame = self.read_frame(max(until - time.monotonic(), 0.0))
            if frame is None:
                return
            self.take(frame)

    def run(self) -> int:
        args = self.args
        rng = random.Random(args.seed)
        start = time.monotonic()
        batch = max(1, args.rate // 100)  # a burst every 10 ms
        try:
            self.connect()
            n = 0
            while n < args.count:
                while len(self.pending) >= args.window:
                    frame = self.read_frame(10.0)
                    if frame is None:
                        raise RuntimeError(f"no RECEIPT in 10 s, {len(self.pending)} outstanding")
                    self.take(frame)
                chunk = []
                for _ in range(min(batch, args.count - n, args.window - len(self.pending))):
                    msg_id = f"{args.prefix}{n}"
                    headers = {
                        "destination": args.queue,
                        "persistent": "true",
                        "priority": str(priority_for(rng)),
                        "crash-id": msg_id,
                        "receipt": msg_id,
                    }
                    chunk.append(encode_frame(Frame("SEND", headers, msg_id.encode()), "1.2"))
                    self.pending.add(msg_id)
                    n += 1
                self.sock.sendall(b"".join(chunk))
                self.drain(start + n / args.rate)
            while self.pending:
                frame = self.read_frame(10.0)
                if frame is None:
                    raise RuntimeError(f"no RECEIPT in 10 s, {len(self.pending)} outstanding")
                self.take(frame)
            self.sock.sendall(encode_frame(Frame("DISCONNECT", {"receipt": "bye"}), "1.2"))
            frame = self.read_frame(10.0)
            return 0
        except (ConnectionError, BrokenPipeError):
            return LOST
        except Exception as exc:
            print(f"crash_producer: {exc!r}", file=sys.stderr)
            return FAILED
        finally:
            self.out.close()
            self.sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rate", type=int, default=1000, help="messages per second")
    parser.add_argument("--window", type=int, default=200, help="unreceipted SENDs at most")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        producer = Producer(args)
    except OSError as exc:
        print(f"crash_producer: cannot connect: {exc}", file=sys.stderr)
        return LOST
    return producer.run()


if __name__ == "__main__":
    sys.exit(main())
