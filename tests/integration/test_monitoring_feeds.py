"""ActiveMQ's XML feeds and Jolokia over real HTTP against a real stompd, stomp.py making
the traffic, read as the monitoring tools read them: the feeds parsed the way Telegraf's
``activemq`` input (its Go structs) and Datadog's ``activemq_xml`` check (ElementTree)
do, Jolokia asked what Telegraf's ``jolokia2`` and the Helm chart's ServiceMonitor ask."""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.core.base.settings import CoreSettings
from broker.http.auth import HttpSecurity, InMemoryAuthenticator
from tests.broker_thread import BrokerThread
from tests.clients import client, left_durable
from tests.http_support import call, start_http_broker

pytestmark = pytest.mark.integration

QUEUES = "/admin/xml/queues.jsp"
TOPICS = "/admin/xml/topics.jsp"
SUBSCRIBERS = "/admin/xml/subscribers.jsp"
JOLOKIA = "/api/jolokia"
BROKER = "org.apache.activemq:brokerName=localhost,type=Broker"


def queue_bean(name: str) -> str:
    return (
        f"org.apache.activemq:brokerName=localhost,destinationName={name},destinationType=Queue,type=Broker"
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_http_broker(tmp_path / "data", core=CoreSettings(memory_limit=64 << 20))
    try:
        yield thread
    finally:
        thread.stop()


def base(broker: BrokerThread) -> str:
    return f"http://127.0.0.1:{broker.http_port}"


def fetch(url: str, auth: tuple[str, str] | None = None) -> tuple[int, str, str]:
    """GET as Telegraf does (basic auth always sent): status, Content-Type, body."""
    request = urllib.request.Request(url)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


# -- the feeds, read as Telegraf's Go structs read them ---------------------------------


@dataclass
class Stats:
    """Telegraf's ``Stats``: ``size``, ``consumerCount``, ``enqueueCount``, ``dequeueCount``."""

    size: int
    consumer_count: int
    enqueue_count: int
    dequeue_count: int


@dataclass
class Subscriber:
    client_id: str
    subscription_name: str
    connection_id: str
    destination_name: str
    selector: str
    active: str
    pending_queue_size: int
    dispatched_queue_size: int
    dispatched_counter: int
    enqueue_counter: int
    dequeue_counter: int


def destinations(text: str, element: str) -> dict[str, Stats]:
    """``<queues><queue name><stats .../></queue>`` (or topics): by name, as Telegraf's
    ``Queues``/``Topics`` structs unmarshal it (a name exactly as written)."""
    root = ET.fromstring(text)
    assert root.tag == element + "s"
    out = {}
    for node in root.findall(element):
        stats = node.find("stats")
        assert stats is not None
        out[node.attrib["name"]] = Stats(
            int(stats.attrib["size"]),
            int(stats.attrib["consumerCount"]),
            int(stats.attrib["enqueueCount"]),
            int(stats.attrib["dequeueCount"]),
        )
    return out


def subscribers(text: str) -> list[Subscriber]:
    root = ET.fromstring(text)
    assert root.tag == "subscribers"
    out = []
    for node in root.findall("subscriber"):
        stats = node.find("stats")
        assert stats is not None
        a, s = node.attrib, stats.attrib
        out.append(
            Subscriber(
                a["clientId"],
                a["subscriptionName"],
                a["connectionId"],
                a["destinationName"],
                a["selector"],
                a["active"],
                int(s["pendingQueueSize"]),
                int(s["dispatchedQueueSize"]),
                int(s["dispatchedCounter"]),
                int(s["enqueueCounter"]),
                int(s["dequeueCounter"]),
            )
        )
    return out


def test_the_feeds_say_what_the_traffic_did(broker: BrokerThread) -> None:
    url = base(broker)
    left_durable(broker.port, "/topic/prices", "reporting", "nightly")
    with (
        client(broker.port) as producer,
        client(broker.port) as consumer,
        client(broker.port, headers={"client-id": "dashboard"}) as watcher,
    ):
        watcher.subscribe(
            "/topic/prices",
            "w",
            ack="client",
            selector="region = 'EU'",
            **{"activemq.subscriptionName": "live", "activemq.prefetchSize": "2"},
        )
        for i in range(10):
            producer.send("/queue/orders", f"order {i}", sync=True)
        for _ in range(5):
            producer.send("/topic/prices", "p", sync=True, region="EU")
        watcher.listener.wait_messages(2)
        consumer.subscribe("/queue/orders", "c", ack="client-individual", **{"activemq.prefetchSize": "4"})
        received = consumer.listener.wait_messages(4)
        consumer.ack(received[0])
        consumer.ack(received[1])
        consumer.listener.wait_messages(6)
        consumer.sync()
        watcher.sync()

        status, content_type, text = fetch(url + QUEUES, ("admin", "admin"))
        assert status == 200
        assert content_type == "text/xml;charset=UTF-8"
        # In flight counts in size, as in ActiveMQ's QueueSize: 8 not acknowledged.
        assert destinations(text, "queue") == {"orders": Stats(8, 1, 10, 2)}

        # ActiveMQ's topics.jsp writes a space after the name; Telegraf keeps it.  The size
        # is /metrics' stompd_destination_messages: what its online subscribers hold (the
        # live one's 3 pending and 2 in flight).
        assert destinations(fetch(url + TOPICS)[2], "topic") == {"prices ": Stats(5, 1, 5, 0)}

        connections = call(url, "GET", "/api/v1/connections").body["connections"]
        watching = next(c["id"] for c in connections if c["client_id"] == "dashboard")
        assert subscribers(fetch(url + SUBSCRIBERS)[2]) == [
            Subscriber("dashboard", "live", watching, "prices", "region = 'EU'", "yes", 3, 2, 2, 5, 0),
            Subscriber("reporting", "nightly", "NOTSET", "prices", "", "no", 5, 0, 0, 5, 0),
        ]


def test_the_feeds_are_the_text_activemq_writes(broker: BrokerThread) -> None:
    url = base(broker)
    with client(broker.port) as producer:
        producer.send("/queue/a&b", "x", sync=True)
        producer.send("/topic/t", "x", sync=True)
    prelude = "\n" * 9
    assert fetch(url + QUEUES)[2] == (
        f'{prelude}<queues>\n\n<queue name="a&amp;b">\n\n  <stats size="1"\n'
        '         consumerCount="0"\n         enqueueCount="1"\n         dequeueCount="0"/>\n\n\n'
        "  <feed>\n    <atom>queueBrowse/a&amp;b?view=rss&amp;amp;feedType=atom_1.0</atom>\n"
        "    <rss>queueBrowse/a&amp;b?view=rss&amp;amp;feedType=rss_2.0</rss>\n  </feed>\n"
        "</queue>\n\n</queues>\n"
    )
    assert fetch(url + TOPICS)[2] == (
        f'{prelude}<topics>\n\n<topic name="t ">\n\n  <stats size="0"\n'
        '         consumerCount="0"\n         enqueueCount="1"\n         dequeueCount="0"/>\n\n'
        "</topic>\n\n</topics>\n"
    )
    assert fetch(url + SUBSCRIBERS)[2] == f"{prelude}<subscribers>\n\n\n\n\n\n</subscribers>\n"


def test_the_feeds_and_jolokia_ask_for_the_admin_servers_credentials(tmp_path: Path) -> None:
    users = InMemoryAuthenticator({"admin": ("pw", {"admins"}), "viewer": ("v", {"users"})})
    thread = start_http_broker(tmp_path / "data", HttpSecurity(users, admin_groups=frozenset({"admins"})))
    try:
        url = base(thread)
        for path in (QUEUES, TOPICS, SUBSCRIBERS, JOLOKIA + "/read/" + BROKER):
            assert fetch(url + path)[0] == 401, path
            assert fetch(url + path, ("viewer", "v"))[0] == 403, path
            assert fetch(url + path, ("admin", "pw"))[0] == 200, path
        assert call(url, "POST", JOLOKIA, {"type": "version"}).status == 401
    finally:
        thread.stop()


# -- Jolokia -----------------------------------------------------------------------------


def jolokia_get(broker: BrokerThread, path: str) -> dict[str, Any]:
    reply = call(base(broker), "GET", f"{JOLOKIA}/{path}")
    # Jolokia answers over HTTP 200 whatever the request's own status.
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/plain;charset=utf-8"
    body: dict[str, Any] = reply.body
    return body


def test_a_wildcard_read_is_a_map_by_mbean_name(broker: BrokerThread) -> None:
    with client(broker.port) as producer:
        for name, count in (("orders", 3), ("billing", 2)):
            for _ in range(count):
                producer.send(f"/queue/{name}", "x", sync=True)
        producer.send("/topic/prices", "x", sync=True)
    # The ServiceMonitor's and many a script's read, keys in ActiveMQ's order.
    answer = jolokia_get(
        broker,
        "read/org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*/QueueSize",
    )
    assert answer["status"] == 200
    assert isinstance(answer["timestamp"], int)
    assert answer["request"] == {
        "mbean": "org.apache.activemq:brokerName=*,destinationName=*,destinationType=Queue,type=Broker",
        "attribute": "QueueSize",
        "type": "read",
    }
    assert answer["value"] == {
        queue_bean("orders"): {"QueueSize": 3},
        queue_bean("billing"): {"QueueSize": 2},
    }

    one = jolokia_get(broker, f"read/{queue_bean('orders')}/QueueSize")
    assert (one["status"], one["value"]) == (200, 3)
    assert one["request"]["mbean"] == queue_bean("orders")


def test_telegrafs_jolokia2_bulk_read(broker: BrokerThread) -> None:
    with client(broker.port) as producer, client(broker.port) as consumer:
        for _ in range(4):
            producer.send("/queue/orders", "x", sync=True)
        consumer.subscribe("/queue/orders", "c", ack="client-individual")
        received = consumer.listener.wait_messages(4)
        consumer.ack(received[0])
        consumer.sync()
        paths = [
            "QueueSize",
            "EnqueueCount",
            "DequeueCount",
            "DispatchCount",
            "InFlightCount",
            "ConsumerCount",
        ]
        # jolokia2_agent POSTs its metrics as one list; the broker's with paths too.
        reply = call(
            base(broker),
            "POST",
            JOLOKIA,
            [
                {
                    "type": "read",
                    "mbean": queue_bean("*").replace("localhost", "*"),
                    "attribute": [*paths, "BlockedSends"],
                },
                {
                    "type": "read",
                    "mbean": "org.apache.activemq:brokerName=*,type=Broker",
                    "attribute": [
                        "TotalEnqueueCount",
                        "TotalDequeueCount",
                        "TotalConsumerCount",
                        "TotalMessageCount",
                    ],
                },
            ],
        )
    assert reply.status == 200
    queues, brokers = reply.body
    # An attribute the MBean lacks is left out of a pattern's answer, as Jolokia does.
    assert queues["value"] == {
        queue_bean("orders"): {
            "QueueSize": 3,
            "EnqueueCount": 4,
            "DequeueCount": 1,
            "DispatchCount": 4,
            "InFlightCount": 3,
            "ConsumerCount": 1,
        }
    }
    assert brokers["value"] == {
        BROKER: {
            "TotalEnqueueCount": 4,
            "TotalDequeueCount": 1,
            "TotalConsumerCount": 1,
            "TotalMessageCount": 3,
        }
    }


def test_the_brokers_mbean(broker: BrokerThread) -> None:
    with client(broker.port) as producer:
        producer.send("/queue/orders", "x", sync=True)
        producer.send("/topic/prices", "x", sync=True)
        producer.subscribe("/temp-queue/replies", "r")
        value = jolokia_get(broker, f"read/{BROKER}")["value"]
    assert value["BrokerName"] == "localhost"
    assert value["BrokerId"] == "ID:localhost"
    assert value["TotalEnqueueCount"] == 2
    assert value["TotalMessageCount"] == 1
    assert value["CurrentConnectionsCount"] == 1
    assert value["MemoryLimit"] == 64 << 20
    assert value["MemoryPercentUsage"] == 0
    assert value["Slave"] is False
    assert value["Uptime"].endswith(" seconds")
    assert value["UptimeMillis"] >= 0
    assert value["Queues"] == [{"objectName": queue_bean("orders")}]
    assert value["Topics"] == [{"objectName": queue_bean("prices").replace("=Queue", "=Topic")}]
    [temporary] = value["TemporaryQueues"]
    assert "destinationType=TempQueue" in temporary["objectName"]
    for name in ("StoreLimit", "TempLimit", "StorePercentUsage", "TempPercentUsage", "TotalProducerCount"):
        assert isinstance(value[name], int), name


def test_a_destinations_mbean_whole(broker: BrokerThread) -> None:
    with client(broker.port) as producer:
        producer.send("/queue/orders", "hello", sync=True)
        value = jolokia_get(broker, f"read/{queue_bean('orders')}")["value"]
    assert value["Name"] == "orders"
    assert value["QueueSize"] == 1
    assert value["ProducerCount"] == 1
    assert value["MemoryLimit"] == 64 << 20
    assert value["MemoryUsageByteCount"] > 0
    assert value["MemoryPercentUsage"] == value["MemoryUsageByteCount"] * 100 // (64 << 20)
    assert set(value) == {
        "Name", "QueueSize", "EnqueueCount", "DequeueCount", "DispatchCount", "ExpiredCount", "InFlightCount",
        "ConsumerCount", "ProducerCount", "MemoryUsageByteCount", "MemoryLimit", "MemoryPercentUsage",
        "AverageEnqueueTime", "MaxEnqueueTime", "MinEnqueueTime", "AverageMessageSize", "MaxMessageSize",
        "MinMessageSize",
    }  # fmt: skip
    # Nothing dispatched yet: no enqueue time; one message, its size three times.
    assert (value["AverageEnqueueTime"], value["MaxEnqueueTime"], value["MinEnqueueTime"]) == (0.0, 0, 0)
    assert value["AverageMessageSize"] == value["MaxMessageSize"] == value["MinMessageSize"] > len("hello")


def test_message_sizes_and_enqueue_times_as_datadogs_activemq_check_reads_them(broker: BrokerThread) -> None:
    # Datadog's ActiveMQ check (and jmx_exporter's example) read these over JMX.
    with client(broker.port) as producer:
        producer.send("/queue/timed", "s" * 10, sync=True)
        producer.send("/queue/timed", "l" * 1000, sync=True)
        time.sleep(0.2)
        with client(broker.port) as consumer:
            consumer.subscribe("/queue/timed", "1")
            consumer.listener.wait_messages(2)
            sizes = "AverageMessageSize,MaxMessageSize,MinMessageSize"
            times = "AverageEnqueueTime,MaxEnqueueTime,MinEnqueueTime"
            value = jolokia_get(broker, f"read/{queue_bean('timed')}/{times},{sizes}")["value"]
            whole = jolokia_get(broker, f"read/{BROKER}/{sizes}")["value"]
    assert 200 <= value["MinEnqueueTime"] <= value["AverageEnqueueTime"] <= value["MaxEnqueueTime"]
    assert isinstance(value["AverageEnqueueTime"], float)
    assert value["MaxMessageSize"] - value["MinMessageSize"] == 990
    assert value["AverageMessageSize"] == value["MinMessageSize"] + 495
    # The broker's are over its destinations: here the one.
    assert whole == {key: value[key] for key in ("AverageMessageSize", "MaxMessageSize", "MinMessageSize")}


def test_names_are_encoded_as_activemq_does_and_found_again(broker: BrokerThread) -> None:
    with client(broker.port) as producer:
        producer.send("/queue/a:b", "x", sync=True)
        producer.send("/queue/a_c", "x", sync=True)
    names = jolokia_get(broker, "search/org.apache.activemq:type=Broker,destinationType=Queue,*")["value"]
    assert names == [queue_bean("a_b"), queue_bean("a_c")]
    # "a_b" is how ActiveMQ writes a:b in a name: read by it, it is that queue.
    assert jolokia_get(broker, f"read/{queue_bean('a_b')}/Name")["value"] == "a:b"


def test_search_and_list(broker: BrokerThread) -> None:
    with client(broker.port) as producer:
        producer.send("/queue/orders", "x", sync=True)
    found = jolokia_get(broker, "search/org.apache.activemq:*")
    assert found["request"] == {"mbean": "org.apache.activemq:*", "type": "search"}
    assert found["value"] == [BROKER, queue_bean("orders")]
    assert jolokia_get(broker, "search/org.apache.activemq:type=Broker,brokerName=other,*")["value"] == []
    assert jolokia_get(broker, "search/java.lang:*")["value"] == []

    listing = jolokia_get(broker, "list")["value"]
    beans = listing["org.apache.activemq"]
    assert set(beans) == {"brokerName=localhost,type=Broker", queue_bean("orders").partition(":")[2]}
    queue = beans[queue_bean("orders").partition(":")[2]]
    assert queue["class"] == "org.apache.activemq.broker.jmx.QueueView"
    assert queue["attr"]["QueueSize"] == {
        "type": "long",
        "desc": "Number of messages on this destination, including any that have been dispatched but not "
        "acknowledged",
        "rw": False,
    }
    # A path into the listing, its keys in any order.
    broker_bean = jolokia_get(broker, "list/org.apache.activemq/type=Broker,brokerName=localhost")["value"]
    assert broker_bean["attr"]["Queues"]["type"] == "[Ljavax.management.ObjectName;"
    assert jolokia_get(broker, "list/org.apache.activemq/type=Broker,brokerName=x")["status"] == 400


def test_errors_are_jolokias(broker: BrokerThread) -> None:
    missing = jolokia_get(broker, f"read/{queue_bean('nope')}/QueueSize")
    assert missing["status"] == 404
    assert missing["error_type"] == "javax.management.InstanceNotFoundException"
    assert missing["error"] == f"javax.management.InstanceNotFoundException : {queue_bean('nope')}"
    assert missing["request"]["attribute"] == "QueueSize"

    no_attribute = jolokia_get(broker, f"read/{BROKER}/AverageEnqueueTime")
    assert (no_attribute["status"], no_attribute["error_type"]) == (
        404,
        "javax.management.AttributeNotFoundException",
    )
    assert no_attribute["error"].endswith("No such attribute: AverageEnqueueTime")

    nothing = jolokia_get(
        broker, "read/org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,*/QueueSize"
    )
    assert (nothing["status"], nothing["error_type"]) == (400, "java.lang.IllegalArgumentException")

    malformed = jolokia_get(broker, "read/no-colon")
    assert (malformed["status"], malformed["error_type"]) == (400, "java.lang.IllegalArgumentException")

    # ActiveMQ's jolokia-access.xml allows read, list, search and version: so does stompd.
    for request in (
        {"type": "exec", "mbean": BROKER, "operation": "removeQueue", "arguments": ["orders"]},
        {"type": "write", "mbean": BROKER, "attribute": "StatisticsEnabled", "value": False},
    ):
        refused = call(base(broker), "POST", JOLOKIA, request).body
        assert refused["status"] == 403
        assert (
            refused["error"]
            == f"java.lang.Exception : Command type {request['type']} not allowed due to policy used"
        )

    garbled = call(
        base(broker), "POST", JOLOKIA, raw=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert (garbled.status, garbled.body["status"]) == (200, 400)


def test_version(broker: BrokerThread) -> None:
    answer = jolokia_get(broker, "version")
    assert answer["value"]["protocol"] == "7.2"
    assert answer["value"]["info"]["product"] == "stompd"
    assert jolokia_get(broker, "")["value"] == answer["value"]


def test_a_pattern_over_thousands_of_destinations(broker: BrokerThread) -> None:
    count = 3000
    with client(broker.port) as producer:
        for i in range(count):
            producer.send(f"/queue/q.{i}", "x")
        producer.sync()
    value = jolokia_get(
        broker, "read/org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,*/QueueSize"
    )["value"]
    assert len(value) == count
    assert all(entry == {"QueueSize": 1} for entry in value.values())
    assert len(destinations(fetch(base(broker) + QUEUES)[2], "queue")) == count
    assert len(jolokia_get(broker, f"read/{BROKER}/Queues")["value"]) == count


def test_subscribers_jsp_is_the_text_activemq_writes(broker: BrokerThread) -> None:
    left_durable(broker.port, "/topic/t", "away", "kept")
    with client(broker.port, headers={"client-id": "here"}) as live:
        live.subscribe("/topic/t", "s", selector="a < 2", **{"activemq.subscriptionName": "on"})
        connections = call(base(broker), "GET", "/api/v1/connections").body["connections"]
        here = next(c["id"] for c in connections if c["client_id"] == "here")
        text = fetch(base(broker) + SUBSCRIBERS)[2]

    def entry(client_id: str, name: str, connection: str, selector: str, active: str, close: str) -> str:
        return (
            f'\n<subscriber clientId="{client_id}" \n            subscriptionName="{name}" \n'
            f'            connectionId="{connection}"\n            destinationName="t" \n'
            f'            selector="{selector}" \n            active="{active}" >\n'
            '  <stats pendingQueueSize="0"\n         dispatchedQueueSize="0"\n'
            '         dispatchedCounter="0"\n         enqueueCounter="0"\n'
            f'         dequeueCounter="0"{close}\n\n</subscriber>\n'
        )

    assert text == (
        "\n" * 9
        + "<subscribers>\n"
        + entry("here", "on", here, "a &lt; 2", "yes", " />")
        + "\n\n"
        + entry("away", "kept", "NOTSET", "", "no", "/>")
        + "\n\n\n</subscribers>\n"
    )
