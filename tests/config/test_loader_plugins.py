"""``<timeStampingBrokerPlugin>`` and ``<forcePersistencyModeBrokerPlugin>``: read into
config.model, listed by --check-config with their lines, handed to the core."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.base.settings import DiscardingDLQ, TimeStamping
from broker.settings_bridge import broker_options, not_applied
from config.model import DiscardingDLQPlugin, ForcePersistencyPlugin, TimeStampingPlugin
from config.report import render
from tests.config.helpers import FIRST_BODY_LINE, errors_of, load_body, warnings_of

if TYPE_CHECKING:
    from pathlib import Path

PLUGINS = (
    "<plugins>\n"
    '<timeStampingBrokerPlugin zeroExpirationOverride="5000" ttlCeiling="60000" futureOnly="true"/>\n'
    '<forcePersistencyModeBrokerPlugin persistenceFlag="true"/>\n'
    "</plugins>\n"
)


def test_the_plugins_are_read_with_their_settings(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, PLUGINS)
    config = loaded.config
    assert config.time_stamping == TimeStampingPlugin(
        zero_expiration_override=5000, ttl_ceiling=60000, future_only=True
    )
    assert config.force_persistency == ForcePersistencyPlugin(persistence_flag=True)
    assert "timeStampingBrokerPlugin" not in warnings_of(loaded)
    assert "forcePersistencyModeBrokerPlugin" not in warnings_of(loaded)
    core = broker_options(config).core
    assert core.time_stamping == TimeStamping(5000, 60000, True, False)
    assert core.persistence_flag is True


def test_none_configured_is_none_in_the_core(tmp_path: Path) -> None:
    config = load_body(tmp_path, "<plugins><statisticsBrokerPlugin/></plugins>\n").config
    assert config.time_stamping is None and config.force_persistency is None
    core = broker_options(config).core
    assert core.time_stamping is None and core.persistence_flag is None


def test_check_config_lists_each_with_its_line(tmp_path: Path) -> None:
    config = load_body(tmp_path, PLUGINS).config
    unapplied = not_applied(config)
    report = render(config, lambda key: key not in unapplied)
    path = tmp_path / "activemq.xml"
    assert f"timeStampingBrokerPlugin ({path}:{FIRST_BODY_LINE + 1})" in report
    assert f"forcePersistencyModeBrokerPlugin ({path}:{FIRST_BODY_LINE + 2})" in report
    assert "not applied" not in report.split("timeStampingBrokerPlugin", 1)[1].split("httpServer")[0]


def test_a_bad_value_is_an_error_naming_the_attribute(tmp_path: Path) -> None:
    (error,) = errors_of(tmp_path, '<plugins><timeStampingBrokerPlugin ttlCeiling="soon"/></plugins>\n')
    assert 'ttlCeiling="soon"' in str(error)
    (error,) = errors_of(
        tmp_path, '<plugins><forcePersistencyModeBrokerPlugin persistenceFlag="maybe"/></plugins>\n'
    )
    assert "persistenceFlag" in str(error)


def test_an_unknown_attribute_is_an_error(tmp_path: Path) -> None:
    (error,) = errors_of(tmp_path, '<plugins><timeStampingBrokerPlugin ttlCeil="1"/></plugins>\n')
    assert "ttlCeil" in str(error)


def test_discarding_dlq_is_read_with_activemqs_defaults(tmp_path: Path) -> None:
    body = (
        "<plugins>"
        '<discardingDLQBrokerPlugin dropAll="false" dropOnly="ORDERS\\..* Q.87" reportInterval="10"/>'
        "</plugins>\n"
    )
    loaded = load_body(tmp_path, body)
    plugin = loaded.config.discarding_dlq
    assert plugin == DiscardingDLQPlugin(
        drop_all=False, drop_only=("ORDERS\\..*", "Q.87"), report_interval=10
    )
    assert (plugin.drop_temporary_queues, plugin.drop_temporary_topics) == (True, True)
    assert "discardingDLQBrokerPlugin" not in warnings_of(loaded)
    assert broker_options(loaded.config).core.discarding_dlq == DiscardingDLQ(
        drop_all=False, drop_only=("ORDERS\\..*", "Q.87"), report_interval=10
    )
    unapplied = not_applied(loaded.config)
    report = render(loaded.config, lambda key: key not in unapplied)
    assert f"discardingDLQBrokerPlugin ({tmp_path / 'activemq.xml'}:{FIRST_BODY_LINE})" in report


def test_a_drop_only_that_is_no_regular_expression_is_an_error(tmp_path: Path) -> None:
    (error,) = errors_of(tmp_path, '<plugins><discardingDLQBrokerPlugin dropOnly="ok (bad"/></plugins>\n')
    assert "'(bad' is not a regular expression" in str(error)
