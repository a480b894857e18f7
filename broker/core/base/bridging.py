"""What a message and a subscription carry across a network of brokers (docs/network.md).

A bridge (``broker.network``) is a STOMP client of both brokers it joins, so everything
that crosses a link is a STOMP header:

* on a forwarded SEND, ``_STOMPD_ID`` is the message's id on the first broker (the
  receiving broker keeps it as the message's ``message-id``, and drops a copy it already
  has: ``audit.ProducerAudit``), ``_STOMPD_REDELIVERED`` says it was ``redelivered``,
  and ``_STOMPD_PATH`` lists the brokers it was on before, first one first (kept with
  the message, so each broker can tell where it has been).  Underscores, not dashes:
  the names are selector identifiers.
* they are a bridge's word, so only a bridge's own connection may say them: one whose
  CONNECT carries ``stompd.network`` (the broker it is the bridge of) and whose user the
  guard lets be one (``Guard.may_bridge``), or the broker's own bridge sessions.  Every
  other SEND loses them at the edge (``message.NOT_THE_SENDERS``), so a client can
  neither choose a message-id, set ``redelivered``, nor make the audit drop another
  broker's message.  A consumer advisory carries ``_STOMPD_ADVISORY`` (the
  broker that published it) for the same reason: a bridge believes no other.
* on a SUBSCRIBE, ``stompd.network`` makes a network subscription: it feeds the broker
  it names, so it is never given a message that was there before, nor one that has
  crossed ``stompd.networkTTL`` links already; ``stompd.networkPath`` is the path the
  demand came along (the broker's consumer advisory tells it on), and
  ``stompd.networkStandby`` makes it take messages only while the queue has no other
  kind of consumer (``activemq.priority`` orders consumers otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base.message import (
    NETWORK_ADVISORY_HEADER,
    NETWORK_ID_HEADER,
    NETWORK_PATH_HEADER,
    NETWORK_REDELIVERED_HEADER,
    find_header,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.message import Message

# Named with the one list of what a client may not set (``message.NOT_THE_SENDERS``),
# which a SEND keeps only from a bridge.
PATH_HEADER: Final = NETWORK_PATH_HEADER
ID_HEADER: Final = NETWORK_ID_HEADER
REDELIVERED_HEADER: Final = NETWORK_REDELIVERED_HEADER
#: On a consumer advisory: the broker that published it (a client's SEND cannot carry
#: it), so that a bridge acts only on the remote broker's own (``demand.Demand``).
ADVISORY_HEADER: Final = NETWORK_ADVISORY_HEADER

NETWORK: Final = "stompd.network"
#: On a bridge's CONNECT: its connector is duplex (the far end lists it as ActiveMQ does).
NETWORK_DUPLEX: Final = "stompd.networkDuplex"
NETWORK_TTL: Final = "stompd.networkTTL"
NETWORK_PATH: Final = "stompd.networkPath"
NETWORK_STANDBY: Final = "stompd.networkStandby"
#: ActiveMQ's consumer priority (ConsumerInfo.priority): higher first, while it has credit.
PRIORITY: Final = "activemq.priority"


class NetworkInfo:
    """A network subscription: the broker it feeds, and the path its demand came along."""

    __slots__ = ("node", "path", "ttl")

    def __init__(self, node: str, ttl: int, path: tuple[str, ...]) -> None:
        self.node = node
        self.ttl = ttl
        self.path = path


def origin_of(message: Message) -> str:
    """The broker a forwarded message was first on (the first of its path): the audit
    keeps each origin's ids apart, so no other origin's id can pass for one of its."""
    path = find_header(message.header_block, PATH_HEADER)
    return path.partition(",")[0] if path else ""


def split_path(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(part for part in text.split(",") if part)


def network_filter(
    info: NetworkInfo, selector: Callable[[Message], bool] | None = None
) -> Callable[[Message], bool]:
    """Which messages a network subscription may take: not one that was on the broker it
    feeds, nor one with no hop left (its path already as long as the TTL allows); and of
    those, what its ``selector`` (the remote consumer's) takes."""
    node = info.node
    # A message whose path holds this many brokers has crossed ttl - 1 links; one more is the last.
    longest = info.ttl - 1

    def accepts(message: Message) -> bool:
        path = find_header(message.header_block, PATH_HEADER)
        if path is not None:
            nodes = path.split(",")
            if len(nodes) > longest or node in nodes:
                return False
        return selector is None or selector(message)

    return accepts
