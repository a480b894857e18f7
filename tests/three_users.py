"""The tester's broker of issue 35, as an attacker meets it: ``admin`` with every right,
``app`` with read and write on queue ``ORDERS.>`` only, ``guest`` with read on topic
``PUBLIC.>`` only; and ``ops``, who may use the admin server (group ``admins``) with
app's destination rights only.  Each password is the user's name + ``-pw``."""

from __future__ import annotations

from pathlib import Path

from tests.broker_thread import BrokerThread
from tests.config.helpers import broker_file
from tests.ports import free_port
from tests.security_support import start_secured

USERS = {"admin": "admins,everything", "app": "apps", "guest": "guests", "ops": "admins,apps"}

ENTRIES = """
  <authorizationEntry queue=">" read="everything" write="everything" admin="everything"/>
  <authorizationEntry topic=">" read="everything" write="everything" admin="everything"/>
  <authorizationEntry queue="ORDERS.>" read="apps" write="apps" admin="apps"/>
  <authorizationEntry topic="PUBLIC.>" read="guests"/>
"""


def plugins(entries: str = "") -> str:
    """The users and entries as a ``<plugins>`` element of ``<broker>``, with ``entries``
    (``<authorizationEntry>`` lines) more."""
    listed = "".join(
        f'<authenticationUser username="{name}" password="{name}-pw" groups="{groups}"/>\n'
        for name, groups in USERS.items()
    )
    return (
        "<plugins>\n"
        f"<simpleAuthenticationPlugin><users>\n{listed}</users></simpleAuthenticationPlugin>\n"
        "<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
        f"{ENTRIES}{entries}</authorizationEntries></authorizationMap></map></authorizationPlugin>\n</plugins>\n"
    )


def three_users_file(tmp_path: Path, *, http: str | None = None, more: str = "") -> Path:
    """The file: one STOMP listener on a free port, the users and entries, ``more`` elements
    of ``<broker>``; with ``http`` (attributes, or ""), an ``<httpServer>`` on a free port
    (for ``stompd`` run as a process: in one, port 0 turns it off)."""
    server = f'<httpServer port="{free_port()}" {http}/>\n' if http is not None else ""
    return broker_file(
        tmp_path,
        f'<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
        f"</transportConnectors>\n{server}{more}{plugins()}",
    )


def start_three_users(tmp_path: Path, *, http: bool = True) -> BrokerThread:
    """The broker in this process (its admin server on a free port unless ``http`` is false)."""
    return start_secured(tmp_path, three_users_file(tmp_path), http=http)
