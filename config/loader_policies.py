"""``<destinationPolicy>`` and ``<redeliveryPlugin>``: settings per destination pattern.

Both are ActiveMQ DestinationMaps: entries for ``queue=``/``topic=`` patterns (or
``tempQueue="true"``/``tempTopic="true"``) and a ``<defaultEntry>``.  Each entry is stored
resolved: what it sets, else the default entry's value (see config/model.py).
"""

from __future__ import annotations

from dataclasses import fields as dataclass_fields
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import wildcards
from config.model import (
    Cursor,
    DeadLetterStrategy,
    DestinationKind,
    MessageEviction,
    PendingMessageLimit,
    PolicyEntry,
    PolicyMap,
    RedeliveryPlugin,
    RedeliveryPolicy,
    SlowConsumerStrategy,
    SubscriptionRecovery,
)
from config.reader import Context, Fields, boolean, duration, integer, nonempty, number, percent, size

if TYPE_CHECKING:
    from collections.abc import Callable

    from config.model import Origin
    from config.xmltree import Node

E = TypeVar("E", PolicyEntry, RedeliveryPolicy)

#: Fields of an entry that are not settings inherited from the default entry.
_IDENTITY = frozenset({"kind", "pattern", "explicit", "source", "origins"})

_POLICY_ATTRIBUTES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "producerFlowControl": ("producer_flow_control", boolean),
    "memoryLimit": ("memory_limit", lambda value: _positive_size(value)),
    "cursorMemoryHighWaterMark": ("cursor_memory_high_water_mark", percent),
    "prioritizedMessages": ("prioritized_messages", boolean),
    "maxPageSize": ("max_page_size", integer(1)),
    "expireMessagesPeriod": ("expire_messages_period", duration),
    "queuePrefetch": ("queue_prefetch", integer(0)),
    "topicPrefetch": ("topic_prefetch", integer(0)),
    "durableTopicPrefetch": ("durable_topic_prefetch", integer(0)),
    "queueBrowserPrefetch": ("queue_browser_prefetch", integer(0)),
    "gcInactiveDestinations": ("gc_inactive_destinations", boolean),
    # ActiveMQ's setter has the typo; later versions accept the right spelling too.
    "inactiveTimoutBeforeGC": ("inactive_timeout_before_gc", duration),
    "inactiveTimeoutBeforeGC": ("inactive_timeout_before_gc", duration),
    "maxDestinations": ("max_destinations", integer(-1)),
    "alwaysRetroactive": ("always_retroactive", boolean),
    "advisoryForDelivery": ("advisory_for_delivery", boolean),
    "advisoryForConsumed": ("advisory_for_consumed", boolean),
    "advisoryForSlowConsumers": ("advisory_for_slow_consumers", boolean),
    "advisoryForFastProducers": ("advisory_for_fast_producers", boolean),
    "advisoryWhenFull": ("advisory_when_full", boolean),
}
_REDELIVERY_ATTRIBUTES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "maximumRedeliveries": ("maximum_redeliveries", integer(-1)),
    "initialRedeliveryDelay": ("initial_redelivery_delay", duration),
    "redeliveryDelay": ("redelivery_delay", duration),
    "useExponentialBackOff": ("use_exponential_back_off", boolean),
    "backOffMultiplier": ("back_off_multiplier", number(1.0)),
    "maximumRedeliveryDelay": ("maximum_redelivery_delay", integer(-1)),
}
#: Cursor elements per policy attribute: element -> file or vm.
_CURSORS: dict[str, tuple[str, dict[str, Cursor]]] = {
    "pendingQueuePolicy": (
        "pending_queue_policy",
        {"vmQueueCursor": "vm", "fileQueueCursor": "file", "storeCursor": "file"},
    ),
    "pendingSubscriberPolicy": ("pending_subscriber_policy", {"vmCursor": "vm", "fileCursor": "file"}),
    "pendingDurableSubscriberPolicy": (
        "pending_durable_subscriber_policy",
        {
            "vmDurableCursor": "vm",
            "fileDurableSubscriberCursor": "file",
            "storeDurableSubscriberCursor": "file",
        },
    ),
}
_DEAD_LETTER_ELEMENTS = {
    "sharedDeadLetterStrategy": "shared",
    "individualDeadLetterStrategy": "individual",
    "discarding": "discarding",
    "discardingDeadLetterStrategy": "discarding",
}


def _positive_size(value: str) -> int:
    result = size(value)
    if result == 0:
        raise ValueError("a memory limit of 0 would hold every producer forever; leave it out for none")
    return result


def destination(ctx: Context, fields: Fields) -> tuple[DestinationKind, str] | None:
    """The entry's ``queue``/``topic``/``tempQueue``/``tempTopic``, its pattern checked."""
    named: list[tuple[DestinationKind, str]] = []
    for attr, kind in (("queue", "queue"), ("topic", "topic")):
        found = fields.raw(attr)
        if found is not None:
            reason = wildcards.problem(found[0])
            if reason is not None:
                ctx.error(fields.node, f'{attr}="{found[0]}": {reason}')
                return None
            named.append((kind, found[0]))  # type: ignore[arg-type]
    for attr, kind in (("tempQueue", "temp-queue"), ("tempTopic", "temp-topic")):
        flag = fields.get(attr, attr, boolean)
        fields.values.pop(attr, None)
        fields.origins.pop(attr, None)
        if flag:
            named.append((kind, ">"))  # type: ignore[arg-type]
    if len(named) == 1:
        return named[0]
    if not named and not any(
        attr in fields.node.attrs for attr in ("queue", "topic", "tempQueue", "tempTopic")
    ):
        ctx.error(
            fields.node, 'names no destination: give queue="PATTERN", topic="PATTERN", or tempQueue="true"'
        )
    elif named:
        ctx.error(fields.node, "names more than one destination kind; write one entry per kind")
    return None


def _entry(default: E, kind: DestinationKind, pattern: str, fields: Fields, source: Origin) -> E:
    return replace(
        default,
        kind=kind,
        pattern=pattern,
        explicit=frozenset(fields.values),
        source=source,
        origins={**default.origins, **fields.origins},
        **fields.values,
    )


def reinherit(entry: E, default: E) -> E:
    """``entry`` with every setting it does not set itself taken again from ``default``."""
    inherited = {
        f.name: getattr(default, f.name)
        for f in dataclass_fields(default)
        if f.name not in _IDENTITY and f.name not in entry.explicit
    }
    origins = {
        **entry.origins,
        **{name: default.origins[name] for name in inherited if name in default.origins},
    }
    for name in inherited:
        if name not in default.origins:
            origins.pop(name, None)
    return replace(entry, origins=origins, **inherited)


def _warn_duplicates(ctx: Context, entries: list[E], path: str) -> None:
    seen: dict[tuple[str | None, str], E] = {}
    for entry in entries:
        key = (entry.kind, entry.pattern)
        if key in seen:
            ctx.issues.warn(
                entry.source.line,
                path,
                f"a second entry for {entry.kind} {entry.pattern!r} (the first, line "
                f"{seen[key].source.line}, applies)",
            )
        else:
            seen[key] = entry


# destinationPolicy


def load_destination_policy(ctx: Context, node: Node) -> PolicyMap:
    maps = node.child_elements("policyMap")
    for child in node.children:
        if child.tag != "policyMap":
            ctx.unexpected(child, "destinationPolicy")
    if not maps:
        return PolicyMap()
    policy_map = maps[0]
    Fields(ctx, policy_map, "policyMap").finish()
    default = PolicyEntry()
    for child in policy_map.child_elements("defaultEntry"):
        for entry_node in child.children:
            if entry_node.tag == "policyEntry":
                fields = _policy_fields(ctx, entry_node)
                for attr in ("queue", "topic", "tempQueue", "tempTopic"):
                    if attr in entry_node.attrs:
                        ctx.warn(
                            entry_node, f"{attr}: the default entry applies to every destination; ignored"
                        )
                        fields.skip(attr)
                fields.finish()
                default = PolicyEntry(**fields.values, origins=fields.origins, source=ctx.origin(entry_node))
            else:
                ctx.unexpected(entry_node, "defaultEntry")
    entries: list[PolicyEntry] = []
    for child in policy_map.children:
        if child.tag == "policyEntries":
            for entry_node in child.children:
                if entry_node.tag != "policyEntry":
                    ctx.unexpected(entry_node, "policyEntries")
                    continue
                fields = _policy_fields(ctx, entry_node)
                where = destination(ctx, fields)
                fields.finish()
                if where is not None:
                    entries.append(_entry(default, where[0], where[1], fields, ctx.origin(entry_node)))
        elif child.tag != "defaultEntry":
            ctx.unexpected(child, "policyMap")
    _warn_duplicates(ctx, entries, "broker/destinationPolicy/policyMap/policyEntries/policyEntry")
    return PolicyMap(entries=tuple(entries), default=default)


def _policy_fields(ctx: Context, node: Node) -> Fields:
    fields = Fields(ctx, node, "policyEntry")
    for attr, (name, convert) in _POLICY_ATTRIBUTES.items():
        fields.get(attr, name, convert)
    for child in node.children:
        if child.tag in _CURSORS:
            cursor = _cursor(ctx, child)
            if cursor is not None:
                name = _CURSORS[child.tag][0]
                fields.values[name] = cursor
                fields.origins[name] = ctx.origin(child)
        elif child.tag == "deadLetterStrategy":
            strategy = _dead_letter(ctx, child)
            if strategy is not None:
                fields.values["dead_letter"] = strategy
                fields.origins["dead_letter"] = strategy.origins.get("kind", ctx.origin(child))
        elif child.tag == "subscriptionRecoveryPolicy":
            recovery = _recovery_holder(ctx, child)
            if recovery is not None:
                fields.values["subscription_recovery"] = recovery[0]
                fields.origins["subscription_recovery"] = recovery[1]
        elif child.tag in _HOLDERS:
            name, read = _HOLDERS[child.tag]
            found = _one_of(ctx, child, read)
            if found is not None:
                fields.values[name] = found[0]
                fields.origins[name] = found[1]
        else:
            ctx.unexpected(child, "policyEntry")
    return fields


def _one_of(
    ctx: Context, node: Node, read: Callable[[Context, Node], Any | None]
) -> tuple[Any, Origin] | None:
    """A holder element's one strategy (the last, if several), and where it was written."""
    chosen: tuple[Any, Origin] | None = None
    for child in node.children:
        value = read(ctx, child)
        if value is not None:
            chosen = (value, ctx.origin(child))
    if chosen is None and not node.children:
        ctx.error(node, "names no strategy")
    return chosen


def _pending_limit(ctx: Context, node: Node) -> PendingMessageLimit | None:
    fields = Fields(ctx, node, node.tag)
    if node.tag == "constantPendingMessageLimitStrategy":
        # ActiveMQ's getMaximumPendingMessageLimit: any negative value is "no limit".
        fields.get("limit", "limit", integer())
        fields.finish()
        return PendingMessageLimit("constant", **fields.values)
    if node.tag == "prefetchRatePendingMessageLimitStrategy":
        fields.get("multiplier", "multiplier", number(0.0))
        fields.finish()
        return PendingMessageLimit("prefetchRate", **fields.values)
    ctx.error(
        node,
        f"<{node.tag}> is not a pendingMessageLimitStrategy: use constantPendingMessageLimitStrategy"
        " or prefetchRatePendingMessageLimitStrategy",
    )
    return None


_EVICTIONS: dict[str, str] = {
    "oldestMessageEvictionStrategy": "oldest",
    "oldestMessageWithLowestPriorityEvictionStrategy": "oldestLowestPriority",
    "uniquePropertyMessageEvictionStrategy": "uniqueProperty",
}


def _eviction(ctx: Context, node: Node) -> MessageEviction | None:
    kind = _EVICTIONS.get(node.tag)
    if kind is None:
        ctx.error(
            node,
            f"<{node.tag}> is not a messageEvictionStrategy: use one of " + ", ".join(sorted(_EVICTIONS)),
        )
        return None
    fields = Fields(ctx, node, node.tag)
    # ActiveMQ evicts expired messages first past this many pending; stompd drops an
    # expired message whenever it meets one, so there is nothing to set.
    fields.skip("evictExpiredMessagesHighWatermark")
    if kind == "uniqueProperty":
        name = fields.get("propertyName", "property_name", nonempty)
        if name is None and "propertyName" not in node.attrs:
            ctx.error(node, "needs propertyName: the header whose values are kept one each")
    fields.finish()
    return MessageEviction(kind, **fields.values)  # type: ignore[arg-type]


_SLOW_KINDS: dict[str, str] = {
    "abortSlowConsumerStrategy": "abort",
    "abortSlowAckConsumerStrategy": "abortSlowAck",
}


def _slow_consumer(ctx: Context, node: Node) -> SlowConsumerStrategy | None:
    kind = _SLOW_KINDS.get(node.tag)
    if kind is None:
        ctx.error(
            node,
            f"<{node.tag}> is not a slowConsumerStrategy: use abortSlowConsumerStrategy or"
            " abortSlowAckConsumerStrategy",
        )
        return None
    fields = Fields(ctx, node, node.tag)
    fields.get("maxSlowDuration", "max_slow_duration", integer())
    fields.get("maxSlowCount", "max_slow_count", integer())
    fields.get("checkPeriod", "check_period", integer(1))
    fields.get("abortConnection", "abort_connection", boolean)
    fields.get("ignoreNetworkConsumers", "ignore_network_consumers", boolean)
    fields.skip("name")
    if kind == "abortSlowAck":
        fields.get("maxTimeSinceLastAck", "max_time_since_last_ack", integer())
        fields.get("ignoreIdleConsumers", "ignore_idle_consumers", boolean)
    fields.finish()
    return SlowConsumerStrategy(kind, **fields.values)  # type: ignore[arg-type]


#: Holder elements of a policyEntry read by ``_one_of``: the field, and the reader.
_HOLDERS: dict[str, tuple[str, Callable[[Context, Node], Any | None]]] = {
    "pendingMessageLimitStrategy": ("pending_message_limit", _pending_limit),
    "messageEvictionStrategy": ("message_eviction", _eviction),
    "slowConsumerStrategy": ("slow_consumer", _slow_consumer),
}


#: Recovery policy elements -> kind, and its ActiveMQ default maximumSize.
_RECOVERY: dict[str, tuple[str, int]] = {
    "fixedCountSubscriptionRecoveryPolicy": ("fixedCount", 100),
    "fixedSizedSubscriptionRecoveryPolicy": ("fixedSize", 64 * 1024),
    "lastImageSubscriptionRecoveryPolicy": ("lastImage", 0),
    "timedSubscriptionRecoveryPolicy": ("timed", 0),
    "noSubscriptionRecoveryPolicy": ("none", 0),
}


def _recovery_holder(ctx: Context, node: Node) -> tuple[SubscriptionRecovery, Origin] | None:
    """``<subscriptionRecoveryPolicy>``'s one policy element."""
    chosen: tuple[SubscriptionRecovery, Origin] | None = None
    for child in node.children:
        found = _recovery(ctx, child)
        if found is not None:
            chosen = found
    if chosen is None and not node.children:
        ctx.error(node, "names no policy: use one of " + ", ".join(sorted(_RECOVERY)))
    return chosen


def _recovery(ctx: Context, node: Node) -> tuple[SubscriptionRecovery, Origin] | None:
    if node.tag == "retainedMessageSubscriptionRecoveryPolicy":
        # Every topic retains already (ActiveMQ's Topic wraps whatever it is given in one):
        # this adds only what it wraps.
        Fields(ctx, node, node.tag).finish()
        wrapped: tuple[SubscriptionRecovery, Origin] | None = None
        for holder in node.children:
            if holder.tag != "wrapped":
                ctx.unexpected(holder, node.tag)
                continue
            for inner in holder.children:
                wrapped = _recovery(ctx, inner) or wrapped
        return wrapped or (SubscriptionRecovery(), ctx.origin(node))
    if node.tag == "queryBasedSubscriptionRecoveryPolicy":
        ctx.warn(
            node,
            "ignored: its MessageQuery is a Java bean stompd cannot run; topics keep nothing"
            " for retroactive subscribers but their ActiveMQ.Retain message",
        )
        return None
    known = _RECOVERY.get(node.tag)
    if known is None:
        ctx.unexpected(node, "subscriptionRecoveryPolicy")
        return None
    kind, maximum = known
    fields = Fields(ctx, node, node.tag)
    if kind in ("fixedCount", "fixedSize"):
        fields.get("maximumSize", "maximum_size", integer(1) if kind == "fixedCount" else size)
        if kind == "fixedSize":
            # Read, and meaningless: each topic has a buffer of its own either way, as
            # ActiveMQ's PolicyEntry copies the policy (and so makes a buffer) per topic.
            fields.get("useSharedBuffer", "use_shared_buffer", boolean)
            fields.values.pop("use_shared_buffer", None)
            fields.origins.pop("use_shared_buffer", None)
    elif kind == "timed":
        fields.get("recoverDuration", "recover_duration", duration)
    fields.finish()
    values = {"maximum_size": maximum, **fields.values}
    return SubscriptionRecovery(kind=kind, **values), ctx.origin(node)  # type: ignore[arg-type]


def _cursor(ctx: Context, node: Node) -> Cursor | None:
    known = _CURSORS[node.tag][1]
    chosen: Cursor | None = None
    for child in node.children:
        if child.tag in known:
            chosen = known[child.tag]
            Fields(ctx, child, child.tag).finish()
        else:
            ctx.error(
                child, f"<{child.tag}> is not a {node.tag} cursor: use one of {', '.join(sorted(known))}"
            )
    return chosen


def _dead_letter(ctx: Context, node: Node) -> DeadLetterStrategy | None:
    chosen: DeadLetterStrategy | None = None
    for child in node.children:
        kind = _DEAD_LETTER_ELEMENTS.get(child.tag)
        if kind is None:
            ctx.unexpected(child, "deadLetterStrategy")
            continue
        element = "sharedDeadLetterStrategy" if kind == "discarding" else child.tag
        fields = Fields(ctx, child, element)
        for attr, name, convert in (
            ("processExpired", "process_expired", boolean),
            ("processNonPersistent", "process_non_persistent", boolean),
            ("expiration", "expiration", duration),
        ):
            fields.get(attr, name, convert)
        if kind == "individual":
            for attr, name in (
                ("queuePrefix", "queue_prefix"),
                ("topicPrefix", "topic_prefix"),
                ("queueSuffix", "queue_suffix"),
                ("topicSuffix", "topic_suffix"),
            ):
                fields.get(attr, name, _name_part)
            fields.get("useQueueForQueueMessages", "use_queue_for_queue_messages", boolean)
            fields.get("useQueueForTopicMessages", "use_queue_for_topic_messages", boolean)
        elif kind == "shared":
            _shared_queue(ctx, child, fields)
        fields.finish()
        origin = ctx.origin(child)
        chosen = DeadLetterStrategy(kind=kind, **fields.values, origins={"kind": origin, **fields.origins})  # type: ignore[arg-type]
    if chosen is None and not node.children:
        ctx.error(node, "names no strategy: use sharedDeadLetterStrategy or individualDeadLetterStrategy")
    return chosen


def _shared_queue(ctx: Context, node: Node, fields: Fields) -> None:
    for child in node.children:
        if child.tag != "deadLetterQueue":
            ctx.unexpected(child, node.tag)
            continue
        for queue in child.children:
            found = ctx.attr(queue, "physicalName") if queue.tag == "queue" else None
            if found is None:
                ctx.error(queue, 'the dead-letter queue is written <queue physicalName="NAME"/>')
                continue
            try:
                fields.values["dead_letter_queue"] = _queue_name(found[0])
                fields.origins["dead_letter_queue"] = found[1]
            except ValueError as exc:
                ctx.error(queue, f'physicalName="{found[0]}": {exc}')


def _name_part(value: str) -> str:
    if any(char in value for char in "*>,"):
        raise ValueError("must be plain name text, without wildcards or commas")
    return value


def _queue_name(value: str) -> str:
    reason = wildcards.problem(value)
    if reason is not None or wildcards.has_wildcard_element(value) or "," in value:
        raise ValueError(reason or "a dead-letter queue is one plain queue name, without wildcards")
    return value


# redeliveryPlugin


def load_redelivery(ctx: Context, node: Node) -> RedeliveryPlugin:
    fields = Fields(ctx, node, "redeliveryPlugin")
    fields.get("fallbackToDeadLetter", "fallback_to_dead_letter", boolean)
    fields.get("sendToDlqIfMaxRetriesExceeded", "send_to_dlq_if_max_retries_exceeded", boolean)
    fields.finish()
    default = RedeliveryPolicy()
    entries: list[RedeliveryPolicy] = []
    for holder in node.children:
        if holder.tag != "redeliveryPolicyMap":
            ctx.unexpected(holder, "redeliveryPlugin")
            continue
        for policy_map in holder.children:
            if policy_map.tag != "redeliveryPolicyMap":
                ctx.unexpected(policy_map, "redeliveryPolicyMap")
                continue
            Fields(ctx, policy_map, "redeliveryPolicyMap").finish()
            for child in policy_map.child_elements("defaultEntry"):
                for entry_node in child.children:
                    if entry_node.tag != "redeliveryPolicy":
                        ctx.unexpected(entry_node, "defaultEntry")
                        continue
                    entry_fields = _redelivery_fields(ctx, entry_node)
                    entry_fields.skip("queue", "topic", "tempQueue", "tempTopic")
                    entry_fields.finish()
                    default = RedeliveryPolicy(
                        **entry_fields.values, origins=entry_fields.origins, source=ctx.origin(entry_node)
                    )
            for child in policy_map.children:
                if child.tag == "redeliveryPolicyEntries":
                    entries.extend(_redelivery_entries(ctx, child, default))
                elif child.tag != "defaultEntry":
                    ctx.unexpected(child, "redeliveryPolicyMap")
    _warn_duplicates(ctx, entries, "broker/plugins/redeliveryPlugin/redeliveryPolicyMap")
    return RedeliveryPlugin(
        entries=tuple(reinherit(entry, default) for entry in entries),
        default=default,
        **fields.values,
        source=ctx.origin(node),
        origins=fields.origins,
    )


def _redelivery_entries(ctx: Context, node: Node, default: RedeliveryPolicy) -> list[RedeliveryPolicy]:
    entries: list[RedeliveryPolicy] = []
    for entry_node in node.children:
        if entry_node.tag != "redeliveryPolicy":
            ctx.unexpected(entry_node, "redeliveryPolicyEntries")
            continue
        fields = _redelivery_fields(ctx, entry_node)
        where = destination(ctx, fields)
        fields.finish()
        if where is not None:
            entries.append(_entry(default, where[0], where[1], fields, ctx.origin(entry_node)))
    return entries


def _redelivery_fields(ctx: Context, node: Node) -> Fields:
    fields = Fields(ctx, node, "redeliveryPolicy")
    for attr, (name, convert) in _REDELIVERY_ATTRIBUTES.items():
        fields.get(attr, name, convert)
    for child in node.children:
        ctx.unexpected(child, "redeliveryPolicy")
    return fields
