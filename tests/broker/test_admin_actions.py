"""The admin service's actions on one message (broker/core/admin/messages.py): a SEND made
through the engine as the admin user, and a message found by its id, viewed whole,
removed, moved, and retried from the DLQ to where it came from."""

from __future__ import annotations

import pytest

from broker.core.admin.errors import Forbidden, Invalid, NoRoom, NotFound
from broker.core.admin.service import AdminService
from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from store.memory import memory_stores
from tests.broker.harness import Peer, destination_info, finished, new_engine, tick
from tests.broker.support import (
    BODY,
    KB,
    consumer,
    entry,
    filled,
    nack,
    ops,
    swapping_engine,
)


def test_a_sent_message_carries_its_headers_priority_and_persistence() -> None:
    engine = new_engine()
    admin = ops(engine)
    finished(
        engine,
        admin.messages.send(
            None, "/queue/orders", {"region": "EU", "persistent": "true", "priority": "7"}, b"hi"
        ),
    )
    (browsed,) = finished(engine, admin.queues.browse("/queue/orders", None, 10, None, 256)).messages
    assert (browsed.priority, browsed.persistent, browsed.preview) == (7, True, b"hi")
    assert browsed.headers["region"] == "EU"
    # Stored, as a client's persistent SEND is: the store counts it.
    assert engine.usage.store.used > 0
    assert destination_info(engine, "/queue/orders").enqueued == 1
    # Its session is gone once the message is in.
    assert not engine.sessions
    got = consumer(engine, "/queue/orders").messages()
    assert [(m.body, m.headers["priority"], m.headers["region"]) for m in got] == [(b"hi", "7", "EU")]


def test_a_delayed_message_is_a_scheduled_job_until_it_is_due() -> None:
    engine = new_engine()
    admin = ops(engine)
    finished(engine, admin.messages.send(None, "/queue/later", {"AMQ_SCHEDULED_DELAY": "60000"}, b"soon"))
    (job,) = finished(engine, admin.scheduled.page(10, None, 64)).jobs
    assert (job.destination, job.delay, job.preview) == ("/queue/later", 60000, b"soon")
    assert "/queue/later" not in engine.queues or engine.queues["/queue/later"].cursor.count == 0
    engine.clock.ms += 60_000
    tick(engine)
    assert engine.queues["/queue/later"].cursor.count == 1


def test_a_bad_header_is_refused_as_a_client_would_be() -> None:
    engine = new_engine()
    with pytest.raises(Invalid, match="'priority' must be an integer"):
        finished(engine, ops(engine).messages.send(None, "/queue/q", {"priority": "high"}, b""))
    assert "/queue/q" not in engine.queues
    assert not engine.sessions


def secured() -> Engine:
    rules = Authorization(entries=(entry("queue", "OPEN.>", "admins", "admins", "admins"),))
    users = Authentication(users=(User("admin", Password("plain", "pw"), frozenset({"admins"})),))
    guard = Security(users, rules)
    return Engine(CoreSettings(), clock=Clock(1_000_000), stores=memory_stores(), guard=guard)


def test_a_send_is_authorized_as_the_admin_user() -> None:
    engine = secured()
    admin = ops(engine)
    finished(engine, admin.messages.send("admin", "/queue/OPEN.a", {}, b"ok"))
    assert engine.queues["/queue/OPEN.a"].cursor.count == 1
    with pytest.raises(Forbidden, match="User admin is not authorized to write to: /queue/CLOSED"):
        finished(engine, admin.messages.send("admin", "/queue/CLOSED", {}, b"no"))
    assert "/queue/CLOSED" not in engine.queues


def test_one_message_is_shown_whole_wherever_it_lies() -> None:
    engine, _ = filled()
    admin = ops(engine)
    queue = engine.queues["/queue/q"]
    page = finished(engine, admin.queues.browse("/queue/q", None, 600, None, 0))
    # The last in dispatch order lies on disk (the queue swapped most of its messages).
    last = page.messages[-1]
    assert queue.cursor.disk_total > 0
    whole = finished(engine, admin.messages.get("/queue/q", last.id))
    assert (whole.id, whole.preview, whole.body_size) == (last.id, BODY, len(BODY))
    assert whole.headers["n"] == last.headers["n"]
    with pytest.raises(NotFound, match="no message ID:nope waiting on /queue/q"):
        finished(engine, admin.messages.get("/queue/q", "ID:nope"))


def test_one_message_is_removed_or_moved_and_no_other() -> None:
    engine, _ = filled()
    admin = ops(engine)
    page = finished(engine, admin.queues.browse("/queue/q", None, 600, None, 0)).messages
    doomed, moving = page[10], page[-3]
    finished(engine, admin.messages.remove("/queue/q", doomed.id))
    assert engine.queues["/queue/q"].cursor.count == 599
    with pytest.raises(NotFound):
        finished(engine, admin.messages.remove("/queue/q", doomed.id))
    finished(engine, admin.messages.move("/queue/q", moving.id, "/queue/t"))
    assert engine.queues["/queue/q"].cursor.count == 598
    (moved,) = finished(engine, admin.queues.browse("/queue/t", None, 10, None, 0)).messages
    # The same message, its id kept, as ActiveMQ's moveMessageTo keeps it.
    assert (moved.id, moved.headers["n"]) == (moving.id, moving.headers["n"])
    assert moved.headers["original-destination"] == "/queue/q"
    left = {m.id for m in finished(engine, admin.queues.browse("/queue/q", None, 600, None, 0)).messages}
    assert left == {m.id for m in page} - {doomed.id, moving.id}


@pytest.mark.parametrize(("prefix", "dlq"), [(None, "/queue/ActiveMQ.DLQ"), ("DLQ.", "/queue/DLQ.orders")])
def test_retry_sends_a_dead_letter_back_where_it_came_from(prefix: str | None, dlq: str) -> None:
    engine = new_engine(max_redeliveries=0, individual_dead_letter_prefix=prefix)
    admin = ops(engine)
    c = consumer(engine, "/queue/orders")
    sent = {"destination": "/queue/orders", "color": "red", "persistent": "true"}
    Peer(engine).send_frame("SEND", sent, b"poison")
    (first,) = c.messages()
    nack(c, first)
    c.send_frame("UNSUBSCRIBE", {"id": "1"})
    (dead,) = finished(engine, admin.queues.browse(dlq, None, 10, None, 0)).messages
    # It is the same message-id that goes to the DLQ and back.
    assert dead.id == first.headers["message-id"]
    assert finished(engine, admin.messages.retry(dlq, dead.id)) == "/queue/orders"
    assert destination_info(engine, dlq).depth == 0
    (back,) = finished(engine, admin.queues.browse("/queue/orders", None, 10, None, 64)).messages
    assert (back.id, back.preview, back.headers["color"]) == (dead.id, b"poison", "red")
    with pytest.raises(NotFound):
        finished(engine, admin.messages.retry(dlq, dead.id))
    # Back on its queue it is no dead letter, though it says where it was moved from.
    with pytest.raises(Invalid, match="is not a dead letter"):
        finished(engine, admin.messages.retry("/queue/orders", back.id))


def test_retry_refuses_a_message_that_was_not_dead_lettered() -> None:
    engine = new_engine()
    admin = ops(engine)
    Peer(engine).send_frame("SEND", {"destination": "/queue/plain"}, b"m")
    (message,) = finished(engine, admin.queues.browse("/queue/plain", None, 10, None, 0)).messages
    with pytest.raises(Invalid, match="no original-destination header"):
        finished(engine, admin.messages.retry("/queue/plain", message.id))
    assert engine.queues["/queue/plain"].cursor.count == 1


def test_the_broker_says_its_name_version_and_uptime() -> None:
    engine = new_engine(broker_name="east-1")
    admin = ops(engine)
    engine.clock.ms += 90_000
    info = admin.broker()
    assert (info.name, info.version, info.started, info.uptime) == ("east-1", "0.1.0", 1000.0, 90.0)
    # Alone (no pair): its counters count since its start, and it took nothing over.
    assert (info.counters_since, info.took_over, info.took_over_from) == (1000.0, None, None)


def test_a_pair_s_new_master_says_when_it_took_over_and_from_whom() -> None:
    from broker.role import Role

    engine = new_engine()
    role = Role()
    role.become("master", 1234.5, "host h pid 7 (since 2026-01-01T00:00:00Z)")
    info = AdminService(engine, dict, role).broker()
    assert (info.counters_since, info.took_over) == (1000.0, 1234.5)
    assert info.took_over_from == "host h pid 7 (since 2026-01-01T00:00:00Z)"


def test_a_connection_s_producers_are_where_it_sent() -> None:
    engine = new_engine()
    producer = Peer(engine)
    for name in ("/queue/b", "/queue/a", "/topic/t", "/queue/a"):
        producer.send_frame("SEND", {"destination": name}, b"")
    assert ops(engine).connections.producers(producer.session.id) == ["/queue/a", "/queue/b", "/topic/t"]
    with pytest.raises(NotFound):
        ops(engine).connections.producers("nope")


def test_a_send_that_does_not_fit_waits_for_room_as_a_producer_s_does() -> None:
    engine, _ = swapping_engine(memory=16 * KB, temp=4 * KB)
    producer = Peer(engine)
    for _ in range(40):
        producer.send_frame("SEND", {"destination": "/queue/full"}, b"x" * 1000)
    assert producer.session.parked
    work = AdminService(engine, dict).messages.send(None, "/queue/full", {"mark": "admin"}, b"A" * 1000)
    wait = next(work)
    # Parked behind the limit, as a client's SEND: not in the queue, not answered yet.
    assert wait is not None and not wait.done
    reader = Peer(engine)
    reader.send_frame("SUBSCRIBE", {"destination": "/queue/full", "id": "1"})
    got = reader.messages()
    for _ in range(100):
        if wait.done:
            break
        tick(engine)
        got += reader.messages()
    assert wait.done
    with pytest.raises(StopIteration):
        next(work)
    got += reader.messages()
    assert [m.body for m in got if m.headers.get("mark") == "admin"] == [b"A" * 1000]


def test_a_send_that_waits_past_the_timeout_is_refused() -> None:
    engine, _ = swapping_engine(memory=16 * KB, temp=4 * KB, send_fail_if_no_space_after_timeout=500)
    producer = Peer(engine)
    producer.outbox.fail = lambda exc: None  # type: ignore[attr-defined]
    for _ in range(40):
        producer.send_frame("SEND", {"destination": "/queue/full"}, b"x" * 1000)
    work = AdminService(engine, dict).messages.send(None, "/queue/full", {}, b"L" * 1000)
    assert next(work) is not None
    engine.clock.ms += 600
    tick(engine)
    with pytest.raises(NoRoom, match="still no room after 500 ms"):
        next(work)
    assert not any(session.address == "admin" for session in engine.sessions.values())
    # Refused means not sent: it does not go later, once there is room.
    reader = Peer(engine)
    reader.send_frame("SUBSCRIBE", {"destination": "/queue/full", "id": "1"})
    got = reader.messages()
    for _ in range(50):
        tick(engine)
        got += reader.messages()
    assert got and all(m.body != b"L" * 1000 for m in got)
