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
    #: The STOMP spec says a server closes the connection after an ERROR frame.
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
    summary = "missing required header"


class UnexpectedFrame(ProtocolViolation):
    summary = "unexpected frame"


class UnsupportedVersion(ProtocolViolation):
    summary = "unsupported STOMP version"
