"""``transformation`` on SEND and SUBSCRIBE: JMS map and object messages, as ActiveMQ's
STOMP side has them (5.17's ProtocolConverter, StompSubscription, JmsFrameTranslator).

A SEND with ``transformation:jms-map-json`` (or ``jms-map-xml``, ``jms-object-json``,
``jms-object-xml``) and no ``content-length`` carries a map (an object): its body is read
(``base.xstream``) and kept in the form its ``transformation`` names, as ActiveMQ writes
it; that header is the message's mark of a map, as ActiveMQ keeps it as a property.  A
body that does not read is kept as it came, with a ``transformation-error`` header saying
why (ActiveMQ's: a plain message then).  With a ``content-length`` it is bytes, as in
ActiveMQ, and nothing reads it.

A subscriber that asked for a ``transformation`` gets every message but bytes with that
header instead of the sender's (as ActiveMQ sets it), and a map or object in the form it
asked for (``jms-xml`` / ``jms-json``: ``jms-map-*`` or ``jms-object-*``, as ActiveMQ
names it back).  Nothing of this runs for a SEND without the header (one dict membership
test) or a subscriber without one (one attribute test, ``Subscription.deliver``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base import xstream
from broker.core.base.message import find_header

if TYPE_CHECKING:
    from broker.core.base.message import Message

TRANSFORMATION: Final = "transformation"
ERROR: Final = "transformation-error"
MAP_JSON: Final = "jms-map-json"
MAP_XML: Final = "jms-map-xml"
OBJECT_JSON: Final = "jms-object-json"
OBJECT_XML: Final = "jms-object-xml"
JMS_JSON: Final = "jms-json"
JMS_XML: Final = "jms-xml"
ADVISORY_JSON: Final = "jms-advisory-json"
ADVISORY_XML: Final = "jms-advisory-xml"
BYTE: Final = "jms-byte"
#: What ActiveMQ's JmsFrameTranslator reads on a SEND, and what it must be.
_READ: Final[dict[str, str | None]] = {
    MAP_JSON: xstream.MAP,
    MAP_XML: xstream.MAP,
    OBJECT_JSON: None,
    OBJECT_XML: None,
}
#: Names it knows but does not read on a SEND ("Unknown transformation" there).
_NOT_READ: Final = frozenset({JMS_JSON, JMS_XML, ADVISORY_JSON, ADVISORY_XML})
#: Every name its translator answers to (META-INF/services/.../frametranslator/).
JMS: Final = frozenset({*_READ, *_NOT_READ, BYTE})
#: A subscriber's ``jms-xml`` / ``jms-json`` as ActiveMQ names it back, per kind.
_NAMED_BACK: Final = {
    xstream.MAP: {JMS_XML: MAP_XML, JMS_JSON: MAP_JSON},
    None: {JMS_XML: OBJECT_XML, JMS_JSON: OBJECT_JSON},
}
#: Bodies larger than this are not converted (``transformation-error`` says so): reading
#: and writing a map holds the event loop, a 64 KiB one about 12 ms (this one about 6).
MAX_CONVERTED: Final = 32 * 1024


def sent(headers: dict[str, str], body: bytes) -> bytes:
    """The body a SEND with a ``transformation`` header (and no ``content-length``) keeps:
    a map or object in the form its header names; else as it came, ``headers`` told of
    the error where ActiveMQ's is one."""
    name = headers[TRANSFORMATION]
    if name not in _READ:
        if name in _NOT_READ:
            headers[ERROR] = f"Unknown transformation: {name}"
        return body
    as_json = name.endswith("json")
    try:
        if len(body) > MAX_CONVERTED:
            raise xstream.Refused(f"larger than {MAX_CONVERTED} bytes: not converted")
        value = xstream.read(body, as_json, _READ[name])
    except xstream.Refused as exc:
        headers[ERROR] = str(exc)
        return body
    # Only a message that read has none (the mark of a map read, ``view``).
    headers.pop(ERROR, None)
    return xstream.write(value, as_json)


#: The last view made, and of what: a topic's subscribers that asked for the same share it.
_LAST: list[object] = [None, "", None]


def view(message: Message, wanted: str) -> Message:
    """What a subscriber that asked for ``transformation:wanted`` is sent of ``message``
    (itself when nothing changes)."""
    last = _LAST
    if last[0] is message and last[1] == wanted:
        return last[2]  # type: ignore[return-value]
    result = _view(message, wanted)
    last[:] = message, wanted, result
    return result


def _view(message: Message, wanted: str) -> Message:
    if message.content_length:
        return message  # bytes: as they are, the sender's header too (ActiveMQ's)
    block = message.header_block
    sent_as = find_header(block, TRANSFORMATION)
    body = message.body
    out = wanted
    if sent_as in _READ and find_header(block, ERROR) is None:
        kind = _READ[sent_as]
        out = _NAMED_BACK[kind].get(wanted, wanted)
        as_json = out.lower().endswith("json")
        if out in JMS and as_json != sent_as.endswith("json"):
            try:
                body = xstream.write(xstream.read(body, not as_json, kind), as_json)
            except xstream.Refused:
                return message  # not one this broker read (it came another way): as it is
    elif sent_as == ADVISORY_JSON and find_header(block, "type") == "Advisory":
        # The broker's own advisories are JSON; XML ones are not built.
        out = ADVISORY_JSON if wanted == JMS_JSON else wanted
        if not out.lower().endswith("json"):
            return message
    if out == sent_as and body is message.body:
        return message
    headers = message.headers
    headers[TRANSFORMATION] = out
    copy = message.copy_to(message.seq, message.id, message.destination, headers)
    copy.body = body
    return copy
