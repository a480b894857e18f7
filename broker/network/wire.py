"""What crosses a bridge, as values: the SUBSCRIBEs of push and pull, the SEND a MESSAGE
becomes (from its parsed headers, or bytes for bytes from the pieces the engine wrote,
``pieces.MessagePieces``), the ACK a remote wants, a pulled message's headers and
fingerprint, and the words for what went wrong (``push`` and ``pull`` send them)."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.core.base.message import NETWORK_PREFIX
from broker.core.base.names import ADVISORY_PREFIX
from broker.network.demand import NETWORK_PRIORITY, TOPIC
from protocol.encoder import FRAME_END
from protocol.errors import MalformedFrame
from protocol.escaping import unescape
from protocol.frames import V1_0, V1_2
from protocol.parser import FrameParser
from wildcards import matches

if TYPE_CHECKING:
    from broker.core.base.pieces import MessagePieces
    from broker.network.demand import Want
    from config.model import NetworkConnector
    from protocol.frames import Frame

#: A MESSAGE's headers that are the broker's, not the message's: not copied to a SEND.
BROKER_ONLY = frozenset(
    {
        "subscription",
        "ack",
        "message-id",
        "redelivered",
        "destination",
        "receipt",
        "transaction",
        bridging.REDELIVERED_HEADER,
    }
)
# A MESSAGE's head (``Message.wire``), read by name, and the SEND made of it.
_COMMAND: Final = len(b"MESSAGE")
_MESSAGE_ID: Final = b"\nmessage-id:"
_DESTINATION: Final = b"\ndestination:"
_SEND_ID: Final = b"SEND"
_ID_LINE: Final = b"\n" + bridging.ID_HEADER.encode() + b":"
_DEFAULTS: Final = b"\nexpires:0\npriority:4\n"
_PATH_LINE: Final = b"\n" + bridging.PATH_HEADER.encode() + b":"
_PATH_START: Final = bridging.PATH_HEADER.encode() + b":"
_REDELIVERED_LINE: Final = bridging.REDELIVERED_HEADER.encode() + b":true\n"


def allows(connector: NetworkConnector, destination: str) -> bool:
    """Whether the connector's lists let ``destination`` over its links."""
    kind, _, name = destination[1:].partition("/")
    if kind == TOPIC and name.startswith(ADVISORY_PREFIX):
        return False
    if any(d.kind == kind and matches(d.pattern, name) for d in connector.excluded):
        return False
    if any(d.kind == kind and matches(d.pattern, name) for d in connector.statically_included):
        return True
    included = connector.dynamically_included
    return not included or any(d.kind == kind and matches(d.pattern, name) for d in included)


def push_subscription(
    sub_id: str,
    destination: str,
    selector: str,
    connector: NetworkConnector,
    remote: str,
    path: tuple[str, ...],
    want: Want | None,
) -> dict[str, str]:
    """The SUBSCRIBE, here, of a network subscription for the remote broker ``remote``."""
    queue = destination.startswith("/queue/")
    headers = {
        "id": sub_id,
        "destination": destination,
        # A queue's messages are forwarded in order and receipted in order: one ACK
        # covers every earlier one.  A topic's may be passed over (an advisory under
        # a wildcard), so each is acked on its own.
        "ack": "client" if queue else "client-individual",
        "activemq.prefetchSize": str(connector.prefetch_size),
        bridging.NETWORK: remote,
        bridging.NETWORK_TTL: str(connector.message_ttl),
        bridging.NETWORK_PATH: ",".join((*path, remote)),
    }
    if queue:
        consumer_priority(headers, connector.decrease_network_consumer_priority, want)
    if selector:
        headers["selector"] = selector
    return headers


def pull_subscription(
    sub_id: str,
    destination: str,
    selector: str,
    connector: NetworkConnector,
    local_name: str,
    path: tuple[str, ...],
    want: Want | None,
    stompd: bool,
    static: bool,
) -> dict[str, str]:
    """The SUBSCRIBE, on the remote broker, that pulls ``destination`` to this one
    (``stompd``: the remote is a stompd; ``static``: a pulledDestination)."""
    prefetch = str(connector.prefetch_size)
    headers = {
        "id": sub_id,
        "destination": destination,
        "ack": "client-individual",
        "activemq.prefetchSize": prefetch,
        # RabbitMQ's name for it.
        "prefetch-count": prefetch,
    }
    if stompd:
        headers[bridging.NETWORK] = local_name
        headers[bridging.NETWORK_TTL] = str(connector.message_ttl)
        headers[bridging.NETWORK_PATH] = ",".join((*path, local_name))
        if not static and destination.startswith("/queue/"):
            consumer_priority(headers, connector.decrease_network_consumer_priority, want)
    else:
        # A broker that is not stompd cannot tell a message that came from here: a
        # selector keeps those there (RabbitMQ ignores selectors; then they are
        # dropped here, see Crossing._pull_message).
        here = local_name.replace("'", "''")
        headers["selector"] = (
            f"{bridging.PATH_HEADER} IS NULL OR NOT ({bridging.PATH_HEADER} = '{here}' OR "
            f"{bridging.PATH_HEADER} LIKE '{here},%' OR {bridging.PATH_HEADER} LIKE '%,{here}' OR "
            f"{bridging.PATH_HEADER} LIKE '%,{here},%')"
        )
    if selector:
        headers["selector"] = (
            f"({headers['selector']}) AND ({selector})" if "selector" in headers else selector
        )
    return headers


def forwarded(headers: dict[str, str], local_name: str, rabbitmq: bool) -> dict[str, str]:
    """The SEND's headers for a MESSAGE (parsed) this broker forwards: its own headers, its
    id and path (this broker last), ``redelivered``; RabbitMQ's ``expiration`` if needed."""
    out = {name: value for name, value in headers.items() if name not in BROKER_ONLY}
    out["destination"] = headers.get("destination", "")
    out[bridging.ID_HEADER] = headers.get("message-id", "")
    path = headers.get(bridging.PATH_HEADER)
    out[bridging.PATH_HEADER] = f"{path},{local_name}" if path else local_name
    if headers.get("redelivered") == "true":
        out[bridging.REDELIVERED_HEADER] = "true"
    if rabbitmq:
        rabbitmq_expiration(out)
    return out


def destination_of(head: bytes) -> str:
    """The destination of a MESSAGE whose head (``MessagePieces.head``) is ``head``."""
    start = head.find(_DESTINATION)
    if start < 0:
        raise MalformedFrame("a MESSAGE head without a destination")
    start += len(_DESTINATION)
    raw = head[start : head.index(b"\n", start)].decode()
    # The head is escaped as STOMP 1.2 escapes it: the bridge's session speaks 1.2.
    return unescape(raw, V1_2) if "\\" in raw else raw


def send_pieces(pieces: MessagePieces, local: bytes) -> list[bytes]:
    """The SEND made of a MESSAGE's pieces, bytes for bytes, without parsing the frame, for
    a stompd remote over STOMP 1.2; ``local``: this broker's name as the path writes it.

    Its head's headers are the SEND's, but for ``message-id``, which becomes
    ``_STOMPD_ID`` (the message's id is its id on the next broker too); this broker goes
    last on its ``_STOMPD_PATH``; ``redelivered`` is said as ``_STOMPD_REDELIVERED``;
    this delivery's other headers (subscription, ack) are the broker's, not the
    message's.  Then the end of the headers and the body, as they were."""
    head = pieces.head
    at = head.find(_MESSAGE_ID)
    if at < 0:
        raise MalformedFrame("a MESSAGE head without a message-id")
    # "MESSAGE\n...message-id:ID\n..." becomes "SEND\n..._STOMPD_ID:ID\n...".
    rest = head[_COMMAND:at] + _ID_LINE + head[at + len(_MESSAGE_ID) :]
    # No expiry and the default priority go without saying (two headers fewer to read).
    defaults = rest.find(_DEFAULTS)
    if defaults >= 0:
        rest = rest[:defaults] + rest[defaults + len(_DEFAULTS) - 1 :]
    at = rest.find(_PATH_LINE)
    if at < 0:
        rest += _PATH_START + local + b"\n"
    else:
        end = rest.index(b"\n", at + len(_PATH_LINE))
        rest = rest[:end] + b"," + local + rest[end:]
    prefix = _SEND_ID + rest
    if pieces.redelivered:
        prefix += _REDELIVERED_LINE
    return [prefix, pieces.end, pieces.body, FRAME_END]


def parsed(pieces: MessagePieces) -> Frame:
    """A MESSAGE's pieces as a frame (for an advisory, or a remote that is not stompd)."""
    parser = FrameParser(max_frame_size=1 << 62)
    parser.version = V1_2
    parser.feed(b"".join((pieces.head, *pieces.lines, pieces.end, pieces.body, FRAME_END)))
    frame = parser.next_frame()
    if frame is None:
        raise MalformedFrame("a MESSAGE's pieces that are not a whole frame")
    return frame


def pulled(headers: dict[str, str], path: str | None, remote: str, stompd: bool) -> dict[str, str]:
    """The SEND's headers, here, for a MESSAGE pulled from the remote broker ``remote``
    (its id kept, the remote last on its path, ``redelivered`` said).

    A remote that is not stompd passes its clients' ``_STOMPD_*`` headers on as they
    are: none is taken from it (a client there could choose the id, and the origin, of
    a message here, and so make the audit drop another broker's).  Its message is its
    own: its id, and a path that starts there."""
    if stompd:
        out = {name: value for name, value in headers.items() if name not in BROKER_ONLY}
        out[bridging.ID_HEADER] = headers.get(bridging.ID_HEADER) or headers.get("message-id", "")
        out[bridging.PATH_HEADER] = f"{path},{remote}" if path else remote
    else:
        out = {
            name: value
            for name, value in headers.items()
            if name not in BROKER_ONLY and not name.startswith(NETWORK_PREFIX)
        }
        out[bridging.ID_HEADER] = headers.get("message-id", "")
        out[bridging.PATH_HEADER] = remote
    out["destination"] = headers.get("destination", "")
    if headers.get("redelivered") == "true":
        out[bridging.REDELIVERED_HEADER] = "true"
    return out


def consumer_priority(headers: dict[str, str], decrease: bool, want: Want | None) -> None:
    """On standby behind this broker's own consumers, or (decreaseNetworkConsumerPriority)
    at a priority below theirs, lower the further away the consumer."""
    if decrease:
        headers[bridging.PRIORITY] = str(want.priority if want is not None else NETWORK_PRIORITY)
    else:
        headers[bridging.NETWORK_STANDBY] = "true"


def rabbitmq_expiration(headers: dict[str, str]) -> None:
    """RabbitMQ expires a message by ``expiration`` (ms from now), not ``expires``."""
    text = headers.get("expires", "0")
    expires = int(text) if text.isdigit() else 0
    if expires and "expiration" not in headers:
        headers["expiration"] = str(max(expires - int(time.time() * 1000), 1))


def fingerprint(headers: dict[str, str], body: bytes) -> bytes:
    """A message's content (its destination, headers and body): how a copy the remote
    sends again is known when its message-id is not the same."""
    digest = hashlib.blake2b(body, digest_size=16)
    for name, value in sorted(headers.items()):
        digest.update(f"\n{name}:{value}".encode())
    return digest.digest()


def remote_ack(headers: dict[str, str], version: str) -> dict[str, str]:
    """The ACK frame's headers for a MESSAGE, as the remote's STOMP version names it."""
    if version == V1_2:
        return {"id": headers.get("ack", "")}
    ack = {"message-id": headers.get("message-id", "")}
    if version != V1_0:
        ack["subscription"] = headers.get("subscription", "")
    return ack


def error_text(frame: Frame) -> str:
    message = frame.headers.get("message", "")
    body = frame.body.decode(errors="replace").strip()
    return f"{message}: {body}" if message and body and body != message else message or body or "(no message)"


def describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the connection timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot connect: {exc.strerror}"
    return f"cannot connect: {exc}"
