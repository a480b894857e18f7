"""``refuse_stomp_names``: a selector naming a STOMP header that ActiveMQ turns into a JMS
header is refused with the JMS name to use (selector/stomp_names.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base.message import Message
from broker.core.base.selector import InvalidSelector, compile_selector
from broker.core.base.selector.stomp_names import JMS_NAMES, refuse_stomp_names


@pytest.mark.parametrize(
    ("selector", "position", "name", "suggested"),
    [
        ("priority > 4 AND region = 'EU'", 0, "JMSPriority", "JMSPriority > 4 AND region = 'EU'"),
        ("region = 'EU' AND expires > 0", 18, "JMSExpiration", "region = 'EU' AND JMSExpiration > 0"),
        ("timestamp < 5", 0, "JMSTimestamp", "JMSTimestamp < 5"),
        ("correlation-id = 'c1'", 0, "JMSCorrelationID", "JMSCorrelationID = 'c1'"),
        ("x = 1 OR reply-to IS NULL", 9, "JMSReplyTo", "x = 1 OR JMSReplyTo IS NULL"),
        ("message-id = 'ID:1'", 0, "JMSMessageID", "JMSMessageID = 'ID:1'"),
        ("type IN ('a', 'b')", 0, "JMSType", "JMSType IN ('a', 'b')"),
        ("persistent = 'true'", 0, "JMSDeliveryMode", "JMSDeliveryMode = 'PERSISTENT'"),
        ("persistent <> 'FALSE'", 0, "JMSDeliveryMode", "JMSDeliveryMode <> 'NON_PERSISTENT'"),
        ("priority > 4 AND type = 't'", 0, "JMSPriority", "JMSPriority > 4 AND JMSType = 't'"),
    ],
)
def test_a_stomp_header_is_refused_with_its_jms_name(
    selector: str, position: int, name: str, suggested: str
) -> None:
    with pytest.raises(InvalidSelector) as caught:
        refuse_stomp_names(selector)
    assert caught.value.position == position
    assert f"by its JMS name, {name}" in caught.value.problem
    assert caught.value.problem.endswith(f"try: {suggested}")
    compile_selector(suggested)  # what it suggests is a selector


@pytest.mark.parametrize(
    "selector",
    [
        "JMSPriority > 4 AND region = 'EU'",
        "'priority' = label",  # a string, not a name
        "correlation - id = 1",  # a subtraction, spaced
        "Priority > 4",  # names are case-sensitive: a property of its own
        "priority_level > 4",
        "x = 'type'",
    ],
)
def test_other_selectors_pass(selector: str) -> None:
    refuse_stomp_names(selector)


def test_the_suggestion_matches_what_the_stomp_header_meant() -> None:
    message = Message(
        1,
        "ID:1",
        "/queue/q",
        {"type": "order", "correlation-id": "c1", "reply-to": "/queue/r", "persistent": "true"},
        b"",
        priority=9,
        expires=0,
        timestamp=1000,
        persistent=True,
    )
    for stomp, value in (
        ("priority = 9", True),
        ("type = 'order'", True),
        ("correlation-id = 'c1'", True),
        ("reply-to = '/queue/r'", True),
        ("persistent = 'true'", True),
        ("persistent = 'false'", False),
        ("timestamp = 1000", True),
    ):
        with pytest.raises(InvalidSelector) as caught:
            refuse_stomp_names(stomp)
        suggested = caught.value.problem.rsplit("try: ", 1)[1]
        assert compile_selector(suggested).matches(message) is value, suggested


@given(st.sampled_from(sorted(JMS_NAMES)), st.sampled_from(("", " ", "  ")))
def test_each_name_is_found_wherever_it_stands(name: str, space: str) -> None:
    selector = f"a = 1 AND{space} {name} IS NOT NULL"
    with pytest.raises(InvalidSelector) as caught:
        refuse_stomp_names(selector)
    assert caught.value.position == selector.index(name)
    assert JMS_NAMES[name] in caught.value.problem
