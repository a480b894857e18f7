"""``<subscriptionRecoveryPolicy>`` and ``alwaysRetroactive`` on a policyEntry (issue 39
item 3): read into ``PolicyEntry.subscription_recovery`` with ActiveMQ's defaults and its
line, applied to each topic's ``DestinationPolicy`` (no "not applied" warning)."""

from __future__ import annotations

from pathlib import Path

from broker.policies import destination_policy
from broker.settings_bridge import not_applied
from config.model import RedeliveryPolicy, SubscriptionRecovery
from tests.config.helpers import load_body, one_error, warnings_of


def _policies(*entries: str) -> str:
    """An entry per ``POLICY`` or ``POLICY|MORE ATTRIBUTES``, from line 5 on."""
    return (
        "<destinationPolicy><policyMap><policyEntries>\n"
        + "\n".join(
            f'<policyEntry topic="T{i}"{more}><subscriptionRecoveryPolicy>{policy}'
            "</subscriptionRecoveryPolicy></policyEntry>"
            for i, (policy, more) in enumerate(
                entry.split("|") if "|" in entry else (entry, "") for entry in entries
            )
        )
        + "\n</policyEntries></policyMap></destinationPolicy>\n"
    )


def test_each_policy_with_activemq_s_defaults(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        _policies(
            "<fixedCountSubscriptionRecoveryPolicy/>",
            '<fixedCountSubscriptionRecoveryPolicy maximumSize="7"/>',
            "<fixedSizedSubscriptionRecoveryPolicy/>",
            '<fixedSizedSubscriptionRecoveryPolicy maximumSize="1 kb" useSharedBuffer="false"/>',
            "<lastImageSubscriptionRecoveryPolicy/>",
            "<timedSubscriptionRecoveryPolicy/>",
            '<timedSubscriptionRecoveryPolicy recoverDuration="5000"/>',
            "<noSubscriptionRecoveryPolicy/>",
            "<retainedMessageSubscriptionRecoveryPolicy/>",
            "<retainedMessageSubscriptionRecoveryPolicy><wrapped><lastImageSubscriptionRecoveryPolicy/>"
            '</wrapped></retainedMessageSubscriptionRecoveryPolicy>| alwaysRetroactive="true"',
        ),
    )
    assert "Recovery" not in warnings_of(loaded)
    got = [entry.subscription_recovery for entry in loaded.config.policies.entries]
    assert got == [
        SubscriptionRecovery("fixedCount", 100),
        SubscriptionRecovery("fixedCount", 7),
        SubscriptionRecovery("fixedSize", 64 * 1024),
        SubscriptionRecovery("fixedSize", 1024),
        SubscriptionRecovery("lastImage"),
        SubscriptionRecovery("timed", 0, 60000),
        SubscriptionRecovery("timed", 0, 5000),
        SubscriptionRecovery("none"),
        SubscriptionRecovery("none"),
        SubscriptionRecovery("lastImage"),
    ]
    entries = loaded.config.policies.entries
    assert [e.always_retroactive for e in entries] == [False] * 9 + [True]
    # Where it came from, for --check-config: the policy element's line.
    assert entries[1].origins["subscription_recovery"].line == 6
    assert not_applied(loaded.config) == set()
    policies = [destination_policy(e, RedeliveryPolicy()) for e in entries]
    assert [(p.recovery_kind, p.recovery_maximum) for p in policies] == [
        ("fixedCount", 100),
        ("fixedCount", 7),
        ("fixedSize", 65536),
        ("fixedSize", 1024),
        ("lastImage", 0),
        ("timed", 60000),
        ("timed", 5000),
        ("", 0),
        ("", 0),
        ("lastImage", 0),
    ]
    assert policies[-1].always_retroactive


def test_the_query_based_policy_is_warned_of_and_ignored(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, _policies("<queryBasedSubscriptionRecoveryPolicy/>"))
    assert "MessageQuery is a Java bean stompd cannot run" in warnings_of(loaded)
    assert loaded.config.policies.entries[0].subscription_recovery == SubscriptionRecovery()


def test_mistakes_are_errors(tmp_path: Path) -> None:
    assert "unknown attribute 'maximumSiz'" in str(
        one_error(tmp_path, _policies('<fixedCountSubscriptionRecoveryPolicy maximumSiz="3"/>'))
    )
    assert "names no policy" in str(one_error(tmp_path, _policies("")))
    assert "maximumSize" in str(
        one_error(tmp_path, _policies('<fixedCountSubscriptionRecoveryPolicy maximumSize="0"/>'))
    )
