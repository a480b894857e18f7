"""``<redeliveryPlugin fallbackToDeadLetter="false">`` over TCP, on stompd and on the real
ActiveMQ 5.17 where it is installed, one activemq.xml and the same frames: a NACKed
message of a queue a redelivery entry matches goes on by that entry (here to the DLQ at
once, maximumRedeliveries 0), one of a queue no entry matches (and no default entry) is
dropped: never redelivered, never in ActiveMQ.DLQ."""

from __future__ import annotations

import itertools

import pytest

from tests.clients import client
from tests.side_by_side import side_by_side

pytestmark = pytest.mark.integration

PLUGINS = (
    '<plugins><redeliveryPlugin fallbackToDeadLetter="false"><redeliveryPolicyMap><redeliveryPolicyMap>'
    '<redeliveryPolicyEntries><redeliveryPolicy queue="known.>" maximumRedeliveries="0"/>'
    "</redeliveryPolicyEntries></redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>"
)
_names = itertools.count(1)


configured_activemq, port = side_by_side(PLUGINS)


def nacked(port: int, queue: str) -> list[str]:
    """Send one message to ``queue``, NACK it; what its consumer gets after that."""
    with client(port) as c:
        c.subscribe(queue, "s", ack="client-individual")
        c.send(queue, queue, sync=True, persistent="true")
        (message,) = c.listener.wait_messages(1)
        c.nack(message)
        # The listener keeps every MESSAGE: the first is the one NACKed.
        return [m.body for m in c.through_mark(queue, ack=True, persistent=True)][1:]


def in_dlq(port: int) -> list[str]:
    with client(port) as dlq:
        dlq.subscribe("/queue/ActiveMQ.DLQ", "d")
        return [m.body for m in dlq.through_mark("/queue/ActiveMQ.DLQ", persistent=True)]


def test_a_queue_without_a_redelivery_entry_loses_a_nacked_message(port: int) -> None:
    n = next(_names)
    known, other = f"/queue/known.q{n}", f"/queue/other.q{n}"
    # Neither is redelivered: the known one went to the DLQ, the other nowhere.
    assert nacked(port, known) == []
    assert nacked(port, other) == []
    dead = in_dlq(port)
    assert known in dead and other not in dead
