"""Slow consumers' settings on a policyEntry (issue 39 item 4) and the logging and
redelivery plugins' leftovers (item 5): read into typed config with ActiveMQ's defaults
and their lines, applied to each destination's ``DestinationPolicy`` (no "not applied"
mark), listed by ``--check-config`` with FILE:LINE; mistakes are errors naming the line."""

from __future__ import annotations

import re
from pathlib import Path

from broker.core.base.settings import LoggingFlags, SlowConsumerPolicy
from broker.policies import destination_policy, resolver, unmatched_redelivery
from broker.settings_bridge import broker_options, not_applied
from config.model import MessageEviction, PendingMessageLimit, RedeliveryPolicy, SlowConsumerStrategy
from config.report import render
from tests.config.helpers import load_body, one_error, warnings_of


def _entries(*children: str) -> str:
    """A topic entry T0, T1... per body of children, from line 5 on."""
    return (
        "<destinationPolicy><policyMap><policyEntries>\n"
        + "\n".join(f'<policyEntry topic="T{i}">{body}</policyEntry>' for i, body in enumerate(children))
        + "\n</policyEntries></policyMap></destinationPolicy>\n"
    )


def _limit(strategy: str) -> str:
    return f"<pendingMessageLimitStrategy>{strategy}</pendingMessageLimitStrategy>"


LIMITS = _entries(
    _limit("<constantPendingMessageLimitStrategy/>"),
    _limit('<constantPendingMessageLimitStrategy limit="10"/>')
    + "<messageEvictionStrategy><oldestMessageWithLowestPriorityEvictionStrategy/></messageEvictionStrategy>",
    '<pendingMessageLimitStrategy><prefetchRatePendingMessageLimitStrategy multiplier="2.5"/>'
    "</pendingMessageLimitStrategy><messageEvictionStrategy>"
    '<uniquePropertyMessageEvictionStrategy propertyName="sym" evictExpiredMessagesHighWatermark="5"/>'
    "</messageEvictionStrategy>",
    '<slowConsumerStrategy><abortSlowConsumerStrategy maxSlowDuration="5000" maxSlowCount="3"'
    ' checkPeriod="1000" abortConnection="true" ignoreNetworkConsumers="false"/></slowConsumerStrategy>',
    '<slowConsumerStrategy><abortSlowAckConsumerStrategy maxTimeSinceLastAck="2000"'
    ' ignoreIdleConsumers="false"/></slowConsumerStrategy>',
)


def test_each_strategy_with_activemq_s_defaults(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, LIMITS)
    assert "Strategy" not in warnings_of(loaded)
    entries = loaded.config.policies.entries
    assert [e.pending_message_limit for e in entries] == [
        PendingMessageLimit("constant", -1),
        PendingMessageLimit("constant", 10),
        PendingMessageLimit("prefetchRate", multiplier=2.5),
        None,
        None,
    ]
    assert [e.message_eviction for e in entries] == [
        MessageEviction(),
        MessageEviction("oldestLowestPriority"),
        MessageEviction("uniqueProperty", "sym"),
        MessageEviction(),
        MessageEviction(),
    ]
    assert entries[3].slow_consumer == SlowConsumerStrategy("abort", 5000, 3, 1000, True, False)
    assert entries[4].slow_consumer == SlowConsumerStrategy(
        "abortSlowAck", max_time_since_last_ack=2000, ignore_idle_consumers=False
    )
    assert entries[1].origins["pending_message_limit"].line == 6
    assert not_applied(loaded.config) == set()
    policies = [destination_policy(e, RedeliveryPolicy()) for e in entries]
    assert [(p.pending_limit_kind, p.pending_limit, p.pending_multiplier) for p in policies[:3]] == [
        ("constant", -1, 0.5),
        ("constant", 10, 0.5),
        ("prefetchRate", -1, 2.5),
    ]
    assert [(p.eviction, p.eviction_property) for p in policies[:3]] == [
        ("oldest", ""),
        ("oldestLowestPriority", ""),
        ("uniqueProperty", "sym"),
    ]
    assert policies[3].slow_consumer == SlowConsumerPolicy("abort", 5000, 3, 1000, True, False)
    assert policies[4].slow_consumer is not None and policies[4].slow_consumer.kind == "abortSlowAck"


def test_check_config_lists_each_with_its_line(tmp_path: Path) -> None:
    config = load_body(tmp_path, LIMITS + '<plugins><loggingBrokerPlugin logAll="true"/></plugins>\n').config
    report = render(config, lambda key: True)
    for text, line in (
        ("pendingMessageLimitStrategy += constantPendingMessageLimitStrategy limit=10", 6),
        ("messageEvictionStrategy += oldestMessageWithLowestPriorityEvictionStrategy", 6),
        ("messageEvictionStrategy += uniquePropertyMessageEvictionStrategy propertyName=sym", 7),
        ("slowConsumerStrategy += abortSlowConsumerStrategy maxSlowDuration=5000 maxSlowCount=3", 8),
        ("slowConsumerStrategy += abortSlowAckConsumerStrategy maxTimeSinceLastAck=2000", 9),
        ("logAll += true", 11),
    ):
        name, value = text.split(" += ")
        assert re.search(rf"^  {re.escape(name)} += {re.escape(value)}.* \S+:{line}$", report, re.M), text
    assert "not applied" not in report
    assert "loggingBrokerPlugin (" in report


def test_mistakes_are_errors(tmp_path: Path) -> None:
    for body, words in (
        (
            _limit('<constantPendingMessageLimitStrategy limt="3"/>'),
            "unknown attribute 'limt'",
        ),
        (
            _limit('<constantPendingMessageLimitStrategy limit="x"/>'),
            "not a whole number",
        ),
        (
            "<pendingMessageLimitStrategy><oldestMessageEvictionStrategy/></pendingMessageLimitStrategy>",
            "is not a pendingMessageLimitStrategy",
        ),
        ("<pendingMessageLimitStrategy/>", "names no strategy"),
        (
            _limit('<prefetchRatePendingMessageLimitStrategy multiplier="-1"/>'),
            "multiplier",
        ),
        (
            "<messageEvictionStrategy><uniquePropertyMessageEvictionStrategy/></messageEvictionStrategy>",
            "needs propertyName",
        ),
        (
            "<messageEvictionStrategy><fifoEviction/></messageEvictionStrategy>",
            "is not a messageEvictionStrategy",
        ),
        (
            '<slowConsumerStrategy><abortSlowConsumerStrategy checkPeriod="0"/></slowConsumerStrategy>',
            "checkPeriod",
        ),
        (
            '<slowConsumerStrategy><abortSlowConsumerStrategy maxTimeSinceLastAck="1"/>'
            "</slowConsumerStrategy>",
            "maxTimeSinceLastAck",
        ),
    ):
        error = str(one_error(tmp_path, _entries(body)))
        assert words in error and ":5:" in error, (body, error)


def test_logging_plugin_flags(tmp_path: Path) -> None:
    for attrs, flags in (
        ("", LoggingFlags()),
        ('logAll="true"', LoggingFlags(True, True, True, True, True, True)),
        (
            'logConnectionEvents="false" logSessionEvents="false" logConsumerEvents="true" '
            'perDestinationLogger="true"',
            LoggingFlags(False, False, consumers=True, per_destination_logger=True),
        ),
    ):
        config = load_body(tmp_path, f"<plugins><loggingBrokerPlugin {attrs}/></plugins>\n").config
        assert broker_options(config).core.logging == flags
    assert "unknown attribute 'logEverything'" in str(
        one_error(tmp_path, '<plugins><loggingBrokerPlugin logEverything="true"/></plugins>\n')
    )


def test_redelivery_fallback_applies_only_without_an_entry_or_default(tmp_path: Path) -> None:
    def plugin(attrs: str, inner: str) -> str:
        return (
            f"<plugins><redeliveryPlugin {attrs}><redeliveryPolicyMap><redeliveryPolicyMap>{inner}"
            "</redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>\n"
        )

    entry = (
        '<redeliveryPolicyEntries><redeliveryPolicy queue="known.>" maximumRedeliveries="2"/>'
        "</redeliveryPolicyEntries>"
    )
    config = load_body(tmp_path, plugin('fallbackToDeadLetter="false"', entry)).config
    resolve = resolver(config.policies, config.redelivery)
    assert resolve is not None
    known, other = resolve("/queue/", "known.a"), resolve("/queue/", "other")
    assert (known.max_redeliveries, known.redelivery_fallback) == (2, "")
    assert (other.max_redeliveries, other.redelivery_fallback) == (0, "drop")
    config = load_body(tmp_path, plugin("", entry)).config
    assert unmatched_redelivery(config.redelivery) == "dlq"
    # A default entry applies where no other does: nothing falls back.
    default = '<defaultEntry><redeliveryPolicy maximumRedeliveries="1"/></defaultEntry>'
    config = load_body(tmp_path, plugin('fallbackToDeadLetter="false"', entry + default)).config
    assert unmatched_redelivery(config.redelivery) == ""
    # No plugin at all: stompd's own redelivery, as before.
    assert unmatched_redelivery(load_body(tmp_path, "").config.redelivery) == ""
