"""Networks of brokers, end to end: nodes run from activemq.xml files with
``<networkConnectors>``, in this process on real sockets, and real STOMP clients.

Two and three nodes, duplex and not, a mesh with a loop, networkTTL, excluded
destinations, a link dropped mid-flight.  Where a test shows that something did *not*
cross, a barrier says when it would have: a later consumer or message on the same
advisory subscription or link, which is handled in order, has crossed first.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from broker.core.base.bridging import PATH_HEADER
from tests.clients import Client
from tests.listener_support import Pki
from tests.network_support import (
    Nodes,
    bridges,
    connector,
    consumer,
    depth,
    drop_link,
    eventually,
    nodes,
    on_loop,
    produce,
    wait_connected,
    wait_forwarding,
)
from tests.ports import free_port
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

__all__ = ["nodes"]


def drain(client: RawClient, n: int, ack: bool = True) -> list[bytes]:
    bodies = []
    for _ in range(n):
        frame = client.recv(timeout=15)
        assert frame.command == "MESSAGE", frame
        bodies.append(frame.body)
        if ack and "ack" in frame.headers:
            client.send("ACK", {"id": frame.headers["ack"]})
    return bodies


def test_two_nodes_a_queues_messages_go_where_its_consumer_is_with_their_headers_intact(nodes: Nodes) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("to-b", b.port))
    wait_connected(a)
    # Sent before anyone wants them: they wait on A, in arrival order (prioritizedMessages
    # is false by default, as in ActiveMQ), each with its priority.
    producer = RawClient(a.port)
    producer.connect()
    expires = str(int(time.time() * 1000) + 600_000)
    for i, priority in enumerate((1, 9, 4)):
        producer.send(
            "SEND",
            {
                "destination": "/queue/orders",
                "persistent": "true",
                "priority": str(priority),
                "expires": expires,
                "JMSXGroupID": "g1",
                "custom": f"v{i}",
                "receipt": str(i),
            },
            f"m{i}".encode(),
        )
    producer.send("SEND", {"destination": "/queue/orders", "ttl": "1", "receipt": "x"}, b"expired on A")
    assert [producer.recv().command for _ in range(4)] == ["RECEIPT"] * 4
    time.sleep(0.01)  # the ttl:1 message is past its time before anyone wants it
    on_b = consumer(b, "/queue/orders", ack="client-individual")
    wait_forwarding(a, "/queue/orders")
    frames = []
    for _ in range(3):
        frame = on_b.recv(timeout=15)
        frames.append(frame)
        on_b.send("ACK", {"id": frame.headers["ack"]})
    assert [f.body for f in frames] == [b"m0", b"m1", b"m2"]
    first = frames[1].headers
    assert first["priority"] == "9" and first["expires"] == expires and first["persistent"] == "true"
    assert first["JMSXGroupID"] == "g1" and first["custom"] == "v1"
    assert first[PATH_HEADER] == "A"
    assert first["message-id"].startswith("ID-")
    # Nothing more comes (the expired one was never forwarded), and A has let go of all.
    assert on_b.sync() == []
    eventually(lambda: depth(a, "/queue/orders") == 0, what="A's queue empty")
    (bridge,) = bridges(a)
    assert bridge["forwarded"] == 3 and bridge["remote_broker"] == "B" and bridge["state"] == "connected"


def test_binary_bodies_and_escaped_headers_cross_as_they_are(nodes: Nodes) -> None:
    c = nodes.start("C")
    b = nodes.start("B", connector("bc", c.port, networkTTL="2"))
    a = nodes.start("A", connector("ab", b.port, networkTTL="2"))
    on_c = consumer(c, "/queue/raw")
    wait_forwarding(a, "/queue/raw")
    body = b"\x00binary\x00\xff" * 50
    headers = {"note": "a:b\\c\nd", "content-length": str(len(body))}
    produce(a, "/queue/raw", [body], **headers)
    frame = on_c.recv()
    assert frame.body == body
    assert frame.headers["note"] == "a:b\\c\nd" and frame.headers["content-length"] == str(len(body))
    assert frame.headers[PATH_HEADER] == "A,B"


def test_a_bridge_keeps_trying_until_its_remote_broker_is_up(nodes: Nodes) -> None:
    port = free_port()
    a = nodes.start("A", connector("later", port))
    eventually(lambda: bridges(a)[0]["failures"] >= 3, what="three failed attempts")
    (bridge,) = bridges(a)
    assert bridge["state"] in ("waiting", "connecting") and bridge["connects"] == 0
    assert "cannot connect" in bridge["last_error"]
    nodes.start("B", port=port)
    wait_connected(a)
    assert bridges(a)[0]["remote_broker"] == "B"


def test_a_message_redelivered_on_one_node_is_still_redelivered_on_the_next(nodes: Nodes) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("to-b", b.port))
    on_a = consumer(a, "/queue/again", ack="client")
    produce(a, "/queue/again", [b"seen once"])
    assert on_a.recv().headers.get("redelivered") is None
    on_b = consumer(b, "/queue/again")
    wait_forwarding(a, "/queue/again")
    # A's consumer leaves without acking: the message goes back on A, redelivered, and
    # with no consumer of its own left there, A forwards it.
    on_a.close()
    frame = on_b.recv()
    assert (frame.body, frame.headers["redelivered"]) == (b"seen once", "true")


def test_a_queue_with_consumers_of_its_own_keeps_its_messages_and_with_decrease_priority_shares_the_rest(
    nodes: Nodes,
) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("standby", b.port))
    on_b = consumer(b, "/queue/q")
    on_a = consumer(a, "/queue/q", ack="client", **{"activemq.prefetchSize": "1"})
    wait_forwarding(a, "/queue/q")
    produce(a, "/queue/q", [b"1", b"2", b"3"])
    # A's own consumer has them all, one at a time; the network consumer stands by.
    for expected in (b"1", b"2", b"3"):
        frame = on_a.recv()
        assert frame.body == expected
        on_a.send("ACK", {"id": frame.headers["ack"]})
    assert on_b.sync() == []

    c = nodes.start("C")
    d = nodes.start("D", connector("low", c.port, decreaseNetworkConsumerPriority="true"))
    on_c = consumer(c, "/queue/q")
    on_d = consumer(d, "/queue/q", ack="client", **{"activemq.prefetchSize": "1"})
    wait_forwarding(d, "/queue/q")
    produce(d, "/queue/q", [b"a", b"b", b"c"])
    # D's consumer takes one (its prefetch) and holds it; the rest go over the link.
    assert on_d.recv().body == b"a"
    assert sorted(drain(on_c, 2)) == [b"b", b"c"]


def test_duplex_brings_the_remotes_messages_to_this_brokers_consumers(nodes: Nodes) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("ab", b.port, duplex="true"))
    on_a = consumer(a, "/queue/replies")
    eventually(lambda: any("/queue/replies" in br["pulling"] for br in bridges(a)), what="A pulling")
    produce(b, "/queue/replies", [b"r1", b"r2"])
    assert drain(on_a, 2) == [b"r1", b"r2"]
    eventually(lambda: depth(b, "/queue/replies") == 0, what="B's queue empty")
    assert bridges(a)[0]["received"] == 2


def test_a_line_of_three_with_ttl_2_and_no_further(nodes: Nodes) -> None:
    d = nodes.start("D")
    c = nodes.start("C", connector("cd", d.port, duplex="true", networkTTL="2"))
    b = nodes.start("B", connector("bc", c.port, duplex="true", networkTTL="2"))
    a = nodes.start("A", connector("ab", b.port, duplex="true", networkTTL="2"))
    on_c = consumer(c, "/queue/line")
    wait_forwarding(a, "/queue/line")
    bodies = [str(i).encode() for i in range(200)]
    produce(a, "/queue/line", bodies)
    assert sorted(drain(on_c, 200), key=int) == bodies
    assert on_c.sync() == []

    # A consumer on D is three links from A: its demand reaches C and B, not A.
    on_d = consumer(d, "/queue/far")
    wait_forwarding(b, "/queue/far")
    # Barrier: a consumer on B, one link from A, advised after D's (in order on A's
    # advisory subscription): once A forwards its queue, it has seen D's demand too.
    consumer(b, "/queue/near")
    wait_forwarding(a, "/queue/near")
    assert "/queue/far" not in bridges(a)[0]["forwarding"]
    produce(a, "/queue/far", [b"stays on A"])
    assert depth(a, "/queue/far") == 1
    assert on_d.sync() == []


def test_a_mesh_with_a_loop_delivers_each_message_once_and_none_circles(nodes: Nodes) -> None:
    pa, pb, pc = free_port(), free_port(), free_port()
    a = nodes.start("A", connector("ab", pb, duplex="true", networkTTL="3"), port=pa)
    b = nodes.start("B", connector("bc", pc, duplex="true", networkTTL="3"), port=pb)
    c = nodes.start("C", connector("ca", pa, duplex="true", networkTTL="3"), port=pc)
    for node in (a, b, c):
        wait_connected(node)
    on_b = consumer(b, "/queue/mesh")
    on_c = consumer(c, "/queue/mesh")
    sub_b = consumer(b, "/topic/mesh")
    sub_c = consumer(c, "/topic/mesh")
    wait_forwarding(a, "/queue/mesh")
    wait_forwarding(a, "/topic/mesh")
    eventually(lambda: sum("/topic/mesh" in br["forwarding"] for node in (b, c) for br in bridges(node)) >= 2)
    bodies = [str(i).encode() for i in range(300)]
    produce(a, "/queue/mesh", bodies)
    got_b: list[bytes] = []
    got_c: list[bytes] = []

    def all_arrived() -> bool:
        for client, got in ((on_b, got_b), (on_c, got_c)):
            got.extend(frame.body for frame in client.sync())
        return len(got_b) + len(got_c) >= len(bodies)

    eventually(all_arrived, what="every queue message delivered")
    assert sorted(got_b + got_c, key=int) == bodies
    for node in (a, b, c):
        eventually(lambda node=node: depth(node, "/queue/mesh") == 0, what="no message left")
    # A topic message crosses the loop both ways round: each subscriber still has it once.
    produce(a, "/topic/mesh", [b"t1", b"t2"])
    assert drain(sub_b, 2) == [b"t1", b"t2"]
    assert drain(sub_c, 2) == [b"t1", b"t2"]
    # Barrier: C had both before this one was sent from C, so a copy of them that C
    # passed on to B went over the C-B link before it: B has dropped those copies.
    produce(c, "/topic/mesh", [b"t3"])
    assert drain(sub_b, 1) == [b"t3"]
    assert sub_b.sync() == []


def test_excluded_destinations_are_not_forwarded_and_dynamic_includes_limit_what_is(nodes: Nodes) -> None:
    b = nodes.start("B")
    network = (
        f'<networkConnector name="ab" uri="static:(stomp://127.0.0.1:{b.port})?initialReconnectDelay=50">'
        '<excludedDestinations><queue physicalName="secret.>"/><topic physicalName="internal"/>'
        "</excludedDestinations>"
        '<dynamicallyIncludedDestinations><queue physicalName="secret.>"/><queue physicalName="public.>"/>'
        '<topic physicalName=">"/></dynamicallyIncludedDestinations>'
        "</networkConnector>"
    )
    a = nodes.start("A", network)
    on_secret = consumer(b, "/queue/secret.plans")
    on_other = consumer(b, "/queue/other")
    on_internal = consumer(b, "/topic/internal")
    # Barrier: advised after the three above, and forwarded.
    on_public = consumer(b, "/queue/public.news")
    wait_forwarding(a, "/queue/public.news")
    assert bridges(a)[0]["forwarding"] == ["/queue/public.news"]
    produce(a, "/queue/secret.plans", [b"s"])
    produce(a, "/queue/other", [b"o"])
    produce(a, "/topic/internal", [b"i"])
    produce(a, "/queue/public.news", [b"p"])
    assert drain(on_public, 1) == [b"p"]
    assert depth(a, "/queue/secret.plans") == 1 and depth(a, "/queue/other") == 1
    for client in (on_secret, on_other, on_internal):
        assert client.sync() == []


def test_a_link_dropped_mid_flight_loses_nothing_and_doubles_nothing(nodes: Nodes) -> None:
    b = nodes.start("B")
    a = nodes.start("A", connector("ab", b.port, prefetchSize="50"))
    on_b = consumer(b, "/queue/flight", ack="client-individual")
    wait_forwarding(a, "/queue/flight")
    bodies = [str(i).encode() for i in range(2000)]
    producing = threading.Thread(target=produce, args=(a, "/queue/flight", bodies))
    producing.start()
    # Dropped while SENDs wait for their RECEIPT: the remote may have them or not.
    assert drop_link(a) > 0
    received = drain(on_b, 2000)
    producing.join()
    assert sorted(received, key=int) == bodies
    assert on_b.sync() == []
    eventually(lambda: depth(a, "/queue/flight") == 0, what="A's queue empty")
    (bridge,) = bridges(a)
    assert bridge["connects"] == 2 and bridge["failures"] == 1
    # B had stored what was in flight; A sent it again; B dropped those copies.
    assert on_loop(b, lambda: b.broker.engine.audit.duplicates) > 0  # type: ignore[union-attr]


BRIDGE_USERS = """
<plugins>
  <simpleAuthenticationPlugin>
    <users>
      <authenticationUser username="bridge" password="bridge-pw" groups="bridges,admins"/>
      <authenticationUser username="app" password="app-pw" groups="users"/>
    </users>
  </simpleAuthenticationPlugin>
  <authorizationPlugin><map><authorizationMap><authorizationEntries>
    <authorizationEntry queue=">" read="users" write="users" admin="users"/>
    <authorizationEntry queue="allowed.>" write="bridges" admin="bridges"/>
    <authorizationEntry topic="ActiveMQ.Advisory.>" read="bridges" write="bridges" admin="bridges,users"/>
  </authorizationEntries></authorizationMap></map></authorizationPlugin>
</plugins>
"""


def test_a_bridge_logs_in_over_tls_with_a_client_certificate_and_is_authorized_like_any_client(
    nodes: Nodes, tmp_path: Path
) -> None:
    pki = Pki.make(tmp_path)
    listeners = (
        '<transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:0?needClientAuth=true"/>'
        '<transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
    )
    b = nodes.start("B", listeners=listeners, more=pki.pem_context() + BRIDGE_USERS)
    ssl_port, plain_port = b.ports
    d = tmp_path
    client_side = (
        f'<sslContext><sslContext certificateFile="{d}/client.pem" keyFile="{d}/client.pem" '
        f'caFile="{d}/server-ca.crt"/></sslContext>'
    )
    a = nodes.start(
        "A",
        connector(
            "secure",
            ssl_port,
            scheme="stomp+ssl",
            options="initialReconnectDelay=50&amp;maxReconnectDelay=60000",
            userName="bridge",
            password="bridge-pw",
        ),
        more=client_side,
    )
    wait_connected(a)
    on_allowed = app_consumer(plain_port, "/queue/allowed.orders")
    on_denied = app_consumer(plain_port, "/queue/denied.orders")
    wait_forwarding(a, "/queue/allowed.orders")
    wait_forwarding(a, "/queue/denied.orders")
    produce(a, "/queue/denied.orders", [b"not for the bridge"])
    # B refuses it (and closes the link): A keeps it, says why, and stops offering it.
    eventually(lambda: "not authorized" in (bridges(a)[0]["last_error"] or ""), what="the refusal")
    assert "User bridge is not authorized to write to: /queue/denied.orders" in bridges(a)[0]["last_error"]
    produce(a, "/queue/allowed.orders", [b"fine"])
    assert drain(on_allowed, 1) == [b"fine"]
    assert depth(a, "/queue/denied.orders") == 1
    assert on_denied.sync() == []

    # Wrong credentials: B refuses the connection, the bridge says so and tries again.
    e = nodes.start(
        "E",
        connector("wrong", ssl_port, scheme="stomp+ssl", userName="bridge", password="nope"),
        more=client_side,
    )
    eventually(
        lambda: "User name [bridge] or password is invalid" in (bridges(e)[0]["last_error"] or ""),
        what="the login refused",
    )
    assert bridges(e)[0]["connects"] == 0


def app_consumer(port: int, destination: str) -> RawClient:
    client = RawClient(port)
    client.connect(login="app", passcode="app-pw")
    client.send("SUBSCRIBE", {"id": "1", "destination": destination, "receipt": "sub"})
    assert client.recv().command == "RECEIPT"
    return client


def test_a_stomp_py_client_reads_consumer_advisories(nodes: Nodes) -> None:
    node = nodes.start("A")
    watcher = Client(node.port)
    watcher.subscribe("/topic/ActiveMQ.Advisory.Consumer.Queue.>")
    app = Client(node.port)
    app.subscribe("/queue/jobs", "j")
    app.conn.unsubscribe("j")
    started, ended = watcher.listener.wait_messages(2)
    assert started.headers["destination"] == "/topic/ActiveMQ.Advisory.Consumer.Queue.jobs"
    assert started.headers["type"] == "Advisory" and started.headers["consumerCount"] == "1"
    assert started.headers["originBrokerName"] == "A"
    info = json.loads(started.body)["ConsumerInfo"]
    # ActiveMQ 5.17's shape (tests/integration/test_advisories_activemq.py compares).
    assert info["destination"]["string"] == "jobs" and "networkSubscription" not in info
    assert ended.headers["consumerCount"] == "0"
    assert json.loads(ended.body)["RemoveInfo"]["objectId"] == {"@class": "ConsumerId", **info["consumerId"]}
    for client in (watcher, app):
        client.conn.disconnect()
