"""JMS header names on SEND, selectors and identity, as ActiveMQ 5.17 has them (issue 38
items 1 and 5): each scenario runs on stompd and on the real ActiveMQ (where installed).

ActiveMQ's STOMP translator hands the headers it does not know to the JMS message's
property setters, which set the message's own fields for the JMS names: a SEND with
``JMSDeliveryMode:PERSISTENT`` is persistent (it survives a ``kill -9``), ``JMSPriority``
is its priority, ``JMSType`` its ``type``, and the JMS name wins over the STOMP header.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.activemq_peer import ActiveMQ, needs_activemq
from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.broker_process import Processes
from tests.broker_process import procs as procs  # the fixture
from tests.clients import Client, client
from tests.config.helpers import broker_file
from tests.security_support import USERS, start_secured

pytestmark = pytest.mark.integration

_names = itertools.count()


@pytest.fixture
def queue() -> str:
    return f"/queue/jms.{next(_names)}"


def one_message(port: int, destination: str, headers: dict[str, str]) -> dict[str, str]:
    """The headers of the MESSAGE a consumer of ``destination`` gets for a SEND with ``headers``."""
    with client(port) as c:
        c.subscribe(destination)
        c.send(destination, "m", sync=True, **headers)
        (message,) = c.listener.wait_messages(1)
        return dict(message.headers)


def test_jms_names_set_the_fields_a_consumer_sees_and_win_over_the_stomp_headers(
    broker_port: int, queue: str
) -> None:
    headers = one_message(
        broker_port,
        queue,
        {
            "JMSDeliveryMode": "PERSISTENT",
            "JMSPriority": "7",
            "priority": "2",
            "JMSCorrelationID": "c1",
            "correlation-id": "c2",
            "JMSType": "t1",
            "type": "t2",
            "JMSTimestamp": "12345",
            "JMSExpiration": "99999999999999",
            "expires": "1",
            "JMSReplyTo": "queue://replies",
        },
    )
    assert {name: headers.get(name) for name in ("persistent", "priority", "correlation-id", "type")} == {
        "persistent": "true",
        "priority": "7",
        "correlation-id": "c1",
        "type": "t1",
    }
    assert (headers["timestamp"], headers["expires"], headers["reply-to"]) == (
        "12345",
        "99999999999999",
        "/queue/replies",
    )
    assert not {"JMSDeliveryMode", "JMSPriority", "JMSType", "JMSCorrelationID"} & set(headers)


@pytest.mark.parametrize(
    ("given", "persistent", "priority"),
    [
        ({"JMSDeliveryMode": "2"}, "true", "4"),
        ({"JMSDeliveryMode": "NON_PERSISTENT", "persistent": "true"}, None, "4"),
        ({"JMSDeliveryMode": "1", "persistent": "true"}, None, "4"),
        ({"JMSPriority": "12"}, None, "9"),
        ({"JMSPriority": "-3"}, None, "0"),
    ],
)
def test_delivery_modes_and_priorities_as_activemq_reads_them(
    broker_port: int, queue: str, given: dict[str, str], persistent: str | None, priority: str
) -> None:
    headers = one_message(broker_port, queue, given)
    assert (headers.get("persistent"), headers["priority"]) == (persistent, priority)


def test_an_already_expired_jms_expiration_is_never_delivered(broker_port: int, queue: str) -> None:
    with client(broker_port) as c:
        c.subscribe(queue)
        c.send(queue, "late", sync=True, JMSExpiration="1")
        assert c.through_mark(queue) == []


def test_a_selector_names_fields_by_their_jms_names_only(broker_port: int, queue: str) -> None:
    """``JMSType = 'x'`` matches ``type:x``; ``type = 'x'`` (and ``persistent``) nothing."""
    with client(broker_port) as by_stomp, client(broker_port) as by_jms:
        by_stomp.subscribe(queue, "s", selector="type = 'x' OR persistent = 'true' OR kind = 'mark'")
        by_stomp.send(queue, "m", sync=True, type="x", persistent="true")
        by_stomp.send(queue, "mark", sync=True, kind="mark")
        before, _ = by_stomp.listener.wait_mark("mark")
        assert before == []
        by_jms.subscribe(queue, "j", selector="JMSType = 'x' AND JMSDeliveryMode = 'PERSISTENT'")
        (message,) = by_jms.listener.wait_messages(1)
        assert message.body == "m"


def test_jmsx_delivery_count_in_a_selector_is_the_delivery_count(broker_port: int, queue: str) -> None:
    with client(broker_port) as redeliveries:
        redeliveries.send(queue, "m", sync=True)
        redeliveries.subscribe(queue, "r", selector="JMSXDeliveryCount > 1 OR kind = 'mark'")
        redeliveries.send(queue, "mark", sync=True, kind="mark")
        before, _ = redeliveries.listener.wait_mark("mark")
        assert before == []  # 1 on its first delivery: not one of these
        first = Client(broker_port)
        first.subscribe(queue, "f", ack="client", selector="JMSXDeliveryCount = 1")
        (taken,) = first.listener.wait_messages(1)
        assert taken.body == "m"
        first.close()  # unacked: delivered again, now its second delivery
        (again,) = redeliveries.listener.wait_messages(1)
        assert again.body == "m" and again.headers["redelivered"] == "true"


def test_a_client_s_jmsx_user_id_never_reaches_consumers(broker_port: int, queue: str) -> None:
    assert "JMSXUserID" not in one_message(broker_port, queue, {"JMSXUserID": "spoof"})


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def restartable(
    request: pytest.FixtureRequest, procs: Processes, tmp_path: Path
) -> Iterator[tuple[Callable[[], int], Callable[[], None]]]:
    """(the broker's port now, ``kill -9`` it and start it again on its store)."""
    if request.param == "stompd":
        broker = procs.broker(tmp_path)
        broker.start()

        def again() -> None:
            broker.kill()
            broker.start()

        yield (lambda: broker.port), again
    else:
        peer: ActiveMQ = request.getfixturevalue("activemq")
        yield (lambda: peer.port), peer.restart


def test_jms_delivery_mode_persistent_survives_a_kill_9(
    restartable: tuple[Callable[[], int], Callable[[], None]], queue: str
) -> None:
    port, kill9_and_start = restartable
    with client(port()) as c:
        c.send(queue, "persistent by name", sync=True, JMSDeliveryMode="PERSISTENT")
        c.send(queue, "persistent by number", sync=True, JMSDeliveryMode="2")
        c.send(queue, "not", sync=True, JMSDeliveryMode="NON_PERSISTENT", persistent="true")
    kill9_and_start()
    with client(port()) as c:
        c.subscribe(queue)
        left = c.through_mark(queue, persistent=True)
        assert [m.body for m in left] == ["persistent by name", "persistent by number"]
        assert {m.headers.get("persistent") for m in left} == {"true"}


def test_populate_jmsx_user_id_names_who_sent_it(tmp_path: Path, queue: str) -> None:
    """Checked by hand on ActiveMQ 5.17 (its test broker has no users): ``app`` for a
    client that logged in as app, ``anonymous`` for one that did not, a client's own
    ``JMSXUserID`` replaced either way."""
    file = broker_file(
        tmp_path,
        '<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
        "</transportConnectors>\n<plugins>" + USERS.format(anonymous="true") + "</plugins>\n",
    )
    file.write_text(file.read_text().replace("<broker ", '<broker populateJMSXUserID="true" '))
    thread = start_secured(tmp_path, file)
    try:
        with client(thread.port, username="app", passcode="app-pw") as app, client(thread.port) as nobody:
            app.subscribe(queue)
            app.send(queue, "from app", sync=True, JMSXUserID="spoof")
            nobody.send(queue, "from nobody", sync=True)
            got = app.listener.wait_messages(2)
            assert [(m.body, m.headers.get("JMSXUserID")) for m in got] == [
                ("from app", "app"),
                ("from nobody", "anonymous"),
            ]
    finally:
        thread.stop()
