"""STOMP frames and command names.

A ``Frame`` is what the parser yields and the encoder takes.  Headers are a plain
``dict``: insertion order is wire order, and the parser keeps the first occurrence
of a repeated header (STOMP 1.2, "Repeated Header Entries").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Client frames
CONNECT: Final = "CONNECT"
STOMP: Final = "STOMP"
SEND: Final = "SEND"
SUBSCRIBE: Final = "SUBSCRIBE"
UNSUBSCRIBE: Final = "UNSUBSCRIBE"
ACK: Final = "ACK"
NACK: Final = "NACK"
BEGIN: Final = "BEGIN"
COMMIT: Final = "COMMIT"
ABORT: Final = "ABORT"
DISCONNECT: Final = "DISCONNECT"
# Server frames
CONNECTED: Final = "CONNECTED"
MESSAGE: Final = "MESSAGE"
RECEIPT: Final = "RECEIPT"
ERROR: Final = "ERROR"

CLIENT_COMMANDS: Final = frozenset(
    {CONNECT, STOMP, SEND, SUBSCRIBE, UNSUBSCRIBE, ACK, NACK, BEGIN, COMMIT, ABORT, DISCONNECT}
)
SERVER_COMMANDS: Final = frozenset({CONNECTED, MESSAGE, RECEIPT, ERROR})
ALL_COMMANDS: Final = CLIENT_COMMANDS | SERVER_COMMANDS

V1_0: Final = "1.0"
V1_1: Final = "1.1"
V1_2: Final = "1.2"
SUPPORTED_VERSIONS: Final = (V1_0, V1_1, V1_2)

# STOMP 1.2 "Value Encoding": CONNECT and CONNECTED frames are not escaped, for 1.0
# compatibility, so a passcode containing ':' reaches auth unchanged.
UNESCAPED_COMMANDS: Final = frozenset({CONNECT, STOMP, CONNECTED})


@dataclass(slots=True, init=False)
class Frame:
    command: str
    headers: dict[str, str]
    body: bytes

    def __init__(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        # Written out, not generated: compiled (setup.py), this one is C where the one
        # ``dataclass`` would make stays Python (a frame is made per frame parsed).
        self.command = command
        self.headers = {} if headers is None else headers
        self.body = body
