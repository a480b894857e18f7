"""Persistence across restarts: a real broker process, stopped cleanly or killed with SIGKILL.

What is promised (the persistence issue): a SEND with ``persistent:true`` is receipted only
once it is durable; after a clean stop, and after ``kill -9`` at any moment, the restarted
broker delivers every receipted, unacknowledged persistent message in priority-then-FIFO
order, with ``redelivered:true`` on those it had dispatched; an acknowledged message never
comes back.  What is *not* promised, and so not checked: whether a SEND whose RECEIPT never
arrived was kept, and whether an ACK whose RECEIPT never arrived took effect.

The broker runs as ``python -m broker`` on a port picked here and kept across restarts (the
listener must come back on it after SIGKILL left connections behind).  Every process a test
starts is ended by its own PID in the fixture's teardown.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.broker_process import Processes
from tests.broker_process import procs as procs  # the fixture
from tests.integration.crash_support import (
    QUEUE,
    SEED,
    ack,
    body,
    collect,
    connected,
    redelivered,
    send_persistent,
    spawn_producer,
    subscribe,
    wait_receipts,
)
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

#: How many SENDs each producer of the kill -9 test makes at most.
PER_ROUND = 1000


# -- 1 and 3: clean restarts ---------------------------------------------------


@pytest.mark.parametrize("prioritized", [True, False])
def test_clean_restart_keeps_receipted_messages_in_order(
    procs: Processes, tmp_path: Path, prioritized: bool
) -> None:
    """In priority-then-FIFO order with --prioritized-messages, else (prioritizedMessages
    false, as ActiveMQ's default) in the order they were sent, each with its priority."""
    n = 600
    rng = random.Random(SEED)
    items = [(f"m{i:04d}", rng.choice((0, 1, 4, 4, 4, 7, 9))) for i in range(n)]
    if prioritized:
        expected = [msg_id for msg_id, _ in sorted(items, key=lambda item: (-item[1], item[0]))]
    else:
        expected = [msg_id for msg_id, _ in items]
    broker = procs.broker(tmp_path, *(["--prioritized-messages"] if prioritized else []))

    broker.start()
    producer = connected(broker.port)
    send_persistent(producer, "/queue/clean", items)
    producer.close()
    broker.stop()

    broker.start()
    consumer = connected(broker.port)
    subscribe(consumer, "/queue/clean", "client", **{"activemq.prefetchSize": str(n)})
    frames = collect(consumer, n)
    got = [body(f) for f in frames]
    assert len(got) == n, f"after a clean restart {len(got)} of {n} receipted persistent messages arrived"
    assert got == expected, "not in the destination's order after a restart"
    assert [f.headers["priority"] for f in frames] == [str(dict(items)[msg_id]) for msg_id in got]
    assert not [body(f) for f in frames if redelivered(f)], "never dispatched, yet flagged redelivered"
    assert all(f.headers.get("persistent") == "true" for f in frames)
    ack(consumer, frames[-1], receipt="acked")  # client ack: cumulative
    frame = consumer.recv()
    assert frame.command == "RECEIPT" and frame.headers["receipt-id"] == "acked", frame
    assert consumer.through_mark("/queue/clean") == []
    consumer.close()
    broker.stop()

    broker.start()
    again = connected(broker.port)
    subscribe(again, "/queue/clean", "client-individual")
    back = again.through_mark("/queue/clean")
    assert not back, f"{len(back)} acknowledged messages came back, e.g. {[body(f) for f in back[:5]]}"
    broker.stop()
    assert "Traceback" not in broker.output(tail=1 << 20)


def test_unacked_dispatched_messages_come_back_redelivered_after_clean_stop(
    procs: Processes, tmp_path: Path
) -> None:
    n, prefetch = 30, 10
    ids = [f"u{i:02d}" for i in range(n)]
    broker = procs.broker(tmp_path)
    broker.start()
    producer = connected(broker.port)
    send_persistent(producer, "/queue/unacked", [(msg_id, 4) for msg_id in ids])
    producer.close()

    consumer = connected(broker.port)
    subscribe(consumer, "/queue/unacked", "client-individual", **{"activemq.prefetchSize": str(prefetch)})
    frames = collect(consumer, prefetch)
    assert [body(f) for f in frames] == ids[:prefetch]
    acked = ids[:prefetch:2]
    for frame in frames[::2]:
        ack(consumer, frame, receipt=body(frame))
    # Each ACK frees credit, so more MESSAGEs come, mixed with the RECEIPTs.
    dispatched = [body(f) for f in frames]
    receipts: set[str] = set()
    while receipts != set(acked):
        frame = consumer.recv()
        if frame.command == "MESSAGE":
            dispatched.append(body(frame))
        else:
            assert frame.command == "RECEIPT", frame
            receipts.add(frame.headers["receipt-id"])
    # What the ACKs dispatched was written before their RECEIPTs (and so before this one).
    dispatched += [body(f) for f in consumer.sync()]
    assert dispatched == ids[: prefetch + len(acked)]
    # Stopped with the consumer still connected and holding its unacked messages.
    broker.stop()
    consumer.close()

    broker.start()
    again = connected(broker.port)
    subscribe(again, "/queue/unacked", "client-individual", **{"activemq.prefetchSize": str(n)})
    expected = [msg_id for msg_id in ids if msg_id not in acked]  # one priority: FIFO
    back = collect(again, len(expected))
    dispatched_unacked = [msg_id for msg_id in dispatched if msg_id not in acked]
    got = [body(f) for f in back]
    assert len(got) == len(expected), (
        f"after a clean stop {len(got)} of {len(expected)} unacknowledged messages came back: {got}"
    )
    assert got == expected
    assert [body(f) for f in back if redelivered(f)] == dispatched_unacked, (
        "redelivered:true belongs on exactly the messages dispatched before the stop"
    )
    assert again.through_mark("/queue/unacked") == []
    broker.stop()
    assert "Traceback" not in broker.output(tail=1 << 20)


# -- 2: kill -9 at random points ------------------------------------------------


@dataclass
class Delivery:
    lifetime: int
    seq: int  # order of events across the whole test
    msg_id: str
    redelivered: bool
    priority: int


@dataclass
class Ledger:
    """What the consumers saw: every delivery, and the ACKs the broker receipted."""

    deliveries: list[Delivery] = field(default_factory=list)
    #: id -> event seq at which the RECEIPT for its ACK was read
    ack_confirmed: dict[str, int] = field(default_factory=dict)
    events: int = 0

    def next_seq(self) -> int:
        self.events += 1
        return self.events


class Consumer(threading.Thread):
    """A client-individual consumer for one broker lifetime, reading until the broker goes away.

    For each MESSAGE, seeded: usually ACK with a receipt, sometimes ACK without one (the
    outcome is then unknown), sometimes no ACK (it must come back after a restart).
    ``drain`` mode ACKs everything with receipts and returns once it has had all the queue
    held: a mark sent at priority 0 after subscribing comes after everything else (the
    queue hands out priority first, then in order), and a last round trip after it brings
    the RECEIPTs of the ACKs before it.
    """

    MARK = b"drained"

    def __init__(
        self,
        port: int,
        queue: str,
        lifetime: int,
        ledger: Ledger,
        rng: random.Random,
        *,
        delay: float = 0.0,
        drain: bool = False,
    ) -> None:
        super().__init__(name=f"consumer-{lifetime}", daemon=True)
        self.port = port
        self.queue = queue
        self.lifetime = lifetime
        self.ledger = ledger
        self.rng = rng
        self.delay = delay
        self.drain = drain
        self.subscribed = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._consume()
        except (ConnectionError, OSError) as exc:
            if self.drain or not self.subscribed.is_set():
                self.error = exc
        except BaseException as exc:
            self.error = exc
        finally:
            self.subscribed.set()

    def _consume(self) -> None:
        raw = RawClient(self.port)
        try:
            raw.connect()
            # A small prefetch while the broker is to be killed leaves a backlog that was never
            # dispatched as well as dispatched, unacknowledged messages.
            prefetch = "5000" if self.drain else "200"
            subscribe(raw, self.queue, "client-individual", **{"activemq.prefetchSize": prefetch})
            self.subscribed.set()
            if self.drain:
                raw.send("SEND", {"destination": self.queue, "priority": "0"}, self.MARK)
            while True:
                try:
                    frame = raw.recv(30 if self.drain else 0.1)
                except TimeoutError:
                    if self.drain:
                        raise
                    continue  # until the broker is killed
                if frame.command == "MESSAGE" and frame.body == self.MARK:
                    raw.send("BEGIN", {"transaction": "drained"})
                    raw.send("ABORT", {"transaction": "drained", "receipt": "drained"})
                    continue
                if frame.command == "RECEIPT":
                    if frame.headers["receipt-id"] == "drained":
                        return
                    msg_id = frame.headers["receipt-id"].removeprefix("ack:")
                    self.ledger.ack_confirmed[msg_id] = self.ledger.next_seq()
                    continue
                if frame.command != "MESSAGE":
                    raise AssertionError(f"unexpected {frame.command}: {frame.headers} {frame.body[:200]!r}")
                msg_id = body(frame)
                seq = self.ledger.next_seq()
                priority = int(frame.headers.get("priority", "4"))
                self.ledger.deliveries.append(
                    Delivery(self.lifetime, seq, msg_id, redelivered(frame), priority)
                )
                choice = 0.0 if self.drain else self.rng.random()
                if choice < 0.75:
                    ack(raw, frame, receipt=f"ack:{msg_id}")
                elif choice < 0.85:
                    ack(raw, frame)
                if self.delay:
                    time.sleep(self.delay)
        finally:
            raw.close()


def send_order(d: Delivery) -> tuple[int, int, int]:
    """Priority first, then the order the producers sent in (round after round)."""
    prefix, _, index = d.msg_id.partition("-")
    return -d.priority, int(prefix.removeprefix("r")), int(index)


def test_kill_9_at_random_points_loses_no_receipted_message(procs: Processes, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    # No dead-lettering in the way: a message may legitimately be redelivered every lifetime.
    broker = procs.broker(tmp_path, "--maximum-redeliveries", "-1", "--prioritized-messages")
    ledger = Ledger()
    receipted: set[str] = set()
    attempted: set[str] = set()
    history: list[str] = []

    # Kills at seeded moments: with paced traffic one early, one in the middle and one late
    # (the producer may be done and only the consumer still acking); and twice at full speed,
    # once a random number of SENDs are receipted, so that batches are always in flight.
    plans: list[tuple[str, float, float]] = [("paced", 0.2, 0.6), ("paced", 0.6, 1.0), ("paced", 1.0, 1.5)]
    plans += [("full", 100, PER_ROUND - 400)] * 2
    rng.shuffle(plans)
    for rnd, (kind, low, high) in enumerate(plans):
        broker.start()
        lifetime = broker.starts
        # Paced, the consumer is slower than the producer, so a backlog builds up in the queue;
        # at full speed it reads at once, so it has seen messages whose dispatch just happened.
        delay = 0.002 if kind == "paced" else 0.0
        consumer = Consumer(broker.port, QUEUE, lifetime, ledger, random.Random(rng.random()), delay=delay)
        consumer.start()
        assert consumer.subscribed.wait(10)
        assert consumer.error is None, consumer.error
        out = tmp_path / f"receipted-{rnd}.txt"
        prefix = f"r{rnd}-"
        rate = 1000 if kind == "paced" else 100_000
        producer = spawn_producer(procs, broker.port, prefix, PER_ROUND, out, rng.randrange(1 << 30), rate)
        if kind == "paced":
            pause = rng.uniform(low, high)
            time.sleep(pause)
            when = f"after {pause:.2f} s"
        else:
            target = rng.randint(int(low), int(high))
            wait_receipts(out, producer, target)
            when = f"at {target} receipts"
        broker.kill()
        _, err = producer.communicate(timeout=30)
        assert producer.returncode in (0, 3), f"producer failed ({producer.returncode}): {err.decode()}"
        consumer.join(10)
        assert not consumer.is_alive(), "consumer did not notice the broker was killed"
        assert consumer.error is None, consumer.error
        got = out.read_text().split() if out.exists() else []
        assert len(got) == len(set(got)), "the producer saw a RECEIPT twice"
        receipted.update(got)
        attempted.update(f"{prefix}{i}" for i in range(PER_ROUND))
        history.append(f"round {rnd}: {kind}, killed {when}, {len(got)} SENDs receipted")

    # Recovery, then drain everything with receipted ACKs.
    broker.start()
    drainer = Consumer(broker.port, QUEUE, broker.starts, ledger, rng, drain=True)
    drainer.start()
    drainer.join(30)
    assert not drainer.is_alive(), "drain never reached its mark"
    assert drainer.error is None, drainer.error
    broker.stop()

    # Everything is acknowledged: nothing may come back after one more restart.
    broker.start()
    final = Consumer(broker.port, QUEUE, broker.starts, ledger, rng, drain=True)
    final.start()
    final.join(30)
    assert final.error is None, final.error
    broker.stop()

    context = "; ".join(history)
    assert receipted, f"no SEND was ever receipted ({context}):\n{broker.output()}"
    by_id: dict[str, list[Delivery]] = {}
    for d in ledger.deliveries:
        by_id.setdefault(d.msg_id, []).append(d)

    unknown = sorted(set(by_id) - attempted)
    assert not unknown, f"delivered messages nobody sent: {unknown[:10]}"

    # Exactly once, unless flagged: any delivery after the first must carry redelivered:true
    # (within one lifetime, and across a restart for a message dispatched before the crash).
    unflagged = [
        (msg_id, [(d.lifetime, d.redelivered) for d in ds])
        for msg_id, ds in by_id.items()
        if any(not d.redelivered for d in ds[1:])
    ]
    assert not unflagged, (
        f"{len(unflagged)} messages delivered again without redelivered:true: {unflagged[:5]}"
    )

    # An ACK the broker receipted is final.
    resurrected = [
        (msg_id, seq, [(d.lifetime, d.seq) for d in by_id[msg_id]])
        for msg_id, seq in ledger.ack_confirmed.items()
        if any(d.seq > seq for d in by_id.get(msg_id, []))
    ]
    assert not resurrected, f"{len(resurrected)} messages came back after a receipted ACK: {resurrected[:5]}"

    # The drain ran alone on the recovered backlog: strict priority, then the order of the SENDs.
    drained = [d for d in ledger.deliveries if d.lifetime == drainer.lifetime]
    assert drained == sorted(drained, key=send_order), "recovered backlog not in priority-then-FIFO order"

    last = broker.starts
    assert not [d for d in ledger.deliveries if d.lifetime == last], "acked messages came back"
    assert "Traceback" not in broker.output(tail=1 << 20)

    # Checked last, so that a failure here means the rest held.
    missing = sorted(receipted - set(by_id))
    assert not missing, (
        f"{len(missing)} of {len(receipted)} receipted persistent messages were never delivered "
        f"({context}), e.g. {missing[:10]}"
    )


# -- redelivery counts across kill -9 ----------------------------------------------


def test_nack_and_kill_9_cycles_end_in_the_dlq_after_the_configured_count(
    procs: Processes, tmp_path: Path
) -> None:
    """maximumRedeliveries=3: every delivery counts, those cut short by a crash too.

    Each lifetime takes the message, NACKs it, takes it again and is killed holding it:
    deliveries 1-2, 3-4, then 5, whose NACK sends it to the DLQ.  Were the count lost
    with the process, each lifetime would start again from one and it never would.
    """
    broker = procs.broker(tmp_path, "--maximum-redeliveries", "3")
    broker.start()
    producer = connected(broker.port)
    send_persistent(producer, "/queue/poison", [("p1", 4)])
    producer.close()
    for lifetime in (1, 2, 3):
        consumer = connected(broker.port)
        subscribe(consumer, "/queue/poison", "client-individual")
        (first,) = collect(consumer, 1)
        assert body(first) == "p1"
        assert redelivered(first) == (lifetime > 1)
        consumer.send("NACK", {"id": first.headers["ack"], "receipt": "nacked"})
        if lifetime == 3:
            break
        frames = [consumer.recv(), consumer.recv()]
        assert sorted(f.command for f in frames) == ["MESSAGE", "RECEIPT"], frames
        broker.kill()
        consumer.close()
        broker.start()
    frame = consumer.recv()
    assert frame.command == "RECEIPT", frame
    assert consumer.through_mark("/queue/poison") == []  # not redelivered: dead-lettered
    consumer.close()
    dlq = connected(broker.port)
    subscribe(dlq, "/queue/ActiveMQ.DLQ", "auto")
    (dead,) = collect(dlq, 1)
    assert body(dead) == "p1"
    assert (
        "Delivery[5] exceeds redelivery policy limit (maximumRedeliveries=3)"
        in dead.headers["dlqDeliveryFailureCause"]
    )
    dlq.close()
    broker.stop()


def test_a_non_persistent_dead_letter_kept_with_process_non_persistent_survives_kill_9(
    procs: Processes, tmp_path: Path
) -> None:
    """processNonPersistent="true": a non-persistent message past its redeliveries is
    stored in the DLQ as a persistent one, so a crash right after keeps it."""
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<beans xmlns="http://www.springframework.org/schema/beans"><broker'
        ' xmlns="http://activemq.apache.org/schema/core"><destinationPolicy><policyMap>'
        '<policyEntries><policyEntry queue=">"><deadLetterStrategy><sharedDeadLetterStrategy'
        ' processNonPersistent="true"/></deadLetterStrategy></policyEntry></policyEntries>'
        "</policyMap></destinationPolicy></broker></beans>\n"
    )
    broker = procs.broker(tmp_path, "--config", str(config), "--maximum-redeliveries", "0")
    broker.start()
    client = connected(broker.port)
    client.send("SEND", {"destination": "/queue/np", "receipt": "sent"}, b"np")
    assert client.recv().command == "RECEIPT"
    subscribe(client, "/queue/np", "client-individual")
    (frame,) = collect(client, 1)
    client.send("NACK", {"id": frame.headers["ack"], "receipt": "nacked"})
    assert client.recv().command == "RECEIPT"
    # A persistent SEND's RECEIPT: the store batches before it, the dead letter's, are durable.
    send_persistent(client, "/queue/other", [("after", 4)])
    broker.kill()
    client.close()
    broker.start()
    dlq = connected(broker.port)
    subscribe(dlq, "/queue/ActiveMQ.DLQ", "auto")
    (dead,) = collect(dlq, 1)
    assert (body(dead), dead.headers["persistent"], dead.headers["original-destination"]) == (
        "np",
        "true",
        "/queue/np",
    )
    dlq.close()
    broker.stop()
