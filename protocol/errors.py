"""The one error tree for everything a STOMP peer can be told.

Every error the broker reports to a client is a ``StompError``: its class says what
went wrong (``summary`` becomes the ERROR frame's ``message`` header), its text says
why (the ERROR body).  ``broker.core.base.errors.to_error_frame`` is the only place that
turns one into bytes.
"""

from __future__ import annotations


class StompError(Exception):
    """Root of every error a client may be told about."""

    summary = "error"
    #: Whether the connection closes after this ERROR (``broker.core.base.errors.closes``
    #: reads it).  Only where the stream itself can no longer be trusted: a frame that
    #: was read whole and refused for what it means says False, as ActiveMQ's
    #: ``ProtocolException(fatal=false)``, and the connection goes on.
    fatal = True
    #: The ``receipt`` of the frame that failed, echoed as ``receipt-id`` on the ERROR.
    receipt_id: str | None = None


class ProtocolViolation(StompError):
    """The peer broke the STOMP grammar or state machine."""

    summary = "protocol error"


class MalformedFrame(ProtocolViolation):
    summary = "malformed frame"


class FrameTooLarge(MalformedFrame):
    summary = "frame too large"


class UnknownCommand(ProtocolViolation):
    summary = "unknown command"


class MissingHeader(ProtocolViolation):
    """A whole frame without a header its command needs: refused, the connection kept
    (ActiveMQ: "SEND received without a Destination specified!", not fatal)."""

    summary = "missing required header"
    fatal = False


class UnexpectedFrame(ProtocolViolation):
    summary = "unexpected frame"


class AlreadyConnected(UnexpectedFrame):
    """A second CONNECT on a connected connection: refused, the connection kept
    (ActiveMQ's "Already connected.", not fatal)."""

    fatal = False


class UnsupportedVersion(ProtocolViolation):
    summary = "unsupported STOMP version"
