"""Broker-level errors, and the one place any error becomes an ERROR frame."""

from __future__ import annotations

import logging
from typing import Final

from protocol.errors import StompError
from protocol.frames import ERROR, Frame

log = logging.getLogger("stompd.errors")

#: What the message store keeps a number in, a signed 64-bit integer (Java's long, as
#: ActiveMQ reads ``expires``, ``timestamp``, ``AMQ_SCHEDULED_DELAY``...): a header's
#: number past it is refused when it comes in (``int_header``), never met by the store.
LONG_MIN: Final = -(1 << 63)
LONG_MAX: Final = (1 << 63) - 1


class BrokerError(StompError):
    """A frame read whole and refused for what it means (a bad destination or header
    value, an unknown subscription, message or transaction, no right, no room): the
    ERROR goes out and the connection goes on, every subscription and unacknowledged
    message as it was, as ActiveMQ's ProtocolConverter answers one.  The subclasses
    that end a connection (a CONNECT refused, a slow consumer, a failed store) say
    ``fatal = True``; ``closes`` is the one reading of it."""

    summary = "broker error"
    fatal = False


class InvalidDestination(BrokerError):
    summary = "invalid destination"


class InvalidHeader(BrokerError):
    summary = "invalid header"


class UnknownSubscription(BrokerError):
    summary = "unknown subscription"


class DuplicateSubscription(BrokerError):
    summary = "duplicate subscription"


class UnknownMessage(BrokerError):
    summary = "unknown message"


class TransactionError(BrokerError):
    summary = "transaction error"


class AccessDenied(BrokerError):
    summary = "access denied"


class ClientIdInUse(BrokerError):
    """ActiveMQ's InvalidClientIDException: a connection with this client-id is open."""

    summary = "client-id already connected"
    #: A CONNECT refused: there is no connection to keep.
    fatal = True


class NoSpace(BrokerError):
    summary = "resource limit reached"


class SlowConsumer(BrokerError):
    """More bytes waited to be written to a connection than its limit (nats-server's
    "Slow Consumer Detected: MaxPending Exceeded")."""

    summary = "slow consumer"
    fatal = True


class StoreFull(NoSpace):
    """The message store has no room (storeUsage, or the disk under it): ActiveMQ's
    "Persistent store is Full" under sendFailIfNoSpace."""

    summary = "store full"


class NoRoomToCreate(NoSpace):
    """A SEND or SUBSCRIBE would make a destination, and the memory limit has no room for
    what a destination costs: it waits for room (flow control), or is refused."""

    def __init__(self, message: str, cost: int) -> None:
        super().__init__(message)
        self.cost = cost


class TooManyDestinations(BrokerError):
    """A policy entry's ``maxDestinations`` are all made (ActiveMQ's IllegalStateException)."""

    summary = "too many destinations"


class StoreFailed(BrokerError):
    """The message store stopped for good: what a connection waits for will never be
    durable, so it is ended (``Persistence.store_failed``)."""

    summary = "message store failed"
    fatal = True


def int_header(name: str, text: str, lo: int = LONG_MIN, hi: int = LONG_MAX) -> int:
    """A header's value as an integer from ``lo`` to ``hi`` (by default what the store
    keeps a number in), or the ERROR saying it is not one, naming the header."""
    try:
        value = int(text)
    except ValueError:
        raise InvalidHeader(f"header {name!r} must be an integer, got {shown(text)}") from None
    if not lo <= value <= hi:
        raise InvalidHeader(f"header {name!r} must be an integer from {lo} to {hi}, got {shown(text)}")
    return value


def shown(text: str) -> str:
    """A client's value as an error quotes it: whole if short (a header may be 10 KB)."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"


def closes(exc: BaseException) -> bool:
    """Whether the connection closes after the ERROR for ``exc``: the one place that says.

    A frame the parser could not read (``MalformedFrame``, ``FrameTooLarge``, an unknown
    command), a CONNECT that failed (the engine marks whatever a connection not yet
    connected is refused fatal: ``Engine._invoke``), authentication, a slow consumer
    and our own bugs close it; a frame read whole and refused for what it means
    (``fatal = False``: a bad header, an unknown id, a second CONNECT...) keeps it.
    """
    return not isinstance(exc, StompError) or exc.fatal


def to_error_frame(exc: BaseException, receipt: str | None = None) -> Frame:
    """Map any exception to the ERROR frame a client is shown.

    A ``StompError`` is ours to explain: its class names the problem and its text says
    why.  Anything else is a bug in the broker: the traceback goes to our log, and the
    client is told only that it was an internal error.
    """
    if isinstance(exc, StompError):
        headers = {"message": exc.summary}
        text = str(exc) or exc.summary
    else:
        log.error("internal error while handling a frame", exc_info=exc)
        headers = {"message": "internal error"}
        text = "The broker failed to process this frame; the failure was logged."
    if receipt is not None:
        headers["receipt-id"] = receipt
    body = text.encode()
    headers["content-type"] = "text/plain"
    headers["content-length"] = str(len(body) + 1)
    return Frame(ERROR, headers, body + b"\n")
