"""Brokers started from an activemq.xml with users and authorization entries, the way
``stompd --config`` starts one (load, then broker_options), on ephemeral ports."""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from stomp.utils import Frame as StompPyFrame

from broker.settings_bridge import broker_options
from config.loader import load
from config.passwords import hash_password
from tests.broker_thread import BrokerThread
from tests.clients import Collector
from tests.config.helpers import broker_file

#: Computed once: a scrypt hash costs a tenth of a second.
ADMIN_HASH = hash_password("admin-pw")

USERS = f"""
  <simpleAuthenticationPlugin anonymousAccessAllowed="{{anonymous}}">
    <users>
      <authenticationUser username="admin" password="{ADMIN_HASH}" groups="admins,users"/>
      <authenticationUser username="app" password="app-pw" groups="users"/>
      <authenticationUser username="reader" password="reader-pw" groups="readers"/>
      <authenticationUser username="auditor" password="auditor-pw" groups="auditors"/>
    </users>
  </simpleAuthenticationPlugin>
"""

ACCESS = """
  <authorizationPlugin><map><authorizationMap>
    <authorizationEntries>
      <authorizationEntry queue=">" read="admins" write="admins" admin="admins"/>
      <authorizationEntry topic=">" read="admins" write="admins" admin="admins"/>
      <authorizationEntry queue="ORDERS.>" read="users,readers" write="users" admin="admins"/>
      <authorizationEntry queue="ORDERS.AUDIT" read="auditors"/>
      <authorizationEntry queue="JOBS.>" read="users" write="users" admin="users"/>
      <authorizationEntry topic="PRICES.>" read="admins" write="users" admin="users"/>
      <authorizationEntry topic="PRICES.A,PRICES.B,PRICES.C" read="users,anonymous"/>
    </authorizationEntries>
    <tempDestinationAuthorizationEntry>
      <tempDestinationAuthorizationEntry read="users" write="users" admin="users"/>
    </tempDestinationAuthorizationEntry>
  </authorizationMap></map></authorizationPlugin>
"""


def security_file(
    tmp_path: Path, *, anonymous: bool = False, authorization: bool = True, ws: bool = False
) -> Path:
    connectors = '<transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
    if ws:
        connectors += '<transportConnector name="ws" uri="ws://127.0.0.1:0"/>'
    body = (
        f"<transportConnectors>{connectors}</transportConnectors>\n<plugins>"
        + USERS.format(anonymous=str(anonymous).lower())
        + (ACCESS if authorization else "")
        + "</plugins>\n"
    )
    return broker_file(tmp_path, body)


def entries_file(tmp_path: Path, users: dict[str, str], entries: str) -> Path:
    """A file with one STOMP listener, ``users`` (name -> groups; each one's password is
    its name + ``-pw``) and the authorization ``entries`` (``<authorizationEntry>`` lines)."""
    listed = "".join(
        f'<authenticationUser username="{name}" password="{name}-pw" groups="{groups}"/>\n'
        for name, groups in users.items()
    )
    return broker_file(
        tmp_path,
        '<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
        "</transportConnectors>\n<plugins>\n"
        f"<simpleAuthenticationPlugin><users>\n{listed}</users></simpleAuthenticationPlugin>\n"
        "<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
        f"{entries}</authorizationEntries></authorizationMap></map></authorizationPlugin>\n</plugins>\n",
    )


def start_secured(tmp_path: Path, file: Path, *, http: bool = False) -> BrokerThread:
    options = broker_options(load(file).config)
    options = dataclasses.replace(options, data_dir=tmp_path / "data", http_port=0 if http else None)
    return BrokerThread(options).start()


def wait_error(listener: Collector, timeout: float = 5.0) -> StompPyFrame:
    deadline = time.monotonic() + timeout
    cond: threading.Condition = listener._cond
    with cond:
        while not listener.errors:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("no ERROR frame")
            cond.wait(remaining)
        return listener.errors[0]


def exists(thread: BrokerThread, name: str) -> bool:
    """Whether the running broker has destination ``name`` (asked on its own loop)."""
    answer: Future[bool] = Future()

    def ask() -> None:
        assert thread.broker is not None
        engine = thread.broker.engine
        answer.set_result(name in engine.queues or name in engine.router.topics)

    thread.call(ask)
    return answer.result(timeout=10)


def stored(thread: BrokerThread) -> int:
    """Bytes in the running broker's persistent message store (asked on its own loop)."""
    answer: Future[int] = Future()

    def ask() -> None:
        assert thread.broker is not None
        answer.set_result(thread.broker.engine.usage.store.used)

    thread.call(ask)
    return answer.result(timeout=10)
