"""An ACK's RECEIPT means the ack is durable: after ``kill -9``, no message whose ACK was
receipted comes back (issue 27, item 7).

ActiveMQ syncs an acknowledgement to its journal when the client asks for a response (a
STOMP ``receipt``: KahaDB's ``removeMessage`` syncs when ``isResponseRequired``); stompd
holds the ACK's RECEIPT until the batch deleting the message is synced, in the same
group commit as persistent SENDs.  The same scenario runs on both brokers (ActiveMQ only
where it is installed): a producer process sends persistent messages as fast as it is
receipted; a consumer (``ack:client``, prefetch 100) acks every message with a receipt;
the broker is killed with SIGKILL while both run, started again on the same store, and
drained.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from tests.activemq_peer import ActiveMQ, needs_activemq
from tests.broker_process import Processes
from tests.broker_process import procs as procs  # the fixture
from tests.integration.crash_support import (
    QUEUE,
    SEED,
    body,
    connected,
    receipted_count,
    spawn_producer,
    subscribe,
)
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

#: SENDs the producer makes at most (it is killed long before, at full speed).
COUNT = 60_000
#: The producer's pace: slower than the consumer, so that the queue is mostly empty and an
#: ACK frees credit with nothing to dispatch (a MESSAGE dispatched after the ACK would hold
#: the connection, RECEIPT included, until its dispatch mark is synced).
RATE = 2000


class Killable(Protocol):
    port: int

    def kill(self) -> None: ...


@dataclass
class AckingConsumer(threading.Thread):
    """``ack:client``, prefetch 100: every MESSAGE acked at once, each ACK with a receipt.

    A RECEIPT for the ACK of X confirms X and everything delivered before it (client acks
    are cumulative).  Reads until the broker goes away.
    """

    port: int
    #: Once this many ACKs are confirmed, ``kill`` at once (from this thread, so that the
    #: last RECEIPTs read are as fresh as they come: a batch not yet synced would lose them).
    kill_at: int
    kill: Callable[[], None]
    delivered: list[str] = field(default_factory=list)
    confirmed: set[str] = field(default_factory=set)
    error: BaseException | None = None
    subscribed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        super().__init__(name="acking-consumer", daemon=True)

    def __hash__(self) -> int:
        return id(self)

    def run(self) -> None:
        try:
            raw = connected(self.port)
            subscribe(raw, QUEUE, "client", **{"activemq.prefetchSize": "100"})
            self.subscribed.set()
            self._consume(raw)
        except (ConnectionError, OSError, TimeoutError):
            pass  # the broker was killed
        except BaseException as exc:
            self.error = exc
        finally:
            self.subscribed.set()

    def _consume(self, raw: RawClient) -> None:
        index: dict[str, int] = {}
        while True:
            frame = raw.recv(30)
            if frame.command == "RECEIPT":
                msg_id = frame.headers["receipt-id"].removeprefix("ack:")
                self.confirmed.update(self.delivered[: index[msg_id] + 1])
                if len(self.confirmed) >= self.kill_at:
                    self.kill()
                    return
                continue
            assert frame.command == "MESSAGE", frame
            msg_id = body(frame)
            index[msg_id] = len(self.delivered)
            self.delivered.append(msg_id)
            ack_header = (
                {"id": frame.headers["ack"]}
                if "ack" in frame.headers
                else {
                    "message-id": frame.headers["message-id"],
                    "subscription": frame.headers["subscription"],
                }
            )
            raw.send("ACK", {**ack_header, "receipt": f"ack:{msg_id}"})


def drain(port: int) -> list[str]:
    """Everything the queue holds (a receipted ACK for each; until a mark comes back)."""
    raw = connected(port)
    subscribe(raw, QUEUE, "client-individual", **{"activemq.prefetchSize": "1000"})
    raw.send("SEND", {"destination": QUEUE, "priority": "0"}, b"drained")
    got: list[str] = []
    while True:
        frame = raw.recv(30)
        assert frame.command == "MESSAGE", frame
        raw.send("ACK", {"id": frame.headers["ack"]})
        if frame.body == b"drained":
            raw.close()
            return got
        got.append(body(frame))


def run_scenario(broker: Killable, restart: Callable[[], None], procs: Processes, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    # Killed at a seeded moment once acks flow: a few thousand messages in.
    target = rng.randint(1000, 2000)
    consumer = AckingConsumer(broker.port, target, broker.kill)
    consumer.start()
    assert consumer.subscribed.wait(30)
    out = tmp_path / "receipted.txt"
    producer = spawn_producer(procs, broker.port, "a-", COUNT, out, rng.randrange(1 << 30), RATE)
    consumer.join(60)
    assert not consumer.is_alive(), f"only {len(consumer.confirmed)} acks receipted in 60 s"
    assert consumer.error is None, consumer.error
    assert len(consumer.confirmed) >= target, "the broker went away before the kill"
    producer.communicate(timeout=30)
    confirmed = set(consumer.confirmed)
    receipted = set(out.read_text().split())

    restart()
    back = drain(broker.port)
    resurrected = sorted(confirmed & set(back))
    assert not resurrected, (
        f"{len(resurrected)} of {len(confirmed)} messages whose ACK was receipted came back "
        f"after kill -9, e.g. {resurrected[:5]}"
    )
    delivered = set(consumer.delivered) | set(back)
    lost = sorted(receipted - delivered)
    assert not lost, f"{len(lost)} receipted SENDs lost, e.g. {lost[:5]}"
    assert receipted_count(out) >= target


def test_stompd_receipted_acks_survive_kill_9(procs: Processes, tmp_path: Path) -> None:
    broker = procs.broker(tmp_path)
    broker.start()
    run_scenario(broker, broker.start, procs, tmp_path)
    broker.stop()
    assert "Traceback" not in broker.output(tail=1 << 20)


@pytest.fixture
def activemq(tmp_path: Path) -> Iterator[ActiveMQ]:
    broker = ActiveMQ(tmp_path / "activemq")
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


@needs_activemq
def test_activemq_receipted_acks_survive_kill_9(
    activemq: ActiveMQ,
    procs: Processes,
    tmp_path: Path,
) -> None:
    activemq.kill = activemq.kill9  # type: ignore[method-assign]
    run_scenario(activemq, activemq.restart, procs, tmp_path)
