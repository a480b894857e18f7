"""JMX object names and patterns as Jolokia takes them (broker/core/admin/objectnames.py),
and ActiveMQ's uptime text (mbeans.duration)."""

from __future__ import annotations

import pytest

from broker.core.admin.mbeans import duration
from broker.core.admin.objectnames import MalformedObjectName, NamePattern, ObjectName, encode_part, parse

QUEUE = "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=orders"


def test_a_name_keeps_its_order_and_has_a_canonical_form() -> None:
    name = parse(QUEUE)
    assert not name.pattern
    assert name.text == QUEUE
    assert name.canonical == (
        "org.apache.activemq:brokerName=localhost,destinationName=orders,destinationType=Queue,type=Broker"
    )
    assert name.get("destinationName") == "orders"
    assert parse("d:*").canonical == "d:*"
    assert parse("d:type=Broker,*").canonical == "d:type=Broker,*"


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        (QUEUE, True),
        (
            "org.apache.activemq:destinationName=orders,type=Broker,destinationType=Queue,brokerName=localhost",
            True,
        ),
        ("org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*", True),
        ("org.apache.activemq:type=Broker,brokerName=*,destinationType=Topic,destinationName=*", False),
        ("org.apache.activemq:type=Broker,destinationName=ord?rs,*", True),
        ("org.apache.activemq:type=Broker,destinationName=ord?,*", False),
        ("org.apache.activemq:type=Broker,brokerName=localhost", False),
        ("org.apache.activemq:*", True),
        ("org.apache.*:*", True),
        ("org.apache.activemq.x:*", False),
        ('org.apache.activemq:type=Broker,destinationName="orders",*', False),
    ],
)
def test_patterns(pattern: str, matches: bool) -> None:
    parsed = parse(pattern)
    assert parsed.pattern == ("*" in pattern or "?" in pattern)
    assert NamePattern(parsed).matches(parse(QUEUE)) is matches


def test_a_quoted_value_holds_commas_and_is_no_pattern() -> None:
    name = parse('d:name="a,*b",type=x')
    assert name.props == (("name", '"a,*b"'), ("type", "x"))
    assert not name.pattern


@pytest.mark.parametrize(
    "text", ["no-colon", "d:", "d:type", "d:=x", "d:type=", "d:a=1,a=2", "d:a=1,,b=2", 'd:a="open', "d:*,*"]
)
def test_what_is_no_name(text: str) -> None:
    with pytest.raises(MalformedObjectName):
        parse(text)


def test_names_are_encoded_as_activemq_encodes_them() -> None:
    assert encode_part("a:b,c'd\"e") == "a_b_c_d_e"
    assert encode_part("what?=*") == "what&qe;&amp;&ast;"
    assert encode_part("plain.name-1") == "plain.name-1"


def test_an_object_name_value_is_built_from_parts() -> None:
    name = ObjectName("d", (("type", "Broker"), ("brokerName", "b")))
    assert (name.text, name.canonical) == ("d:type=Broker,brokerName=b", "d:brokerName=b,type=Broker")


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0.000 seconds"),
        (12_345, "12.345 seconds"),
        (60_000, "1 minute"),
        (59 * 60_000 + 59_999, "59 minutes"),
        (3_600_000, "1 hour"),
        (2 * 3_600_000 + 6 * 60_000 + 5_000, "2 hours 6 minutes"),
        (3 * 86_400_000 + 5 * 3_600_000 + 1_800_000, "3 days 5 hours"),
        # Its sums in doubles: 3 days and 1 hour exactly is 3 days and 0.99999 hours.
        (3 * 86_400_000 + 3_600_000, "3 days"),
        (86_400_000, "1 day"),
        (1500 * 86_400_000, "1,500 days"),
    ],
)
def test_uptime_reads_as_activemqs(ms: int, text: str) -> None:
    assert duration(ms) == text
