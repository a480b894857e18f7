"""STOMP headers a selector can only read by their JMS names.

ActiveMQ turns a SEND's ``priority``, ``persistent``, ``expires``, ``timestamp``,
``correlation-id``, ``type``, ``reply-to`` (and the broker's ``message-id``) into the JMS
message's own fields, not properties (``FrameTranslator.Helper``
``copyStandardHeadersFromFrameToMessage``): a selector sees them only as ``JMSPriority``
and the rest, and ``priority > 4`` matches nothing there.  An administrator filtering a
queue by selector (browse, count, move, copy, remove) gets a refusal that names the JMS
name instead of an empty answer.  SUBSCRIBE is left as ActiveMQ has it: it accepts such a
selector, and the name reads as NULL there (``FIELD_NAMES``), whatever headers the
message keeps: ``type = 'x'`` matches nothing, ``JMSType = 'x'`` a SEND's ``type:x``.
"""

from __future__ import annotations

from typing import Final

from broker.core.base.selector.errors import InvalidSelector
from broker.core.base.selector.lexer import Kind, Token, tokenize

#: STOMP header -> the JMS header a selector names it by.
JMS_NAMES: Final = {
    "priority": "JMSPriority",
    "persistent": "JMSDeliveryMode",
    "expires": "JMSExpiration",
    "timestamp": "JMSTimestamp",
    "correlation-id": "JMSCorrelationID",
    "type": "JMSType",
    "reply-to": "JMSReplyTo",
    "message-id": "JMSMessageID",
}

#: The STOMP names a selector can write as an identifier: NULL in every selector, as on
#: ActiveMQ, though the broker keeps ``type`` and ``persistent`` among the headers.
FIELD_NAMES: Final = frozenset(name for name in JMS_NAMES if name.isidentifier())

#: What the JMS name's values look like where they differ from the STOMP header's.
_VALUES: Final = {"persistent": " (its values are 'PERSISTENT' and 'NON_PERSISTENT')"}
_DELIVERY_MODES: Final = {"true": "'PERSISTENT'", "false": "'NON_PERSISTENT'"}


def refuse_stomp_names(text: str) -> None:
    """Raise InvalidSelector, at the first STOMP header ``text`` names, with the JMS name
    to use and the selector rewritten with it; nothing if it names none."""
    found = _stomp_names(tokenize(text))
    if not found:
        return
    position, name = found[0][0], found[0][2]
    rewritten = text
    for start, stop, _, replacement in reversed(found):
        rewritten = rewritten[:start] + replacement + rewritten[stop:]
    problem = (
        f"{name} is a STOMP header: selectors read it by its JMS name, {JMS_NAMES[name]}"
        f"{_VALUES.get(name, '')}, as in ActiveMQ, where no message has a property {name}; "
        f"try: {rewritten}"
    )
    raise InvalidSelector(text, position, problem)


def _stomp_names(tokens: list[Token]) -> list[tuple[int, int, str, str]]:
    """(start, end, STOMP header, what to write instead) of each STOMP header named;
    ``correlation-id`` and the other hyphenated ones lex as a subtraction, written without
    spaces; ``persistent = 'true'`` becomes ``JMSDeliveryMode = 'PERSISTENT'``."""
    found = []
    skip = 0
    for i, token in enumerate(tokens):
        if skip:
            skip -= 1
            continue
        if token.kind is not Kind.IDENTIFIER:
            continue
        end = token.pos + len(token.text)
        name = token.text
        if i + 2 < len(tokens):
            minus, after = tokens[i + 1], tokens[i + 2]
            joined = f"{name}-{after.text}"
            if (
                minus.text == "-"
                and minus.pos == end
                and after.kind is Kind.IDENTIFIER
                and after.pos == end + 1
                and joined in JMS_NAMES
            ):
                name, end, skip = joined, after.pos + len(after.text), 2
        if name not in JMS_NAMES:
            continue
        replacement = JMS_NAMES[name]
        if name == "persistent" and i + 2 < len(tokens):
            operator, value = tokens[i + 1], tokens[i + 2]
            mode = _DELIVERY_MODES.get(str(value.value).lower()) if value.kind is Kind.STRING else None
            if operator.text in ("=", "<>") and mode is not None:
                replacement = f"{replacement} {operator.text} {mode}"
                end, skip = value.pos + len(value.text), 2
        found.append((token.pos, end, name, replacement))
    return found
