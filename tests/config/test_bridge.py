"""Flags over the file, and the model -> today's BrokerOptions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trustme

from broker.app import BrokerOptions
from broker.core.base.settings import CoreSettings, DiscardingDLQ, Interceptors, TimeStamping
from broker.io.limits import ConnectionLimits
from broker.settings_bridge import CannotRun, broker_options, not_applied, not_applied_in_file
from config.loader import load
from config.model import BrokerConfig, origin_of
from config.overrides import KEYS, Override, apply
from config.report import render
from tests.config.helpers import load_body, warnings_of

EXAMPLE = Path(__file__).resolve().parents[2] / "activemq.xml.example"


def test_no_configuration_is_exactly_todays_embedded_defaults() -> None:
    # The command line's defaults: the admin server on 8161 (embedded brokers default it off).
    assert broker_options(BrokerConfig()) == BrokerOptions(http_port=8161)
    assert not_applied(BrokerConfig()) == set()
    assert not_applied_in_file(BrokerConfig()) == []


def test_the_example_maps_onto_the_broker() -> None:
    options = broker_options(load(EXAMPLE).config)
    stomp, ws = options.listeners
    assert (stomp.scheme, stomp.host, stomp.port, stomp.max_connections) == (
        "stomp+nio",
        "127.0.0.1",
        61613,
        1000,
    )
    assert stomp.limits == ConnectionLimits() and not stomp.websocket and stomp.ssl is None
    assert (ws.scheme, ws.port, ws.path, ws.websocket) == ("ws", 61614, "/stomp", True)
    assert ws.allowed_origins == ("https://console.example.com:443",)
    assert options.data_dir == Path.cwd() / "data"
    assert options.store_dir == Path.cwd() / "data" / "store"
    # The example sets initialRedeliveryDelay="0" on its default entry.
    # And its <destinationInterceptors>: ActiveMQ's default virtual topic and a composite.
    interceptors = options.core.interceptors
    assert interceptors.virtual_topics == Interceptors().virtual_topics
    assert [c.pattern for c in interceptors.composites] == ["ORDERS.IN"]
    # And its statisticsBrokerPlugin, timeStamping and discardingDLQ plugins
    # (forcePersistency is a comment there).
    assert options.core == CoreSettings(
        cursor_high_water=0.70,
        initial_redelivery_delay_ms=0,
        interceptors=interceptors,
        statistics=True,
        time_stamping=TimeStamping(),
        discarding_dlq=DiscardingDLQ(drop_all=False, drop_only=("ORDERS\\..*", "AUDIT")),
    )
    assert options.http_stomp_limits == ConnectionLimits()


def test_file_values_reach_core_settings_and_limits(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        '<systemUsage><systemUsage sendFailIfNoSpace="true" sendFailIfNoSpaceAfterTimeout="1500">'
        '<memoryUsage><memoryUsage limit="64 mb"/></memoryUsage>'
        '<storeUsage><storeUsage limit="2 gb"/></storeUsage>'
        '<tempUsage><tempUsage limit="512 mb"/></tempUsage></systemUsage></systemUsage>\n'
        "<destinationPolicy><policyMap><defaultEntry>"
        '<policyEntry memoryLimit="8 mb" cursorMemoryHighWaterMark="50" maxPageSize="100" queuePrefetch="10" '
        'topicPrefetch="20"><deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ." '
        'topicPrefix="TDLQ." processExpired="false"/></deadLetterStrategy></policyEntry>'
        "</defaultEntry></policyMap></destinationPolicy>\n"
        "<plugins><redeliveryPlugin><redeliveryPolicyMap><redeliveryPolicyMap><defaultEntry>"
        '<redeliveryPolicy maximumRedeliveries="2" redeliveryDelay="250"/></defaultEntry>'
        "</redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>\n"
        '<transportConnectors><transportConnector uri="stomp://0.0.0.0:7000?wireFormat.maxFrameSize=1mb&amp;'
        "transport.hbGracePeriodMultiplier=2.5&amp;transport.connectAttemptTimeout=5000&amp;"
        'transport.defaultHeartBeat=5000,0&amp;maximumConnections=20"/></transportConnectors>\n'
        '<transportDefaults maxHeaders="50" maxHeaderLength="2 kb" connectAttemptTimeout="7000"/>\n',
    ).config
    options = broker_options(config)
    (listener,) = options.listeners
    assert (listener.host, listener.port, listener.max_connections) == ("0.0.0.0", 7000, 20)
    assert options.core == CoreSettings(
        queue_prefetch=10,
        topic_prefetch=20,
        memory_limit=64 << 20,
        store_limit=2 << 30,
        temp_limit=512 << 20,
        destination_memory_limit=8 << 20,
        cursor_high_water=0.5,
        page_size=100,
        max_redeliveries=2,
        individual_dead_letter_prefix="DLQ.",
        individual_dead_letter_topic_prefix="TDLQ.",
        dead_letter_expired=False,
        redelivery_delay_ms=250,
        send_fail_if_no_space=True,
        send_fail_if_no_space_after_timeout=1500,
    )
    assert listener.limits == ConnectionLimits(
        max_frame_size=1 << 20,
        max_headers=50,
        max_header_length=2048,
        connect_timeout=5.0,
        heartbeat_grace=2.5,
        default_heart_beat=(5000, 0),
    )
    # /stomp on the admin server has <transportDefaults>'s limits.
    assert options.http_stomp_limits == ConnectionLimits(
        max_headers=50, max_header_length=2048, connect_timeout=7.0
    )


def test_flags_win_over_the_file_and_say_so() -> None:
    config = apply(
        load(EXAMPLE).config,
        [
            Override("memory_limit", 2 << 30, "--memory-limit"),
            Override("port", 0, "--port"),
            Override("max_frame_size", 1 << 20, "--max-frame-size"),
            Override("maximum_redeliveries", -1, "--maximum-redeliveries"),
        ],
    )
    assert config.system_usage.memory_limit == 2 << 30
    assert str(origin_of(config.system_usage, "memory_limit")) == "flag --memory-limit"
    assert config.connectors[0].port == 0 and str(origin_of(config.connectors[0], "port")) == "flag --port"
    assert all(c.max_frame_size == 1 << 20 for c in config.connectors)
    assert config.redelivery.default.maximum_redeliveries == -1
    # The ORDERS.> entry sets its own maximumRedeliveries: more specific than a broker-wide flag.
    assert config.redelivery.entries[0].maximum_redeliveries == 10
    assert broker_options(config).core.memory_limit == 2 << 30


def test_a_default_entry_flag_reaches_entries_that_do_not_set_it(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>"
        '<policyEntry queue="A" memoryLimit="1 mb"/><policyEntry queue="B" producerFlowControl="false"/>'
        "</policyEntries></policyMap></destinationPolicy>\n",
    ).config
    config = apply(config, [Override("destination_memory_limit", 5 << 20, "--destination-memory-limit")])
    a, b = config.policies.entries
    assert a.memory_limit == 1 << 20
    assert (
        b.memory_limit == 5 << 20 and str(origin_of(b, "memory_limit")) == "flag --destination-memory-limit"
    )
    dropped = apply(config, [Override("drop_expired", True, "--drop-expired")])
    assert all(
        not e.dead_letter.process_expired for e in (*dropped.policies.entries, dropped.policies.default)
    )


def test_host_and_port_define_a_listener_when_the_file_has_none_the_broker_can_serve(tmp_path: Path) -> None:
    config = load_body(
        tmp_path, '<transportConnectors><transportConnector uri="ws://127.0.0.1:0/"/></transportConnectors>\n'
    ).config
    # A broker with WebSocket listeners only is fine.
    assert [listener.scheme for listener in broker_options(config).listeners] == ["ws"]
    config = apply(config, [Override("port", 0, "--port")])
    assert [c.scheme for c in config.connectors] == ["stomp", "ws"]
    assert [listener.port for listener in broker_options(config).listeners] == [0, 0]


def test_every_override_key_applies() -> None:
    values = {
        "host": "::1",
        "port": 1,
        "data_dir": Path("d"),
        "heartbeat_grace": 2.0,
        "individual_dead_letter_prefix": "D.",
        "ws_host": "::1",
        "ws_allowed_origins": ("https://app.example.com",),
    }
    # --ws-host changes the WebSocket listeners there are.
    with_ws = apply(BrokerConfig(), [Override("ws_port", 61614, "--ws-port")])
    for key in KEYS:
        base = with_ws if key == "ws_host" else BrokerConfig()
        config = apply(base, [Override(key, values.get(key, 3), f"--{key}")])
        assert config != base, key


def test_check_report_marks_what_is_not_applied() -> None:
    config = load(EXAMPLE).config
    missing = not_applied(config)
    # Policy entries apply per destination, but for a few of their settings.
    assert "policies.entries[0]" not in missing and "policies.entries[0].memory_limit" not in missing
    # Issue 27: prefetches, prioritizedMessages and the back-off are applied too.
    assert not any(key.startswith(("policies", "redelivery")) for key in missing), missing
    # Every listener is served, with every option of its URI.
    assert not any(key.startswith(("connectors", "transport_defaults")) for key in missing)
    assert "system_usage.memory_limit" not in missing
    report = render(config, lambda key: key not in missing)
    assert re.search(r"useExponentialBackOff += true .*example:\d+$", report, re.M)
    assert re.search(r"prioritizedMessages += true .*example:\d+$", report, re.M)
    line = next(line for line in report.splitlines() if line.strip().startswith("memoryUsage limit"))
    assert "1 gb" in line and "activemq.xml.example:" in line and "not applied" not in line
    # Users and authorization entries are applied (broker/security).
    assert "simpleAuthenticationPlugin" in report and "authentication" not in missing
    assert "authorization" not in missing
    assert "simpleAuthenticationPlugin\n" in report and "authorizationPlugin\n" in report
    assert "********" in report and "change-me" not in report


def test_check_report_marks_a_setting_not_applied(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>"
        '<policyEntry queue="q.>"><pendingQueuePolicy><vmQueueCursor/></pendingQueuePolicy></policyEntry>'
        "</policyEntries></policyMap></destinationPolicy>\n"
        '<plugins><redeliveryPlugin fallbackToDeadLetter="false"><redeliveryPolicyMap><redeliveryPolicyMap>'
        '<defaultEntry><redeliveryPolicy useExponentialBackOff="true"/></defaultEntry>'
        "</redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>\n",
    ).config
    missing = not_applied(config)
    assert missing == {"policies.entries[0].pending_queue_policy"}
    report = render(config, lambda key: key not in missing)
    assert re.search(r"pendingQueuePolicy += vm .*:\d+  \[not applied yet\]$", report, re.M)
    # fallbackToDeadLetter is applied (broker/policies.py unmatched_redelivery).
    assert re.search(r"fallbackToDeadLetter += false .*:\d+$", report, re.M)
    assert re.search(r"useExponentialBackOff += true .*:\d+$", report, re.M)


def test_websocket_flags_override_the_files_listeners(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<transportConnectors>"
        '<transportConnector uri="stomp://127.0.0.1:0"/>'
        '<transportConnector name="web" uri="ws://127.0.0.1:61614/stomp?allowedOrigins=https://a.example"/>'
        "</transportConnectors>\n"
        '<httpServer allowedOrigins="https://console.example" staticDirectory="."/>\n',
    ).config
    # No flag: the file's listener, its path and origins; /stomp's origins and static files.
    options = broker_options(config)
    ws = options.listeners[1]
    assert (ws.port, ws.path, ws.allowed_origins) == (61614, "/stomp", ("https://a.example:443",))
    assert options.http_allowed_origins == ("https://console.example:443",)
    assert options.http_static_dir == Path(".")
    flagged = apply(
        config,
        [
            Override("ws_port", 0, "--ws-port"),
            Override("ws_host", "::1", "--ws-host"),
            Override("ws_allowed_origins", ("*",), "--ws-allowed-origins"),
        ],
    )
    web = flagged.connectors[1]
    assert (web.name, web.host, web.port, web.path) == ("web", "::1", 0, "/stomp")
    assert str(origin_of(web, "port")) == "flag --ws-port"
    assert str(origin_of(web, "allowed_origins")) == "flag --ws-allowed-origins"
    assert str(origin_of(flagged.http, "allowed_origins")) == "flag --ws-allowed-origins"
    options = broker_options(flagged)
    assert options.listeners[1].allowed_origins == ("*",) and options.http_allowed_origins == ("*",)


def test_ws_and_wss_ports_define_listeners_and_wss_takes_the_flags_certificate(tmp_path: Path) -> None:
    ca = trustme.CA()
    chain = tmp_path / "chain.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(chain))
    config = apply(
        BrokerConfig(),
        [
            Override("ws_port", 0, "--ws-port"),
            Override("wss_port", 0, "--wss-port"),
            Override("wss_cert", chain, "--wss-cert"),
        ],
    )
    assert [c.scheme for c in config.connectors] == ["stomp", "ws", "wss"]
    assert config.ssl is not None and config.ssl.key_file == chain
    assert str(origin_of(config.ssl, "certificate_file")) == "flag --wss-cert"
    _, ws, wss = broker_options(config).listeners
    assert ws.ssl is None and wss.ssl is not None and wss.scheme == "wss" and wss.websocket
    with pytest.raises(CannotRun, match=r"wss://127\.0\.0\.1:0 needs TLS certificates"):
        broker_options(apply(BrokerConfig(), [Override("wss_port", 0, "--wss-port")]))


def test_each_destination_gets_its_most_specific_policy_entry(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>"
        '<policyEntry queue=">" queuePrefetch="10" memoryLimit="1 mb"/>'
        '<policyEntry queue="A.>" queuePrefetch="20" gcInactiveDestinations="true"'
        ' inactiveTimoutBeforeGC="5000"/>'
        '<policyEntry queue="A.B" producerFlowControl="false"/>'
        '<policyEntry tempQueue="true" memoryLimit="2 mb"/>'
        "</policyEntries></policyMap></destinationPolicy>\n",
    ).config
    resolve = broker_options(config).core.policies
    assert resolve is not None
    a = resolve("/queue/", "A.X")
    assert (a.queue_prefetch, a.gc_inactive, a.inactive_timeout_ms) == (20, True, 5000)
    # An entry names what it sets; the rest comes from the default entry, not from ">".
    assert a.memory_limit is None
    assert not resolve("/queue/", "A.B").producer_flow_control
    assert resolve("/queue/", "Z").memory_limit == 1 << 20
    assert resolve("/remote-temp-queue/", "ID-1-x").memory_limit == 2 << 20
    assert resolve("/topic/", "A.X").queue_prefetch == 1000


def test_the_dead_letter_strategies_non_persistent_and_discarding_are_applied(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        "<destinationPolicy><policyMap><policyEntries>"
        '<policyEntry queue="KEEP.>"><deadLetterStrategy><sharedDeadLetterStrategy'
        ' processNonPersistent="true"/></deadLetterStrategy></policyEntry>'
        '<policyEntry queue="DROP.>"><deadLetterStrategy><discarding/></deadLetterStrategy></policyEntry>'
        "</policyEntries></policyMap></destinationPolicy>\n",
    ).config
    assert not_applied(config) == set()
    resolve = broker_options(config).core.policies
    assert resolve is not None
    keep, drop, other = (resolve("/queue/", name) for name in ("KEEP.a", "DROP.a", "other"))
    assert (keep.dead_letter_non_persistent, keep.discard_dead_letters) == (True, False)
    assert (drop.dead_letter_non_persistent, drop.discard_dead_letters) == (False, True)
    # ActiveMQ's defaults: a non-persistent dead letter is dropped, a persistent one kept.
    assert (other.dead_letter_non_persistent, other.discard_dead_letters) == (False, False)


def test_the_statistics_plugin_is_read_and_listed_with_its_line(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, "<plugins>\n<statisticsBrokerPlugin/>\n</plugins>\n")
    # It was a warning ("not implemented"); it is read now, and said where.
    assert "statisticsBrokerPlugin" not in warnings_of(loaded)
    config = loaded.config
    assert config.statistics is not None
    assert config.statistics.source.line == 5
    assert not_applied(config) == set()
    assert broker_options(config).core.statistics
    report = render(config, lambda key: True)
    assert re.search(r"^statisticsBrokerPlugin \(.*activemq.xml:5\)$", report, re.M)
    assert not broker_options(
        load_body(tmp_path, "<plugins><redeliveryPlugin/></plugins>\n").config
    ).core.statistics
