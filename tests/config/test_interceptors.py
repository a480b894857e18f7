"""``<destinationInterceptors>``: virtual topics, composite destinations and mirrored
queues read into the model with their lines, ActiveMQ's default ones where the file has
none, each bad element an error naming its line, and ``--check-config`` listing them."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cli import main
from broker.settings_bridge import CannotRun, broker_options
from config.model import DestinationInterceptors, ForwardTo, MirroredQueue, VirtualTopic
from tests.config.helpers import FIRST_BODY_LINE, broker_file, load_body, one_error, warnings_of

FILE = """<destinationInterceptors>
  <virtualDestinationInterceptor><virtualDestinations>
    <virtualTopic name="Orders.>" prefix="VTC.*." postfix=".q" selectorAware="true" local="true"
                  dropOnResourceLimit="true" setOriginalDestination="false" concurrentSend="true"/>
    <compositeQueue name="ORDERS" forwardOnly="false" sendWhenNotMatched="true">
      <forwardTo>
        <queue physicalName="ORDERS.AUDIT"/>
        <topic physicalName="ORDERS.FEED"/>
        <filteredDestination selector="region = 'EU'" queue="ORDERS.EU"/>
      </forwardTo>
    </compositeQueue>
    <compositeTopic name="NEWS"><forwardTo><queue physicalName="NEWS.ALL"/></forwardTo></compositeTopic>
  </virtualDestinations></virtualDestinationInterceptor>
  <mirroredQueue prefix="M." postfix=".mirror"/>
</destinationInterceptors>
"""


def line(n: int) -> int:
    """Line ``n`` (1-based) of a body, in the file."""
    return FIRST_BODY_LINE + n - 1


def test_every_element_and_attribute_is_read_with_its_line(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, FILE)
    interceptors = loaded.config.interceptors
    (virtual,) = interceptors.virtual_topics
    assert virtual == VirtualTopic(
        name="Orders.>",
        prefix="VTC.*.",
        postfix=".q",
        selector_aware=True,
        local=True,
        drop_on_resource_limit=True,
        set_original_destination=False,
    )
    assert virtual.source.line == line(3)
    orders, news = interceptors.composites
    assert (orders.kind, orders.name, orders.forward_only, orders.send_when_not_matched) == (
        "queue",
        "ORDERS",
        False,
        True,
    )
    assert orders.forward_to == (
        ForwardTo("queue", "ORDERS.AUDIT"),
        ForwardTo("topic", "ORDERS.FEED"),
        ForwardTo("queue", "ORDERS.EU", "region = 'EU'"),
    )
    assert [t.source.line for t in orders.forward_to] == [line(7), line(8), line(9)]
    assert (news.kind, news.name, news.forward_only) == ("topic", "NEWS", True)
    assert interceptors.mirrored == MirroredQueue(prefix="M.", postfix=".mirror")
    assert interceptors.mirrored.source.line == line(14)
    # Nothing of it is a warning any more (concurrentSend: stompd sends in one turn already).
    assert "destinationInterceptors" not in warnings_of(loaded)
    assert "concurrentSend" not in warnings_of(loaded)


def test_without_the_element_activemq_defaults_apply(tmp_path: Path) -> None:
    assert load_body(tmp_path, "").config.interceptors == DestinationInterceptors(
        virtual_topics=(VirtualTopic(name="VirtualTopic.>"),)
    )
    off = load_body(tmp_path, "").config.interceptors
    assert off.mirrored is None
    path = tmp_path / "b.xml"
    path.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" useVirtualTopics="false" '
        'useMirroredQueues="true"/>'
    )
    from config.loader import load

    flags = load(path).config.interceptors
    assert flags.virtual_topics == ()
    assert flags.mirrored == MirroredQueue()


def test_a_file_of_its_own_replaces_the_defaults(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        "<destinationInterceptors><mirroredQueue/></destinationInterceptors>",
    )
    assert loaded.config.interceptors.virtual_topics == ()
    assert loaded.config.interceptors.mirrored == MirroredQueue()


@pytest.mark.parametrize(
    ("body", "where", "says"),
    [
        (
            '<compositeQueue><forwardTo><queue physicalName="A"/></forwardTo></compositeQueue>',
            1,
            "needs a name",
        ),
        ('<compositeQueue name="A"><forwardTo><queue/></forwardTo></compositeQueue>', 1, "physicalName"),
        (
            '<compositeQueue name="A"><forwardTo><queue physicalName="B.>"/></forwardTo></compositeQueue>',
            1,
            "not a wildcard",
        ),
        (
            '<compositeQueue name="A"><forwardTo>\n<filteredDestination queue="B"/></forwardTo>'
            "</compositeQueue>",
            2,
            "needs a selector",
        ),
        (
            '<compositeQueue name="A"><forwardTo>\n<filteredDestination selector="a=1"/></forwardTo>'
            "</compositeQueue>",
            2,
            "one of queue",
        ),
        ('<virtualTopic name="A.>" prefix="Consumer.>."/>', 1, "cannot stand in a prefix"),
        ('<virtualTopic name="A.>" selectorAware="maybe"/>', 1, "not a boolean"),
        ('<virtualTopic name="A.>" prefixx="x"/>', 1, "unknown attribute"),
        ('<compositeQueue name="A"/>\n<compositeQueue name="A"/>', 2, "given twice"),
    ],
)
def test_a_bad_element_names_its_line(tmp_path: Path, body: str, where: int, says: str) -> None:
    wrapped = (
        "<destinationInterceptors><virtualDestinationInterceptor><virtualDestinations>\n"
        + body
        + "\n</virtualDestinations></virtualDestinationInterceptor></destinationInterceptors>"
    )
    error = one_error(tmp_path, wrapped)
    assert error.line == line(1 + where)
    assert says in error.reason


def test_a_selector_that_does_not_compile_stops_the_broker_naming_its_line(tmp_path: Path) -> None:
    body = (
        "<destinationInterceptors><virtualDestinationInterceptor><virtualDestinations>"
        '<compositeQueue name="A">'
        '<forwardTo>\n<filteredDestination selector="a = = 1" queue="B"/></forwardTo></compositeQueue>'
        "</virtualDestinations></virtualDestinationInterceptor></destinationInterceptors>"
    )
    config = load_body(tmp_path, body).config
    with pytest.raises(CannotRun, match=f"activemq.xml:{line(2)}: filteredDestination selector"):
        broker_options(config)


def test_use_flags_beside_a_list_of_its_own_are_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "b.xml"
    path.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" useMirroredQueues="true">'
        "<destinationInterceptors/></broker>"
    )
    from config.loader import load

    loaded = load(path)
    assert "useMirroredQueues: changes nothing" in warnings_of(loaded)
    assert loaded.config.interceptors.mirrored is None


def test_check_config_lists_each_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broker_file(tmp_path, FILE)
    assert main(["--check-config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"virtualTopic 'Orders.>' -> queues VTC.*.<topic>.q ({path}:{line(3)})" in out
    assert f"compositeQueue 'ORDERS' ({path}:{line(5)})" in out
    assert f"compositeTopic 'NEWS' ({path}:{line(12)})" in out
    assert f"queue://ORDERS.EU if region = 'EU'  {path}:{line(9)}" in out
    assert f"mirroredQueue -> topics M.<queue>.mirror ({path}:{line(14)})" in out
    assert "not applied yet" not in out
    defaults = broker_file(tmp_path, "", name="plain.xml")
    assert main(["--check-config", str(defaults)]) == 0
    assert "virtualTopic 'VirtualTopic.>' -> queues Consumer.*.<topic> (default)" in capsys.readouterr().out
