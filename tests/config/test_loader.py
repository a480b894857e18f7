"""activemq.xml -> BrokerConfig: what is understood, what is refused, and where."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.settings_bridge import broker_options, not_applied
from config.issues import ConfigError
from config.loader import load
from config.model import BrokerConfig, TransportConnector, origin_of
from config.report import render
from tests.config.helpers import FIRST_BODY_LINE, broker_file, errors_of, load_body, one_error, warnings_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "activemq.xml.example"
DEBIAN_MAIN = Path("/etc/activemq/instances-available/main/activemq.xml")
DEBIAN_EXAMPLES = Path("/usr/share/doc/activemq/examples/conf")


def debian_files() -> list[Path]:
    return [DEBIAN_MAIN, *sorted(Path(p) for p in glob.glob(str(DEBIAN_EXAMPLES / "*.xml")))]


# The shipped example and Debian's files


def test_the_example_loads_without_error_or_warning() -> None:
    loaded = load(EXAMPLE)
    assert loaded.warnings == ()
    config = loaded.config
    assert [(c.name, c.scheme, c.port) for c in config.connectors] == [
        ("stomp", "stomp+nio", 61613),
        ("ws", "ws", 61614),
    ]
    assert config.connectors[1].path == "/stomp"
    assert config.connectors[1].allowed_origins == ("https://console.example.com",)
    assert config.connectors[0].maximum_connections == 1000
    kinds = [(e.kind, e.pattern) for e in config.policies.entries]
    assert kinds == [
        ("queue", ">"),
        ("topic", ">"),
        ("topic", "PRICES.>"),
        ("queue", "jobs.*.tmp,scratch.>"),
        ("temp-queue", ">"),
        ("queue", "ORDERS.>"),
        ("topic", "STATUS.>"),
        ("queue", "AUDITED.>"),
        ("topic", "TICKS.>"),
    ]
    by_pattern = {e.pattern: e for e in config.policies.entries}
    audited = by_pattern["AUDITED.>"]
    assert (audited.advisory_for_delivery, audited.advisory_for_slow_consumers) == (True, False)
    assert str(by_pattern["STATUS.>"].subscription_recovery) == (
        "fixedCountSubscriptionRecoveryPolicy maximumSize=10"
    )
    ticks = by_pattern["TICKS.>"]
    assert str(ticks.pending_message_limit) == "constantPendingMessageLimitStrategy limit=10000"
    assert ticks.slow_consumer is not None and ticks.slow_consumer.max_slow_duration == 60000
    assert config.authentication is not None
    assert [u.username for u in config.authentication.users] == ["admin", "app"]
    assert config.authorization is not None and len(config.authorization.entries) == 4
    assert config.redelivery.entries[0].maximum_redeliveries == 10
    assert config.export.directory == Path.cwd() / "data" / "export"


def test_every_attribute_the_example_sets_has_its_line(tmp_path: Path) -> None:
    config = load(EXAMPLE).config
    text = EXAMPLE.read_text().splitlines()
    origin = origin_of(config.system_usage, "memory_limit")
    assert origin.kind == "file" and origin.line is not None
    assert 'limit="1 gb"' in text[origin.line - 1]
    entry = config.policies.entries[2]
    assert entry.source.line is not None and 'topic="PRICES.>"' in text[entry.source.line - 1]


@pytest.mark.parametrize("path", debian_files(), ids=lambda p: p.name)
def test_debian_activemq_files_load_with_warnings_and_no_error(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path} is missing: Debian's activemq package provides it (scripts/setup-tests.sh)")
    loaded = load(path)
    assert loaded.warnings, "ActiveMQ's own files use features stompd ignores: each should say so"
    for warning in loaded.warnings:
        assert str(warning).startswith(f"{path}:")


def test_debian_files_cover_the_interesting_cases() -> None:
    """The examples really exercise the loader: a STOMP listener, kahaDB, users, policies."""
    stomp = load(DEBIAN_EXAMPLES / "activemq-stomp.xml").config
    assert [(c.scheme, c.port) for c in stomp.connectors] == [("stomp", 61612), ("stomp+nio", 61613)]
    assert stomp.policies.entries[0].pending_subscriber_policy == "vm"
    assert stomp.persistence.kind == "kahaDB"
    security = load(DEBIAN_EXAMPLES / "activemq-security.xml")
    assert security.config.authentication is not None
    # Its passwords are jasypt-encrypted: the users exist but cannot log in, and it says why.
    assert all(user.password is None for user in security.config.authentication.users)
    assert "jasypt" in warnings_of(security)
    demo = load(DEBIAN_EXAMPLES / "activemq-demo.xml").config
    assert demo.system_usage.memory_limit == 20 << 20
    assert [c.scheme for c in demo.connectors] == ["stomp", "ws"]


# Problems: each names its line and element, and all are reported together


def test_an_issue_reads_file_line_element_reason(tmp_path: Path) -> None:
    error = one_error(
        tmp_path,
        "<systemUsage><systemUsage>\n"
        '<memoryUsage><memoryUsage limit="64 zb"/></memoryUsage>\n'
        "</systemUsage></systemUsage>\n",
    )
    assert error.line == FIRST_BODY_LINE + 1
    assert error.element == "broker/systemUsage/systemUsage/memoryUsage/memoryUsage"
    assert str(error) == (
        f"{tmp_path / 'activemq.xml'}:{FIRST_BODY_LINE + 1}: <broker/systemUsage/systemUsage/memoryUsage/"
        "memoryUsage>: limit=\"64 zb\": '64 zb' is not a size: use a number of bytes, "
        "or a number with kb, mb or gb"
    )


def usage(meter: str, attrs: str) -> str:
    return f"<systemUsage><systemUsage><{meter}><{meter} {attrs}/></{meter}></systemUsage></systemUsage>"


def policy(entry: str) -> str:
    entries = f"<policyEntries>{entry}</policyEntries>"
    return f"<destinationPolicy><policyMap>{entries}</policyMap></destinationPolicy>"


def listener(uri: str) -> str:
    return f'<transportConnectors><transportConnector uri="{uri}"/></transportConnectors>'


def user(attrs: str) -> str:
    users = f"<users><authenticationUser {attrs}/></users>"
    return f"<plugins><simpleAuthenticationPlugin>{users}</simpleAuthenticationPlugin></plugins>"


def redelivery(attrs: str) -> str:
    return (
        "<plugins><redeliveryPlugin><redeliveryPolicyMap><redeliveryPolicyMap><redeliveryPolicyEntries>"
        f"<redeliveryPolicy {attrs}/></redeliveryPolicyEntries></redeliveryPolicyMap></redeliveryPolicyMap>"
        "</redeliveryPlugin></plugins>"
    )


DEAD_LETTER = '<deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ.*"/></deadLetterStrategy>'


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (usage("tempUsage", 'limit="10 parsecs"'), "not a size"),
        (usage("storeUsage", 'limit="-1 gb"'), "cannot be negative"),
        (usage("memoryUsage", 'limit="0"'), "nothing could ever be stored"),
        (usage("memoryUsage", 'limit="1 mb" percentOfJvmHeap="5"'), "not both"),
        (policy('<policyEntry queue="FOO.#"/>'), "MQTT/AMQP wildcard"),
        (policy('<policyEntry queue="FOO*"/>'), "whole elements"),
        (policy('<policyEntry topic="A.>.B"/>'), "only be the last"),
        (policy('<policyEntry queue="A..B"/>'), "empty element"),
        (policy('<policyEntry queue="A,,B"/>'), "empty name"),
        (policy('<policyEntry queue=">" producerFlowControl="sometimes"/>'), "not a boolean"),
        (policy('<policyEntry queue=">" cursorMemoryHighWaterMark="150"/>'), "at most 100"),
        (policy('<policyEntry queue=">" memoryLimit="-5mb"/>'), "cannot be negative"),
        (policy('<policyEntry queue=">" queuePrefetch="lots"/>'), "not a whole number"),
        (policy('<policyEntry queue=">" expireMessagesPeriod="soon"/>'), "not a duration"),
        (
            policy(
                '<policyEntry queue=">"><pendingQueuePolicy><vmCursor/></pendingQueuePolicy></policyEntry>'
            ),
            "not a pendingQueuePolicy cursor",
        ),
        (policy('<policyEntry queue=">" memoryLimt="1mb"/>'), "unknown attribute 'memoryLimt'"),
        (policy('<policyEntry memoryLimit="1mb"/>'), "names no destination"),
        (policy('<policyEntry queue="A" topic="B"/>'), "more than one destination kind"),
        (policy(f'<policyEntry queue=">">{DEAD_LETTER}</policyEntry>'), "without wildcards"),
        (listener("stomp://0.0.0.0:99999"), "port is not a number"),
        (listener("stomp://0.0.0.0"), "HOST:PORT"),
        (listener("smtp://0.0.0.0:25"), "unknown transport"),
        (listener("stomp://0.0.0.0:1?maximumConnections=0"), "at least 1"),
        (listener("stomp://0.0.0.0:1?transport.hbGracePeriodMultiplier=0.5"), "at least 1.0"),
        (listener("stomp://0.0.0.0:1?transport.defaultHeartBeat=5"), "cx,cy"),
        (listener("ws://0.0.0.0:1?allowedOrigins=evil"), "not an origin"),
        (listener("stomp+ssl://0.0.0.0:61612"), "needs an <sslContext>"),
        ("<sytemUsage/>", "unknown element <sytemUsage>"),
        ('<httpServer port="65536"/>', "at most 65535"),
        ('<httpServer maximumConnections="0"/>', "at least 1"),
        ('<export snapshotInterval="5"/>', "at least 100 ms"),
        (user('username="u"'), "needs a password"),
        (user('username="u" password="$scrypt$n=3,r=8,p=1$AA$AA"'), "out of range"),
        (redelivery('queue="A" maximumRedeliveries="-2"'), "at least -1"),
    ],
)
def test_wrong_values_are_errors_naming_the_line(tmp_path: Path, body: str, fragment: str) -> None:
    error = one_error(tmp_path, body + "\n")
    assert fragment in error.reason
    assert error.line == FIRST_BODY_LINE


def test_every_error_is_reported_not_only_the_first(tmp_path: Path) -> None:
    errors = errors_of(
        tmp_path,
        "<systemUsage><systemUsage>\n"
        '<memoryUsage><memoryUsage limit="1 zb"/></memoryUsage>\n'
        '<tempUsage><tempUsage limit="-1"/></tempUsage>\n'
        "</systemUsage></systemUsage>\n"
        '<transportConnectors><transportConnector uri="stomp://h:x"/></transportConnectors>\n',
    )
    assert [e.line for e in errors] == [FIRST_BODY_LINE + 1, FIRST_BODY_LINE + 2, FIRST_BODY_LINE + 4]


def test_a_second_listener_on_the_same_port_is_an_error(tmp_path: Path) -> None:
    error = one_error(
        tmp_path,
        "<transportConnectors>\n"
        '<transportConnector name="a" uri="stomp://0.0.0.0:61613"/>\n'
        '<transportConnector name="b" uri="stomp+nio://0.0.0.0:61613"/>\n'
        "</transportConnectors>\n",
    )
    assert error.line == FIRST_BODY_LINE + 2 and "already does" in error.reason


def test_a_misspelt_attribute_is_an_error_but_an_unsupported_activemq_one_a_warning(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        '<destinationPolicy><policyMap><policyEntries><policyEntry queue=">" optimizedDispatch="true"/>'
        "</policyEntries></policyMap></destinationPolicy>\n",
    )
    assert "optimizedDispatch: an ActiveMQ setting stompd does not implement" in warnings_of(loaded)


# What ActiveMQ features stompd ignores, said as warnings


def test_ignored_activemq_features_are_warnings_with_reasons(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        '<managementContext><managementContext createConnector="false"/></managementContext>\n'
        '<networkConnectors><networkConnector uri="static:(tcp://other:61616)"/></networkConnectors>\n'
        "<transportConnectors>\n"
        '<transportConnector name="openwire" uri="tcp://0.0.0.0:61616"/>\n'
        '<transportConnector name="amqp" uri="amqp://0.0.0.0:5672"/>\n'
        '<transportConnector name="mqtt" uri="mqtt://0.0.0.0:1883"/>\n'
        '<transportConnector name="stomp" uri="stomp://0.0.0.0:61613?transport.closeAsync=false"/>\n'
        "</transportConnectors>\n"
        "<plugins><loggingBrokerPlugin/></plugins>\n",
    )
    text = warnings_of(loaded)
    for expected in (
        "JMX",
        "tcp://other:61616: OpenWire is not a STOMP transport stompd bridges over",
        "no STOMP broker in the list; this networkConnector is ignored",
        "OpenWire is not STOMP",
        "AMQP is not STOMP",
        "MQTT is not STOMP",
        "transport.closeAsync=false: not supported",
    ):
        assert expected in text
    # Read and applied now (issue 39): no warning, its settings ActiveMQ's defaults.
    assert "loggingBrokerPlugin" not in text
    assert loaded.config.logging is not None and loaded.config.logging.log_connection_events
    assert [c.name for c in loaded.config.connectors] == ["stomp"]


def test_no_stomp_listener_means_the_default_one_and_a_warning(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        '<transportConnectors><transportConnector uri="tcp://0.0.0.0:61616"/></transportConnectors>\n',
    )
    assert loaded.config.connectors == (TransportConnector(),)
    assert "stompd listens on stomp://127.0.0.1:61613" in warnings_of(loaded)


def test_a_file_that_is_not_an_activemq_configuration_loads_the_defaults_with_a_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "web.xml"
    path.write_text("<web-app><display-name>x</display-name></web-app>")
    loaded = load(path)
    assert loaded.config == BrokerConfig()
    assert "not an ActiveMQ configuration" in warnings_of(loaded)


def test_kahadb_is_mapped_onto_the_store_with_a_warning(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        f'<persistenceAdapter><kahaDB directory="{tmp_path}/kahadb" journalMaxFileLength="32mb"/>'
        "</persistenceAdapter>\n",
    )
    assert loaded.config.store_directory == tmp_path / "kahadb"
    assert "kahaDB is mapped onto stompd's LevelDB store" in warnings_of(loaded)
    assert "journalMaxFileLength" in warnings_of(loaded)


def test_a_directory_holding_a_real_kahadb_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kahadb").mkdir()
    (tmp_path / "kahadb" / "db.data").write_bytes(b"\0")
    error = one_error(
        tmp_path, f'<persistenceAdapter><kahaDB directory="{tmp_path}/kahadb"/></persistenceAdapter>\n'
    )
    assert "holds an ActiveMQ KahaDB store" in error.reason


def test_level_db_directory_and_default_store(tmp_path: Path) -> None:
    config = load_body(
        tmp_path, f'<persistenceAdapter><levelDB directory="{tmp_path}/ldb"/></persistenceAdapter>\n'
    ).config
    assert config.store_directory == tmp_path / "ldb"
    assert load_body(tmp_path, "").config.store_directory == Path("data") / "store"


# Seed 002


def test_seed_002_a_temp_limit_under_activemq_journal_size_is_explained(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        usage("tempUsage", 'limit="30 mb"'),
    )
    text = warnings_of(loaded)
    assert "under 32 mb" in text and "blocks producers forever" in text and "never deleted" in text
    assert loaded.config.system_usage.temp_limit == 30 << 20


def test_seed_002_a_temp_limit_under_one_frame_is_explained(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        usage("tempUsage", 'limit="1 mb"'),
    )
    assert "smaller than the largest frame a listener accepts (100 mb)" in warnings_of(loaded)


# Units, percentages, placeholders


def test_percent_of_jvm_heap_is_a_percent_of_activemqs_default_heap_and_warned_of(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        '<systemUsage><systemUsage><memoryUsage><memoryUsage percentOfJvmHeap="70"/></memoryUsage>'
        "</systemUsage></systemUsage>\n",
    )
    config = loaded.config
    # The stock activemq.xml's own setting: about 700 MB on ActiveMQ's -Xmx1G, not 70 % of
    # the machine (17.7 GB on a 24 GiB one).
    assert config.system_usage.memory_limit == (1 << 30) * 70 // 100
    assert "70% of" in origin_of(config.system_usage, "memory_limit").note
    (warning,) = [w for w in loaded.warnings if "percentOfJvmHeap" in str(w)]
    assert warning.line == 4
    assert "-Xmx1G" in str(warning) and "limit=" in str(warning)


def test_placeholders_from_defines_environment_properties_and_activemq_paths(tmp_path: Path) -> None:
    (tmp_path / "credentials.properties").write_text("# comment\nmem.limit = 48 mb\nshared.name=fromfile\n")
    body = (
        '<systemUsage><systemUsage sendFailIfNoSpaceAfterTimeout="${wait:2500}">'
        '<memoryUsage><memoryUsage limit="${mem.limit}"/></memoryUsage>'
        '<storeUsage><storeUsage limit="${STORE_LIMIT}"/></storeUsage>'
        '<tempUsage><tempUsage limit="${temp.limit}"/></tempUsage>'
        "</systemUsage></systemUsage>\n"
        '<persistenceAdapter><levelDB directory="${activemq.data}/x"/></persistenceAdapter>\n'
    )
    path = tmp_path / "activemq.xml"
    path.write_text(
        '<beans xmlns="http://www.springframework.org/schema/beans">\n'
        '<bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer">'
        '<property name="locations"><value>file:${activemq.conf}/credentials.properties</value>'
        "</property></bean>\n"
        f'<broker xmlns="http://activemq.apache.org/schema/core">{body}</broker></beans>'
    )
    loaded = load(
        path, defines={"temp.limit": "3 gb"}, environ={"STORE_LIMIT": "2 gb"}, cwd=tmp_path / "base"
    )
    usage = loaded.config.system_usage
    assert (usage.memory_limit, usage.store_limit, usage.temp_limit) == (48 << 20, 2 << 30, 3 << 30)
    assert usage.send_fail_if_no_space_after_timeout == 2500
    assert loaded.config.store_directory == tmp_path / "base" / "data" / "x"
    assert origin_of(loaded.config.persistence, "directory").note == "${activemq.data}"


def test_defines_win_over_environment_and_properties(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        '<httpServer host="${name}"/>\n',
        defines={"name": "define"},
        environ={"name": "env"},
    ).config
    assert config.http.host == "define"


def test_an_undefined_placeholder_is_a_warning_and_the_attribute_is_ignored(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, '<httpServer port="${http.port}"/>\n', environ={})
    assert loaded.config.http.port == 8161
    assert "${http.port} is not defined" in warnings_of(loaded)


# Policies: inheritance and the default entry


def test_entries_inherit_what_they_do_not_set_from_the_default_entry(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap>\n"
        "<policyEntries>\n"
        '<policyEntry queue="A.>" memoryLimit="1 mb"/>\n'
        '<policyEntry topic="B" producerFlowControl="false" memoryLimit="2 mb"/>\n'
        "</policyEntries>\n"
        '<defaultEntry><policyEntry memoryLimit="9 mb" producerFlowControl="false" queuePrefetch="7"/>'
        "</defaultEntry>\n"
        "</policyMap></destinationPolicy>\n",
    ).config
    first, second = config.policies.entries
    assert (first.memory_limit, first.producer_flow_control, first.queue_prefetch) == (1 << 20, False, 7)
    assert first.explicit == frozenset({"memory_limit"})
    assert origin_of(first, "memory_limit").line == FIRST_BODY_LINE + 2
    assert origin_of(first, "queue_prefetch").line == FIRST_BODY_LINE + 5
    assert (second.kind, second.pattern, second.memory_limit) == ("topic", "B", 2 << 20)
    assert config.policies.default.memory_limit == 9 << 20


def test_dead_letter_strategies(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>\n"
        '<policyEntry queue="A"><deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ." '
        'topicPrefix="TDLQ." processNonPersistent="true"/></deadLetterStrategy></policyEntry>\n'
        '<policyEntry queue="B"><deadLetterStrategy><sharedDeadLetterStrategy processExpired="false">'
        '<deadLetterQueue><queue physicalName="B.DLQ"/></deadLetterQueue></sharedDeadLetterStrategy>'
        "</deadLetterStrategy></policyEntry>\n"
        '<policyEntry queue="C"><deadLetterStrategy><discarding/></deadLetterStrategy></policyEntry>\n'
        "</policyEntries></policyMap></destinationPolicy>\n",
    ).config
    a, b, c = (entry.dead_letter for entry in config.policies.entries)
    assert (a.kind, a.queue_prefix, a.topic_prefix, a.process_non_persistent) == (
        "individual",
        "DLQ.",
        "TDLQ.",
        True,
    )
    assert (b.kind, b.dead_letter_queue, b.process_expired) == ("shared", "B.DLQ", False)
    assert c.kind == "discarding"


def test_gc_and_temp_destination_entries(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>\n"
        '<policyEntry topic=">" gcInactiveDestinations="true" inactiveTimoutBeforeGC="30000"/>\n'
        '<policyEntry tempTopic="true" topicPrefetch="5"/>\n'
        "</policyEntries></policyMap></destinationPolicy>\n",
    ).config
    gc, temp = config.policies.entries
    assert (gc.gc_inactive_destinations, gc.inactive_timeout_before_gc) == (True, 30000)
    assert (temp.kind, temp.pattern, temp.topic_prefetch) == ("temp-topic", ">", 5)


def test_redelivery_plugin(tmp_path: Path) -> None:
    plugin = load_body(
        tmp_path,
        '<plugins><redeliveryPlugin fallbackToDeadLetter="false"><redeliveryPolicyMap><redeliveryPolicyMap>\n'
        '<redeliveryPolicyEntries><redeliveryPolicy queue="Q" redeliveryDelay="10 s"/>'
        "</redeliveryPolicyEntries>\n"
        '<defaultEntry><redeliveryPolicy maximumRedeliveries="3" redeliveryDelay="100"/></defaultEntry>\n'
        "</redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>\n",
    ).config.redelivery
    assert plugin.fallback_to_dead_letter is False
    assert (plugin.default.maximum_redeliveries, plugin.default.redelivery_delay) == (3, 100)
    (entry,) = plugin.entries
    assert (entry.kind, entry.pattern, entry.maximum_redeliveries, entry.redelivery_delay) == (
        "queue",
        "Q",
        3,
        10000,
    )


# Users and permissions


def test_users_groups_and_authorization_entries(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<plugins>\n"
        '<simpleAuthenticationPlugin anonymousAccessAllowed="true"><users>\n'
        '<authenticationUser username="a" password="pw" groups="admins, users"/>\n'
        '<authenticationUser username="b" password="$pbkdf2-sha256$i=1000$AAAA$AAAA" groups="users"/>\n'
        "</users></simpleAuthenticationPlugin>\n"
        "<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
        '<authorizationEntry queue="orders.>" read="users" write="users,admins" admin="admins"/>\n'
        '<authorizationEntry topic="*.prices" read="*"/>\n'
        "</authorizationEntries>\n"
        '<tempDestinationAuthorizationEntry><tempDestinationAuthorizationEntry read="users" write="users" '
        'admin="users"/></tempDestinationAuthorizationEntry>\n'
        "</authorizationMap></map></authorizationPlugin>\n"
        "</plugins>\n",
    ).config
    assert config.authentication is not None and config.authorization is not None
    a, b = config.authentication.users
    assert (a.username, a.groups, a.password is not None and a.password.scheme) == (
        "a",
        {"admins", "users"},
        "plain",
    )
    assert b.password is not None and b.password.scheme == "pbkdf2-sha256"
    assert config.authentication.anonymous_access_allowed is True
    orders, prices = config.authorization.entries
    assert (orders.kind, orders.pattern, orders.write, orders.admin) == (
        "queue",
        "orders.>",
        {"users", "admins"},
        {"admins"},
    )
    assert (prices.kind, prices.read, prices.write) == ("topic", {"*"}, frozenset())
    assert config.authorization.temp_entry is not None and config.authorization.temp_entry.read == {"users"}


def test_a_user_defined_twice_is_an_error(tmp_path: Path) -> None:
    error = one_error(
        tmp_path,
        "<plugins><simpleAuthenticationPlugin><users>\n"
        '<authenticationUser username="a" password="x"/>\n'
        '<authenticationUser username="a" password="y"/>\n'
        "</users></simpleAuthenticationPlugin></plugins>\n",
    )
    assert error.line == FIRST_BODY_LINE + 2 and "already defined on line 5" in error.reason


def test_authorization_without_authentication_warns(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        "<plugins><authorizationPlugin><map><authorizationMap><authorizationEntries>"
        '<authorizationEntry queue=">" read="a"/></authorizationEntries></authorizationMap></map>'
        "</authorizationPlugin></plugins>\n",
    )
    assert "refuses every operation" in warnings_of(loaded)


def test_a_file_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load(tmp_path / "missing.xml")


def test_placeholder_in_a_policy_pattern(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        '<destinationPolicy><policyMap><policyEntries><policyEntry queue="${app}.>"/></policyEntries>'
        "</policyMap></destinationPolicy>\n",
        defines={"app": "billing"},
    ).config
    assert config.policies.entries[0].pattern == "billing.>"


def test_broker_attributes(tmp_path: Path) -> None:
    path = broker_file(tmp_path, "")
    path.write_text(
        path.read_text().replace(
            "<broker ",
            f'<broker brokerName="b1" dataDirectory="file:{tmp_path}/d" persistent="false" '
            'schedulerSupport="FALSE" useJmx="true" ',
        )
    )
    config = load(path).config
    assert (config.broker.broker_name, config.broker.data_directory) == ("b1", tmp_path / "d")
    assert (config.broker.persistent, config.broker.scheduler_support) == (False, False)
    assert config.store_directory == tmp_path / "d" / "store"


@given(size=st.integers(1, 1 << 45), spelling=st.sampled_from(["{b}", "{kb} kb", "{mb}mb", "{gb} GB"]))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_size_as_activemq_writes_it(tmp_path: Path, size: int, spelling: str) -> None:
    units = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}
    key = spelling[1:].split("}")[0]
    text = spelling.format(**{key: max(1, size // units[key])})
    expected = max(1, size // units[key]) * units[key]
    config = load_body(tmp_path, usage("storeUsage", f'limit="{text}"') + "\n").config
    assert config.system_usage.store_limit == expected


def test_populate_jmsx_user_id_reaches_the_broker_and_the_report(tmp_path: Path) -> None:
    path = broker_file(tmp_path, "")
    path.write_text(path.read_text().replace("<broker ", '<broker populateJMSXUserID="true" '))
    config = load(path).config
    assert config.broker.populate_jmsx_user_id is True
    assert broker_options(config).core.populate_jmsx_user_id is True
    assert not_applied(config) == set()
    report = render(config, lambda key: True)
    assert re.search(r"populateJMSXUserID +\S* *= true", report), report
    assert load(broker_file(tmp_path, "")).config.broker.populate_jmsx_user_id is False


def test_a_connector_with_an_error_is_not_also_said_missing(tmp_path: Path) -> None:
    try:
        load_body(tmp_path, '<transportConnectors><transportConnector name="x"/></transportConnectors>\n')
    except ConfigError as exc:
        said = [str(issue) for issue in (*exc.errors, *exc.warnings)]
    else:
        raise AssertionError("a connector without a uri was taken")
    assert any("needs a uri" in line for line in said)
    assert not any("no STOMP transportConnector" in line for line in said)
