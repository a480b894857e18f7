"""What the broker core can be told, with ActiveMQ's defaults.

``CoreSettings``' per-destination fields (prefetch, memoryLimit, high-water mark,
producer flow control, redelivery, dead-letter strategy) are the default policy entry;
``policies``, when given, resolves each destination's own (a policyEntry and a
redeliveryPolicy chosen by pattern).  Either way a destination reads them from the
``DestinationPolicy`` it was given when it was made (``Destinations.policy_of``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

#: The longest delay an uncapped exponential back-off reaches (ms: about 100 years).
_LONGEST_DELAY = 100 * 365 * 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class TimeStamping:
    """``<timeStampingBrokerPlugin>``'s settings (config.model.TimeStampingPlugin), applied by
    base.plugins."""

    zero_expiration_override: int = 0
    ttl_ceiling: int = 0
    future_only: bool = False
    process_network_messages: bool = False


@dataclass(frozen=True, slots=True)
class DiscardingDLQ:
    """``<discardingDLQBrokerPlugin>``'s settings (config.model.DiscardingDLQPlugin),
    applied by base.plugins."""

    drop_all: bool = True
    drop_temporary_queues: bool = True
    drop_temporary_topics: bool = True
    #: Regular expressions a destination's bare name must match as a whole.
    drop_only: tuple[str, ...] = ()
    report_interval: int = 1000


#: A destination policy's advisories (``DestinationPolicy.advise``, ``handlers.advisory``):
#: advisoryForDelivery, advisoryForConsumed, advisoryForSlowConsumers,
#: advisoryForFastProducers, advisoryWhenFull.
ADVISE_DELIVERY: Final = 1
ADVISE_CONSUMED: Final = 2
ADVISE_SLOW: Final = 4
ADVISE_FAST: Final = 8
ADVISE_FULL: Final = 16


@dataclass(frozen=True, slots=True)
class SlowConsumerPolicy:
    """``<slowConsumerStrategy>`` (config.model.SlowConsumerStrategy), applied by
    delivery.slow: ``kind`` "abort" (abortSlowConsumerStrategy) or "abortSlowAck"."""

    kind: str = "abort"
    max_slow_duration_ms: int = 30000
    max_slow_count: int = -1
    check_period_ms: int = 30000
    abort_connection: bool = False
    ignore_network_consumers: bool = True
    max_time_since_last_ack_ms: int = 30000
    ignore_idle_consumers: bool = True


@dataclass(frozen=True, slots=True)
class LoggingFlags:
    """``<loggingBrokerPlugin>``'s settings (config.model.LoggingPlugin), applied by
    base.broker_log: each kind of event, on or off (``logAll`` already folded in)."""

    connections: bool = True
    sessions: bool = True
    transactions: bool = False
    consumers: bool = False
    producers: bool = False
    internal: bool = False
    per_destination_logger: bool = False


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    """One destination's settings, fixed when it is made (CoreSettings documents each)."""

    producer_flow_control: bool = True
    memory_limit: int | None = None
    cursor_high_water: float = 0.70
    queue_prefetch: int = 1000
    topic_prefetch: int = 32767
    durable_topic_prefetch: int = 100
    queue_browser_prefetch: int = 500
    #: prioritizedMessages: dispatch in strict priority order (9 first); False, ActiveMQ's
    #: default: in arrival order whatever the priority.
    prioritized: bool = False
    max_redeliveries: int = 6
    redelivery_delay_ms: int = 0
    #: The first redelivery's delay; then each the next ``RedeliveryPolicy`` gives.
    initial_redelivery_delay_ms: int = 0
    use_exponential_back_off: bool = False
    back_off_multiplier: float = 5.0
    #: The back-off's cap (-1: none).
    maximum_redelivery_delay_ms: int = -1
    dead_letter_queue: str = "/queue/ActiveMQ.DLQ"
    individual_dead_letter_prefix: str | None = None
    individual_dead_letter_topic_prefix: str = "ActiveMQ.DLQ.Topic."
    dead_letter_expired: bool = True
    #: processNonPersistent: a non-persistent message goes to the DLQ too (stored as a
    #: persistent one); false, ActiveMQ's default: it is dropped.
    dead_letter_non_persistent: bool = False
    #: ``<discarding/>``: dead letters are dropped, none kept.
    discard_dead_letters: bool = False
    gc_inactive: bool = False
    inactive_timeout_ms: int = 60000
    expire_period_ms: int = 30000
    #: maxPageSize (None: the default entry's, which the swap space was made with).
    page_size: int | None = None
    #: maxDestinations: how many destinations this entry may cover at once (-1: any).
    max_destinations: int = -1
    #: ``<subscriptionRecoveryPolicy>`` (topics): what a topic keeps for retroactive
    #: subscribers ("": nothing but its retained message), and how much: messages
    #: (fixedCount), bytes (fixedSize) or ms (timed).
    recovery_kind: str = ""
    recovery_maximum: int = 0
    #: alwaysRetroactive (topics): every subscriber is recovered as if it asked.
    always_retroactive: bool = False
    #: The advisories its policyEntry asks for (``ADVISE_*`` bits; 0: none, all a
    #: destination without them pays is a test of this, copied to it when it is made).
    advise: int = 0
    #: ``<pendingMessageLimitStrategy>`` (topics): a slow non-durable subscriber's
    #: pending messages past its prefetch are capped (delivery.slow): "" no limit,
    #: "constant" at ``pending_limit``, "prefetchRate" at its prefetch x ``pending_multiplier``.
    pending_limit_kind: str = ""
    pending_limit: int = -1
    pending_multiplier: float = 0.5
    #: ``<messageEvictionStrategy>``: "oldest", "oldestLowestPriority" or "uniqueProperty"
    #: (of ``eviction_property``'s values the newest message each is kept).
    eviction: str = "oldest"
    eviction_property: str = ""
    #: ``<slowConsumerStrategy>`` (None: a slow consumer is left alone).
    slow_consumer: SlowConsumerPolicy | None = None
    #: ``<redeliveryPlugin>`` with no entry for this destination (nor a default entry):
    #: "dlq" (fallbackToDeadLetter, its default) a message given back goes to the DLQ at
    #: once, "drop" it is dropped; "" an entry applies.
    redelivery_fallback: str = ""
    #: Which entry this is, as ActiveMQ names it in errors ("queue://FOO.>"; "" the default).
    scope: str = ""

    def redelivery_delay(self, redeliveries: int) -> int:
        """How long (ms) a message given back after ``redeliveries`` earlier redeliveries
        waits, as ActiveMQ's ``RedeliveryPlugin`` computes it: ``initialRedeliveryDelay``,
        then ``RedeliveryPolicy.getNextRedeliveryDelay`` of the previous one for each
        redelivery since (with back-off: the previous times ``backOffMultiplier``, capped
        at ``maximumRedeliveryDelay``; without: ``redeliveryDelay``)."""
        delay = self.initial_redelivery_delay_ms
        for _ in range(redeliveries):
            previous = delay
            delay = self.redelivery_delay_ms
            if previous > 0 and self.use_exponential_back_off and self.back_off_multiplier > 1:
                delay = int(previous * self.back_off_multiplier)
                cap = self.maximum_redelivery_delay_ms
                if cap != -1 and delay > cap:
                    delay = max(cap, self.redelivery_delay_ms)
                elif delay > _LONGEST_DELAY:
                    # Uncapped, it only grows: no point computing further (nor overflowing).
                    return _LONGEST_DELAY
            if delay == previous:
                break  # a fixed point: every later one is the same
        return delay


@dataclass(frozen=True, slots=True)
class VirtualTopicRule:
    """A topic ``pattern`` matches is virtual: what it is sent is also copied to every
    queue ``prefix`` + its name + ``postfix`` that exists (``*``: one name element)."""

    pattern: str = ">"
    prefix: str = "Consumer.*."
    postfix: str = ""
    #: Copied only to a queue one of whose consumers' selectors takes the message.
    selector_aware: bool = False
    #: Messages that came over a network bridge are not copied.
    local: bool = False
    #: A copy its queue has no room for is dropped; the producer does not wait for it.
    drop_on_resource_limit: bool = False
    #: The copy's ``original-destination`` is the topic (false: it has none; its MESSAGE
    #: says its queue either way, as ActiveMQ 5.17's does).
    set_original_destination: bool = True


@dataclass(frozen=True, slots=True)
class ForwardRule:
    """A composite's target: a full name (``/queue/X``), with a selector if filtered."""

    destination: str
    selector: str | None = None


@dataclass(frozen=True, slots=True)
class CompositeRule:
    """What is sent to ``kind`` + a name ``pattern`` matches goes to each of ``forwards``."""

    kind: str
    pattern: str
    forwards: tuple[ForwardRule, ...] = ()
    forward_only: bool = True
    send_when_not_matched: bool = False


@dataclass(frozen=True, slots=True)
class MirrorRule:
    """Every queue's messages are also published on topic ``prefix`` + its name + ``postfix``."""

    prefix: str = "VirtualTopic.Mirror."
    postfix: str = ""


@dataclass(frozen=True, slots=True)
class Interceptors:
    """ActiveMQ's destination interceptors (``<destinationInterceptors>``); the default
    is ActiveMQ's: every topic ``VirtualTopic.>`` virtual."""

    virtual_topics: tuple[VirtualTopicRule, ...] = (VirtualTopicRule("VirtualTopic.>"),)
    composites: tuple[CompositeRule, ...] = ()
    mirror: MirrorRule | None = None


@dataclass(frozen=True, slots=True)
class CoreSettings:
    server: str = "stompd/0.1.0"
    #: ``<broker brokerName>``: this broker's name in a network of brokers (each
    #: forwarded message's path holds it; advisories carry it as ``originBrokerName``).
    broker_name: str = "localhost"
    #: Advisories' ``originBrokerId`` and ``originBrokerURL``.
    broker_id: str = "ID:localhost"
    broker_url: str = field(default="", compare=False)
    #: ``advisorySupport``: consumer advisories (broker.core.handlers.advisory).
    advisory_support: bool = True
    #: ``populateJMSXUserID``: every SEND's ``JMSXUserID`` is its connection's user
    #: (off: no message has one; a client's own is always dropped).
    populate_jmsx_user_id: bool = False
    #: ``<statisticsBrokerPlugin/>``: statistics requests answered (handlers.statistics).
    statistics: bool = False
    #: ``<timeStampingBrokerPlugin>`` (base.plugins); None: not configured.
    time_stamping: TimeStamping | None = None
    #: ``<forcePersistencyModeBrokerPlugin persistenceFlag>``; None: not configured.
    persistence_flag: bool | None = None
    #: ``<discardingDLQBrokerPlugin>`` (base.plugins); None: not configured.
    discarding_dlq: DiscardingDLQ | None = None
    #: ``<redeliveryPlugin sendToDlqIfMaxRetriesExceeded>``: off, a message past its
    #: maximumRedeliveries is dropped instead of dead-lettered.
    dlq_past_max_redeliveries: bool = True
    #: ``<loggingBrokerPlugin>`` (base.broker_log); None: not configured.
    logging: LoggingFlags | None = None
    #: transport.hbGracePeriodMultiplier: a heart-beat read check's period is the
    #: client's interval times this (ActiveMQ's default 1.0; broker.io.connection).
    heartbeat_grace: float = 1.0
    #: We beat at least this far apart whatever the client asks for.
    heartbeat_min_send_ms: int = 100
    queue_prefetch: int = 1000
    topic_prefetch: int = 32767
    durable_topic_prefetch: int = 100
    queue_browser_prefetch: int = 500
    #: prioritizedMessages (ActiveMQ's default false: arrival order whatever the priority).
    prioritized_messages: bool = False
    #: <systemUsage> limits (ActiveMQ's defaults: memory 1 GB, store 100 GB, temp 50 GB).
    memory_limit: int = 1 << 30
    store_limit: int = 100 << 30
    temp_limit: int = 50 << 30
    #: A destination's own memoryLimit (None: only the broker-wide limit applies).
    destination_memory_limit: int | None = None
    #: cursorMemoryHighWaterMark: past this fraction of memory, new messages swap to disk.
    cursor_high_water: float = 0.70
    #: Messages read back from the temp store per page-in.
    page_size: int = 500
    #: ActiveMQ's RedeliveryPolicy default; past it a message goes to the DLQ (-1: never).
    max_redeliveries: int = 6
    dead_letter_queue: str = "/queue/ActiveMQ.DLQ"
    #: individualDeadLetterStrategy: a DLQ per destination, named prefix + its name
    #: (queuePrefix "ActiveMQ.DLQ.Queue." in ActiveMQ); None: the shared one above.
    individual_dead_letter_prefix: str | None = None
    individual_dead_letter_topic_prefix: str = "ActiveMQ.DLQ.Topic."
    #: processExpired: expired messages go to the DLQ (non-persistent ones only with
    #: processNonPersistent); false: dropped and counted.
    dead_letter_expired: bool = True
    #: processNonPersistent (ActiveMQ's default false: a non-persistent dead letter is dropped).
    dead_letter_non_persistent: bool = False
    #: ``<discarding/>`` deadLetterStrategy: every dead letter is dropped.
    discard_dead_letters: bool = False
    #: RedeliveryPolicy redeliveryDelay: a message given back waits this long (ms).
    redelivery_delay_ms: int = 0
    #: initialRedeliveryDelay (None: the same as redelivery_delay_ms), then exponential
    #: back-off (useExponentialBackOff, backOffMultiplier, maximumRedeliveryDelay; -1: no cap).
    initial_redelivery_delay_ms: int | None = None
    use_exponential_back_off: bool = False
    back_off_multiplier: float = 5.0
    maximum_redelivery_delay_ms: int = -1
    send_fail_if_no_space: bool = False
    #: ms; 0 means wait as long as it takes.
    send_fail_if_no_space_after_timeout: int = 0
    #: Past this many bytes of parked frames a blocked connection stops being read.
    max_parked_bytes: int = 4 << 20
    #: producerFlowControl: a SEND that does not fit waits for room; false: it is
    #: refused at once (it still swaps to the temp store while there is room there).
    producer_flow_control: bool = True
    #: gcInactiveDestinations: a destination with no consumer and no message for
    #: inactiveTimoutBeforeGC ms is deleted (broker/core/handlers/gc.py).
    gc_inactive: bool = False
    inactive_timeout_ms: int = 60000
    #: expireMessagesPeriod: how often a queue's messages in memory are looked at for
    #: expired ones, consumers or not (0: only when dispatching).
    expire_period_ms: int = 30000
    #: (kind, name) -> that destination's policy, kind one of broker.core.base.names'
    #: prefixes; None: every destination has ``default_policy()``.
    policies: Callable[[str, str], DestinationPolicy] | None = field(default=None, compare=False)
    #: Virtual topics, composite destinations, mirrored queues (broker.core.delivery.virtual).
    interceptors: Interceptors = field(default_factory=Interceptors)

    def default_policy(self) -> DestinationPolicy:
        return DestinationPolicy(
            producer_flow_control=self.producer_flow_control,
            memory_limit=self.destination_memory_limit,
            cursor_high_water=self.cursor_high_water,
            queue_prefetch=self.queue_prefetch,
            topic_prefetch=self.topic_prefetch,
            durable_topic_prefetch=self.durable_topic_prefetch,
            queue_browser_prefetch=self.queue_browser_prefetch,
            prioritized=self.prioritized_messages,
            max_redeliveries=self.max_redeliveries,
            redelivery_delay_ms=self.redelivery_delay_ms,
            initial_redelivery_delay_ms=(
                self.redelivery_delay_ms
                if self.initial_redelivery_delay_ms is None
                else self.initial_redelivery_delay_ms
            ),
            use_exponential_back_off=self.use_exponential_back_off,
            back_off_multiplier=self.back_off_multiplier,
            maximum_redelivery_delay_ms=self.maximum_redelivery_delay_ms,
            dead_letter_queue=self.dead_letter_queue,
            individual_dead_letter_prefix=self.individual_dead_letter_prefix,
            individual_dead_letter_topic_prefix=self.individual_dead_letter_topic_prefix,
            dead_letter_expired=self.dead_letter_expired,
            dead_letter_non_persistent=self.dead_letter_non_persistent,
            discard_dead_letters=self.discard_dead_letters,
            gc_inactive=self.gc_inactive,
            inactive_timeout_ms=self.inactive_timeout_ms,
            expire_period_ms=self.expire_period_ms,
        )
