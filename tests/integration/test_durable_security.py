"""Durable subscriptions from the attacker's side, over TCP with stomp.py: while the owner is
away its client-id is free to claim, but ending its durable subscription (UNSUBSCRIBE with
the name) or remaking it elsewhere (SUBSCRIBE under the name to another destination or
selector) needs read on what it subscribes to.  Refused: an ERROR, and nothing deleted,
the owner gets what it was owed.  (Stricter than ActiveMQ, which checks nothing here.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import client, eventually
from tests.security_support import entries_file, start_secured, stored, wait_error

pytestmark = pytest.mark.integration

ENTRIES = """
<authorizationEntry topic=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry topic="AUDIT.>" read="auditors" write="auditors" admin="auditors"/>
<authorizationEntry topic="PUBLIC.>" read="*" write="*" admin="*"/>
"""

OWNER = {"username": "owner", "passcode": "owner-pw", "headers": {"client-id": "audit-1"}}
INTRUDER = {"username": "intruder", "passcode": "intruder-pw", "headers": {"client-id": "audit-1"}}
NAME = {"activemq.subscriptionName": "log"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    users = {"owner": "auditors", "colleague": "auditors", "intruder": "users"}
    thread = start_secured(tmp_path, entries_file(tmp_path, users, ENTRIES))
    try:
        yield thread
    finally:
        thread.stop()


def owed_while_away(broker: BrokerThread) -> int:
    """The owner's durable subscription, away, owed two persistent messages; the store's bytes."""
    with client(broker.port, **OWNER) as owner:
        owner.subscribe("/topic/AUDIT.LOG", **NAME)
    with client(broker.port, username="owner", passcode="owner-pw") as producer:
        for body in ("first", "second"):
            producer.send("/topic/AUDIT.LOG", body, sync=True, persistent="true")
    used = stored(broker)
    assert used > 0
    return used


def owner_gets_what_it_was_owed(broker: BrokerThread) -> None:
    with client(broker.port, **OWNER) as owner:
        owner.subscribe("/topic/AUDIT.LOG", **NAME)
        assert [m.body for m in owner.listener.wait_messages(2)] == ["first", "second"]


def test_unsubscribing_another_users_durable_subscription_is_refused(broker: BrokerThread) -> None:
    used = owed_while_away(broker)
    with client(broker.port, **INTRUDER) as intruder:
        intruder.conn.unsubscribe("1", headers={**NAME, "receipt": "gone"})
        error = wait_error(intruder.listener)
    assert error.headers["message"] == "access denied"
    assert error.body.strip() == (
        "User intruder is not authorized to read from: /topic/AUDIT.LOG "
        "(needed to remove durable subscription 'log' of client 'audit-1', which another user made)"
    )
    assert "gone" not in intruder.listener.receipts
    assert stored(broker) == used
    owner_gets_what_it_was_owed(broker)


@pytest.mark.parametrize(
    "elsewhere",
    [
        {"destination": "/topic/PUBLIC.NEWS"},
        {"destination": "/topic/PUBLIC.>"},
        {"destination": "/topic/AUDIT.LOG", "selector": "level = 'x'"},
        {"destination": "/topic/AUDIT.LOG", "activemq.noLocal": "true"},
    ],
)
def test_repointing_another_users_durable_subscription_is_refused(
    broker: BrokerThread, elsewhere: dict[str, str]
) -> None:
    used = owed_while_away(broker)
    with client(broker.port, **INTRUDER) as intruder:
        destination = elsewhere.pop("destination")
        intruder.conn.subscribe(destination, "1", headers={**NAME, **elsewhere, "receipt": "mine"})
        error = wait_error(intruder.listener)
    assert error.headers["message"] == "access denied"
    assert "User intruder is not authorized to read from: /topic/AUDIT.LOG" in error.body
    assert stored(broker) == used
    owner_gets_what_it_was_owed(broker)


def test_a_user_who_may_read_it_may_end_it(broker: BrokerThread) -> None:
    owed_while_away(broker)
    colleague = {"username": "colleague", "passcode": "colleague-pw", "headers": {"client-id": "audit-1"}}
    with client(broker.port, **colleague) as c:
        receipt = c.receipt()
        c.conn.unsubscribe("1", headers={**NAME, "receipt": receipt})
        c.listener.wait_receipt(receipt)
    # Its two messages are deleted in the store's next batch.
    eventually(lambda: stored(broker) == 0)
