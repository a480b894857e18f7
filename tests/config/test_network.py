"""``<networkConnectors>`` in activemq.xml: ActiveMQ's attributes and lists, the static: URI
and its reconnect options, what is not supported (a warning naming the line), and what
``--check-config`` shows."""

from __future__ import annotations

from pathlib import Path

from config.loader import load
from config.model import NetworkDestination, NetworkUri
from config.report import render
from tests.config.helpers import FIRST_BODY_LINE, errors_of, load_body, one_error, warnings_of

CONNECTOR = """<networkConnectors>
  <networkConnector name="east" uri="static:(stomp://10.0.0.2:61613,stomp://b3:61613)?initialReconnectDelay=200&amp;maxReconnectDelay=5000&amp;useExponentialBackOff=false"
      duplex="true" networkTTL="3" conduitSubscriptions="false" decreaseNetworkConsumerPriority="true"
      dynamicOnly="true" prefetchSize="250" userName="bridge" password="s3cret">
    <excludedDestinations>
      <queue physicalName="private.>"/>
      <topic physicalName="internal.*,audit"/>
    </excludedDestinations>
    <dynamicallyIncludedDestinations><queue physicalName="orders.>"/></dynamicallyIncludedDestinations>
    <staticallyIncludedDestinations><queue physicalName="billing"/></staticallyIncludedDestinations>
    <pulledDestinations><queue physicalName="legacy.in"/></pulledDestinations>
  </networkConnector>
</networkConnectors>
"""


def test_a_network_connector_with_activemqs_attributes_and_lists(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, CONNECTOR)
    (connector,) = loaded.config.network_connectors
    assert connector.name == "east"
    assert connector.uris == (NetworkUri("stomp", "10.0.0.2", 61613), NetworkUri("stomp", "b3", 61613))
    assert connector.duplex and not connector.conduit_subscriptions
    assert connector.decrease_network_consumer_priority and connector.dynamic_only
    # messageTTL and consumerTTL follow networkTTL, as in ActiveMQ.
    assert (connector.network_ttl, connector.message_ttl, connector.consumer_ttl) == (3, 3, 3)
    assert connector.prefetch_size == 250
    assert (connector.user_name, connector.password) == ("bridge", "s3cret")
    assert (connector.initial_reconnect_delay, connector.max_reconnect_delay) == (200, 5000)
    assert not connector.use_exponential_back_off
    assert [(d.kind, d.pattern) for d in connector.excluded] == [
        ("queue", "private.>"),
        ("topic", "internal.*"),
        ("topic", "audit"),
    ]
    assert connector.dynamically_included == (NetworkDestination("queue", "orders.>"),)
    assert connector.statically_included == (NetworkDestination("queue", "billing"),)
    assert connector.pulled == (NetworkDestination("queue", "legacy.in"),)
    assert connector.source.line == FIRST_BODY_LINE + 1


def test_activemqs_defaults(tmp_path: Path) -> None:
    body = '<networkConnectors><networkConnector uri="static:(stomp://b:61613)"/></networkConnectors>\n'
    (connector,) = load_body(tmp_path, body).config.network_connectors
    assert connector.name == "NC"
    assert not connector.duplex and connector.conduit_subscriptions
    assert not connector.decrease_network_consumer_priority
    assert (connector.network_ttl, connector.prefetch_size) == (1, 1000)
    assert (connector.initial_reconnect_delay, connector.max_reconnect_delay) == (1000, 30000)
    assert connector.use_exponential_back_off and connector.back_off_multiplier == 2.0


def test_check_config_shows_each_setting_and_destination_with_its_line(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, CONNECTOR)
    text = render(loaded.config, lambda key: True)
    section = text[text.index("networkConnector 'east'") :]
    for shown in (
        "uri",
        "static:(stomp://10.0.0.2:61613,stomp://b3:61613)",
        "networkTTL",
        "decreaseNetworkConsumerPriority",
        "password                                   = ********",
        "excludedDestinations",
        "queue://private.>",
        "dynamicallyIncludedDestinations",
        "staticallyIncludedDestinations",
        "queue://billing",
        "pulledDestinations",
        "queue://legacy.in",
        f"activemq.xml:{FIRST_BODY_LINE + 5}",
    ):
        assert shown.split("  ")[0] in section, shown
    assert "s3cret" not in text


def test_unsupported_discovery_and_openwire_are_warnings_naming_the_line(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        "<networkConnectors>\n"
        '<networkConnector name="m" uri="multicast://default"/>\n'
        '<networkConnector name="ms" uri="masterslave:(tcp://a:61616,tcp://b:61616)"/>\n'
        '<networkConnector name="mixed" uri="static:(tcp://a:61616,stomp://b:61613)"/>\n'
        "</networkConnectors>\n",
    )
    text = warnings_of(loaded)
    assert f"activemq.xml:{FIRST_BODY_LINE + 1}" in text and "multicast discovery is not supported" in text
    assert f"activemq.xml:{FIRST_BODY_LINE + 2}" in text and "masterslave: (failover" in text
    assert "tcp://a:61616: OpenWire is not a STOMP transport stompd bridges over" in text
    (mixed,) = loaded.config.network_connectors
    assert mixed.uris == (NetworkUri("stomp", "b", 61613),)


def test_stomp_ssl_needs_an_ssl_context(tmp_path: Path) -> None:
    error = one_error(
        tmp_path,
        '<networkConnectors><networkConnector uri="static:(stomp+ssl://b:61612)"/></networkConnectors>\n',
    )
    assert "needs the CA certificates the remote broker is checked against" in error.reason


def test_mistakes_are_errors_naming_the_line_and_the_element(tmp_path: Path) -> None:
    errors = errors_of(
        tmp_path,
        "<networkConnectors>\n"
        '<networkConnector uri="static:(stomp://b)" networkTTL="0"/>\n'
        '<networkConnector uri="static:(stomp://b:1)" dulpex="true"/>\n'
        '<networkConnector uri="static:(stomp://b:1)"><excludedDestinations><queue physicalName="a.>.b"/>'
        "</excludedDestinations></networkConnector>\n"
        '<networkConnector name="p" uri="static:(stomp://b:1)"><pulledDestinations><topic physicalName="t"/>'
        "</pulledDestinations></networkConnector>\n"
        '<networkConnector name="p" uri="static:(stomp://c:1)"/>\n'
        "</networkConnectors>\n",
    )
    reasons = [(error.line, error.reason) for error in errors]
    line = FIRST_BODY_LINE
    assert (line + 1, "stomp://b: write stomp://HOST:PORT (e.g. stomp://broker2:61613)") in reasons
    assert any(at == line + 1 and "networkTTL" in why and "at least 1" in why for at, why in reasons)
    assert any(at == line + 2 and "unknown attribute 'dulpex'" in why for at, why in reasons)
    assert any(at == line + 3 and "'>' matches the rest of a name" in why for at, why in reasons)
    assert any(at == line + 4 and "only queues can be pulled" in why for at, why in reasons)
    assert any(at == line + 5 and "two networkConnectors are named 'p'" in why for at, why in reasons)


def test_a_network_wants_named_brokers(tmp_path: Path) -> None:
    body = '<networkConnectors><networkConnector uri="static:(stomp://b:61613)"/></networkConnectors>\n'
    assert 'no brokerName: this node is "localhost"' in warnings_of(load_body(tmp_path, body))


EXAMPLE = Path(__file__).resolve().parents[2] / "activemq.xml.example"


def test_the_examples_network_connectors_load_as_documented(tmp_path: Path) -> None:
    """The example keeps its networkConnectors in a comment (it has no broker to join):
    uncommented, with an <sslContext> for the stomp+ssl:// broker, they load cleanly."""
    from tests.listener_support import Pki

    text = EXAMPLE.read_text()
    start = text.index("        <networkConnectors>")
    end_marker = "        end of the networkConnectors example -->\n"
    end = text.index(end_marker)
    comment = text.rindex("<!-- Networks of brokers", 0, start)
    pki = Pki.make(tmp_path)
    live = text[:comment] + text[start:end] + pki.pem_context() + text[end + len(end_marker) :]
    file = tmp_path / "activemq.xml"
    file.write_text(live)
    loaded = load(file)
    assert loaded.warnings == ()
    east, drain = loaded.config.network_connectors
    assert [str(uri) for uri in east.uris] == [
        "stomp://broker2.example.com:61613",
        "stomp+ssl://broker3.example.com:61612",
    ]
    assert east.duplex and east.network_ttl == 2 and east.max_reconnect_delay == 10000
    assert east.password == "bridge-secret"
    assert [str(d) for d in east.statically_included] == ["queue://AUDIT"]
    assert [str(d) for d in drain.pulled] == ["queue://ORDERS.LEGACY"]
