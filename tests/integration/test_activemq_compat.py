"""Behaviour checked on stompd and on the real ActiveMQ 5.17 (where installed): the same
scenarios, the same expectations (issue 27).

ABORT of a transaction that holds an ACK (item 6): ActiveMQ keeps the acked message
delivered and unacknowledged at its subscriber: nothing is sent again, its ack id is
valid again, it leaves when acked again and goes back to the queue when the subscriber
disconnects.  While the transaction is open its credit is back (the prefetch is
extended), and after the ABORT it counts again.

A queue browser's prefetch (item 9): with ``ack:client`` or ``client-individual`` at
most a prefetch's worth of browsed messages, the ``browser:end`` MESSAGE included, may
be unacknowledged; ``ack:auto`` browses everything.

Scheduled jobs (item 8): each delivery names its job (``scheduledJobId``), and a SEND to
``ActiveMQ.Scheduler.Management`` removes jobs by id (``REMOVE``) or all of them, in a
window of due times (``REMOVEALL``, ``ACTION_START_TIME``/``ACTION_END_TIME``).  (BROWSE's
copies cannot be checked on Debian's ActiveMQ: it sends them as advisory messages, and
its STOMP converter for those needs xstream, which the package lacks: they never reach a
STOMP consumer.  tests/integration/test_scheduled.py checks them on stompd.)
"""

from __future__ import annotations

import itertools
import time

import pytest
from stomp.utils import Frame as StompPyFrame

from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.clients import Client, client
from tests.integration.scheduled_support import MANAGEMENT, remove_job
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

_names = itertools.count(1)


def queue() -> str:
    """A queue of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"/queue/abort.acks.{next(_names)}"


def fill(port: int, destination: str, n: int) -> None:
    with client(port) as producer:
        for i in range(n):
            producer.send(destination, f"m{i}", sync=True)


def acked_in_a_transaction(c: Client, destination: str, n: int, **subscribe: str) -> StompPyFrame:
    """Subscribe, take ``n`` messages, BEGIN ``t`` and ACK the first in it; the first."""
    c.subscribe(destination, **{"ack": "client-individual", **subscribe})
    first = c.listener.wait_messages(n)[0]
    c.conn.begin("t")
    c.ack(first, transaction="t")
    return first


def left_on(port: int, destination: str, header: str = "redelivered") -> list[tuple[str, str | None]]:
    """What the queue holds now: (body, ``header``) of each, taken by a new consumer."""
    with client(port) as consumer:
        consumer.subscribe(destination)
        return [(m.body, m.headers.get(header)) for m in consumer.through_mark(destination)]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_an_aborted_ack_is_not_sent_again_and_can_be_acked_later(
    broker_port: int, version: str, ack: str
) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 3)
    with client(port, version) as c:
        c.subscribe(q, ack=ack)
        first = c.listener.wait_messages(3)[0]
        c.conn.begin("t1")
        c.ack(first, transaction="t1")
        c.conn.abort("t1")
        assert [m.body for m in c.settled()] == ["m0", "m1", "m2"], "something was sent again"
        assert not c.listener.errors
        # Its ack id is valid again: acking it now takes it away.
        receipt = c.receipt()
        headers = first.headers
        if version == "1.2":
            c.conn.ack(headers["ack"], receipt=receipt)
        else:
            c.conn.ack(headers["message-id"], headers["subscription"], receipt=receipt)
        c.listener.wait_receipt(receipt)
        assert not c.listener.errors
    assert left_on(port, q) == [("m1", "true"), ("m2", "true")]


def test_an_aborted_ack_goes_back_to_the_queue_when_the_subscriber_disconnects(broker_port: int) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 2)
    with client(port) as c:
        acked_in_a_transaction(c, q, 2)
        c.conn.abort("t")
        assert len(c.settled()) == 2
    assert left_on(port, q) == [("m0", "true"), ("m1", "true")]


def test_after_an_abort_a_cumulative_ack_covers_the_message(broker_port: int) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 3)
    with client(port) as c:
        acked_in_a_transaction(c, q, 3, ack="client")
        c.conn.abort("t")
        c.ack(c.listener.messages[1])
        c.sync()
    assert left_on(port, q) == [("m2", "true")]


def test_a_transaction_s_acks_free_credit_until_it_aborts(broker_port: int) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 4)
    with client(port) as c:
        first = acked_in_a_transaction(c, q, 1, **{"activemq.prefetchSize": "1"})
        second = c.listener.wait_messages(2)[1]
        assert second.body == "m1"
        c.conn.abort("t")
        # Two in flight for a prefetch of one: acking the second brings nothing more...
        c.ack(second)
        assert [m.body for m in c.settled()] == ["m0", "m1"]
        # ...acking the first too does.
        c.ack(first)
        assert c.listener.wait_messages(3)[2].body == "m2"
    assert left_on(port, q) == [("m2", "true"), ("m3", None)]


def test_a_commit_after_unsubscribing_still_acks(broker_port: int) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 2)
    with client(port) as c:
        acked_in_a_transaction(c, q, 2)
        c.conn.unsubscribe("1")
        c.conn.commit("t")
        c.sync()
        assert not c.listener.errors
    assert left_on(port, q) == [("m1", "true")]


@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_an_acking_browser_gets_a_prefetch_s_worth_at_a_time(broker_port: int, ack: str) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 5)
    with client(port) as c:
        c.subscribe(q, sub_id="b", ack=ack, browser="true", **{"activemq.prefetchSize": "3"})
        first = c.listener.wait_messages(3)
        assert [m.body for m in c.settled()] == ["m0", "m1", "m2"]
        c.ack(first[1])  # client: two acknowledged, two more; client-individual: one
        more = ["m3", "m4"] if ack == "client" else ["m3"]
        got = c.listener.wait_messages(3 + len(more))
        assert [m.body for m in c.settled()] == ["m0", "m1", "m2", *more]
        c.ack(got[-1])
        # client: the end (room for it now); client-individual: the last message.
        last = c.listener.wait_messages(len(got) + 1)[-1]
        assert (last.headers.get("browser"), last.body) == (("end", "") if ack == "client" else (None, "m4"))
    # Browsed, not consumed.
    assert [body for body, _ in left_on(port, q)] == ["m0", "m1", "m2", "m3", "m4"]


def test_an_auto_browser_gets_everything_then_the_end(broker_port: int) -> None:
    port = broker_port
    q = queue()
    fill(port, q, 5)
    with client(port) as c:
        c.subscribe(q, sub_id="b", browser="true", **{"activemq.prefetchSize": "2"})
        got = c.listener.wait_messages(6)
    assert [m.headers.get("browser", m.body) for m in got] == ["m0", "m1", "m2", "m3", "m4", "end"]


def test_a_scheduled_delivery_names_its_job(broker_port: int) -> None:
    q = queue()
    with client(broker_port) as c:
        c.subscribe(q)
        c.send(q, "later", sync=True, AMQ_SCHEDULED_DELAY="200")
        (delivery,) = c.listener.wait_messages(1)
        assert delivery.headers["scheduledJobId"]
        assert not [name for name in delivery.headers if name.startswith("AMQ_SCHEDULED")]


def test_remove_by_the_id_a_delivery_carries_stops_a_repeating_job(broker_port: int) -> None:
    q = queue()
    with client(broker_port) as c:
        c.subscribe(q)
        c.send(q, "tick", sync=True, AMQ_SCHEDULED_PERIOD="200", AMQ_SCHEDULED_REPEAT="1000")
        first = c.listener.wait_messages(1)[0]
        remove_job(c, first.headers["scheduledJobId"])
        removed_at = len(c.listener.messages)
        # A barrier: a job due a second later; what the removed one would have sent
        # meanwhile (five ticks) comes before it.
        c.send(q, "mark", sync=True, AMQ_SCHEDULED_DELAY="1000")
        _, mark = c.listener.wait_mark("mark", timeout=10)
        after = [m.body for m in c.listener.messages[removed_at:]]
    # One may have been on its way as the REMOVE came in.
    assert len(after) <= 1, f"{len(after)} ticks after the REMOVE"
    assert mark.headers["scheduledJobId"] != first.headers["scheduledJobId"]


def test_remove_all_in_a_window_takes_only_the_jobs_due_within_it(broker_port: int) -> None:
    q = queue()
    with client(broker_port) as c:
        c.subscribe(q)
        now = int(time.time() * 1000)
        c.send(q, "inside", sync=True, AMQ_SCHEDULED_DELAY="2500")
        c.send(q, "outside", sync=True, AMQ_SCHEDULED_DELAY="600")
        c.send(
            MANAGEMENT,
            "",
            sync=True,
            AMQ_SCHEDULER_ACTION="REMOVEALL",
            ACTION_START_TIME=str(now + 2000),
            ACTION_END_TIME=str(now + 3000),
        )
        c.send(q, "mark", sync=True, AMQ_SCHEDULED_DELAY="3500")
        before, _ = c.listener.wait_mark("mark", timeout=15)
    assert [m.body for m in before] == ["outside"]


def test_a_no_local_queue_consumer_leaves_its_own_messages_to_the_others(broker_port: int) -> None:
    """Issue 38 item 7: ``activemq.noLocal:true`` on a queue, as on a topic."""
    q = queue()
    with client(broker_port) as own:
        own.subscribe(q, **{"activemq.noLocal": "true"})
        own.send(q, "own", sync=True)
        with client(broker_port) as producer:
            producer.send(q, "other", sync=True)
        assert [m.body for m in own.listener.wait_messages(1)] == ["other"]
        assert [m.body for m in own.settled()] == ["other"]
    assert left_on(broker_port, q) == [("own", None)]


def test_an_undefined_escape_in_a_header_value(broker_port: int, request: pytest.FixtureRequest) -> None:
    """Issue 38 item 7: ``\\q`` in a 1.2 header.  ActiveMQ lets it through as a backslash and
    a ``q``; stompd keeps the spec's rule, a malformed frame (docs/activemq.md says why)."""
    q = queue()
    raw = RawClient(broker_port)
    raw.connect("1.2")
    raw.send_bytes(b"SEND\ndestination:" + q.encode() + b"\nx:a\\qb\nreceipt:sent\n\nbody\x00")
    answer = raw.recv()
    if request.node.callspec.params["broker_port"] == "activemq":
        assert answer.command == "RECEIPT"
        assert left_on(broker_port, q, "x") == [("body", "a\\qb")]
    else:
        assert answer.command == "ERROR"
        assert "undefined escape sequence" in answer.body.decode()
        assert raw.closed_by_peer()
