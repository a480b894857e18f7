"""Destination names as ActiveMQ's STOMP side spells them.

``/queue/NAME``, ``/topic/NAME``, ``/temp-queue/NAME``, ``/temp-topic/NAME`` (private to
the connection that uses them), ``/remote-temp-queue/ID`` and ``/remote-temp-topic/ID``
(another connection's temporary destination, as ActiveMQ shows it), and composites
``/queue/a,/topic/b``: an element without a prefix takes the kind of the one before
it, as ActiveMQ's composite destinations do.
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


def split_destination(destination: str) -> list[tuple[str, str]]:
    """``"/queue/a,b,/topic/c"`` -> ``[("/queue/", "a"), ("/queue/", "b"), ("/topic/", "c")]``."""
    parts: list[tuple[str, str]] = []
    kind: str | None = None
    for raw in destination.split(","):
        element = raw.strip()
        for prefix in PREFIXES:
            if element.startswith(prefix):
                kind = prefix
                element = element[len(prefix) :]
                break
        else:
            if kind is None:
                raise InvalidDestination(
                    f"Illegal destination name {destination!r}: STOMP destinations must begin with "
                    "/queue/, /topic/, /temp-queue/ or /temp-topic/"
                )
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
