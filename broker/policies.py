"""<destinationPolicy> and <redeliveryPlugin> entries -> each destination's policy.

The entry that applies is ActiveMQ's choice (wildcards.choose: an exact name,
else the most specific pattern), else the default entry; the loader has already filled
what an entry leaves out from the default entry.  The core asks once per destination,
when it is made (broker/core/delivery/destinations.py ``policy_of``); destinations under the
same entries share one policy object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base import names
from broker.core.base.settings import (
    ADVISE_CONSUMED,
    ADVISE_DELIVERY,
    ADVISE_FAST,
    ADVISE_FULL,
    ADVISE_SLOW,
    DestinationPolicy,
    SlowConsumerPolicy,
)
from config.model import origin_of
from wildcards import choose

if TYPE_CHECKING:
    from collections.abc import Callable

    from config.model import PolicyEntry, PolicyMap, RedeliveryPlugin, RedeliveryPolicy, SlowConsumerStrategy

_KINDS: Final = {
    names.QUEUE: "queue",
    names.TOPIC: "topic",
    names.REMOTE_TEMP_QUEUE: "temp-queue",
    names.REMOTE_TEMP_TOPIC: "temp-topic",
    names.TEMP_QUEUE: "temp-queue",
    names.TEMP_TOPIC: "temp-topic",
}


def destination_policy(
    entry: PolicyEntry, redelivery: RedeliveryPolicy, fallback: str = ""
) -> DestinationPolicy:
    """``fallback``: "dlq" or "drop" where a ``<redeliveryPlugin>`` has no entry for the
    destination (``redelivery_fallback``); then a message given back is not redelivered."""
    dead_letter = entry.dead_letter
    limit = entry.pending_message_limit
    eviction = entry.message_eviction
    scope = f"{entry.kind}://{entry.pattern}" if entry.kind is not None else ""
    individual = dead_letter.kind == "individual"
    recovery = entry.subscription_recovery
    return DestinationPolicy(
        producer_flow_control=entry.producer_flow_control,
        memory_limit=entry.memory_limit,
        cursor_high_water=entry.cursor_memory_high_water_mark / 100,
        queue_prefetch=entry.queue_prefetch,
        topic_prefetch=entry.topic_prefetch,
        # ActiveMQ's RedeliveryPlugin, finding no entry, dead-letters (or drops) at once.
        max_redeliveries=0 if fallback else redelivery.maximum_redeliveries,
        redelivery_delay_ms=redelivery.redelivery_delay,
        initial_redelivery_delay_ms=_or(initial_delay(redelivery), redelivery.redelivery_delay),
        use_exponential_back_off=redelivery.use_exponential_back_off,
        back_off_multiplier=redelivery.back_off_multiplier,
        maximum_redelivery_delay_ms=redelivery.maximum_redelivery_delay,
        durable_topic_prefetch=entry.durable_topic_prefetch,
        queue_browser_prefetch=entry.queue_browser_prefetch,
        prioritized=entry.prioritized_messages,
        dead_letter_queue=f"/queue/{dead_letter.dead_letter_queue}",
        individual_dead_letter_prefix=dead_letter.queue_prefix if individual else None,
        individual_dead_letter_topic_prefix=dead_letter.topic_prefix,
        dead_letter_expired=dead_letter.process_expired,
        dead_letter_non_persistent=dead_letter.process_non_persistent,
        discard_dead_letters=dead_letter.kind == "discarding",
        gc_inactive=entry.gc_inactive_destinations,
        inactive_timeout_ms=entry.inactive_timeout_before_gc,
        expire_period_ms=entry.expire_messages_period,
        page_size=entry.max_page_size,
        max_destinations=entry.max_destinations,
        recovery_kind=_RECOVERY_KINDS[recovery.kind],
        recovery_maximum=recovery.recover_duration if recovery.kind == "timed" else recovery.maximum_size,
        always_retroactive=entry.always_retroactive,
        advise=(
            (ADVISE_DELIVERY if entry.advisory_for_delivery else 0)
            | (ADVISE_CONSUMED if entry.advisory_for_consumed else 0)
            | (ADVISE_SLOW if entry.advisory_for_slow_consumers else 0)
            | (ADVISE_FAST if entry.advisory_for_fast_producers else 0)
            | (ADVISE_FULL if entry.advisory_when_full else 0)
        ),
        pending_limit_kind="" if limit is None else limit.kind,
        pending_limit=-1 if limit is None else limit.limit,
        pending_multiplier=0.5 if limit is None else limit.multiplier,
        eviction=eviction.kind,
        eviction_property=eviction.property_name,
        slow_consumer=_slow_consumer(entry.slow_consumer),
        redelivery_fallback=fallback,
        scope=scope,
    )


def _slow_consumer(strategy: SlowConsumerStrategy | None) -> SlowConsumerPolicy | None:
    if strategy is None:
        return None
    return SlowConsumerPolicy(
        kind=strategy.kind,
        max_slow_duration_ms=strategy.max_slow_duration,
        max_slow_count=strategy.max_slow_count,
        check_period_ms=strategy.check_period,
        abort_connection=strategy.abort_connection,
        ignore_network_consumers=strategy.ignore_network_consumers,
        max_time_since_last_ack_ms=strategy.max_time_since_last_ack,
        ignore_idle_consumers=strategy.ignore_idle_consumers,
    )


def unmatched_redelivery(redelivery: RedeliveryPlugin) -> str:
    """What a destination no ``<redeliveryPolicy>`` entry matches gets: "" where there is
    no ``<redeliveryPlugin>`` or it has a ``<defaultEntry>`` (which then applies), else
    its ``fallbackToDeadLetter``: "dlq" (true, ActiveMQ's default) or "drop"."""
    default = redelivery.default
    if redelivery.source.kind != "file" or default.source.kind != "default":
        return ""
    if any(origin.kind == "flag" for origin in default.origins.values()):
        # --maximum-redeliveries or --redelivery-delay: a default entry of the flags'.
        return ""
    return "dlq" if redelivery.fallback_to_dead_letter else "drop"


#: config's recovery kinds -> the core's (delivery/retroactive.py; "": keep nothing).
_RECOVERY_KINDS: Final = {
    "none": "",
    "fixedCount": "fixedCount",
    "fixedSize": "fixedSize",
    "lastImage": "lastImage",
    "timed": "timed",
}


def initial_delay(redelivery: RedeliveryPolicy) -> int | None:
    """``initialRedeliveryDelay`` if the file (or a flag) set it, else None: the first
    redelivery then waits ``redeliveryDelay``.  stompd's default for it is 0 (ActiveMQ's
    1000), so a file that sets only ``redeliveryDelay`` delays every redelivery by it,
    the first too, as it always did here."""
    if origin_of(redelivery, "initial_redelivery_delay").kind == "default":
        return None
    return redelivery.initial_redelivery_delay


def _or(value: int | None, otherwise: int) -> int:
    return otherwise if value is None else value


def resolver(
    policies: PolicyMap, redelivery: RedeliveryPlugin
) -> Callable[[str, str], DestinationPolicy] | None:
    """(kind prefix, name) -> policy; None when there are no entries (the default for all)."""
    unmatched = unmatched_redelivery(redelivery)
    if not policies.entries and not redelivery.entries:
        return None

    # One policy object per pair of entries, shared by every destination they cover (and
    # what ``maxDestinations`` counts by).
    made: dict[tuple[int, int], DestinationPolicy] = {}

    def resolve(kind: str, name: str) -> DestinationPolicy:
        model_kind = _KINDS[kind]
        entry = choose(policies.entries, model_kind, name) or policies.default
        matched = choose(redelivery.entries, model_kind, name)
        chosen = matched or redelivery.default
        key = (id(entry), id(chosen))
        policy = made.get(key)
        if policy is None:
            fallback = unmatched if matched is None else ""
            policy = made[key] = destination_policy(entry, chosen, fallback)
        return policy

    return resolve
