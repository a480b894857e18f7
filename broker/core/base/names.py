"""Destination names as ActiveMQ's STOMP side spells them.

``/queue/NAME``, ``/topic/NAME``, ``/temp-queue/NAME``, ``/temp-topic/NAME`` (private to
the connection that uses them), ``/remote-temp-queue/ID`` and ``/remote-temp-topic/ID``
(another connection's temporary destination, as ActiveMQ shows it), and composites
``/queue/a,/topic/b``.  A name (or a composite's part) without one of these prefixes is
a queue of that name, as ActiveMQ's STOMP side takes it (``LegacyFrameTranslator``'s
fallback, checked against ActiveMQ 5.17): ``orders`` is ``/queue/orders``, ``/custom/x``
the queue ``/queue//custom/x``, and ``/topic/a,b`` the topic ``a`` and the queue ``b``.
"""

from __future__ import annotations

from typing import Final

from broker.core.base.errors import InvalidDestination

QUEUE: Final = "/queue/"
TOPIC: Final = "/topic/"
TEMP_QUEUE: Final = "/temp-queue/"
TEMP_TOPIC: Final = "/temp-topic/"
REMOTE_TEMP_QUEUE: Final = "/remote-temp-queue/"
REMOTE_TEMP_TOPIC: Final = "/remote-temp-topic/"

PREFIXES: Final = (QUEUE, TOPIC, TEMP_QUEUE, TEMP_TOPIC, REMOTE_TEMP_QUEUE, REMOTE_TEMP_TOPIC)
QUEUE_KINDS: Final = frozenset({QUEUE, TEMP_QUEUE, REMOTE_TEMP_QUEUE})

#: ActiveMQ's advisory topics (``handlers.advisory`` publishes the consumer ones; a network
#: bridge reads them): names here, so that an edge need not reach into the handlers.
ADVISORY_PREFIX: Final = "ActiveMQ.Advisory."
CONSUMER_ADVISORY_QUEUE: Final = ADVISORY_PREFIX + "Consumer.Queue."
CONSUMER_ADVISORY_TOPIC: Final = ADVISORY_PREFIX + "Consumer.Topic."
#: ActiveMQ's ``convert_string_expressions:`` before a STOMP consumer's selector in its
#: ConsumerInfo (its STOMP side compares strings that look like numbers as numbers).
ADVISORY_SELECTOR_PREFIX: Final = "convert_string_expressions:"
#: The qualified names ActiveMQ gives destinations in advisories' headers (``queue://A``).
QUALIFIED: Final = {
    QUEUE: "queue://",
    TOPIC: "topic://",
    TEMP_QUEUE: "temp-queue://",
    TEMP_TOPIC: "temp-topic://",
    REMOTE_TEMP_QUEUE: "temp-queue://",
    REMOTE_TEMP_TOPIC: "temp-topic://",
}


def split_destination(destination: str) -> list[tuple[str, str]]:
    """``"/queue/a,b,/topic/c,/x"`` -> ``[("/queue/", "a"), ("/queue/", "b"), ("/topic/", "c"),
    ("/queue/", "/x")]``: a part without a known prefix is a queue named as it is written."""
    parts: list[tuple[str, str]] = []
    for raw in destination.split(","):
        element = raw.strip()
        kind = QUEUE
        for prefix in PREFIXES:
            if element.startswith(prefix):
                kind = prefix
                element = element[len(prefix) :]
                break
        if not element:
            raise InvalidDestination(f"Illegal destination name {destination!r}: empty name")
        parts.append((kind, element))
    return parts


def temp_name(session_id: str, name: str) -> str:
    """The broker-wide name of a connection's temporary destination."""
    return f"{session_id}-{name}"


def full_name(session_id: str, kind: str, name: str) -> str:
    """The broker-wide name of ``kind`` + ``name`` as a connection names it (a temporary
    destination's made its connection's own): what its policy is looked up by."""
    if kind == TEMP_QUEUE:
        return REMOTE_TEMP_QUEUE + temp_name(session_id, name)
    if kind == TEMP_TOPIC:
        return REMOTE_TEMP_TOPIC + temp_name(session_id, name)
    return kind + name


#: What a connection's own temporary destinations' broker-wide names start with, and its
#: own names for them: (``/remote-temp-queue/ID-1-``, ``/temp-queue/``), the same for topics.
Renames = tuple[tuple[bytes, bytes], ...]
#: The headers of a MESSAGE that name a destination, each at the start of a line.
_NAMING_HEADERS: Final = (b"\ndestination:", b"\nreply-to:")


def owner_renames(session_id: str) -> Renames:
    """How ``session_id``'s temporary destinations are named to it (``owners_head``)."""
    mine = f"{session_id}-".encode()
    return (
        (REMOTE_TEMP_QUEUE.encode() + mine, TEMP_QUEUE.encode()),
        (REMOTE_TEMP_TOPIC.encode() + mine, TEMP_TOPIC.encode()),
    )


def owners_head(head: bytes, renames: Renames) -> bytes:
    """A MESSAGE's head as the connection that owns a temporary destination it names sees
    it: its ``destination`` and ``reply-to`` by the names that connection gave them
    (``/temp-queue/rq``, not ``/remote-temp-queue/ID-…-rq``), as ActiveMQ names them to
    it (``ProtocolConverter.getCreatedTempDestinationName``); other connections see the
    broker-wide name.  A composite ``reply-to`` is left as it is."""
    for header in _NAMING_HEADERS:
        start = head.find(header)
        if start < 0:
            continue
        value = start + len(header)
        for full, own in renames:
            if head.startswith(full, value):
                end = head.find(b"\n", value)
                if head.find(b",", value, end) < 0:
                    head = head[:value] + own + head[value + len(full) :]
                break
    return head
