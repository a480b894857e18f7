"""How the core's parts tell each other things without calling up (issue 11): disk
outcomes come back after the call that asked for them and wake their owner then, expired messages are
settled once the work under way is done, and every scheduled job waits in the store."""

from __future__ import annotations

from broker.core.base.clock import Clock
from broker.core.base.usage import UsageMeter
from broker.core.storage.disk import Disk
from protocol.frames import Frame
from store.api import Failed, Ok, Outcome
from store.memory import memory_temp_store
from store.worker import DeferredWorker
from tests.broker.harness import Peer, messages_in_memory, new_engine, tick


def test_an_outcome_comes_back_after_submit_and_wakes_the_owner() -> None:
    woken: list[str] = []
    outcomes: list[Outcome[int]] = []
    worker = DeferredWorker()
    disk = Disk(worker, Clock(0), memory_temp_store(), UsageMeter("memory", 1 << 20))
    disk.submit(lambda: 2, outcomes.append, lambda: woken.append("later"))
    disk.submit(lambda: 1 // 0, outcomes.append, lambda: woken.append("failed"))
    # Never on the caller's stack: it goes on before anything comes back.
    assert outcomes == [] and woken == [] and worker.pending == 2
    assert worker.run(lambda finish: finish()) == 2
    assert [o.value for o in outcomes if isinstance(o, Ok)] == [2]
    # A failure is the waiting code's to handle (it retries): nobody is woken for it.
    assert woken == ["later"]
    assert isinstance(outcomes[-1], Failed)
    assert worker.pending == 0


def test_an_expired_persistent_message_is_dead_lettered_at_the_end_of_the_work() -> None:
    engine = new_engine(ms=10_000)
    producer, consumer, dlq = Peer(engine), Peer(engine), Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/e", "persistent": "true", "ttl": "100"}, b"x")
    engine.clock.ms += 1_000
    dlq.send_frame("SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "d"})
    # Dispatch finds it expired and only notes it: the queue calls nothing above it.
    engine.handle(consumer.session, Frame("SUBSCRIBE", {"destination": "/queue/e", "id": "1"}))
    assert [m.destination for m in engine.destinations.expired] == ["/queue/e"]
    assert dlq.received() == []
    engine.flush()
    (dead,) = dlq.received()
    assert dead.headers["dlqDeliveryFailureCause"].startswith(
        "java.lang.Throwable: Message Expired. Expiration:"
    )
    assert consumer.received() == []
    assert engine.queues["/queue/e"].stats.expired == 1
    assert engine.destinations.expired == []


def test_every_job_waits_in_the_store_one_for_a_temporary_queue_too() -> None:
    engine = new_engine(ms=10_000)
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/temp-queue/later", "id": "1"})
    peer.send_frame("SEND", {"destination": "/temp-queue/later", "AMQ_SCHEDULED_DELAY": "500"}, b"job")
    assert engine.usage.store.used > 0 and messages_in_memory(engine) == 0
    engine.clock.ms += 499
    tick(engine)
    assert peer.received() == []
    engine.clock.ms += 1
    tick(engine)
    (message,) = peer.received()
    # Named to its owner as it named it, as in ActiveMQ.
    assert message.body == b"job" and message.headers["destination"] == "/temp-queue/later"
    assert engine.usage.store.used == 0


def test_a_job_for_a_temporary_queue_that_is_gone_is_dropped() -> None:
    engine = new_engine(ms=10_000)
    owner = Peer(engine)
    owner.send_frame("SEND", {"destination": "/temp-queue/gone", "AMQ_SCHEDULED_DELAY": "500"}, b"job")
    engine.close_session(owner.session)
    engine.clock.ms += 500
    tick(engine)
    assert engine.usage.store.used == 0
    assert not [name for name in engine.queues if "gone" in name]
