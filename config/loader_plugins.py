"""``<plugins>``' message plugins: ``<timeStampingBrokerPlugin>``,
``<forcePersistencyModeBrokerPlugin>``, ``<discardingDLQBrokerPlugin>`` and
``<loggingBrokerPlugin>`` (the last of each, if several)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from config.model import DiscardingDLQPlugin, ForcePersistencyPlugin, LoggingPlugin, TimeStampingPlugin
from config.reader import Context, Fields, boolean, integer

if TYPE_CHECKING:
    from config.xmltree import Node

#: The plugins this module reads; ``load_plugins`` leaves them to it.
TAGS = frozenset(
    {
        "timeStampingBrokerPlugin",
        "forcePersistencyModeBrokerPlugin",
        "discardingDLQBrokerPlugin",
        "loggingBrokerPlugin",
    }
)


def time_stamping(ctx: Context, node: Node) -> TimeStampingPlugin | None:
    found = None
    for child in _each(ctx, node, "timeStampingBrokerPlugin"):
        fields = Fields(ctx, child, "timeStampingBrokerPlugin")
        # ActiveMQ takes a negative one as none (its checks are "> 0"); so does stompd.
        fields.get("zeroExpirationOverride", "zero_expiration_override", integer())
        fields.get("ttlCeiling", "ttl_ceiling", integer())
        fields.get("futureOnly", "future_only", boolean)
        fields.get("processNetworkMessages", "process_network_messages", boolean)
        fields.finish()
        found = TimeStampingPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


def force_persistency(ctx: Context, node: Node) -> ForcePersistencyPlugin | None:
    found = None
    for child in _each(ctx, node, "forcePersistencyModeBrokerPlugin"):
        fields = Fields(ctx, child, "forcePersistencyModeBrokerPlugin")
        fields.get("persistenceFlag", "persistence_flag", boolean)
        fields.finish()
        found = ForcePersistencyPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


def discarding_dlq(ctx: Context, node: Node) -> DiscardingDLQPlugin | None:
    found = None
    for child in _each(ctx, node, "discardingDLQBrokerPlugin"):
        fields = Fields(ctx, child, "discardingDLQBrokerPlugin")
        fields.get("dropAll", "drop_all", boolean)
        fields.get("dropTemporaryQueues", "drop_temporary_queues", boolean)
        fields.get("dropTemporaryTopics", "drop_temporary_topics", boolean)
        fields.get("dropOnly", "drop_only", _patterns)
        fields.get("reportInterval", "report_interval", integer())
        fields.finish()
        found = DiscardingDLQPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


_LOGGING_FLAGS = (
    ("logAll", "log_all"),
    ("logConnectionEvents", "log_connection_events"),
    ("logSessionEvents", "log_session_events"),
    ("logTransactionEvents", "log_transaction_events"),
    ("logConsumerEvents", "log_consumer_events"),
    ("logProducerEvents", "log_producer_events"),
    ("logInternalEvents", "log_internal_events"),
    ("perDestinationLogger", "per_destination_logger"),
)


def logging_plugin(ctx: Context, node: Node) -> LoggingPlugin | None:
    found = None
    for child in _each(ctx, node, "loggingBrokerPlugin"):
        fields = Fields(ctx, child, "loggingBrokerPlugin")
        for attr, name in _LOGGING_FLAGS:
            fields.get(attr, name, boolean)
        fields.finish()
        found = LoggingPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


def _patterns(text: str) -> tuple[str, ...]:
    """``dropOnly``: space-separated regular expressions (Java's there, Python's here:
    the same for names, dots and wildcards as ActiveMQ's documentation writes them)."""
    patterns = tuple(text.split())
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return patterns


def _each(ctx: Context, node: Node, tag: str) -> list[Node]:
    found = [child for child in node.children if child.tag == tag]
    for child in found:
        for grandchild in child.children:
            ctx.unexpected(grandchild, tag)
    return found
