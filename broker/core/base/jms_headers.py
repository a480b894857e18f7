"""A SEND's JMS-named headers, as ActiveMQ takes them: the message's own fields.

ActiveMQ's STOMP translator hands every header it does not know itself to the JMS
message's property setters (``ActiveMQMessage.setObjectProperty``), and those set the
message's own fields for the JMS names.  So there ``JMSDeliveryMode:PERSISTENT`` is a
persistent message, ``JMSPriority:7`` one of priority 7, and the STOMP consumer sees
them as ``persistent:true`` and ``priority:7``; the JMS name wins over the STOMP header
when both are given (its setter runs last).  Probed on ActiveMQ 5.17 (issue 38):

- ``JMSDeliveryMode``: an integer (2 persistent, any other non-persistent), or
  ``PERSISTENT`` / ``NON_PERSISTENT`` in any case; anything else is refused.
- ``JMSPriority``: an integer, clamped to 0-9 (12 is 9, -3 is 0).
- ``JMSExpiration``, ``JMSTimestamp``: integers (``expires``, ``timestamp``).
- ``JMSCorrelationID``, ``JMSType``: ``correlation-id``, ``type``, as given.
- ``JMSReplyTo``: ``reply-to``.  ActiveMQ reads the value as a queue's name, or as
  ``queue://x`` / ``topic://x``, so ``/queue/r`` comes out as ``/queue//queue/r``, a
  queue no one listens to; here a value already in STOMP's form is taken as it is.

A value ActiveMQ cannot convert costs the connection there, without an ERROR; here it
gets the ERROR a bad ``priority`` gets.  ``JMSXGroupID`` needs nothing: the broker groups
by that header already (``message.GROUP_HEADER``).  The SEND handler comes here only
when a header is one of ``JMS_HEADERS`` (the same C-level ``isdisjoint`` that finds the
headers a client may not set), so other SENDs pay nothing.
"""

from __future__ import annotations

from typing import Final

from broker.core.base import names
from broker.core.base.errors import InvalidHeader, int_header, shown
from broker.core.base.message import PERSISTENT
from broker.core.base.selector.stomp_names import JMS_NAMES
from store.api import LEVELS

#: JMS name -> the STOMP header that sets the same field (the selectors' table read
#: backwards; ``JMSMessageID`` is the broker's, and stays a plain header as on ActiveMQ).
STOMP_NAMES: Final = {jms: stomp for stomp, jms in JMS_NAMES.items() if stomp != "message-id"}
JMS_HEADERS: Final = frozenset(STOMP_NAMES)

_PERSISTENT_MODE: Final = 2
_INTEGERS: Final = frozenset({"JMSExpiration", "JMSTimestamp"})
_DESTINATION_FORMS: Final = (("queue://", names.QUEUE), ("topic://", names.TOPIC))
_STOMP_FORMS: Final = (names.QUEUE, names.TOPIC, names.TEMP_QUEUE, names.TEMP_TOPIC)


def translate(headers: dict[str, str]) -> None:
    """Replace, in place, each JMS-named header of a SEND by the STOMP header for the same
    field (the JMS name's value winning), or raise InvalidHeader naming it."""
    for jms in JMS_HEADERS.intersection(headers):
        text = headers.pop(jms)
        stomp = STOMP_NAMES[jms]
        if jms == "JMSDeliveryMode":
            if _persistent(text):
                headers[stomp] = "true"
            else:
                headers.pop(stomp, None)
            continue
        if jms == "JMSPriority":
            text = str(min(max(int_header(jms, text), 0), LEVELS - 1))
        elif jms in _INTEGERS:
            text = str(int_header(jms, text))
        elif jms == "JMSReplyTo":
            text = _reply_to(text)
        headers[stomp] = text


def _persistent(text: str) -> bool:
    word = text.upper()
    if word == PERSISTENT:
        return True
    if word == "NON_PERSISTENT":
        return False
    try:
        return int(text) == _PERSISTENT_MODE
    except ValueError:
        raise InvalidHeader(
            f"header 'JMSDeliveryMode' must be PERSISTENT, NON_PERSISTENT, 2 or 1, got {shown(text)}"
        ) from None


def _reply_to(text: str) -> str:
    if text.startswith(_STOMP_FORMS):
        return text
    for prefix, kind in _DESTINATION_FORMS:
        if text.startswith(prefix):
            return kind + text[len(prefix) :]
    return names.QUEUE + text
