"""STOMP frames and command names.

A ``Frame`` is what the parser yields and the encoder takes.  Headers are a plain
``dict``: insertion order is wire order, and the parser keeps the first occurrence
of a repeated header (STOMP 1.2, "Repeated Header Entries").
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Client frames
CONNECT = "CONNECT"
STOMP = "STOMP"
SEND = "SEND"
SUBSCRIBE = "SUBSCRIBE"
UNSUBSCRIBE = "UNSUBSCRIBE"
ACK = "ACK"
NACK = "NACK"
BEGIN = "BEGIN"
COMMIT = "COMMIT"
ABORT = "ABORT"
DISCONNECT = "DISCONNECT"
# Server frames
CONNECTED = "CONNECTED"
MESSAGE = "MESSAGE"
RECEIPT = "RECEIPT"
ERROR = "ERROR"

CLIENT_COMMANDS = frozenset(
    {CONNECT, STOMP, SEND, SUBSCRIBE, UNSUBSCRIBE, ACK, NACK, BEGIN, COMMIT, ABORT, DISCONNECT}
)
SERVER_COMMANDS = frozenset({CONNECTED, MESSAGE, RECEIPT, ERROR})
ALL_COMMANDS = CLIENT_COMMANDS | SERVER_COMMANDS

V1_0 = "1.0"
V1_1 = "1.1"
V1_2 = "1.2"
SUPPORTED_VERSIONS = (V1_0, V1_1, V1_2)

# STOMP 1.2 "Value Encoding": CONNECT and CONNECTED frames are not escaped, for 1.0
# compatibility, so a passcode containing ':' reaches auth unchanged.
UNESCAPED_COMMANDS = frozenset({CONNECT, STOMP, CONNECTED})


@dataclass(slots=True)
class Frame:
    command: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
